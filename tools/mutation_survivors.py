"""Sort `make mutation`'s survivors by what they change: each surviving mutant function of mutants/ compared
with its original by AST ("wording": only prose differs: a string inside an f-string or one with a space in it;
else "logic", a changed key, attribute or column name included), counted per function.

Usage (after `make mutation`, its output saved): .venv/bin/python tools/mutation_survivors.py mutation.log [--csv OUT]

With --csv, every survivor is written as a row: mutant, function, kind, the changed line (original -> mutant)
and why it survives or which test now kills it, from tools/mutation_reasons.yaml (per mutant, else per function,
else per kind; "unexplained" where none)."""
import ast
import collections
import csv
import difflib
import re
import sys
from pathlib import Path

import yaml

surv = [l.split(":")[0].strip() for l in open(sys.argv[1], errors="ignore").read().replace("\r", "\n").splitlines()
        if l.strip().endswith(": survived")]
funcs = {}
for f in Path("mutants/src/repro").rglob("*.py"):
    try:
        tree = ast.parse(f.read_text())
    except SyntaxError:
        continue
    mod = ".".join(f.relative_to("mutants/src").with_suffix("").parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and "__mutmut_" in node.name:
            funcs[f"{mod}.{node.name}"] = node

def strip_docstring(fn):
    fn = ast.fix_missing_locations(fn)
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    return body

def kinds(orig, mut):
    """What differs: walk both trees in parallel; report node-type pairs that differ."""
    out = set()
    def walk(a, b, parent=None):
        if type(a) is not type(b):
            out.add(f"node:{type(a).__name__}->{type(b).__name__}")
            return
        if isinstance(a, ast.Constant):
            if a.value != b.value:
                text = isinstance(a.value, str) and (isinstance(parent, ast.JoinedStr) or " " in a.value.strip())
                out.add("str" if text else "key" if isinstance(a.value, str) or isinstance(b.value, str) else "const")
            return
        if isinstance(a, (ast.cmpop, ast.operator, ast.boolop, ast.unaryop)):
            return
        for fa, fb in zip(ast.iter_fields(a), ast.iter_fields(b)):
            va, vb = fa[1], fb[1]
            if isinstance(va, list):
                if len(va) != len(vb):
                    out.add(f"len:{fa[0]}")
                for x, y in zip(va, vb):
                    if isinstance(x, ast.AST): walk(x, y, a)
                    elif x != y: out.add(f"val:{fa[0]}")
            elif isinstance(va, ast.AST):
                walk(va, vb, a)
            elif va != vb and fa[0] not in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
                out.add(f"val:{fa[0]}")
    for x, y in zip(orig, mut):
        walk(x, y)
    if len(orig) != len(mut):
        out.add("len:body")
    return out

res = collections.defaultdict(list)
for name in surv:
    base = re.sub(r"__mutmut_\d+$", "__mutmut_orig", name)
    o, m = funcs.get(base), funcs.get(name)
    if o is None or m is None:
        res["?"].append(name); continue
    k = kinds(strip_docstring(o), strip_docstring(m))
    cat = "wording" if k == {"str"} else "logic"
    res[cat].append((name, sorted(k), ast.unparse(m), ast.unparse(o)))
print({k: len(v) for k, v in res.items()})
by = collections.Counter(re.sub(r"__mutmut_\d+$", "", n[0]) for n in res["logic"])
for f, c in by.most_common(60): print(c, f)


def changed_line(orig: str, mut: str) -> str:
    """The first line the mutant changes, as 'original -> mutant'."""
    a, b = orig.splitlines()[1:], mut.splitlines()[1:]  # the def lines differ by name only
    minus = [l.strip() for l in difflib.ndiff(a, b) if l.startswith("- ")]
    plus = [l.strip() for l in difflib.ndiff(a, b) if l.startswith("+ ")]
    return f"{minus[0][2:] if minus else ''} -> {plus[0][2:] if plus else '(removed)'}"[:300]


if "--csv" in sys.argv:
    reasons = yaml.safe_load(Path(__file__).with_name("mutation_reasons.yaml").read_text())
    rows = []
    for cat in ("wording", "logic"):
        for name, k, mut, orig in res[cat]:
            func = re.sub(r"__mutmut_\d+$", "", name).replace(".x_", ".", 1).replace("ǁ", ".")
            why = (reasons.get("mutants") or {}).get(name) or (reasons.get("functions") or {}).get(func) or \
                (reasons["kinds"].get(cat) if cat == "wording" else None)
            rows.append({"mutant": name, "function": func, "kind": cat,
                         "change": changed_line(orig, mut), "why": why or "unexplained"})
    with open(sys.argv[sys.argv.index("--csv") + 1], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["mutant", "function", "kind", "change", "why"])
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} survivors written; unexplained: {sum(r['why'] == 'unexplained' for r in rows)}")
