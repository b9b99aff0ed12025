"""Every example a user is shown parses and validates (issue 57, item 2); nothing trains.

Collected from the files themselves (tests/examples_found.py), so that a new example is checked without a new test
(tests/smoke/test_examples_run.py runs them):

* each `repro …` command of README.md, docs/*.md, the CLI's `--help` texts and the experiments' `profile.yaml` files:
  through the CLI's own parser (`repro.cli.build_parser`) and, for `run` and `measure`, the experiment's parameter
  validation (`spec.parse_overrides`, `spec.resolve`); a `--hardware` profile of `repro predict` is looked up;
* each notebook's `parameters` cell: its profile, the profiles its comment names, and its `overrides` and the
  example in its comment (`# e.g. {...}`), resolved against the experiment's `profile.yaml`.

A placeholder the reader fills in (`<run-id>`, `<yours>`) is parsed as text, and left out of a parameter's list.
"""

from __future__ import annotations

import ast
import re
import shlex

import pytest
from examples_found import NOTEBOOKS, PLACEHOLDER, ROOT, commands, examples, filled, literal_after, parameters_cell

from repro import cli
from repro.core import params as _params


def check(args: list[str], capsys) -> None:
    """Parse ``args`` as `repro` does and validate what can be validated without running it."""
    parser = cli.build_parser()
    if "-h" in args or "--help" in args:
        with pytest.raises(SystemExit) as done:
            parser.parse_args(args)
        assert done.value.code == 0
        return
    try:
        ns = parser.parse_args(args)
    except SystemExit:
        pytest.fail(f"`repro {shlex.join(args)}` does not parse: {capsys.readouterr().err.strip()}")
    if ns.command in ("run", "measure"):
        names = list(_params.experiments()) if ns.experiment == "all" else [ns.experiment]
        for name in names:
            spec = _params.spec(name)
            p = spec.resolve(ns.profile, spec.parse_overrides(filled(ns.param)))
            _preflight_names_only_what_is_absent_here(name, p, ns.profile)
    if ns.command == "predict" and ns.hardware and not PLACEHOLDER.match(ns.hardware):
        from repro.predict import perfmodel

        perfmodel.hardware_profile(ns.hardware)


ABSENT_HERE = {"data", "devices", "scheduler"}  # what this machine may lack: the papers' data, a GPU, a cluster


def _preflight_names_only_what_is_absent_here(name: str, p, profile: str) -> None:
    """An example's preflight (repro.core.preflight, without the probe) may block only for the data, GPU or cluster
    this machine lacks, never for anything else (a disk, an unknown dataset, a profile that cannot start)."""
    from repro.core import harness, preflight, results

    prof = _params.spec(name).profiles[profile]
    rep = preflight.report(harness.experiment(name), p, profile, prof.cost, prof.gpus, results.results_root(),
                           probe=False)
    odd = [f"{i.what}: {i.detail}" for i in rep.blocked if i.what not in ABSENT_HERE or "unknown" in i.detail]
    assert not odd, f"`repro run {name} --profile {profile}`: the preflight blocks for {odd}"


EXAMPLES = examples()


@pytest.mark.parametrize("args", EXAMPLES)
def test_every_repro_example_parses_and_validates(args, capsys):
    check(args, capsys)


def test_the_examples_are_found_where_a_reader_sees_them():
    """The collection itself: the README's command-line block, the optimizer recipe's run, inline examples, and
    a mention is not an example."""
    ids = {p.id.split(":")[0] for p in EXAMPLES}
    assert {"README.md", "docs/developing.md", "optimizers"} <= ids | {i.split("/")[0] for i in ids}
    readme = [args for _, args in commands((ROOT / "README.md").read_text(encoding="utf-8"))]
    assert ["run", "mnist_cnn", "--profile", "smoke", "-p", "epochs=3"] in readme
    recipe = [args for _, args in commands((ROOT / "docs" / "developing.md").read_text(encoding="utf-8"))]
    assert ["run", "optimizers", "--profile", "smoke", "-p", "optimizers=sgd,adam,<yours>"] in recipe
    text = "Run `repro run` or `repro predict --hardware`; try `make env && .venv/bin/repro book --profile cpu`.\n"
    assert commands(text) == [(1, ["book", "--profile", "cpu"])]
    block = ("```bash\nrepro run a \\\n  -p x=1   # a comment\nsalloc -N 2 .venv/bin/repro list\n"
             "ipykernel install --name repro\n```\n```python\nimport repro\n```\n")
    assert commands(block) == [(2, ["run", "a", "-p", "x=1"]), (4, ["list"])]


@pytest.mark.parametrize("bad", [["run", "optimizers", "-p", "optimizer=sgd"],  # a wrong name
                                 ["run", "optimizers", "-p", "optimizers=sgd,adamw"],  # not a choice
                                 ["run", "mnist_cnn", "--profile", "gpu"],  # not a profile
                                 ["predict", "--hardware", "k80", "--model", "vgg16", "--method", "horovod"],
                                 ["run"]])  # no experiment
def test_a_wrong_example_fails(bad, capsys):
    """The counterfactual: an example with a wrong parameter, choice, profile, hardware or argument fails."""
    with pytest.raises((_params.ParameterError, ValueError, pytest.fail.Exception)):
        check(bad, capsys)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebooks_parameters_and_their_examples_resolve(path):
    spec = next(s for s in _params.experiments().values() if s.notebook == path.name)
    cell = parameters_cell(path)
    lines = {line.split("=", 1)[0].strip(): line for line in cell.splitlines() if "=" in line}
    profile_value, _, named = lines["profile"].partition("#")
    profile = ast.literal_eval(profile_value.split("=", 1)[1].strip())
    assert profile in spec.profiles
    for part in named.split("|"):  # "smoke: 2 epochs ... | cpu | paper: ...": each profile it names exists
        word = part.split(":")[0].strip()
        if re.fullmatch(r"[A-Za-z0-9_-]+", word):
            assert word in spec.profiles, f"{path.name}: the parameters cell names profile {word!r}"
    value, _, comment = lines["overrides"].partition("#")
    spec.resolve(profile, ast.literal_eval(value.split("=", 1)[1].strip()))
    example = literal_after(comment, "e.g.")
    assert example is not None, f"{path.name}: the overrides line shows no example"
    spec.resolve(profile, example)


def test_an_examples_preflight_that_blocks_for_anything_but_data_gpu_or_cluster_fails(monkeypatch):
    """The counterfactual of the preflight check: a full disk (or any other missing piece) fails the example."""
    from repro.core import preflight

    spec = _params.spec("mnist_cnn")
    p = spec.resolve("smoke", {})
    _preflight_names_only_what_is_absent_here("mnist_cnn", p, "smoke")
    monkeypatch.setattr(preflight, "disk_item", lambda root: preflight.Item("disk", False, "0.01 GiB free"))
    with pytest.raises(AssertionError, match="disk: 0.01 GiB free"):
        _preflight_names_only_what_is_absent_here("mnist_cnn", p, "smoke")
