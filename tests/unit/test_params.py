"""Profiles and parameter validation: one-line errors naming the parameter."""

import subprocess
import sys

import pytest

from repro.core import params
from repro.core.params import ParameterError, ParamSpec


def test_profiles_resolve_to_their_values():
    spec = params.spec("mnist_cnn")
    smoke = spec.resolve("smoke")
    assert smoke["epochs"] == 2 and smoke["dataset"] == "mnist_subset"
    assert spec.resolve("paper")["epochs"] == 12
    assert spec.resolve("paper")["dataset"] == "mnist"
    assert spec.resolve(None) == smoke  # default profile


def test_overrides_apply_and_are_validated():
    spec = params.spec("mnist_cnn")
    assert spec.resolve("smoke", {"epochs": 5})["epochs"] == 5
    assert spec.resolve("smoke", {"learning_rate": 1})["learning_rate"] == 1.0  # ints accepted for floats
    with pytest.raises(ParameterError, match=r"^parameter 'epochs': expected an integer \(>= 1; <= 1000\), got 0$"):
        spec.resolve("smoke", {"epochs": 0})
    with pytest.raises(ParameterError, match="parameter 'dataset'.*one of mnist, mnist_subset, fashion_mnist"):
        spec.resolve("smoke", {"dataset": "imagenet"})
    with pytest.raises(ParameterError, match="parameter 'epochs'"):
        spec.resolve("smoke", {"epochs": True})  # bool is not an int
    with pytest.raises(ParameterError, match="parameter 'learning_rate'"):
        spec.resolve("smoke", {"learning_rate": "fast"})


def test_unknown_names_are_one_line_errors():
    spec = params.spec("mnist_cnn")
    with pytest.raises(ParameterError, match="unknown parameter 'epoch' .*did you mean 'epochs'"):
        spec.resolve("smoke", {"epoch": 3})
    with pytest.raises(ParameterError, match="unknown profile 'fast' for experiment 'mnist_cnn'; choose from: smoke, cpu, paper"):
        spec.resolve("fast")
    with pytest.raises(ParameterError, match="unknown experiment 'nope'; choose from: .*mnist_cnn"):
        params.spec("nope")
    for exc in (ParameterError("x"),):
        assert "\n" not in str(exc)


def test_command_line_strings_are_parsed_by_type():
    spec = params.spec("mnist_cnn")
    assert spec.parse_overrides(["epochs=3", "learning_rate=1e-3", "dataset=fashion_mnist"]) == {
        "epochs": 3, "learning_rate": 0.001, "dataset": "fashion_mnist"}
    with pytest.raises(ParameterError, match="parameter 'epochs'.*got 'three'"):
        spec.parse_overrides(["epochs=three"])
    with pytest.raises(ParameterError, match="must look like name=value"):
        spec.parse_overrides(["epochs"])


def test_list_and_bool_parameters():
    ints = ParamSpec("cores", "list[int]", min=1, max=4)
    assert ints.parse("1,2, 4") == [1, 2, 4]
    assert ints.validate((1, 2)) == [1, 2]
    with pytest.raises(ParameterError, match="parameter 'cores': expected a non-empty list of integers"):
        ints.parse("1,8")
    with pytest.raises(ParameterError):
        ints.validate([])
    flag = ParamSpec("resume", "bool")
    assert flag.parse("true") is True and flag.parse("0") is False
    with pytest.raises(ParameterError):
        flag.parse("maybe")
    opt = ParamSpec("limit", "int", nullable=True)
    assert opt.parse("none") is None and opt.validate(None) is None


def test_every_profile_of_every_experiment_is_valid():
    for spec in params.experiments().values():
        assert {"smoke", "paper"} <= set(spec.profiles), spec.name
        for name in spec.profiles:
            spec.resolve(name)  # raises if a stored profile is out of its own schema


def test_cli_bad_parameter_is_one_line_and_nonzero():
    proc = subprocess.run(
        [sys.executable, "-m", "repro.cli", "run", "mnist_cnn", "--profile", "smoke", "-p", "batch_size=-1"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == ["repro: error: parameter 'batch_size': expected an integer (>= 1; <= 65536), got -1"]
