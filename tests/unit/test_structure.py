"""The layout's rules, checked on the source: sizes here; import direction and cycles as pyproject.toml's
import-linter contracts (`make lint` runs lint-imports), each shown to reject an import that breaks it."""

from __future__ import annotations

import ast
from pathlib import Path

import repro

SRC = Path(repro.__file__).parent
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


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


def _contracts() -> dict:
    """pyproject.toml's import-linter contracts by type (the second of a type as ``<type>2``), ready to check a graph."""
    from importlinter import api
    from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
    from importlinter.contracts.independence import IndependenceContract
    from importlinter.contracts.layers import LayersContract

    cls = {"layers": LayersContract, "independence": IndependenceContract, "acyclic_siblings": AcyclicSiblingsContract}
    conf = api.read_configuration(str(SRC.parents[1] / "pyproject.toml"))
    out: dict = {}
    for c in conf["contracts_options"]:
        key = c["type"] if c["type"] not in out else f"{c['type']}2"
        out[key] = cls[c["type"]](c["name"], conf["session_options"], c)
    return out


def _kept(contract, extra: tuple[str, str] | None = None) -> bool:
    """Whether ``contract`` holds on the package's import graph, with the import ``extra`` (importer, imported)
    added: the counterfactual a contract must reject."""
    import grimp

    graph = grimp.build_graph("repro")
    if extra:
        graph.add_import(importer=extra[0], imported=extra[1])
    return contract.check(graph, verbose=False).kept


def test_the_layering_holds_and_each_contract_rejects_its_counterfactual():
    """The layering of pyproject.toml's [tool.importlinter] (what `make lint` checks with lint-imports) holds
    on the source, and each contract fails on one import that breaks it."""
    c = _contracts()
    assert set(c) == {"layers", "independence", "independence2", "acyclic_siblings"}
    assert all(_kept(contract) for contract in c.values())
    assert not _kept(c["layers"], ("repro.core.params", "repro.experiments.optimizers.verdicts"))  # down -> up
    assert not _kept(c["layers"], ("repro.predict.perfmodel", "repro.cli"))
    assert not _kept(c["layers"], ("repro.ml.training", "repro.cluster.spec"))  # between the shared rooms
    assert not _kept(c["layers"], ("repro.experiments.optimizers.measure", "repro.campaign.device"))  # up: never
    assert not _kept(c["layers"], ("repro.ml.fused", "repro.experiments.optimizers.paramtypes"))  # ml stays below
    assert not _kept(c["independence2"], ("repro.experiments.speedup.equations", "repro.experiments.distributed.models"))
    assert not _kept(c["independence"], ("repro.predict.perfmodel", "repro.cluster.spec"))  # the model, the runtime
    assert not _kept(c["independence"], ("repro.cluster.launch", "repro.predict.hardware"))
    assert not _kept(c["acyclic_siblings"], ("repro.core.errors", "repro.core.params"))  # params imports errors
