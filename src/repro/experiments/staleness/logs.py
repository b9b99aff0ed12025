"""Staleness logs (`savchenko2019`, digest §5): the format a real asynchronous run writes, its analysis,
and the ``repro staleness-log`` command.

One row per update a worker pushed to the parameter server (:data:`LOG_COLUMNS`); see
:func:`read_staleness_log`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from repro.core import errors

LOG_COLUMNS = ("update", "worker", "read_version", "apply_version", "staleness")


StalenessLogError = errors.BadInput  # A staleness log that does not follow :data:`LOG_COLUMNS` (one-line message).


def read_staleness_log(log) -> pd.DataFrame:
    """Validate a staleness log (a CSV path or a DataFrame) and return it as a DataFrame.

    Format, one row per update a worker pushed to the parameter server:

    ``update``        1-based index of the server update this gradient went into
    ``worker``        worker id
    ``read_version``  number of server updates applied when the worker read the parameters
    ``apply_version`` number of server updates applied just before this one was applied
    ``staleness``     ``apply_version - read_version``: updates applied since the worker read

    Only ``staleness`` is required (non-negative integers); when ``read_version`` and
    ``apply_version`` are present they must agree with it.
    """
    if isinstance(log, (str, Path)):
        path = Path(log)
        if not path.is_file():
            raise StalenessLogError(f"staleness log {path} does not exist")
        try:
            log = pd.read_csv(path)
        except Exception as exc:  # noqa: BLE001 - one line for any parse failure
            raise StalenessLogError(f"staleness log {path} is not a CSV file ({type(exc).__name__})") from None
    df = pd.DataFrame(log).copy()
    if "staleness" not in df.columns:
        if {"read_version", "apply_version"} <= set(df.columns):
            df["staleness"] = df["apply_version"] - df["read_version"]
        else:
            raise StalenessLogError("staleness log needs a 'staleness' column (or 'read_version' and 'apply_version')")
    s = pd.to_numeric(df["staleness"], errors="coerce")
    if s.isna().any() or (s < 0).any() or (s != np.floor(s)).any():
        raise StalenessLogError("staleness values must be non-negative integers")
    df["staleness"] = s.astype(int)
    if {"read_version", "apply_version"} <= set(df.columns):
        if not (df["apply_version"] - df["read_version"] == df["staleness"]).all():
            raise StalenessLogError("staleness must equal apply_version - read_version in every row")
    return df


def _counts(log) -> np.ndarray:
    if isinstance(log, (pd.DataFrame, str, Path)):
        return read_staleness_log(log)["staleness"].to_numpy()
    arr = np.asarray(list(log))
    return read_staleness_log(pd.DataFrame({"staleness": arr}))["staleness"].to_numpy()


def staleness_summary(log) -> dict:
    """Per-update staleness counts (a list, or a log as in :func:`read_staleness_log`) -> statistics."""
    s = _counts(log)
    if len(s) == 0:
        raise StalenessLogError("staleness log is empty")
    return {"updates": int(len(s)), "mean": float(s.mean()), "median": float(np.median(s)),
            "p90": float(np.percentile(s, 90)), "min": int(s.min()), "max": int(s.max()), "std": float(s.std())}


def staleness_distribution(log) -> pd.DataFrame:
    """Distribution of the staleness counts: one row per value (staleness, count, fraction)."""
    s = _counts(log)
    if len(s) == 0:
        raise StalenessLogError("staleness log is empty")
    values, counts = np.unique(s, return_counts=True)
    return pd.DataFrame({"staleness": values.astype(int), "count": counts.astype(int),
                         "fraction": counts / counts.sum()})


# ----------------------------------------------------------------------------------------------
# Command line: analyse a staleness log
# ----------------------------------------------------------------------------------------------

def _cmd_staleness_log(args) -> int:

    summary = staleness_summary(args.log)
    dist = staleness_distribution(args.log)
    print(f"updates {summary['updates']}  mean staleness {summary['mean']:.3f}  median {summary['median']:g}  "
          f"p90 {summary['p90']:g}  max {summary['max']}")
    if args.workers:
        print(f"mean / N = {summary['mean'] / args.workers:.3f}   (the paper: mean staleness = N)")
    for r in dist.itertuples():
        print(f"  {r.staleness:>5}  {r.count:>8}  {r.fraction:7.2%}")
    return 0


def add_cli(subparsers) -> None:
    """``repro staleness-log LOG.csv [--workers N]``: distribution and mean of a per-update staleness log."""
    p = subparsers.add_parser("staleness-log",
                              help="staleness distribution and mean of an async run's per-update log (CSV)")
    p.add_argument("log", help="CSV with a 'staleness' column (or read_version and apply_version); see "
                               "repro.experiments.staleness.experiment.LOG_COLUMNS")
    p.add_argument("--workers", type=int, default=None, help="N, to print mean staleness / N")
    p.set_defaults(func=_cmd_staleness_log)
