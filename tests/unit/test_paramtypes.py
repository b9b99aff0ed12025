"""Each experiment's parameters as a typed object generated from its profile.yaml, read by the type checker."""

from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path

import pydantic
import pytest

from repro.core import params, paramtypes


def test_every_generated_paramtypes_matches_its_profile_yaml():
    """A parameter added to or renamed in a profile.yaml without `python -m repro.core.paramtypes` fails here."""
    assert paramtypes.stale() == []


def test_the_generated_keys_and_types_follow_the_schema():
    spec = params.spec("optimizers")
    src = paramtypes.source(spec)
    assert "class OptimizersParams(Params):" in src
    for name in spec.params:
        assert f"\n    {name}: " in src
    assert "    trainer: Literal['fit', 'fused']\n" in src  # a choice of strings
    assert "    seeds: list[int]\n" in src
    assert "    matmul_precision: Literal['float32', 'tf32'] | None\n" in src  # a stored run older than it: null
    dist = paramtypes.source(params.spec("distributed"))
    assert "class DistributedEmulate(Group):" in dist and "    emulate: DistributedEmulate\n" in dist  # a group
    assert "    hardware: str | None\n" in dist  # `emulate` itself, nullable, the group's own field
    assert "\n    emulate_models" not in dist and "\n    models: list[str]\n" in dist


def test_a_changed_profile_makes_the_generated_file_stale(monkeypatch):
    spec = params.spec("mnist_cnn")
    renamed = dict(spec.params)
    renamed["epochz"] = renamed.pop("epochs")
    changed = dataclasses.replace(spec, params=renamed)
    every, one = params.experiments(), params.spec
    monkeypatch.setattr(params, "experiments", lambda: {**every, "mnist_cnn": changed})
    monkeypatch.setattr(params, "spec", lambda name: changed if name == "mnist_cnn" else one(name))
    assert "mnist_cnn" in paramtypes.stale()


def _mypy(tmp_path, monkeypatch, body: str) -> tuple[str, int]:
    """mypy on a file that uses a generated TypedDict, the package found from its source (not as Any)."""
    api = pytest.importorskip("mypy.api")
    f = tmp_path / "use_params.py"
    f.write_text(textwrap.dedent(body))
    monkeypatch.setenv("MYPYPATH", str(Path(params.__file__).parents[2]))
    out, err, rc = api.run([str(f), "--follow-imports=silent", "--config-file=", "--no-error-summary",
                            "--cache-dir", str(tmp_path / ".mypy_cache")])
    return out + err, rc


USE = """
from repro.experiments.optimizers.paramtypes import OptimizersParams


def epochs_left(p: OptimizersParams, done: int) -> int:
    return p.{key} - done
"""


def test_a_misspelt_parameter_fails_the_type_check(tmp_path, monkeypatch):
    out, rc = _mypy(tmp_path, monkeypatch, USE.format(key="epoch"))  # the parameter is `epochs`
    assert rc == 1, out
    assert '"OptimizersParams" has no attribute "epoch"' in out


def test_the_right_spelling_passes_the_type_check(tmp_path, monkeypatch):
    out, rc = _mypy(tmp_path, monkeypatch, USE.format(key="epochs"))
    assert rc == 0, out


GROUPED = """
from repro.experiments.distributed.paramtypes import DistributedParams


def grid(p: DistributedParams) -> list[str]:
    return p.emulate.{key}
"""


def test_a_misspelt_field_of_a_group_fails_the_type_check(tmp_path, monkeypatch):
    out, rc = _mypy(tmp_path, monkeypatch, GROUPED.format(key="model"))  # the field is `models`
    assert rc == 1, out
    assert '"DistributedEmulate" has no attribute "model"' in out
    out, rc = _mypy(tmp_path, monkeypatch, GROUPED.format(key="models"))
    assert rc == 0, out


def test_typed_parameters_read_by_attribute_and_give_the_flat_names_back():
    flat = params.resolve("distributed", "emulated")
    p = paramtypes.typed("distributed", flat)
    assert p.emulate.hardware == flat["emulate"] and p.emulate.models == flat["emulate_models"]
    assert p.sweep.bandwidths == flat["sweep_bandwidths"] and p.dilation_check.factor == flat["dilation_check"]
    assert p.flat() == flat and list(p.flat()) == list(flat)  # the wire format, in the profile's order
    with pytest.raises(AttributeError, match="emulate_models"):
        p.emulate_models  # noqa: B018 -- the flat name is not an attribute
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        p.ps = 3  # type: ignore[misc]


def test_replace_takes_flat_names_and_checks_each_value():
    p = paramtypes.typed("distributed", params.resolve("distributed", "smoke"))
    q = p.replace(emulate_repeats=3, steps=5)
    assert (q.emulate.repeats, q.steps, p.emulate.repeats) == (3, 5, p.emulate.repeats)
    with pytest.raises(params.ParameterError, match="parameter 'emulate_repeats'"):
        p.replace(emulate_repeats=0)  # min 1
    with pytest.raises(params.ParameterError, match="unknown parameter 'emulate_repeat'"):
        p.replace(emulate_repeat=2)


def test_a_stored_run_older_than_a_parameter_reads_its_legacy_value_or_fails_in_one_line():
    flat = params.resolve("optimizers", "smoke")
    old = {k: v for k, v in flat.items() if k not in ("trainer", "matmul_precision")}
    p = paramtypes.params_class("optimizers").of(old)
    assert (p.trainer, p.matmul_precision) == ("fit", None)  # profile.yaml: legacy fit, legacy null
    older = {k: v for k, v in flat.items() if k != "epochs"}  # epochs declares no legacy value
    with pytest.raises(params.ParameterError, match="optimizers: parameter 'epochs' missing"):
        paramtypes.params_class("optimizers").of(older)
    assert not hasattr(paramtypes.partial("optimizers", older), "epochs")  # a test's few parameters


def test_a_group_declaration_that_does_not_fit_its_parameters_is_one_line():
    decls = {"emulate": params.ParamSpec(name="emulate", type="str"),
             "emulate_models": params.ParamSpec(name="emulate_models", type="list[str]")}
    with pytest.raises(params.ParameterError, match="group 'emulate' is also a parameter"):
        params.layout(decls, {"emulate": params.GroupDecl()})
    with pytest.raises(params.ParameterError, match="group 'sweep' has no parameter"):
        params.layout(decls, {"emulate": params.GroupDecl(own="hardware"), "sweep": params.GroupDecl()})
    assert params.layout(decls, {"emulate": params.GroupDecl(own="hardware")}) == {
        "emulate": ("emulate", "hardware"), "emulate_models": ("emulate", "models")}


def test_no_module_reads_a_parameter_by_key():
    """Parameters are read as attributes (``p.epochs``): no ``p["epochs"]``, ``params["..."]`` or
    ``result.params["..."]`` is left in the package, where mypy would not see a dict typed as ``Any``.
    (``grep 'p\\["'`` still meets DataFrame columns such as ``cmp["server"]`` and ``grp["rounds"]``.)"""
    pattern = re.compile(r"""(?<![\w.])(p|q|params|self\.p|result\.params)\[['"]""")
    root = Path(params.__file__).parents[1]
    hits = [f"{f.relative_to(root)}:{n}" for f in sorted(root.rglob("*.py"))
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == []


def test_a_generated_file_that_fails_to_import_is_not_replaced_by_a_built_class(monkeypatch):
    """Only a missing ``paramtypes.py`` (an experiment outside the package) gets a class built at run time; a
    generated file that is there and breaks on import fails loudly."""
    real = paramtypes.importlib.import_module

    def broken(name, *args):
        if name.endswith("mnist_cnn.paramtypes"):
            raise ModuleNotFoundError("No module named 'somethingelse'", name="somethingelse")
        return real(name, *args)

    monkeypatch.setattr(paramtypes.importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="somethingelse"):
        paramtypes.params_class("mnist_cnn")

    def missing(name, *args):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(paramtypes.importlib, "import_module", missing)
    built = paramtypes.params_class("distributed")
    p = built.of(params.resolve("distributed", "smoke"))
    assert p.emulate.models == params.resolve("distributed", "smoke")["emulate_models"]
    assert built.__name__ == "DistributedParams" and issubclass(built, paramtypes.Params)
