"""The spine's experiment end to end: papermill on `smoke`, results read back."""

import json

import nbformat
import pandas as pd
import pytest


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
    assert any("Epoch 2/2" in o.get("text", "") for o in outputs)  # one progress line per epoch
