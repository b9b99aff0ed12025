"""The staleness judges on tables with several rows per key: the rows each one must pick (the largest N,
k = 1 and the largest k of it, the grid's local steps, the fixed-delay rows, the largest tau) are not the
first rows, so a judge that picks another gives another "ours", gate or verdict. Kills mutants that the
falsification cases' small tables leave alive (docs/developing.md, mutation testing)."""

from __future__ import annotations

import pandas as pd

from repro.core import paramtypes
from repro.experiments.staleness import verdicts as v

PS = pd.DataFrame([(1, 1, 100, 0.10), (2, 1, 50, 0.10), (2, 40, 2, 0.004),
                   (4, 10, 3, 0.02), (4, 1, 25, 0.20), (4, 40, 1, 0.01)],
                  columns=["workers", "period", "rounds", "comm_mb"])
FINAL = pd.DataFrame([("state", 4, 1, 999), ("grid", 2, 1, 50), ("grid", 4, 10, 25), ("grid", 4, 1, 25)],
                     columns=["part", "workers", "period", "local_steps"])
SUMMARY = {"equivalence": {"workers": 4, "rounds": 5, "global_batch": 128, "max_abs_weight_difference": 1e-7},
           "state_optimizer_state_bytes": 8_000_000, "weight_bytes": 4_000_000}
P = paramtypes.partial(v.NAME, {"state_optimizer": "adam", "workers": [1, 2, 4], "batch_size": 32})


def _averaging(ps=PS, final=FINAL, summary=SUMMARY):
    return v._averaging({"period_summary": ps, "averaging_final": final}, summary, P, 3)


def test_the_round_per_minibatch_row_reads_the_largest_n_at_k1_and_its_largest_k():
    out = _averaging()
    k1 = out["k1_round_per_minibatch"]
    assert k1.ours == ("N = 4: k = 1 needs 25 rounds for 25 local steps (0.20 MB per worker and direction); "
                       "k = 40: 1 rounds (0.01 MB)")
    assert k1.runs == 3 and k1.gate.category.value == "not comparable"
    assert k1.gate.detail == "true by construction of our averaging: rounds = local steps"
    # the counterfactual: a round count that is not the local steps is named a bug
    bug = _averaging(ps=PS.assign(rounds=PS["rounds"].where(PS["period"] != 1, 24)))
    assert bug["k1_round_per_minibatch"].gate.detail.endswith("rounds != local steps, a bug")
    # with one worker only there is nothing to count
    one = _averaging(ps=PS[PS["workers"] == 1])["k1_round_per_minibatch"]
    assert (one.ours, one.basis, one.runs, one.gate.category.value) == (
        "no multi-worker run", "none", 0, "not testable here")


def test_the_identity_and_the_state_traffic_rows():
    out = _averaging()
    eq = out["k1_equals_single_machine"]
    assert eq.ours == "max |w_avg - w_single| = 1.0e-07 after 5 rounds (N = 4, plain SGD, global batch 128, small CNN)"
    assert (eq.holds, eq.basis, eq.runs, eq.gate.detail) == (True, "equations", 0, v.IDENTITY)
    assert eq.gate.category.value == "not comparable"  # an identity that tests our code: never decided
    far = dict(SUMMARY, equivalence=dict(SUMMARY["equivalence"], max_abs_weight_difference=1.0))
    bad = _averaging(summary=far)["k1_equals_single_machine"]
    assert bad.holds is False and bad.gate.detail.startswith("max difference 1.0e+00 > ")
    st = out["state_adds_traffic"]
    assert st.ours == "adam state is 2x the weights: a round moves 12.000 MB instead of 4.000 MB per worker"
    assert st.runs == 3 and st.gate.detail.endswith("the sizes are counted, nothing is measured")
    none = _averaging(summary=dict(SUMMARY, state_optimizer_state_bytes=0))["state_adds_traffic"]
    assert none.ours.startswith("adam state is 0x the weights: a round moves 4.000 MB")
    assert none.gate.detail.endswith("the sizes are zero: no state, nothing is measured")


TS = pd.DataFrame([("uniform", 8, 0.30, 0.01), ("fixed", 0, 0.0, 0.005), ("fixed", 8, 0.06, 0.01),
                   ("fixed", 2, 0.01, 0.01), ("fixed", 4, 0.05, 0.005), ("fixed", 16, 0.04, 0.01)],
                  columns=["tau_dist", "tau", "drop_vs_sync", "acc_sd"])


def test_staleness_hurts_reads_the_fixed_delays_and_the_first_tau_beyond_the_spread():
    m = v.hurts_measure(TS, 3)
    assert m.ours == ("tau = 16 (fixed): -4.0 pts vs tau = 0; first tau losing more than 2.0 pts beyond the "
                      "seed spread: 4")
    assert (m.holds, m.basis, m.runs) == (True, "emulated", 3) and m.note == v.injected("fixed")
    # tau = 4's loss within its seed spread (2 x 0.03 > 0.05): the first clear loss is tau = 8
    wide = TS.copy()
    wide.loc[4, "acc_sd"] = 0.03
    assert v.hurts_measure(wide, 3).ours.endswith("beyond the seed spread: 8")
    # the counterfactual: no tau loses more than 2 points: the claim does not hold
    mild = TS.assign(drop_vs_sync=TS["drop_vs_sync"].clip(upper=0.015))
    m = v.hurts_measure(mild, 3)
    assert m.holds is False and m.ours == "tau = 16 (fixed): -1.5 pts vs tau = 0"
    assert m.note.startswith("no tau up to 16 loses more than 2.0 pts beyond the seed spread; ")
    # only other delay distributions: those rows are judged; no tau > 0 at all: not measured
    assert v.hurts_measure(TS[TS["tau_dist"] == "uniform"], 3).ours.startswith("tau = 8 (uniform): -30.0 pts")
    none = v.hurts_measure(TS[TS["tau"] == 0], 3)
    assert (none.basis, none.gate.category.value) == ("none", "not measured")
