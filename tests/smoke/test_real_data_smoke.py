"""The user who has the papers' data (issue 56): the `paper` profile, shrunk, on CIFAR-10 and MNIST archives in
their real formats (random pixels). Trusted through the test-only digest setting, the rows are judged as the
paper's data and read *not comparable* only for the shrunk protocol; untrusted, the reason is the checksum. The
preflight blocks a run before any training, in the terminal and in a notebook's first cell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import fake_datasets as F
import pandas as pd
import pytest

from repro.core import harness, preflight
from repro.ml import archives

SHRUNK = {"epochs": 1, "seeds": [0, 1], "tuned": False, "optimizers": ["sgd", "momentum", "nesterov", "rmsprop",
                                                                        "adam", "adagrad", "nadam"]}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def user(tmp_path, monkeypatch):
    """A user's machine with no internet: CIFAR-10 as Keras 3 leaves it, MNIST in repro's data directory."""
    env = {"REPRO_DATA_DIR": str(tmp_path / "data"), "KERAS_HOME": str(tmp_path / "keras"), "REPRO_OFFLINE": "1",
           "REPRO_OFFLINE_DIRS": "", "REPRO_RESULTS": str(tmp_path / "results")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    digests = [F.write_cifar10_archive(tmp_path / "keras" / "datasets" / "cifar-10-batches-py-target_archive",
                                       per_batch=48, n_test=64),
               F.write_mnist_npz(tmp_path / "data" / "mnist.npz", n_train=256, n_test=128)]
    monkeypatch.delenv(archives.TRUST_ENV, raising=False)
    return tmp_path, ",".join(digests)


def _verdicts(run_dir: Path) -> dict[str, str]:
    led = pd.read_csv(run_dir / "ledger.csv")
    return dict(zip(led["id"], led["verdict"]))


@pytest.mark.slow
def test_the_paper_profile_shrunk_on_trusted_cifar10_runs_renders_and_is_judged_as_real_data(user):
    tmp, trusted = user
    env = {**os.environ, archives.TRUST_ENV: trusted, preflight.SKIP_ENV: "1"}  # no GPU here: the check would block
    args = [str(Path(sys.executable).parent / "repro"), "run", "optimizers", "--profile", "paper",
            "-p", "epochs=1", "-p", "seeds=0,1", "-p", "tuned=false"]
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    run_dir = next((tmp / "results" / "paper" / "optimizers").glob("2*"))
    ds = json.loads((run_dir / "provenance.json").read_text())["datasets"][0]
    assert (ds["name"], ds["verified"], ds["n_train"]) == ("cifar10", True, 240)
    assert ds["files"]["where"] == "Keras 3 cache" and "test setting" in ds["files"]["trusted_by"]
    v = _verdicts(run_dir)
    assert v["adam_best"] == "not comparable (240 training images, not 50,000; 1 epochs, not 150)"
    assert not any("stands in" in x or "checksum" in x for x in v.values())
    assert (run_dir / "notebook.ipynb").is_file()  # rendered through papermill


@pytest.mark.slow
def test_untrusted_files_train_and_their_rows_name_the_checksum(user, monkeypatch):
    from repro.experiments.mnist_cnn import experiment as mnist_cnn
    from repro.experiments.optimizers import experiment as optimizers

    monkeypatch.setenv(preflight.SKIP_ENV, "1")
    res = harness.run(optimizers.EXPERIMENT, "paper", {**SHRUNK, "seeds": [0], "optimizers": ["sgd", "adam"]})
    assert res.provenance["datasets"][0]["verified"] is False
    why = _verdicts(res.run_dir)["sgd_accuracy"]  # a claim of one optimizer: judged on this selection
    assert why.startswith("not comparable (the data is not the paper's: checksum sha256") and "1 epochs" in why
    res = harness.run(mnist_cnn.EXPERIMENT, "paper", {"epochs": 1, "repeats": 1})
    ds = res.provenance["datasets"][0]
    assert (ds["name"], ds["verified"], ds["files"]["where"]) == ("mnist", False, "repro data directory")
    assert "the data is not the paper's: checksum" in _verdicts(res.run_dir)["accuracy_12ep"]
    monkeypatch.setenv(archives.TRUST_ENV, user[1])
    res = harness.run(mnist_cnn.EXPERIMENT, "paper", {"epochs": 1, "repeats": 1})
    assert res.provenance["datasets"][0]["verified"] is True
    assert "checksum" not in _verdicts(res.run_dir)["accuracy_12ep"]


def test_the_preflight_blocks_before_training_and_names_what_is_missing(user, monkeypatch, capsys):
    from repro.experiments.optimizers import experiment as optimizers

    (user[0] / "keras").rename(user[0] / "elsewhere")  # CIFAR-10 gone
    with pytest.raises(preflight.PreflightFailed) as err:
        harness.run(optimizers.EXPERIMENT, "paper", SHRUNK)
    printed = capsys.readouterr().out
    assert "preflight: optimizers --profile paper" in printed and "MISSING data      dataset 'cifar10' is not here" in printed
    assert "\n" not in str(err.value) and "repro data import" in str(err.value)
    assert not (user[0] / "results").exists()  # nothing was trained or written


@pytest.mark.slow
def test_run_all_of_a_chapter_on_the_paper_profile_stops_at_the_preflight_in_its_first_cell(user, tmp_path):
    """A notebook on a GPU Jupyter server: ``profile = "paper"`` and Run All prints the preflight in the notebook
    and stops there where something blocks (here: no GPU, no CIFAR-10)."""
    import papermill

    from repro.core import runner

    (user[0] / "keras").rename(user[0] / "elsewhere")
    out = tmp_path / "executed.ipynb"
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(str(ROOT / "notebooks" / "03_optimizers.ipynb"), str(out),
                                   parameters={"profile": "paper"}, kernel_name=runner.kernel_name(),
                                   cwd=str(ROOT / "notebooks"), progress_bar=False)
    assert err.value.ename == "MissingEnvironment" and "optimizers --profile paper cannot start" in err.value.evalue
    cells = json.loads(out.read_text())["cells"]
    ran = next(c for c in cells if c["cell_type"] == "code" and "optimizers.run(" in "".join(c["source"]))
    shown = "".join("".join(o.get("text", "")) for o in ran["outputs"] if o.get("output_type") == "stream")
    assert "preflight: optimizers --profile paper" in shown and "MISSING data      dataset 'cifar10'" in shown
    assert "MISSING devices" in shown
    later = cells[cells.index(ran) + 1:]
    assert not any(c.get("outputs") for c in later if c["cell_type"] == "code")  # nothing after it ran
