"""The `cloudcost2017` MNIST CNN trained with Adam: the spine's first experiment.

``run(profile, overrides, run_dir)`` trains the network, writes ``history.csv`` (one row
per epoch), ``summary.json`` and ``paper_vs_ours.csv`` to the run directory and returns
a :class:`~repro.experiment.Result`.
"""

from __future__ import annotations

import pandas as pd

from . import data as _data
from . import ledger, models, paper, plots, training
from .experiment import Result, start

EXPERIMENT = "mnist_cnn"
ACCURACY_TOLERANCE = 0.005  # 0.5 percentage points: the spread of repeated runs of the Keras example


def build_model(input_shape, num_classes: int, learning_rate: float):
    import keras

    model = models.mnist_cnn(input_shape, num_classes)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
        loss="categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


TRAINED_WITH = "Adam"  # what build_model() compiles with
REFERENCE_OPTIMIZER = "Adadelta"  # what the Keras mnist_cnn example behind 99.25 % uses


def compare_with_paper(summary: dict, params: dict, dataset: dict, optimizer: str = TRAINED_WITH) -> pd.DataFrame:
    """Paper vs ours with a verdict per row (``optimizer``: what the run trained with)."""
    ref_acc = paper.value("cloudcost2017", "mnist_cnn_test_accuracy_12ep")
    ref_epochs = int(paper.value("cloudcost2017", "mnist_cnn_epochs"))
    ref_train = int(paper.value("cloudcost2017", "mnist_train_images"))
    problems = []
    if dataset["name"] != "mnist":
        problems.append(f"dataset {dataset['name']}, not full MNIST")
    if dataset["n_train"] != ref_train:
        problems.append(f"{dataset['n_train']:,} training images, not {ref_train:,}")
    if params["epochs"] != ref_epochs:
        problems.append(f"{params['epochs']} epochs, not {ref_epochs}")
    if optimizer != REFERENCE_OPTIMIZER:  # a declared protocol deviation
        problems.append(f"optimizer {optimizer}, the Keras example's is {REFERENCE_OPTIMIZER}")
    acc_verdict = paper.verdict(ref_acc, summary["final_test_accuracy"], ACCURACY_TOLERANCE,
                                comparable=not problems, why_not="; ".join(problems))
    return pd.DataFrame([
        {"quantity": "test accuracy after the last epoch", "paper": ref_acc, "ours": summary["final_test_accuracy"],
         "verdict": acc_verdict},
        {"quantity": "epochs", "paper": ref_epochs, "ours": params["epochs"],
         "verdict": "same" if params["epochs"] == ref_epochs else "differs (profile)"},
        {"quantity": "training images", "paper": ref_train, "ours": dataset["n_train"],
         "verdict": "same" if dataset["n_train"] == ref_train else "differs (dataset)"},
    ])


def run(profile: str | None = None, overrides: dict | None = None, run_dir=None) -> Result:
    """Train and evaluate; see the module docstring."""
    p, profile, open_run = start(EXPERIMENT, profile, overrides, run_dir)
    ds = _data.load(p["dataset"], p["train_samples"] or None, p["test_samples"] or None, seed=p["seed"])
    run = open_run()
    run.add_dataset(ds.info)
    run.note("device", training.device_summary())
    import keras

    keras.utils.set_random_seed(p["seed"])
    model = build_model(ds.input_shape, ds.num_classes, p["learning_rate"])
    history = training.fit(model, ds, epochs=p["epochs"], batch_size=p["batch_size"], seed=p["seed"])
    run.write_csv("history", history)
    last = history.iloc[-1]
    summary = {
        "final_test_accuracy": float(last["test_accuracy"]),
        "final_train_accuracy": float(last["accuracy"]),
        "best_test_accuracy": float(history["test_accuracy"].max()),
        "total_train_time_s": float(last["train_time_s"]),
        "images_per_second": training.images_per_second(history, ds.info["n_train"]),
        "parameters": int(model.count_params()),
    }
    run.write_json("summary", summary)
    comparison = compare_with_paper(summary, p, ds.info)
    run.write_csv("paper_vs_ours", comparison)
    run.write_csv("ledger", ledger.frame([{
        "paper": "cloudcost2017", "claim": "the MNIST CNN reaches 99.25 % test accuracy after 12 epochs (Keras reference)",
        "paper_value": f"{comparison.loc[0, 'paper']:.2%}", "ours": f"{summary['final_test_accuracy']:.2%}",
        "verdict": comparison.loc[0, "verdict"], "evidence": "mnist-paper-vs-ours",
        "basis": "measured", "runs": 1, "stochastic": True}]))  # one seed per run
    final = run.finish()
    return Result(final, p, run.record, {"history": history, "paper_vs_ours": comparison}, summary)


def plot_curves(result: Result):
    return plots.training_curves(result["history"], title="MNIST CNN (cloudcost2017)")


def glue_numbers(result: Result) -> None:
    """Headline numbers for the chapter's prose."""
    from .report import glue

    ds = result.provenance["datasets"][0]
    glue("mnist_paper_acc", paper.value("cloudcost2017", "mnist_cnn_test_accuracy_12ep"))
    glue("mnist_epochs", result.params["epochs"])
    glue("mnist_n_train", f"{ds['n_train']:,}")
    glue("mnist_dataset", ds["name"])
    glue("mnist_final_acc", result.summary["final_test_accuracy"])
    glue("mnist_best_acc", result.summary["best_test_accuracy"])
    glue("mnist_train_time", result.summary["total_train_time_s"])
    glue("mnist_ips", result.summary["images_per_second"])
