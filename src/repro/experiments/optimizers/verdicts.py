"""What this experiment measured for each claim of ``claims.yaml``, computed from the stored tables only,
and the tables that show verdicts (their verdicts come from the same ledger, so they cannot disagree)."""

from __future__ import annotations

import pandas as pd

from repro.core import claims as _claims
from repro.core import paper
from repro.core import verdicts as V
from repro.ml import data as _data
from repro.ml import training

from .common import LABELS, NAME, OPTIMIZERS
from .measure import final_losses
from .paramtypes import OptimizersParams

# optimizer -> the claim about its final test accuracy (shared variant)
ACCURACY_CLAIMS = {"sgd": "sgd_accuracy", "momentum": "momentum_accuracy", "nesterov": "nesterov_accuracy",
                   "rmsprop": "rmsprop_accuracy", "adam": "adam_best", "adagrad": "adagrad_accuracy",
                   "nadam": "nadam_close"}
# the claims about the whole shared variant (all but the accuracy of one optimizer)
RUN_CLAIMS = ("adam_best_loss", "adagrad_momentum_above_sgd_nesterov", "sgd_above_nesterov", "others_much_worse",
              "conclusion_adam_nadam", "conclusion_adam_nadam_loss", "data_type_and_size", "epochs_to_converge",
              "hours_per_optimizer")
# the three the paper puts at ~80 % and above, and the other four
STRONG, WEAK = ("adam", "nadam", "rmsprop"), ("sgd", "momentum", "nesterov", "adagrad")
NO_HARDWARE = V.not_comparable("the paper's hardware is not stated")
NO_CLAIM = "no claim of the paper"  # an optimizer trained beyond the paper's seven
ONE_DATASET = V.not_testable("a run trains one dataset at one size; the dependence on data type and size needs runs "
                             "over several, and a rule for 'depends' that the paper does not give")


def comparable(params: OptimizersParams, dataset: dict, device: dict | None = None) -> tuple[bool, str]:
    """Is this run the paper's protocol (CIFAR-10, 50k train, 150 epochs, float32)? If not, why not.
    ``device``: the run's device record (provenance), which says what precision it computed in."""
    paper_epochs = int(paper.value("polishchuk2019", "epochs"))
    paper_train = int(paper.value("polishchuk2019", "train_images"))
    why = []
    if dataset["name"] != "cifar10":
        why.append(f"{dataset['name']}" + (f" stands in for {dataset['stand_in_for']}" if dataset.get("stand_in_for")
                                           else ", not CIFAR-10"))
    elif bad := _data.not_the_papers(dataset):
        why.append(bad)
    if dataset["n_train"] != paper_train:
        why.append(f"{dataset['n_train']:,} training images, not {paper_train:,}")
    if params.epochs != paper_epochs:
        why.append(f"{params.epochs} epochs, not {paper_epochs}")
    if precision := training.precision_deviation(device, params.matmul_precision):
        why.append(precision)
    return not why, "; ".join(why)


def paper_rows(summary: pd.DataFrame, variant: str = "shared") -> pd.DataFrame:
    """The summary rows of ``variant`` of the paper's seven optimizers, by optimizer, ranked among themselves
    (an optimizer trained beyond the seven never changes a verdict about them)."""
    s = summary[(summary["variant"] == variant) & summary["optimizer"].isin(OPTIMIZERS)].set_index("optimizer")
    if "rank" in s and len(s):
        s = s.assign(rank=s["final_accuracy"].rank(ascending=False, method="min").astype(int))
    return s


def shared(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary rows of the paper's protocol (one learning rate for all) of the paper's seven, by optimizer."""
    return paper_rows(summary, "shared")


def _not_measured(why: str) -> _claims.Measured:
    return _claims.Measured(ours="–", basis="none", runs=0, gate=V.not_measured(why))


ALL_SEVEN = "the claim ranks all seven of the paper"  # what a claim that needs every one of the seven is about


def trained(summary: pd.DataFrame, variant: str = "shared") -> list[str]:
    """The optimizers of ``variant`` in the run: those of the paper's seven in the paper's order, then any beyond."""
    ran = list(dict.fromkeys(summary.loc[summary["variant"] == variant, "optimizer"]))
    return [o for o in OPTIMIZERS if o in ran] + [o for o in ran if o not in OPTIMIZERS]


def _accuracy(opt: str, s: pd.DataFrame, gate: V.Verdict | None, selected: list[str]) -> _claims.Measured:
    """The measurement behind the accuracy claim of ``opt`` (rank among all seven for Adam, gap to Adam for
    Nadam); a claim whose optimizers the run did not train is *not testable with this selection*."""
    needs = {"adam": OPTIMIZERS, "nadam": ("adam", "nadam")}.get(opt, (opt,))
    if (lacking := _lacking(s, needs, selected, ALL_SEVEN if opt == "adam" else "")) is not None:
        return lacking
    acc, rank, runs = float(s.loc[opt, "final_accuracy"]), int(s.loc[opt, "rank"]), int(s.loc[opt, "seeds"])
    ours = f"{acc:.1%} (rank {rank})"
    if opt == "adam":
        return _claims.Measured(ours=ours, holds=rank == 1, gate=gate, runs=runs)
    if opt == "nadam":
        gap = abs(acc - float(s.loc["adam", "final_accuracy"]))
        return _claims.Measured(ours=f"{acc:.1%} (rank {rank}; {gap:.3f} from Adam)", value=gap, gate=gate,
                                runs=min(runs, int(s.loc["adam", "seeds"])))
    return _claims.Measured(ours=ours, value=acc, gate=gate, runs=runs)


def top_two(s: pd.DataFrame) -> set[str]:
    return set(s.sort_values("final_accuracy", ascending=False).index[:2])


def lowest_two_losses(s: pd.DataFrame) -> list[str]:
    """The two optimizers with the lowest mean final test loss, lowest first (a loss that is not a number ranks
    last; a tie in name order)."""
    return list(s.sort_index().sort_values("final_loss", na_position="last", kind="stable").index[:2])


def loss_rank(s: pd.DataFrame) -> pd.Series:
    """Rank by mean final test loss, 1 the lowest; a loss that is not a number (a diverged run) ranks last."""
    return s["final_loss"].rank(method="min", na_option="bottom").astype(int)


def with_final_loss(summary: pd.DataFrame, history: pd.DataFrame | None) -> pd.DataFrame:
    """``summary`` with ``final_loss`` (:func:`~.measure.final_losses` of ``history``) where a stored run's
    summary was written before it had the column; unchanged where it has it or no history has test losses."""
    if "final_loss" in summary or history is None or "test_loss" not in history:
        return summary
    return summary.merge(final_losses(history), on=["variant", "optimizer"], how="left")


def _lacking(s: pd.DataFrame, opts, selected: list[str], about: str = "") -> _claims.Measured | None:
    """A *not testable with this selection* measurement where this run (its optimizers ``selected``) did not train
    every optimizer of ``opts`` (it names those the ``optimizers`` parameter needs to include), or None."""
    return None if all(o in s.index for o in opts) else _untestable(opts, selected, about)


def _untestable(opts, selected: list[str], about: str = "") -> _claims.Measured:
    return _claims.Measured(ours="–", basis="none", runs=0, gate=V.needs_selection("optimizers", opts, selected, about))


def _accs(s: pd.DataFrame, opts) -> str:
    return ", ".join(f"{LABELS[o]} {float(s.loc[o, 'final_accuracy']):.1%}" for o in opts)


def _seeds(s: pd.DataFrame, opts) -> int:
    return int(s.loc[list(opts), "seeds"].min())


def orderings(s: pd.DataFrame, gate: V.Verdict | None, selected: list[str]) -> dict[str, _claims.Measured]:
    """The paper's ordering of the weaker optimizers and its gap to the three best, from the shared rows ``s``:
    Adagrad and momentum above SGD and Nesterov, SGD above Nesterov, the other four >= 10 points below."""
    acc = s["final_accuracy"].astype(float)
    out: dict[str, _claims.Measured] = {}
    up, down = ("adagrad", "momentum"), ("sgd", "nesterov")
    out["adagrad_momentum_above_sgd_nesterov"] = _lacking(s, up + down, selected) or _claims.Measured(
        ours=f"{_accs(s, up)} vs {_accs(s, down)}", holds=bool(acc[list(up)].min() > acc[list(down)].max()),
        gate=gate, runs=_seeds(s, up + down))
    out["sgd_above_nesterov"] = _lacking(s, down, selected) or _claims.Measured(
        ours=_accs(s, down), holds=bool(acc["sgd"] > acc["nesterov"]), gate=gate, runs=_seeds(s, down))
    if (lacking := _lacking(s, OPTIMIZERS, selected, "the claim compares all seven of the paper")) is not None:
        out["others_much_worse"] = lacking
    else:
        low, high = acc[list(STRONG)].idxmin(), acc[list(WEAK)].idxmax()
        gap = float(acc[low] - acc[high])
        out["others_much_worse"] = _claims.Measured(
            ours=f"{gap * 100:+.1f} points ({_accs(s, (low,))} vs {_accs(s, (high,))})", value=gap, gate=gate,
            runs=_seeds(s, STRONG + WEAK))
    return out


def losses(s: pd.DataFrame, gate: V.Verdict | None, selected: list[str]) -> dict[str, _claims.Measured]:
    """Adam's rank by final test loss, and whether Adam and Nadam have the two lowest, from the shared rows (both
    rank all seven of the paper)."""
    ids = ("adam_best_loss", "conclusion_adam_nadam_loss")
    if (lacking := _lacking(s, OPTIMIZERS, selected, ALL_SEVEN)) is not None:
        return dict.fromkeys(ids, lacking)
    if "final_loss" not in s:
        return {cid: _not_measured("this run's tables record no test loss") for cid in ids}
    rank, low2 = loss_rank(s), lowest_two_losses(s)
    return {"adam_best_loss": _claims.Measured(
                ours=f"{float(s.loc['adam', 'final_loss']):.3f} (rank {rank['adam']} by loss)",
                holds=bool(rank["adam"] == 1), gate=gate, runs=_seeds(s, ("adam",))),
            "conclusion_adam_nadam_loss": _claims.Measured(
                ours="lowest two: " + ", ".join(f"{LABELS[o]} {float(s.loc[o, 'final_loss']):.3f}" for o in low2),
                holds=set(low2) == {"adam", "nadam"}, gate=gate, runs=int(s["seeds"].min()))}


def measurements(summary: pd.DataFrame, params: OptimizersParams, dataset: dict,
                 device: dict | None = None) -> dict[str, _claims.Measured]:
    """One :class:`~repro.core.claims.Measured` per claim id, from the ``summary`` table of a run."""
    ok, why = comparable(params, dataset, device)
    gate = None if ok else V.not_comparable(why)
    s, selected = shared(summary), trained(summary)
    if not selected:
        return {cid: _not_measured("no run of the shared variant") for cid in (*ACCURACY_CLAIMS.values(), *RUN_CLAIMS)}
    out = {cid: _accuracy(opt, s, gate, selected) for opt, cid in ACCURACY_CLAIMS.items()}
    out.update(orderings(s, gate, selected))
    out.update(losses(s, gate, selected))
    out["data_type_and_size"] = _claims.Measured(ours="–", basis="none", runs=0, gate=ONE_DATASET)
    if s.empty:  # none of the seven: nothing of the paper's protocol to time
        none = V.not_selected(f"needs optimizers to include at least one of the paper's seven "
                              f"({', '.join(OPTIMIZERS)}); this run's optimizers: {', '.join(selected)}")
        out.update(dict.fromkeys(("epochs_to_converge", "hours_per_optimizer"),
                                 _claims.Measured(ours="–", basis="none", runs=0, gate=none)))
        out["conclusion_adam_nadam"] = _untestable(OPTIMIZERS, selected, ALL_SEVEN)
        return out
    runs = int(s["seeds"].min())
    top2 = top_two(s)
    out["conclusion_adam_nadam"] = _lacking(s, OPTIMIZERS, selected, ALL_SEVEN) or _claims.Measured(
        ours="top two: " + ", ".join(LABELS[o] for o in sorted(top2)), holds=top2 == {"adam", "nadam"},
        gate=gate, runs=runs)
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
    every = summary[summary["variant"] == "shared"].set_index("optimizer")
    for opt in params.optimizers:
        if opt not in ACCURACY_CLAIMS:  # trained beyond the paper's seven: shown, judged against nothing
            rows.append({"optimizer": LABELS[opt], "paper": NO_CLAIM, "ours_final_accuracy":
                         float(every.loc[opt, "final_accuracy"]), "ours_rank": None, "verdict": NO_CLAIM})
            continue
        row = verdicts.loc[ACCURACY_CLAIMS[opt]]
        rows.append({"optimizer": LABELS[opt], "paper": row["paper_value"],
                     "ours_final_accuracy": float(s.loc[opt, "final_accuracy"]),
                     "ours_rank": int(s.loc[opt, "rank"]), "verdict": row["verdict"]})
    return pd.DataFrame(rows)


CONCLUSIONS = ["variant", "claim", "holds", "evidence"]  # the columns of the conclusions table, also when empty


def conclusions(summary: pd.DataFrame) -> pd.DataFrame:
    """The paper's conclusion tested on our data, for the shared and the tuned variant (yes/no per variant);
    by final test loss too where the summary has it (:func:`with_final_loss`). A row whose optimizers the
    variant did not train reads *not testable with this selection* (holds empty); no variant, no rows."""
    band = _claims.load(NAME)["nadam_close"].band
    if band is None:
        raise _claims.ClaimsError("optimizers/claims.yaml: nadam_close needs a band")
    rows = []
    for variant in ("shared", "tuned"):
        if ran := trained(summary, variant):
            rows += [{"variant": variant, **r} for r in _conclusions(paper_rows(summary, variant), ran, band[1])]
    return pd.DataFrame(rows, columns=CONCLUSIONS)


def _conclusions(s: pd.DataFrame, ran: list[str], close: float) -> list[dict]:
    """The rows of :func:`conclusions` of one variant (``s``: its rows of the seven; ``ran``: what it trained)."""
    def untestable(claim: str, needs, about: str = "") -> dict:
        return {"claim": claim, "holds": None, "evidence": str(V.needs_selection("optimizers", needs, ran, about))}

    best, top, near = ("Adam is the most accurate of the seven", "Adam and Nadam are the two most accurate",
                       f"Nadam is almost the same as Adam (within {close * 100:g} points)")
    best_loss, top_loss = ("Adam has the lowest final test loss of the seven",
                           "Adam and Nadam have the two lowest final test losses")
    seven = all(o in s.index for o in OPTIMIZERS)
    rows = []
    if seven:
        top2 = top_two(s)
        rows += [{"claim": best, "holds": bool(s.loc["adam", "rank"] == 1),
                  "evidence": f"Adam ranks {int(s.loc['adam', 'rank'])} of {len(s)}"},
                 {"claim": top, "holds": top2 == {"adam", "nadam"},
                  "evidence": "top two: " + ", ".join(LABELS[o] for o in sorted(top2))}]
    else:
        rows += [untestable(best, OPTIMIZERS, ALL_SEVEN), untestable(top, OPTIMIZERS, ALL_SEVEN)]
    if {"adam", "nadam"} <= set(s.index):
        gap = abs(s.loc["adam", "final_accuracy"] - s.loc["nadam", "final_accuracy"])
        rows.append({"claim": near, "holds": bool(gap <= close), "evidence": f"gap {gap:.3f}"})
    else:
        rows.append(untestable(near, ("adam", "nadam")))
    if "final_loss" not in s:  # a run whose tables record no test loss
        return rows
    if not seven:
        return rows + [untestable(best_loss, OPTIMIZERS, ALL_SEVEN), untestable(top_loss, OPTIMIZERS, ALL_SEVEN)]
    rank, low2, adam_loss = loss_rank(s), lowest_two_losses(s), float(s.loc["adam", "final_loss"])
    return rows + [{"claim": best_loss, "holds": bool(rank["adam"] == 1),
                    "evidence": f"Adam ranks {rank['adam']} of {len(s)} by loss ({adam_loss:.3f})"},
                   {"claim": top_loss, "holds": set(low2) == {"adam", "nadam"},
                    "evidence": "lowest two: " + ", ".join(LABELS[o] for o in low2)}]
