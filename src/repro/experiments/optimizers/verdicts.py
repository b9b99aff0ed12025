"""What this experiment measured for each claim of ``claims.yaml``, computed from the stored tables only,
and the tables that show verdicts (their verdicts come from the same ledger, so they cannot disagree)."""

from __future__ import annotations

import pandas as pd

from repro.core import claims as _claims
from repro.core import paper
from repro.core import verdicts as V
from repro.ml import training

from .common import LABELS, NAME
from .paramtypes import OptimizersParams

# optimizer -> the claim about its final test accuracy (shared variant)
ACCURACY_CLAIMS = {"sgd": "sgd_accuracy", "momentum": "momentum_accuracy", "nesterov": "nesterov_accuracy",
                   "rmsprop": "rmsprop_accuracy", "adam": "adam_best", "adagrad": "adagrad_accuracy",
                   "nadam": "nadam_close"}
NO_HARDWARE = V.not_comparable("the paper's hardware is not stated")


def comparable(params: OptimizersParams, dataset: dict, device: dict | None = None) -> tuple[bool, str]:
    """Is this run the paper's protocol (CIFAR-10, 50k train, 150 epochs, float32)? If not, why not.
    ``device``: the run's device record (provenance), which says what precision it computed in."""
    paper_epochs = int(paper.value("polishchuk2019", "epochs"))
    paper_train = int(paper.value("polishchuk2019", "train_images"))
    why = []
    if dataset["name"] != "cifar10":
        why.append(f"{dataset['name']}" + (f" stands in for {dataset['stand_in_for']}" if dataset.get("stand_in_for")
                                           else ", not CIFAR-10"))
    if dataset["n_train"] != paper_train:
        why.append(f"{dataset['n_train']:,} training images, not {paper_train:,}")
    if params.epochs != paper_epochs:
        why.append(f"{params.epochs} epochs, not {paper_epochs}")
    if precision := training.precision_deviation(device, params.matmul_precision):
        why.append(precision)
    return not why, "; ".join(why)


def shared(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary rows of the paper's protocol (one learning rate for all), by optimizer."""
    return summary[summary["variant"] == "shared"].set_index("optimizer")


def _not_measured(why: str) -> _claims.Measured:
    return _claims.Measured(ours="–", basis="none", runs=0, gate=V.not_measured(why))


def _accuracy(opt: str, s: pd.DataFrame, gate: V.Verdict | None) -> _claims.Measured:
    """The measurement behind the accuracy claim of ``opt`` (rank for Adam, gap to Adam for Nadam)."""
    if opt not in s.index:
        return _not_measured(f"{LABELS[opt]} was not trained in this run")
    acc, rank, runs = float(s.loc[opt, "final_accuracy"]), int(s.loc[opt, "rank"]), int(s.loc[opt, "seeds"])
    ours = f"{acc:.1%} (rank {rank})"
    if opt == "adam":
        return _claims.Measured(ours=ours, holds=rank == 1, gate=gate, runs=runs)
    if opt == "nadam":
        if "adam" not in s.index:
            return _not_measured("Adam was not trained in this run")
        gap = abs(acc - float(s.loc["adam", "final_accuracy"]))
        return _claims.Measured(ours=f"{acc:.1%} (rank {rank}; {gap:.3f} from Adam)", value=gap, gate=gate,
                                runs=min(runs, int(s.loc["adam", "seeds"])))
    return _claims.Measured(ours=ours, value=acc, gate=gate, runs=runs)


def top_two(s: pd.DataFrame) -> set[str]:
    return set(s.sort_values("final_accuracy", ascending=False).index[:2])


def measurements(summary: pd.DataFrame, params: OptimizersParams, dataset: dict,
                 device: dict | None = None) -> dict[str, _claims.Measured]:
    """One :class:`~repro.core.claims.Measured` per claim id, from the ``summary`` table of a run."""
    ok, why = comparable(params, dataset, device)
    gate = None if ok else V.not_comparable(why)
    s = shared(summary)
    out = {cid: _accuracy(opt, s, gate) for opt, cid in ACCURACY_CLAIMS.items()}
    if s.empty:
        for cid in ("conclusion_adam_nadam", "epochs_to_converge", "hours_per_optimizer"):
            out[cid] = _not_measured("no run of the shared variant")
        return out
    runs = int(s["seeds"].min())
    if {"adam", "nadam"} <= set(s.index):
        top2 = top_two(s)
        out["conclusion_adam_nadam"] = _claims.Measured(
            ours="top two: " + ", ".join(LABELS[o] for o in sorted(top2)), holds=top2 == {"adam", "nadam"},
            gate=gate, runs=runs)
    else:
        out["conclusion_adam_nadam"] = _not_measured("Adam and Nadam were not both trained in this run")
    epochs95 = float(s["epochs_to_95pct_best"].max())
    out["epochs_to_converge"] = _claims.Measured(
        ours=f"<= {epochs95:.0f} of {params.epochs} epochs to 95 % of the best accuracy", value=epochs95,
        gate=gate, runs=runs)
    hours = float(s["train_time_s"].mean()) / 3600
    together = int(s["trained_together"].max()) if "trained_together" in s else 1
    shared_time = f" (the wall time of {together} models trained together)" if together > 1 else ""
    out["hours_per_optimizer"] = _claims.Measured(ours=f"{hours:.2f} h{shared_time}", value=hours, gate=NO_HARDWARE,
                                                  runs=runs)
    return out


def ledger(summary: pd.DataFrame, params: OptimizersParams, dataset: dict, device: dict | None = None) -> pd.DataFrame:
    """The ledger of these measurements (the harness writes the same one), indexed by claim id."""
    frame = _claims.ledger(NAME, measurements(summary, params, dataset, device))
    return frame.set_axis(list(_claims.load(NAME)), axis=0)


def compare_with_paper(summary: pd.DataFrame, params: OptimizersParams, dataset: dict,
                       device: dict | None = None) -> pd.DataFrame:
    """The paper's reported results next to our `shared` run, the ledger's verdict per optimizer."""
    verdicts = ledger(summary, params, dataset, device)
    s = shared(summary)
    rows = []
    for opt in params.optimizers:
        row = verdicts.loc[ACCURACY_CLAIMS[opt]]
        rows.append({"optimizer": LABELS[opt], "paper": row["paper_value"],
                     "ours_final_accuracy": float(s.loc[opt, "final_accuracy"]),
                     "ours_rank": int(s.loc[opt, "rank"]), "verdict": row["verdict"]})
    return pd.DataFrame(rows)


def conclusions(summary: pd.DataFrame) -> pd.DataFrame:
    """The paper's conclusion tested on our data, for the shared and the tuned variant (yes/no per variant)."""
    band = _claims.load(NAME)["nadam_close"].band
    if band is None:
        raise _claims.ClaimsError("optimizers/claims.yaml: nadam_close needs a band")
    close = band[1]
    rows = []
    for variant in ("shared", "tuned"):
        s = summary[summary["variant"] == variant].set_index("optimizer")
        if s.empty or not {"adam", "nadam"} <= set(s.index):
            continue
        top2 = top_two(s)
        gap = abs(s.loc["adam", "final_accuracy"] - s.loc["nadam", "final_accuracy"])
        rows += [
            {"variant": variant, "claim": "Adam is the most accurate of the seven",
             "holds": bool(s.loc["adam", "rank"] == 1),
             "evidence": f"Adam ranks {int(s.loc['adam', 'rank'])} of {len(s)}"},
            {"variant": variant, "claim": "Adam and Nadam are the two most accurate",
             "holds": top2 == {"adam", "nadam"}, "evidence": "top two: " + ", ".join(LABELS[o] for o in sorted(top2))},
            {"variant": variant, "claim": f"Nadam is almost the same as Adam (within {close * 100:g} points)",
             "holds": bool(gap <= close), "evidence": f"gap {gap:.3f}"},
        ]
    return pd.DataFrame(rows)
