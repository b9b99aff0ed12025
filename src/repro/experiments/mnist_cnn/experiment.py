"""The `cloudcost2017` MNIST CNN (the Keras mnist_cnn example) trained with Adam: the spine's first experiment.

``run(profile, overrides, run_dir)`` trains the network, writes ``history.csv`` (one row
per epoch), ``summary.json`` and ``paper_vs_ours.csv`` to the run directory and returns
a :class:`~repro.core.harness.Result`.
"""

from __future__ import annotations

import pandas as pd

from repro.book import plots
from repro.core import claims, harness, paper, preflight
from repro.core import verdicts as V
from repro.core.harness import Result
from repro.experiments.mnist_cnn.paramtypes import MnistCnnParams
from repro.ml import data as _data
from repro.ml import models, optim, training

NAME = "mnist_cnn"


def build_model(input_shape, num_classes: int, learning_rate: float, optimizer: str = "adam"):
    return optim.compile_classifier(models.mnist_cnn(input_shape, num_classes), optimizer, learning_rate)


TRAINED_WITH = "Adam"  # what the smoke and cpu profiles train with (a declared deviation)
REFERENCE_OPTIMIZER = "Adadelta"  # what the Keras mnist_cnn example behind 99.25 % uses
LABELS = {"adam": "Adam", "adadelta": "Adadelta"}


def trained_with(params: MnistCnnParams) -> str:
    """The optimizer a run trained with (runs older than the ``optimizer`` parameter: Adam)."""
    return LABELS[params.optimizer]


def protocol(params: MnistCnnParams, dataset: dict, optimizer: str = TRAINED_WITH,
             device: dict | None = None) -> list[str]:
    """How this run departs from the reference protocol (empty: the same protocol); ``device``: the run's
    device record, which says whether it computed in float32."""
    ref_epochs = int(paper.value("cloudcost2017", "mnist_cnn_epochs"))
    ref_train = int(paper.value("cloudcost2017", "mnist_train_images"))
    problems = []
    if dataset["name"] != "mnist":
        problems.append(f"dataset {dataset['name']}, not full MNIST")
    elif bad := _data.not_the_papers(dataset):
        problems.append(bad)
    if dataset["n_train"] != ref_train:
        problems.append(f"{dataset['n_train']:,} training images, not {ref_train:,}")
    if params.epochs != ref_epochs:
        problems.append(f"{params.epochs} epochs, not {ref_epochs}")
    if optimizer != REFERENCE_OPTIMIZER:  # a declared protocol deviation
        problems.append(f"optimizer {optimizer}, the Keras example's is {REFERENCE_OPTIMIZER}")
    if precision := training.precision_deviation(device):
        problems.append(precision)
    return problems


def accuracy(summary: dict, params: MnistCnnParams, dataset: dict, optimizer: str = TRAINED_WITH,
             runs: int = 1, device: dict | None = None) -> claims.Measured:
    """The measurement behind claim ``accuracy_12ep``: the mean final accuracy of ``runs`` seeds."""
    problems = protocol(params, dataset, optimizer, device)
    acc = summary["final_test_accuracy"]
    return claims.Measured(ours=f"{acc:.2%}" + (f" (mean of {runs} seeds)" if runs > 1 else ""), value=acc, runs=runs,
                           gate=V.not_comparable("; ".join(problems)) if problems else None)


def compare_with_paper(summary: dict, params: MnistCnnParams, dataset: dict, optimizer: str = TRAINED_WITH,
                       runs: int = 1, device: dict | None = None) -> pd.DataFrame:
    """Paper vs ours with a verdict per row (``optimizer``: what the run trained with)."""
    ref_epochs = int(paper.value("cloudcost2017", "mnist_cnn_epochs"))
    ref_train = int(paper.value("cloudcost2017", "mnist_train_images"))
    claim = claims.load(NAME)["accuracy_12ep"]
    m = accuracy(summary, params, dataset, optimizer, runs, device)
    verdict = claims.ledger(NAME, {claim.id: m}).loc[0, "verdict"]  # the ledger's rules (runs) apply here too
    return pd.DataFrame([
        {"quantity": "test accuracy after the last epoch", "paper": claim.reference(),
         "ours": summary["final_test_accuracy"],
         "verdict": verdict},
        {"quantity": "epochs", "paper": ref_epochs, "ours": params.epochs,
         "verdict": "same" if params.epochs == ref_epochs else "differs (profile)"},
        {"quantity": "training images", "paper": ref_train, "ours": dataset["n_train"],
         "verdict": "same" if dataset["n_train"] == ref_train else "differs (dataset)"},
    ])


class MnistCnn(harness.Experiment[MnistCnnParams, _data.Dataset]):
    """The experiment, for the harness (:class:`repro.core.harness.Experiment`)."""

    name = NAME

    def prepare(self, p: MnistCnnParams) -> _data.Dataset:
        return _data.load(p.dataset, p.train_samples or None, p.test_samples or None, seed=p.seed)

    def preflight(self, p: MnistCnnParams) -> preflight.Own:
        """The dataset (verified?), the time (every repeat at the probe's speed), the claims a finished run
        decides."""
        from repro.ml import probe as _probe

        n = p.train_samples or _data.FULL_TRAIN.get(p.dataset, 0)
        problems = protocol(p, _data.expected_info(p.dataset, n), trained_with(p))
        return preflight.Own([_data.preflight_item(p.dataset),
                              preflight.forecast(NAME, not problems, "; ".join(problems), p.repeats)],
                             _probe.estimate(n * p.epochs * p.repeats,
                                             lambda: build_model((28, 28, 1), 10, p.learning_rate, p.optimizer),
                                             (28, 28, 1), 10, p.batch_size))

    def measure(self, run, p: MnistCnnParams, ds: _data.Dataset) -> harness.Output:
        run.add_dataset(ds.info)
        run.note("device", training.device_summary())
        histories, repeats = [], []
        for i in range(p.repeats):
            history, n_params = train_once(ds, p, p.seed + i)
            histories.append(history)
            last = history.iloc[-1]
            repeats.append({"seed": p.seed + i, "final_test_accuracy": float(last["test_accuracy"]),
                            "final_train_accuracy": float(last["accuracy"]),
                            "best_test_accuracy": float(history["test_accuracy"].max()),
                            "total_train_time_s": float(last["train_time_s"]),
                            "images_per_second": training.images_per_second(history, ds.info["n_train"])})
        repeats = pd.DataFrame(repeats)
        summary = {k: float(repeats[k].mean()) for k in repeats.columns if k != "seed"}
        summary["parameters"] = n_params
        return harness.Output({"history": histories[0], "repeats": repeats}, summary)

    def judge(self, result: harness.Result[MnistCnnParams]) -> dict[str, claims.Measured]:
        runs = len(result.tables["repeats"]) if "repeats" in result.tables else 1
        return {"accuracy_12ep": accuracy(result.summary, result.params, result.provenance["datasets"][0],
                                          trained_with(result.params), runs, result.provenance.get("device"))}

    def verdict_views(self, result: harness.Result[MnistCnnParams], measured: dict,
                      ledger: pd.DataFrame) -> harness.Output:
        """``paper_vs_ours``: the claim's verdict and the protocol next to the paper's (rejudge rewrites it)."""
        runs = len(result.tables["repeats"]) if "repeats" in result.tables else 1
        return harness.Output({"paper_vs_ours": compare_with_paper(
            result.summary, result.params, result.provenance["datasets"][0], trained_with(result.params), runs,
            result.provenance.get("device"))})


def train_once(ds: _data.Dataset, p: MnistCnnParams, seed: int) -> tuple[pd.DataFrame, int]:
    """One training with ``seed``: its per-epoch history and the model's parameter count."""
    import keras

    keras.utils.set_random_seed(seed)
    model = build_model(ds.input_shape, ds.num_classes, p.learning_rate, p.optimizer)
    history = training.fit(model, ds, epochs=p.epochs, batch_size=p.batch_size, seed=seed)
    return history, int(model.count_params())


EXPERIMENT = MnistCnn()
run = harness.entry(EXPERIMENT)


def plot_curves(result: Result[MnistCnnParams]):
    return plots.stamp(plots.training_curves(result["history"], title="MNIST CNN (cloudcost2017)"), result.provenance)


def glue_numbers(result: Result[MnistCnnParams]) -> None:
    """Headline numbers for the chapter's prose."""
    from repro.book.report import glue

    ds = result.provenance["datasets"][0]
    glue("mnist_paper_acc", claims.load(NAME)["accuracy_12ep"].reference())
    glue("mnist_epochs", result.params.epochs)
    glue("mnist_optimizer", trained_with(result.params))
    glue("mnist_repeats", len(result.tables["repeats"]) if "repeats" in result.tables else 1)
    glue("mnist_n_train", f"{ds['n_train']:,}")
    glue("mnist_dataset", ds["name"])
    glue("mnist_final_acc", result.summary["final_test_accuracy"])
    glue("mnist_best_acc", result.summary["best_test_accuracy"])
    glue("mnist_train_time", result.summary["total_train_time_s"])
    glue("mnist_ips", result.summary["images_per_second"])
