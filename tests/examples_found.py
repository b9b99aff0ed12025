"""Where the examples a user is shown are found (issue 57, item 2), for the tests that check them
(tests/unit/test_examples.py: each parses and validates) and run them (tests/smoke/test_examples_run.py).

* each `repro …` command of README.md and docs/*.md (every line of a shell code block that runs repro, and inline
  code that gives a repro command its arguments; `repro run` alone or `repro predict --hardware` is a mention of
  a command or option, not an example), each `repro …` in the CLI's `--help` texts and in the experiments'
  `profile.yaml` files (`to_decide.command`, help strings);
* each notebook's `parameters` cell: its `overrides` example (`# e.g. {...}`), as the `repro run` it stands for.

A placeholder the reader fills in (`<run-id>`, `<yours>`) is kept as text, and left out of a parameter's list.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from pathlib import Path

import pytest

from repro import cli
from repro.core import params as _params

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "book").glob("*.md"))]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PLACEHOLDER = re.compile(r"^<[^<>\s]+>$")  # a value the reader supplies: <run-id>, <yours>, <profile>
FENCE = re.compile(r"^```([A-Za-z]*)[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
INLINE = re.compile(r"`([^`\n]+)`")
SHELL = ("", "bash", "sh", "shell", "console", "text")
SEPARATORS = {"&&", "||", ";", "|"}


def _repro_args(tokens: list[str]) -> list[list[str]]:
    """The arguments of every repro command in a shell line's tokens (``a && repro b`` has one, ``.venv/bin/repro``
    and ``salloc ... repro`` count)."""
    out, current, before = [], None, ""
    for tok in [*tokens, ";"]:
        if tok in SEPARATORS:
            if current:
                out.append(current)
            current = None
        elif current is not None:
            if current or tok != "repro":  # `docker run ... repro repro run ...`: an image named repro, then the command
                current.append(tok)
        elif (tok == "repro" or tok.endswith("/repro")) and not before.startswith("-"):  # not `--name repro`
            current = []
        before = tok
    return out


def _tokens(line: str) -> list[str]:
    lex = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lex.whitespace_split, lex.commenters = True, "#"
    return list(lex)


def commands(text: str) -> list[tuple[int, list[str]]]:
    """(line number, arguments) of every repro example of a markdown or plain text (module docstring)."""
    found = []
    for block in FENCE.finditer(text):
        if block.group(1).lower() not in SHELL:
            continue
        first, pending, start = text.count("\n", 0, block.start(2)) + 1, "", 0
        for i, line in enumerate(block.group(2).split("\n")):
            start = start if pending else i  # the line a command starts on
            if line.endswith("\\"):  # continued on the next line: one command
                pending += line[:-1] + " "
                continue
            found += [(first + start, args) for args in _repro_args(_tokens(pending + line)) if args]
            pending = ""
    outside = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for span in INLINE.finditer(outside):
        line = outside.count("\n", 0, span.start()) + 1
        for args in _repro_args(_tokens(span.group(1))):
            if len(args) >= 2 and not args[-1].startswith("-"):  # a subcommand and its arguments: an example
                found.append((line, args))
    return found


def _help_texts() -> str:
    """Every `--help` text of the CLI: the top level and each subcommand's."""
    import argparse

    parser = cli.build_parser()
    texts = [parser.format_help()]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            texts += [sub.format_help() for sub in action.choices.values()]
    return "\n".join(texts)


def examples() -> list:
    """Every `repro` example of the docs, the experiments' profile.yaml files and the `--help` texts."""
    out = []
    for path in DOCS:
        rel = path.relative_to(ROOT).as_posix()
        out += [pytest.param(args, id=f"{rel}:{line}") for line, args in commands(path.read_text(encoding="utf-8"))]
    for name, spec in _params.experiments().items():
        if spec.to_decide is not None:
            out.append(pytest.param(_repro_args(_tokens(spec.to_decide.command))[0], id=f"{name}:to_decide"))
        text = (ROOT / "src" / "repro" / "experiments" / name / "profile.yaml").read_text(encoding="utf-8")
        out += [pytest.param(args, id=f"{name}/profile.yaml:{line}") for line, args in commands(text)]
    out += [pytest.param(args, id=f"--help:{i}") for i, (_, args) in enumerate(commands(_help_texts()))]
    return out


def filled(pairs: list[str]) -> list[str]:
    """``-p`` pairs without the placeholders a reader fills in (``optimizers=sgd,adam,<yours>`` -> ``sgd,adam``)."""
    out = []
    for pair in pairs:
        name, _, value = pair.partition("=")
        items = [v for v in value.split(",") if not PLACEHOLDER.match(v.strip())]
        if items:
            out.append(f"{name}={','.join(items)}")
    return out


def parameters_cell(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return next("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))


def literal_after(text: str, marker: str):
    """The Python literal (a dict) that follows ``marker`` in ``text``, its braces balanced; None where none does."""
    start = text.find("{", text.find(marker)) if marker in text else -1
    if start < 0:
        return None
    depth = 0
    for i, ch in enumerate(text[start:], start):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth == 0:
            return ast.literal_eval(text[start:i + 1])
    raise AssertionError(f"unbalanced braces after {marker!r}: {text[start:]}")


def _flat(overrides: dict, prefix: str = "") -> list[str]:
    """``-p`` pairs of an overrides dict (``{"measure": {"workers": [1, 2]}}`` -> ``measure.workers=1,2``)."""
    out = []
    for key, value in overrides.items():
        if isinstance(value, dict):
            out += _flat(value, f"{prefix}{key}.")
        else:
            text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
            out.append(f"{prefix}{key}={text.lower() if isinstance(value, bool) else text}")
    return out


def notebook_examples() -> list:
    """Each notebook's overrides example as the `repro run` it stands for (its experiment, its profile)."""
    out = []
    for path in NOTEBOOKS:
        name, spec = next((n, s) for n, s in _params.experiments().items() if s.notebook == path.name)
        lines = {line.split("=", 1)[0].strip(): line for line in parameters_cell(path).splitlines() if "=" in line}
        profile = ast.literal_eval(lines["profile"].partition("#")[0].split("=", 1)[1].strip())
        example = literal_after(lines["overrides"].partition("#")[2], "e.g.") or {}
        args = ["run", name, "--profile", profile] + [x for pair in _flat(example) for x in ("-p", pair)]
        out.append(pytest.param(args, id=f"notebooks/{path.name}"))
    return out
