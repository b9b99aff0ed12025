"""The layout's rules, checked on the source: sizes, import direction, no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import repro

SRC = Path(repro.__file__).parent
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500
LAZY_OK = ("tensorflow", "keras", "horovod")  # heavy: imported inside functions only


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, top_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_only else list(ast.walk(tree))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            found |= {f"{base}.{a.name}" for a in node.names} | {base}
    return {m for m in found if m.startswith("repro")}


def _resolve(target: str, modules: dict) -> str | None:
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def test_functions_and_modules_are_short():
    long = []
    for name, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES:
            long.append(f"module {name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {n} lines")
    assert not long, long


def test_an_experiment_never_imports_another():
    crossing = []
    for name, path in _modules().items():
        if name.startswith("repro.experiments.") and name.count(".") >= 2:
            own = ".".join(name.split(".")[:3])
            for target in _imports(name, path, top_only=False):
                if target.startswith("repro.experiments.") and not target.startswith(own):
                    crossing.append(f"{name} -> {target}")
    assert not crossing, crossing


def test_shared_code_does_not_import_experiments():
    bad = [f"{n} -> {t}" for n, p in _modules().items()
           if n.startswith(("repro.core", "repro.ml", "repro.cluster", "repro.book"))
           for t in _imports(n, p, top_only=False) if t.startswith("repro.experiments.")]
    assert not bad, bad


def test_no_import_cycles():
    modules = _modules()
    graph = {n: {r for t in _imports(n, p, top_only=False) if (r := _resolve(t, modules)) and r != n
                 and not n.startswith(r + ".")}  # a module may import its own package's __init__
             for n, p in modules.items()}
    state, cycles = {}, []

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    assert not cycles, cycles
