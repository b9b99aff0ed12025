"""What ``repro predict`` prints: a prediction with its interval and what the model cannot say, or a validation.
The command line (:mod:`repro.cli`) parses the arguments and prints these texts; everything about the model is here."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import billing, loso, measured, perfmodel


def validation(what: str, run_dir: Path | None = None) -> str:
    """``--validate``: leave one source out (``loso``), the train/test split of the published set
    (``measurements``) or a .csv of the user's, or an emulated run's directory (``run_dir``, resolved by the caller)."""
    if what == "loso":
        return loso.report(loso.evaluate())
    if what == "measurements" or what.endswith(".csv"):
        return measured.report(None if what == "measurements" else what)
    table = perfmodel.validate(run_dir if run_dir is not None else Path(what))
    return (table.to_string(index=False, float_format=lambda v: f"{v:.3f}")
            + f"\nlargest error: {table['error'].abs().max():.1%} over {len(table)} emulated clusters")


def prediction(prof, model: str, methods: list[str], workers: list[int], batch: int, parameters: int | None = None,
               ps: int = 1, prices: str | None = None) -> str:
    """One model's table on ``prof`` for every method and worker count, with its 80 % interval, the billed cost
    where the profile names an instance, the batch assumption and what is not modelled."""
    fitted = prof.overlap and not prof.step_overhead  # a real topology without its own overhead: the fitted one
    regimes = {m: loso.regime_of(prof, m, workers) for m in methods}
    table = pd.concat([loso.with_interval(perfmodel.predict(prof, model, m, workers, batch, parameters, ps,
                                                            measured.overhead_for(m) if fitted else None), regimes[m])
                       for m in methods])
    cols = ["method", "workers", "images_per_s", "images_low", "images_high", "efficiency", "efficiency_low",
            "efficiency_high", "compute_s", "comm_s"]
    lines = [f"{model} on {prof.name} ({prof.link} links), batch {batch} per worker: the analytic model "
             "(repro.predict.perfmodel), no measurement; *_low / *_high: each row's own 80 % interval from the "
             "model's errors on published clusters it was not fitted to (repro predict --validate loso), wider where "
             "more of the step is exposed communication"
             + ("; per-step overhead fitted on published measurements" if fitted else "")]
    lines += [interval_line(table, m, regimes[m]) for m in methods]
    if prof.batch and batch != prof.batch:
        lines.append(f"note: the profile's images/s were measured at batch {prof.batch}; at batch {batch} the model "
                     "assumes the time to compute a step's gradients scales linearly with the batch")
    if prof.instance:
        table, head = billing.epoch_costs(table, prof, prices)
        cols += ["instances", "epoch_s", "cost_per_epoch", "cheapest"]
        lines.append(head)
    lines.append(table[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    lines += ["where each step's time goes (shares of the step) and the term that limits scaling:",
              breakdown(table).to_string(index=False, float_format=lambda v: f"{v:.3f}")]
    lines.append("not modelled: " + "; ".join(perfmodel.limits(prof, model) + list(perfmodel.NOT_MODELLED)))
    return "\n".join(lines)


def interval_line(table: pd.DataFrame, method: str, regime: str) -> str:
    """How ``method``'s rows of ``table`` got their intervals: the regime's leave-one-source-out residuals, each
    divided by its point's ``sqrt(floor + exposed share)`` (:func:`repro.predict.loso.scaled_quantiles`), their 10th
    and 90th percentiles times each row's own factor; the narrowest and widest of the rows with N > 1 (before the
    efficiency is clipped to 0-1)."""
    q10, q90, floor = loso.scaled_quantiles(regime)
    g = table[(table["method"] == method) & (table["workers"] > 1)]
    head = (f"interval of {method} (regime '{regime}'): efficiency {q10:+.2f} to {q90:+.2f} times sqrt({floor:.3f} + "
            "the row's exposed share of its step), the 10th and 90th percentiles of the regime's leave-one-source-out "
            "residuals, each divided by its point's same factor")
    if g.empty:
        return head
    share = (g["exposed_s"] / (g["compute_s"] + g["comm_s"])).clip(0.0, 1.0)
    width = loso.scale(share, floor)
    ends = [(int(g.loc[i, "workers"]), q10 * width[i], q90 * width[i]) for i in (width.idxmin(), width.idxmax())]
    span = "; ".join(dict.fromkeys(f"{lo:+.2f} to {hi:+.2f} at N = {n}" for n, lo, hi in ends))
    return f"{head}: here {span}"


def breakdown(table: pd.DataFrame) -> pd.DataFrame:
    """Per method and worker count, the shares of a step that are compute, exposed communication (not hidden
    behind the backward pass), per-step overhead (a share of compute) and latency (seconds), and input (waiting for
    the host's input pipeline), with the term that limits scaling (:func:`perfmodel.limit`)."""
    parts = ["compute_s", "exposed_s", "overhead_s", "latency_s", "input_s"]
    total = table[parts].sum(axis=1)
    out = table[["workers", "method"]].copy()
    for p in parts:
        out[p.replace("_s", "")] = table[p] / total
    return out.assign(limit=table["limit"])
