"""Each experiment's parameters as a typed object generated from its profile.yaml, read by the type checker."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pydantic
import pytest

from repro.core import params, paramtypes


def test_every_generated_paramtypes_matches_its_profile_yaml():
    """A parameter added to or renamed in a profile.yaml without `python -m repro.core.paramtypes` fails here."""
    assert paramtypes.stale() == []


def test_the_generated_keys_types_and_constraints_follow_the_schema():
    spec = params.spec("optimizers")
    src = paramtypes.source(spec)
    assert "class OptimizersParams(Params):" in src
    for name in spec.params:
        assert f"\n    {name}: " in src
    assert "    trainer: Literal['fit', 'fused']\n" in src  # a choice of strings
    assert "    epochs: Annotated[Int, Field(ge=1, le=1000)]\n" in src  # its range on the field
    assert "    seeds: Annotated[list[Annotated[Int, Field(ge=0)]], Field(min_length=1)]\n" in src
    assert "    filters: Annotated[list[Annotated[Int, Field(ge=1, le=1024)]], Field(min_length=3, max_length=3)]\n" in src
    assert "    optimizers: Annotated[list[Str], Field(min_length=1), one_of('sgd', " in src  # a list of choices
    assert "    matmul_precision: Annotated[Literal['float32', 'tf32'] | None, NULL]\n" in src  # legacy: null
    dist = paramtypes.source(params.spec("distributed"))
    assert "class DistributedEmulate(Group):" in dist and "    emulate: DistributedEmulate\n" in dist  # a group
    assert "    hardware: Annotated[Str | None, NULL]\n" in dist  # emulate.hardware, nullable
    assert "\n    emulate_models" not in dist and "\n    models: Annotated[list[Str], Field(min_length=1), one_of(" in dist


def test_groups_of_one_shape_share_one_class():
    from repro.experiments.speedup.paramtypes import SpeedupEmulate, SpeedupGrid, SpeedupMeasure

    p = params.resolve("speedup", "smoke")
    assert isinstance(p.measure, SpeedupGrid) and isinstance(p.emulate, SpeedupGrid)  # a runner takes either
    grid = set(SpeedupGrid.model_fields)
    assert grid == {"networks", "workers", "servers", "modes", "batch", "batches"}
    assert set(SpeedupMeasure.model_fields) - grid == {"enabled", "image_size", "classes"}  # what it adds
    assert set(SpeedupEmulate.model_fields) - grid == {"hardware", "validation"}
    spec = params.spec("speedup")
    same = dataclasses.replace(spec, groups={**spec.groups, "replay": params.GroupDecl(shape="Measure")})
    with pytest.raises(params.ParameterError, match="shape 'Measure' is named like a group's class"):
        paramtypes.source(same)


def test_a_changed_profile_makes_the_generated_file_stale(monkeypatch):
    spec = params.spec("mnist_cnn")
    renamed = dict(spec.params)
    renamed["epochz"] = renamed.pop("epochs")
    changed = dataclasses.replace(spec, params=renamed)
    every, one = params.experiments(), params.spec
    monkeypatch.setattr(params, "experiments", lambda: {**every, "mnist_cnn": changed})
    monkeypatch.setattr(params, "spec", lambda name: changed if name == "mnist_cnn" else one(name))
    assert "mnist_cnn" in paramtypes.stale()


def test_parameters_read_by_attribute_and_dump_nested():
    spec = params.spec("distributed")
    p = spec.resolve("emulated")
    values = spec.profiles["emulated"].values
    assert p.emulate.hardware == values["emulate.hardware"] and p.emulate.models == values["emulate.models"]
    assert p.sweep.bandwidths == values["sweep.bandwidths"] and p.dilation_check.factor == values["dilation_check.factor"]
    dump = p.model_dump()  # the wire format: papermill, provenance.json
    assert dump["emulate"]["models"] == values["emulate.models"] and spec.dotted(dump) == values
    assert list(spec.dotted(dump)) == list(values)  # in the profile's order
    assert spec.validate(dump) == p
    with pytest.raises(AttributeError, match="emulate_models"):
        p.emulate_models  # noqa: B018 -- the flat name is not an attribute
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        p.ps = 3  # type: ignore[misc]


def test_a_changed_copy_is_model_copy_on_the_nested_objects():
    p = params.spec("distributed").resolve("smoke")
    q = p.model_copy(update={"emulate": p.emulate.model_copy(update={"repeats": 3}), "steps": 5})
    assert (q.emulate.repeats, q.steps, p.emulate.repeats, q.emulate.models) == (3, 5, 1, p.emulate.models)
    assert not hasattr(p, "replace") and not hasattr(p, "flat")


def test_a_stored_run_reads_through_one_adapter_flat_or_nested_with_legacy_values():
    spec = params.spec("optimizers")
    dump = spec.resolve("smoke").model_dump()
    old = {k: v for k, v in dump.items() if k not in ("trainer", "matmul_precision")}
    p = paramtypes.load("optimizers", old)
    assert (p.trainer, p.matmul_precision) == ("fit", None)  # profile.yaml: legacy fit, legacy null
    older = {k: v for k, v in dump.items() if k != "epochs"}  # epochs declares no legacy value
    with pytest.raises(params.ParameterError, match="optimizers: parameter 'epochs' missing"):
        paramtypes.load("optimizers", older)
    assert not hasattr(paramtypes.partial("optimizers", older), "epochs")  # a test's few parameters
    dist = params.spec("distributed")
    nested = dist.resolve("smoke").model_dump()
    flat = {dict(map(reversed, dist.flat_names.items())).get(k, k): v for k, v in dist.dotted(nested).items()}
    assert "emulate" in flat and "emulate_models" in flat and "dilation_check" in flat  # as runs stored it
    assert paramtypes.load("distributed", flat) == paramtypes.load("distributed", nested) == dist.resolve("smoke")


def test_a_group_declaration_that_does_not_fit_its_parameters_is_one_line():
    decls = {"emulate.hardware": params.ParamSpec(name="emulate.hardware", type="str"),
             "emulate.models": params.ParamSpec(name="emulate.models", type="list[str]")}
    with pytest.raises(params.ParameterError, match="parameter 'emulate.hardware': no group 'emulate'"):
        params.check_groups(decls, {})
    with pytest.raises(params.ParameterError, match="group 'sweep' has no parameter"):
        params.check_groups(decls, {"emulate": params.GroupDecl(), "sweep": params.GroupDecl()})
    with pytest.raises(params.ParameterError, match="parameter 'sweep' is named like a group"):
        params.check_groups({**decls, "sweep": params.ParamSpec(name="sweep", type="int")},
                            {"emulate": params.GroupDecl(), "sweep": params.GroupDecl()})
    params.check_groups(decls, {"emulate": params.GroupDecl()})


def test_no_module_reads_a_parameter_by_key():
    """Parameters are read as attributes (``p.epochs``): no ``p["epochs"]``, ``params["..."]`` or
    ``result.params["..."]`` is left in the package, where mypy would not see a dict typed as ``Any``.
    (``grep 'p\\["'`` still meets DataFrame columns such as ``cmp["server"]`` and ``grp["rounds"]``.)"""
    pattern = re.compile(r"""(?<![\w.])(p|q|params|self\.p|result\.params)\[['"]""")
    root = Path(params.__file__).parents[1]
    hits = [f"{f.relative_to(root)}:{n}" for f in sorted(root.rglob("*.py"))
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == []


def test_a_generated_file_that_fails_to_import_fails_loudly_and_a_missing_one_in_one_line(monkeypatch):
    """A generated ``paramtypes.py`` that is there and breaks on import fails loudly; a missing one (an experiment
    outside the package without ``python -m repro.core.paramtypes``) is one line saying what to run. No class is
    built at run time."""
    real = params.importlib.import_module

    def broken(name, *args):
        if name.endswith("mnist_cnn.paramtypes"):
            raise ModuleNotFoundError("No module named 'somethingelse'", name="somethingelse")
        return real(name, *args)

    spec = dataclasses.replace(params.spec("mnist_cnn"))  # a fresh spec: its class not yet looked up
    monkeypatch.setattr(params.importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="somethingelse"):
        spec.model  # noqa: B018

    def missing(name, *args):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    spec = dataclasses.replace(params.spec("mnist_cnn"))
    monkeypatch.setattr(params.importlib, "import_module", missing)
    with pytest.raises(params.ParameterError, match=r"^experiment 'mnist_cnn': no repro/experiments/mnist_cnn/paramtypes.py; generate it with `python -m repro.core.paramtypes`$"):
        spec.model  # noqa: B018
