"""The last staleness judges the mutation run showed untested (docs/developing.md, mutation testing): the seed-spread
check on a summary table written without an ``acc_sd`` column (the judges read a missing sd as no spread, they do not
fail), a longer period that loses exactly the acceptable drop (within it, as in every other judge), and the
optimizer-state traffic shown for a large model in the MB the text says. Every table is built here."""

from __future__ import annotations

import pandas as pd

from repro.core import claims, paramtypes
from repro.experiments.staleness import verdicts as v

RUNS = 3


def _row(cid: str, m) -> dict:
    """The ledger row of one measurement (category, basis, runs as the reader sees them)."""
    return claims.row(claims.load(v.NAME)[cid], m)


# ---------------------------------------------------------------------------------------------
# Tables without a seed sd: a clear loss is judged (no spread to clear), not an error
# ---------------------------------------------------------------------------------------------

def test_period_table_without_seed_sd_judges_the_loss_and_the_longer_period():
    ps = pd.DataFrame([(1, 1, 0.0), (2, 1, 0.0), (2, 10, 0.05), (2, 20, 0.0), (2, 64, 0.05)],
                      columns=["workers", "period", "drop_vs_k1"])
    m = v.period_measure(ps, RUNS)
    assert (m.holds, m.runs) == (False, RUNS) and _row("period_10_20_acceptable", m)["category"] == "differs"
    assert m.note == "N = 2, k = 10 loses 5.0 pts > 2.0"
    assert m.ours.startswith("accuracy vs k = 1 (acceptable: within 2.0 pts): N = 2, k = 10: -5.0 pts")


def test_tau_table_without_seed_sd_judges_the_loss():
    ts = pd.DataFrame([("fixed", 0, 0.0), ("fixed", 8, 0.05)], columns=["tau_dist", "tau", "drop_vs_sync"])
    m = v.hurts_measure(ts, RUNS)
    assert (m.holds, m.basis, m.runs) == (True, "emulated", RUNS)
    assert _row("staleness_hurts", m)["category"] == "consistent"
    assert m.ours == ("tau = 8 (fixed): -5.0 pts vs tau = 0; first tau losing more than 2.0 pts beyond the "
                      "seed spread: 8")


# ---------------------------------------------------------------------------------------------
# Optimizer-state traffic in MB (10^6 bytes) for a large model
# ---------------------------------------------------------------------------------------------

def test_state_traffic_is_shown_in_megabytes_of_a_million_bytes():
    ps = pd.DataFrame([(1, 1, 0, 0.0)], columns=["workers", "period", "rounds", "comm_mb"])
    final = pd.DataFrame([("grid", 1, 1, 100)], columns=["part", "workers", "period", "local_steps"])
    summary = {"equivalence": {"workers": 2, "rounds": 5, "global_batch": 64, "max_abs_weight_difference": 1e-8},
               "state_optimizer_state_bytes": 600_000_000, "weight_bytes": 600_000_000}  # a 600 MB model, momentum
    out = v._averaging({"period_summary": ps, "averaging_final": final}, summary,
                       paramtypes.partial(v.NAME, {"state_optimizer": "momentum", "workers": [1], "batch_size": 32}),
                       RUNS)
    st = out["state_adds_traffic"]
    assert st.ours == ("momentum state is 1x the weights: a round moves 1200.000 MB instead of 600.000 MB "
                       "per worker")
    assert _row("state_adds_traffic", st)["category"] == "not comparable"
