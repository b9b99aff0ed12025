"""The spine's experiment end to end: papermill on `smoke`, results read back."""

import json

import nbformat
import pandas as pd
import pytest

from repro.experiments.mnist_cnn import experiment as mnist_cnn


@pytest.mark.slow
def test_smoke_notebook_writes_results(smoke_runs):
    run = smoke_runs["mnist_cnn"]
    hist = pd.read_csv(run / "history.csv")
    assert hist["epoch"].tolist() == [1, 2]
    assert hist["test_accuracy"].iloc[-1] > 0.80  # chance is 0.10; real digits, 2 epochs
    assert hist["loss"].iloc[1] < hist["loss"].iloc[0]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["final_test_accuracy"] == pytest.approx(hist["test_accuracy"].iloc[-1])
    assert summary["parameters"] == 1_199_882
    table = pd.read_csv(run / "paper_vs_ours.csv")
    assert table.loc[0, "paper"] == pytest.approx(0.9925)
    assert table.loc[0, "ours"] == pytest.approx(summary["final_test_accuracy"])
    assert table.loc[0, "verdict"] == (
        "not comparable (dataset mnist_subset, not full MNIST; 4,000 training images, not 60,000; 2 epochs, not 12; "
        "optimizer Adam, the Keras example's is Adadelta)")
    row = pd.read_csv(run / "ledger.csv").iloc[0]
    assert (row["paper"], row["category"], row["basis"], int(row["runs"])) == (
        "keras_mnist_cnn", "not comparable", "measured", 1)
    assert row["ours"] == f"{summary['final_test_accuracy']:.2%}"
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["status"] == "complete" and prov["profile"] == "smoke"
    assert prov["datasets"][0]["name"] == "mnist_subset" and prov["datasets"][0]["stand_in_for"] == "mnist"
    assert prov["device"]["device"] in ("CPU", "GPU")
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the curves were drawn
    # the notebook loads the finished run: its progress lines (one per epoch) went to `repro run`'s console
    assert not any("Epoch 2/2" in o.get("text", "") for o in outputs)


def test_repeats_are_independent_runs_behind_the_ledger(results_root):
    got = mnist_cnn.run("smoke", {"epochs": 1, "repeats": 2, "train_samples": 600, "test_samples": 200,
                                  "optimizer": "adadelta", "learning_rate": 1.0})
    reps = got["repeats"]
    assert reps["seed"].tolist() == [0, 1]
    assert reps["final_test_accuracy"].nunique() == 2  # two seeds, two different trainings
    assert got.summary["final_test_accuracy"] == pytest.approx(reps["final_test_accuracy"].mean())
    row = got["ledger"].iloc[0]
    assert (row["runs"], row["basis"]) == (2, "measured")
    assert "mean of 2 seeds" in row["ours"]
    # Adadelta is the reference's optimizer: only the data and epochs are left to make it not comparable
    assert "optimizer" not in row["verdict"] and row["verdict"].startswith("not comparable (dataset mnist_subset")
    assert got.provenance["parameters"]["optimizer"] == "adadelta"
