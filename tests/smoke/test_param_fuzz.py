"""Parameter sets drawn from the schema (issue 57, item 3; :mod:`repro.core.paramfuzz`): each valid set either
runs through measure, judge and render, or is refused before any training in one line. A fixed sample here
(``REPRO_FUZZ_N``, default 4, from the experiments whose smoke runs take seconds); ``make fuzz`` runs a larger
one over every experiment."""

from __future__ import annotations

import os

import pytest

from repro.core import errors, paramfuzz, runner
from repro.core.params import ParameterError

N = int(os.environ.get("REPRO_FUZZ_N", "4"))
EVERY = os.environ.get("REPRO_FUZZ_ALL") == "1"  # make fuzz: every experiment, the cluster ones too
CHEAP = ["mnist_cnn", "optimizers", "staleness", "cost_study"]
SAMPLE = paramfuzz.sample(N, seed=int(os.environ.get("REPRO_FUZZ_SEED", "0")), experiments=None if EVERY else CHEAP)


@pytest.mark.slow
@pytest.mark.parametrize("variant", SAMPLE, ids=[v.command.removeprefix("repro run ") for v in SAMPLE])
def test_a_valid_parameter_set_renders_or_is_refused_in_one_line(variant, tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    try:
        run_dir = runner.execute(variant.experiment, "smoke", variant.overrides, log_output=False)
    except (ParameterError, errors.MissingEnvironment) as exc:  # refused: before any run directory exists
        assert "\n" not in str(exc), f"{variant.command}: a refusal of several lines: {exc}"
        assert not list(tmp_path.glob(f"smoke/{variant.experiment}/2*")), f"{variant.command}: refused after a run"
        return
    assert (run_dir / "notebook.ipynb").is_file() and (run_dir / "ledger.csv").is_file(), variant.command


def test_the_generator_gives_only_valid_sets_and_covers_each_kind_of_change():
    from repro.core import params

    for exp in params.experiments():
        for v in paramfuzz.variants(exp):
            params.spec(exp).resolve("smoke", v.overrides)  # valid by the schema
    changes = {v.change for v in paramfuzz.variants("optimizers")}
    assert {"optimizers=sgd", "tuned=false", "dataset=cifar10", "epochs=1"} <= changes
    assert paramfuzz.sample(5, seed=1) == paramfuzz.sample(5, seed=1) != paramfuzz.sample(5, seed=2)
