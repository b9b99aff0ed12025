"""The staleness judges on tables with several rows per key: the rows each one must pick (the largest N,
k = 1 and the largest k of it, the grid's local steps, the fixed-delay rows, the largest tau) are not the
first rows, so a judge that picks another gives another "ours", gate or verdict. Then which seed sd a spread
check reads (and a summary written without an ``acc_sd`` column: no spread, not an error), the exact edges of
the thread intervals, the rows a judge must skip (tau = 0, a missing variant) or keep (tau = 1, N = 2, a lone
k = 1), the sticky 'worse' of the combination, the learning-rate control that is missing or better, the
optimizer-state traffic in MB, and the ledger's basis and runs on every gated branch. Kills mutants that the
falsification cases' small tables leave alive (docs/developing.md, mutation testing)."""

from __future__ import annotations

import pandas as pd

from repro.core import claims, harness, paramtypes, results
from repro.core import verdicts as V
from repro.experiments.staleness import verdicts as v
from repro.experiments.staleness.study import EQUIVALENCE_STEPS

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
    # -p taus=4,16 (issue 57): no tau = 0, no loss to measure: not a claim that fails
    no_sync = v.hurts_measure(TS[TS["tau"] > 0].assign(drop_vs_sync=NAN), 3)
    assert (no_sync.basis, no_sync.holds, no_sync.gate.category) == ("none", None, V.Category.NOT_SELECTED)
    assert no_sync.gate.detail == "needs taus to include 0; this run's taus: 2, 4, 8, 16"


NAN = float("nan")
RUNS = 3
CORES = 4  # the run's cores: the thread tables' N = 2, 4 do not outnumber them


def _row(cid: str, m) -> dict:
    """The ledger row of one measurement (category, basis, runs as the reader sees them)."""
    return claims.row(claims.load(v.NAME)[cid], m)


# ---------------------------------------------------------------------------------------------
# The seed-spread rule and the k = 1 identity
# ---------------------------------------------------------------------------------------------

def test_spread_rule_counts_a_missing_sd_as_zero_and_is_strict():
    c = v.claim("staleness_hurts")
    assert v.clears(0.05, NAN, 0.01, c)  # one seed (sd NaN) counts as 0: the other row's sd decides
    assert not v.clears(0.05, NAN, 0.03, c)  # 0.05 < 2 x 0.03
    assert v.clears(0.001, NAN, NAN, c)  # no spread at all: any difference clears it
    assert not v.clears(0.04, 0.02, NAN, c)  # |diff| = 2 x sd exactly is not beyond the spread


def test_equivalence_rebuilt_from_the_parameters_and_its_inclusive_threshold():
    eq = v.equivalence({"equivalence_max_abs_difference": 2e-7},
                       paramtypes.partial(v.NAME, {"workers": [1, 2], "batch_size": 32}))
    assert eq == {"workers": 2, "rounds": EQUIVALENCE_STEPS, "global_batch": 64, "max_abs_weight_difference": 2e-7}
    at_tol = v.equivalence_measure({**eq, "max_abs_weight_difference": 1e-5})  # at most 1e-5: our code is the mean
    assert at_tol.holds is True and at_tol.gate.detail == v.IDENTITY  # shown, never decided: it tests our code


def test_injected_names_the_distribution_in_words():
    assert v.injected("geometric") == ("delays injected in one process (the async emulation), "
                                       + v.INJECTED["geometric"])
    assert "capped at 10 tau" in v.injected("geometric")


# ---------------------------------------------------------------------------------------------
# Averaging rows: N = 2 is multi-worker, k_max of the largest N, a grid with k = 1 only, momentum state
# ---------------------------------------------------------------------------------------------

def _momentum_averaging(ps, final, summary=None):
    summary = summary or {"equivalence": {"workers": 2, "rounds": 5, "global_batch": 64,
                                          "max_abs_weight_difference": 1e-8},
                          "state_optimizer_state_bytes": 4000, "weight_bytes": 4000}
    return v._averaging({"period_summary": ps, "averaging_final": final}, summary,
                        paramtypes.partial(v.NAME, {"state_optimizer": "momentum", "workers": [1, 2],
                                                    "batch_size": 32}), RUNS)


def test_round_per_minibatch_with_two_workers_and_k1_only():
    ps = pd.DataFrame([(1, 1, 0, 0.0), (2, 1, 50, 0.10)], columns=["workers", "period", "rounds", "comm_mb"])
    final = pd.DataFrame([("grid", 1, 1, 100), ("grid", 2, 1, 50)], columns=["part", "workers", "period", "local_steps"])
    out = _momentum_averaging(ps, final)
    k1 = out["k1_round_per_minibatch"]
    assert k1.ours == ("N = 2: k = 1 needs 50 rounds for 50 local steps (0.10 MB per worker and direction); "
                       "k = 1: 50 rounds (0.10 MB)")
    assert k1.gate.detail == "true by construction of our averaging: rounds = local steps"
    # momentum: one state slot per weight (ratio 1): counted, not 'zero: no state'
    st = out["state_adds_traffic"]
    assert st.ours == "momentum state is 1x the weights: a round moves 0.008 MB instead of 0.004 MB per worker"
    assert st.gate.detail.endswith("the sizes are counted, nothing is measured")


def test_round_per_minibatch_reads_the_largest_k_of_the_largest_n():
    ps = pd.DataFrame([(1, 1, 0, 0.0), (2, 1, 50, 0.10), (2, 64, 1, 0.002), (4, 1, 25, 0.20), (4, 10, 3, 0.02)],
                      columns=["workers", "period", "rounds", "comm_mb"])
    final = pd.DataFrame([("grid", 4, 1, 25), ("grid", 4, 10, 25)], columns=["part", "workers", "period", "local_steps"])
    k1 = _momentum_averaging(ps, final)["k1_round_per_minibatch"]
    assert k1.ours.startswith("N = 4: k = 1 needs 25 rounds for 25 local steps")
    assert k1.ours.endswith("k = 10: 3 rounds (0.02 MB)")


# ---------------------------------------------------------------------------------------------
# "10-20 minibatches": the k = 1 seed spread, the inclusive 2 points, the words of the verdict
# ---------------------------------------------------------------------------------------------

def _periods(rows) -> pd.DataFrame:
    """(N, k, acc_sd, drop_vs_k1) rows; N = 1 k = 1 added."""
    return pd.DataFrame([(1, 1, 0.005, 0.0), *rows], columns=["workers", "period", "acc_sd", "drop_vs_k1"])


def test_period_without_a_k_between_10_and_20_is_not_testable():
    m = v.period_measure(_periods([(2, 1, 0.005, 0.0), (2, 64, 0.005, 0.01)]), RUNS)
    row = _row("period_10_20_acceptable", m)
    assert (row["category"], row["basis"], row["runs"]) == ("not testable here", "none", 0)
    assert m.ours == "no period between 10 and 20 in this profile"


def test_periods_without_k1_are_not_testable_with_this_selection_never_a_failure():
    """``-p periods=16`` (issue 57): no N > 1 run with k = 1 to lose against; the row names the parameter, it does not
    read the missing reference as a loss."""
    m = v.period_measure(_periods([(2, 16, 0.005, float("nan"))]), RUNS)
    row = _row("period_10_20_acceptable", m)
    assert (row["category"], row["basis"], m.holds) == ("not testable with this selection", "none", None)
    assert m.gate.detail == ("needs periods to include 1 (the reference every period's loss is measured against); "
                             "this run's periods: 16")
    with_k1 = v.period_measure(_periods([(2, 1, 0.005, 0.0), (2, 16, 0.005, 0.10)]), RUNS)  # the counterfactual
    assert with_k1.holds is False


def test_period_loss_within_the_k1_seed_spread_is_not_comparable():
    # k = 10 loses 3 pts > 2, but k = 1's seed sd is 2 pts: 3 < 2 x 2, within the spread
    m = v.period_measure(_periods([(2, 1, 0.02, 0.0), (2, 10, 0.005, 0.03), (2, 20, 0.005, 0.0)]), RUNS)
    row = _row("period_10_20_acceptable", m)
    assert (row["category"], row["runs"], m.holds) == ("not comparable", RUNS, None)
    assert m.gate.detail == "N = 2, k = 10 loses 3.0 pts > 2.0, but within the seed spread"


def test_period_loss_of_exactly_two_points_is_acceptable():
    two = 0.85 - 0.83  # 0.020000000000000018: two points as the accuracies give them
    m = v.period_measure(_periods([(2, 1, 0.005, 0.0), (2, 10, 0.005, two), (2, 20, 0.005, 0.005)]), RUNS)
    assert m.holds is None and m.runs == RUNS  # 10-20 acceptable; with no much longer period, nothing to contrast
    assert m.gate.detail == ("the grid cannot tell periods apart: no period k >= 60 was run; 10-20 acceptable at "
                             "k = 10, 20")
    assert m.ours == ("accuracy vs k = 1 (acceptable: within 2.0 pts): N = 2, k = 10: -2.0 pts; N = 2, k = 20: "
                      "-0.5 pts; much longer periods: none run (k >= 60)")


def test_period_names_every_clear_loss():
    m = v.period_measure(_periods([(2, 1, 0.005, 0.0), (2, 10, 0.005, 0.10), (2, 20, 0.005, 0.05)]), RUNS)
    assert m.holds is False and _row("period_10_20_acceptable", m)["category"] == "differs"
    assert m.note == "N = 2, k = 10 loses 10.0 pts > 2.0, N = 2, k = 20 loses 5.0 pts > 2.0"


def test_period_range_needs_both_ends_for_every_n():
    m = v.period_measure(_periods([(2, 1, 0.005, 0.0), (2, 16, 0.005, 0.0), (4, 1, 0.005, 0.0),
                                   (4, 10, 0.005, 0.0), (4, 20, 0.005, 0.0)]), RUNS)
    assert m.gate.category.value == "partly" and m.runs == RUNS
    assert m.gate.detail == ("acceptable at k = 10, 16, 20; the range 10-20 needs k = 10 and k = 20 for every N, "
                             "missing N = 2: k = 10, N = 2: k = 20")


def test_much_longer_periods_each_status_against_k1_and_the_worst_of_10_20():
    c = v.claim("period_10_20_acceptable")
    multi = pd.DataFrame([(2, 1, 0.02, 0.0), (2, 20, 0.005, 0.0), (2, 64, 0.005, 0.03),  # k = 1's sd 2 pts: unclear
                          (4, 1, 0.005, 0.0), (4, 10, 0.005, 0.0), (4, 64, 0.02, 0.03),  # its own sd 2 pts: flat
                          (8, 1, 0.005, 0.0), (8, 10, 0.005, -0.04), (8, 64, 0.005, 0.0),  # 4 pts below 10: acceptable
                          (16, 1, 0.005, 0.0), (16, 20, 0.005, 0.0), (16, 60, 0.005, 0.05),  # k = 60 counts: fails
                          (32, 1, 0.005, 0.0), (32, 20, 0.005, 0.0), (32, 59, 0.005, 0.05)],  # k = 59 is not 'much'
                         columns=["workers", "period", "acc_sd", "drop_vs_k1"])
    assert v._much_longer(multi, c) == [
        ("unclear", "N = 2, k = 64: -3.0 pts vs k = 1, -3.0 pts vs k = 20 (worse than 10-20, its loss within the "
                    "k = 1 seed spread)"),
        ("flat", "N = 4, k = 64: -3.0 pts vs k = 1, -3.0 pts vs k = 10 (no worse than 10-20 beyond the seed spread)"),
        ("acceptable", "N = 8, k = 64: +0.0 pts vs k = 1, -4.0 pts vs k = 10 (worse than 10-20, yet acceptable)"),
        ("fails", "N = 16, k = 60: -5.0 pts vs k = 1, -5.0 pts vs k = 20 (clearly worse)")]
    assert v._much_longer(multi[multi["period"] <= 20], c) == []
    # exactly 2 x the larger sd below 10-20 is not beyond the spread
    edge = pd.DataFrame([(2, 1, 0.005, 0.0), (2, 10, 0.005, 0.0), (2, 64, 0.005, 0.01)],
                        columns=["workers", "period", "acc_sd", "drop_vs_k1"])
    assert v._much_longer(edge, c)[0][0] == "flat"


def test_period_contrast_verdicts_on_each_status():
    def verdict(rows):
        return _row("period_10_20_acceptable", v.period_measure(_periods(rows), RUNS))["verdict"]
    mid = [(2, 1, 0.005, 0.0), (2, 10, 0.005, 0.0), (2, 20, 0.005, 0.0)]
    assert verdict(mid + [(2, 64, 0.005, 0.05)]).startswith("reproduced (acceptable at k = 10, 20 for every N > 1; "
                                                            "much longer periods clearly worse: N = 2, k = 64")
    assert verdict(mid + [(2, 64, 0.005, 0.0)]).startswith("not comparable (the grid cannot tell periods apart: N = 2")
    assert verdict([(2, 1, 0.02, 0.0), (2, 10, 0.005, 0.0), (2, 20, 0.005, 0.0), (2, 64, 0.005, 0.03)]).startswith(
        "not comparable (a much longer period is below 10-20, but its loss against k = 1 is within the seed spread")
    low = [(2, 1, 0.005, 0.0), (2, 10, 0.005, -0.03), (2, 20, 0.005, -0.03), (2, 64, 0.005, 0.0)]
    assert verdict(low).startswith(  # the seed's "may diverge" (issue 55): it refutes nothing
        "not comparable (a much longer period still works: N = 2, k = 64: +0.0 pts vs k = 1")
    # every N with a much longer period must fail: one N that does not respond leaves it open
    two = mid + [(2, 64, 0.005, 0.05), (4, 1, 0.005, 0.0), (4, 10, 0.005, 0.0), (4, 20, 0.005, 0.0),
                 (4, 64, 0.005, 0.0)]
    assert verdict(two).startswith("not comparable (the grid cannot tell periods apart: N = 4, k = 64")
    # 'acceptable' wins over 'fails' and 'flat': a responding grid that keeps a long period acceptable leaves it open
    assert verdict(two + [(8, 1, 0.005, 0.0), (8, 10, 0.005, -0.03), (8, 20, 0.005, -0.03),
                          (8, 64, 0.005, 0.0)]).startswith("not comparable (a much longer period still works: N = 8")


# ---------------------------------------------------------------------------------------------
# Thread staleness: the interval's exact edges, the upper edge, the words and runs of each branch
# ---------------------------------------------------------------------------------------------

def _threads(means, sd=0.1, runs=5, workers=None) -> pd.DataFrame:
    return pd.DataFrame({"workers": workers or [2, 4][:len(means)], "mean": means, "runs": runs,
                         "run_mean_sd": sd})


def test_thread_interval_edges_are_inclusive():
    # 16 runs, sd 0.5: half-width 2 x 0.5 / 4 = 0.25; N = 2: band [1.5, 2.5]
    th = _threads([0.75, 1.25, 0.25, 1.75], sd=0.5, runs=16, workers=[2, 2, 2, 2])
    where = [w for _, _, _, w in v._thread_intervals(th, v.claim("staleness_equals_n_threads"))]
    assert where == ["inside", "inside", "edge", "edge"]  # [1.5, 2.0], [2.0, 2.5] inside; [1.0, 1.5], [2.5, 3.0] touch


def test_thread_interval_straddling_the_upper_edge_is_not_comparable():
    # N = 2: 2.45 ± 0.11 straddles 2.5; N = 4: 3.55 ± 0.11 straddles 3.5
    m = v.thread_measure(_threads([1.45, 2.55], sd=0.12), CORES)
    row = _row("staleness_equals_n_threads", m)
    assert (row["category"], row["runs"], m.holds) == ("not comparable", 5, None)
    assert m.ours.startswith("N = 2: mean 2.45 ± 0.11; N = 4: mean 3.55 ± 0.11 over 5 run(s) per N")
    assert m.gate.detail == ("N = 2: 2.45 ± 0.11, N = 4: 3.55 ± 0.11 straddles the edge of N ± 0.5: "
                             "the seed spread cannot place the mean")


def test_thread_verdict_words_and_runs_on_each_branch():
    out = v.thread_measure(_threads([0.3, 1.2]), CORES)
    assert out.holds is False and out.note == "N = 2: 1.30 ± 0.09, N = 4: 2.20 ± 0.09 wholly outside N ± 0.5"
    ok = v.thread_measure(_threads([1.0, 3.05]), CORES)
    assert ok.holds is True and ok.note == "every interval inside N ± 0.5"
    assert _row("staleness_equals_n_threads", ok)["verdict"] == "reproduced (every interval inside N ± 0.5)"
    few = v.thread_measure(_threads([1.0, 3.05], runs=4), CORES)
    assert few.runs == 4 and few.gate.category.value == "not comparable"
    assert few.ours == ("N = 2: mean 2.00 ± 0.10; N = 4: mean 4.05 ± 0.10 over 4 run(s) per N (± 2 standard "
                        "errors over the runs; staleness = version created - version read; our log's "
                        "updates-since-read + 1; real threads, nothing injected; 4 cores)")
    one = v.thread_measure(_threads([1.0], sd=NAN, runs=1), CORES)
    assert one.ours.startswith("N = 2: mean 2.00 over 1 run(s) per N")  # no ± where there is no spread
    cheap = v.thread_measure(_threads([1.0, 3.05]), CORES, cheap="smoke profile: a pipeline check")
    assert cheap.runs == 5 and cheap.gate.detail == "smoke profile: a pipeline check"
    none = v.thread_measure(_threads([]), CORES)
    row = _row("staleness_equals_n_threads", none)
    assert (row["category"], row["basis"], row["runs"]) == ("not measured", "none", 0)


# ---------------------------------------------------------------------------------------------
# Staleness hurts: tau = 1 counts, tau = 0's seed sd counts
# ---------------------------------------------------------------------------------------------

def _taus(rows) -> pd.DataFrame:
    return pd.DataFrame([("fixed", *r) for r in rows], columns=["tau_dist", "tau", "acc_sd", "drop_vs_sync"])


def test_hurts_counts_tau_1():
    m = v.hurts_measure(_taus([(0, 0.005, 0.0), (1, 0.005, 0.05)]), RUNS)
    assert (m.holds, m.basis, m.runs) == (True, "emulated", RUNS)
    assert m.ours == ("tau = 1 (fixed): -5.0 pts vs tau = 0; first tau losing more than 2.0 pts beyond the "
                      "seed spread: 1")


def test_hurts_reads_the_seed_sd_of_tau_0():
    # tau = 8 loses 3 pts, but tau = 0's seed sd is 2 pts: within the spread, the claim does not hold
    m = v.hurts_measure(_taus([(0, 0.02, 0.0), (8, 0.005, 0.03)]), RUNS)
    assert m.holds is False and _row("staleness_hurts", m)["category"] == "inconsistent"
    assert m.note == "no tau up to 8 loses more than 2.0 pts beyond the seed spread; " + v.injected("fixed")


def test_hurts_on_a_profile_without_fixed_delays_reads_its_distribution_against_tau_0():
    """The study labels tau = 0 'fixed' whatever the profile's distributions: with geometric delays only, the
    claim is judged on them against that tau = 0 row (it was 'not measured' before: only tau = 0 was 'fixed')."""
    ts = pd.DataFrame([{"tau": 0, "tau_dist": "fixed", "acc_sd": 0.005, "drop_vs_sync": 0.0},
                       {"tau": 8, "tau_dist": "geometric", "acc_sd": 0.005, "drop_vs_sync": 0.06}])
    m = v.hurts_measure(ts, RUNS)
    assert (m.holds, m.basis) == (True, "emulated") and "tau = 8 (geometric)" in m.ours
    ts.loc[1, "drop_vs_sync"] = 0.01  # the counterfactual: within the acceptable drop
    assert v.hurts_measure(ts, RUNS).holds is False


def test_a_drop_of_exactly_the_threshold_is_within_it_in_every_judge():
    """0.85 - 0.83 = 0.020000000000000018 in floats: 2.0 points, not more than the 2-point acceptable drop."""
    drop = 0.85 - 0.83
    ts = pd.DataFrame([{"tau": 0, "tau_dist": "fixed", "acc_sd": 0.0, "drop_vs_sync": 0.0},
                       {"tau": 8, "tau_dist": "fixed", "acc_sd": 0.0, "drop_vs_sync": drop}])
    assert v.hurts_measure(ts, RUNS).holds is False
    ts.loc[1, "drop_vs_sync"] = drop + 1e-9
    assert v.hurts_measure(ts, RUNS).holds is True


# ---------------------------------------------------------------------------------------------
# Mitigations: accuracy words, staleness reduction, the combination
# ---------------------------------------------------------------------------------------------

def _at(rows) -> pd.DataFrame:
    """variant -> (acc_mean, acc_sd, emulated_time), indexed by variant."""
    return pd.DataFrame([(k, *r) for k, r in rows.items()],
                        columns=["variant", "acc_mean", "acc_sd", "emulated_time"]).set_index("variant")


def test_mitigation_accuracy_words_read_both_seed_sds():
    c = v.claim("mitigation_scaling")
    within = "accuracy +3.0 pts vs plain async SGD (within the seed spread: not comparable)"
    assert v._accuracy_text(_at({"none": (0.70, 0.005, 1500), "scaling": (0.73, 0.02, 1500)}), "scaling", c) == within
    assert v._accuracy_text(_at({"none": (0.70, 0.02, 1500), "scaling": (0.73, 0.005, 1500)}), "scaling", c) == within
    assert v._accuracy_text(_at({"none": (0.70, 0.005, 1500), "scaling": (0.75, 0.005, 1500)}), "scaling", c) == (
        "accuracy +5.0 pts vs plain async SGD (better beyond the seed spread)")


def test_bounded_accuracy_says_whether_the_emulated_time_was_equal():
    c = v.claim("mitigation_bounded")
    equal = _at({"none": (0.70, 0.005, 1500), "bounded": (0.70, 0.005, 1500)})
    assert v._accuracy_text(equal, "bounded", c) == (
        "accuracy +0.0 pts vs plain async SGD at equal emulated time (1500 vs 1500 slots, waiting charged) (a tie)")
    more = _at({"none": (0.70, 0.005, 1500), "bounded": (0.70, 0.005, 1501)})
    assert v._accuracy_text(more, "bounded", c) == (
        "accuracy +0.0 pts vs plain async SGD (bounded used more emulated time: 1501 vs 1500 slots, not comparable) "
        "(a tie)")


def _ms(rows) -> pd.DataFrame:
    """(tau, variant, acc_mean, acc_sd, mean_staleness) rows of a mitigation summary."""
    return pd.DataFrame(rows, columns=["tau", "variant", "acc_mean", "acc_sd", "mean_staleness"]).assign(
        emulated_time=1500.0)


def test_staleness_reduction_skips_tau_0_and_shows_the_ratio():
    ms = _ms([(0, "none", 0.80, 0.005, 0.0), (0, "soft_sync", 0.80, 0.005, 0.0),
              (16, "none", 0.70, 0.005, 16.0), (16, "soft_sync", 0.70, 0.005, 4.0)])
    m = v.staleness_reduction(ms, None, "soft_sync", "geometric", RUNS)
    row = _row("mitigation_soft_sync", m)
    assert (row["category"], row["basis"], row["runs"]) == ("not comparable", "emulated", RUNS)
    assert m.gate.detail.startswith("true by construction of the emulation")
    assert m.ours == ("mean staleness, plain async SGD -> soft_sync (geometric delays): tau = 16: 16.00 -> 4.00 "
                      "(x0.25); tau = 16: accuracy +0.0 pts vs plain async SGD (a tie)")


def test_staleness_reduction_keeps_tau_1_and_needs_every_tau():
    ms = _ms([(1, "none", 0.80, 0.005, 1.0), (1, "soft_sync", 0.80, 0.005, 0.5),
              (16, "none", 0.70, 0.005, 16.0), (16, "soft_sync", 0.70, 0.005, 4.0)])
    m = v.staleness_reduction(ms, None, "soft_sync", "geometric", RUNS)
    assert m.ours.startswith("mean staleness, plain async SGD -> soft_sync (geometric delays): "
                             "tau = 1: 1.00 -> 0.50 (x0.50); tau = 16: 16.00 -> 4.00 (x0.25); "
                             "tau = 1: accuracy +0.0 pts vs plain async SGD (a tie); tau = 16: ")
    # not reduced at tau = 8 although reduced at tau = 16: the emulation's rule is broken
    bad = _ms([(8, "none", 0.80, 0.005, 8.0), (8, "soft_sync", 0.80, 0.005, 8.0),
               (16, "none", 0.70, 0.005, 16.0), (16, "soft_sync", 0.70, 0.005, 4.0)])
    m = v.staleness_reduction(bad, None, "soft_sync", "geometric", RUNS)
    assert m.gate.detail.startswith("mean staleness not below plain async SGD's at every tau")
    assert m.gate.detail.endswith("a fault of the emulation, not a finding; " + v.injected("geometric"))


def test_staleness_reduction_without_plain_async_or_distribution():
    ms = _ms([(16, "scaling", 0.70, 0.005, 16.0), (16, "soft_sync", 0.70, 0.005, 4.0)])  # no 'none' run
    m = v.staleness_reduction(ms, None, "soft_sync", "geometric", RUNS)
    row = _row("mitigation_soft_sync", m)
    assert (m.ours, row["category"], row["basis"], row["runs"]) == ("–", "not measured", "none", 0)
    full = _ms([(16, "none", 0.70, 0.005, 16.0), (16, "scaling", 0.70, 0.005, 16.0)])
    nodist = v.staleness_reduction(full, None, "scaling", "geometric", RUNS)
    assert (nodist.basis, nodist.runs, nodist.gate.category.value) == ("none", 0, "not measured")  # nothing measured
    assert nodist.ours == "no staleness distribution of scaling at tau = 16"
    es = pd.DataFrame([{"part": "mitigation", "variant": "scaling", "tau": 16, "staleness": s, "count": n}
                       for s, n in [(0, 20), (4, 40), (16, 40)]])
    weighted = v.staleness_reduction(full, es, "scaling", "geometric", RUNS)
    assert weighted.ours.startswith("step-weighted mean staleness, plain async SGD -> scaling (geometric delays): "
                                    "tau = 16: 16.00 -> 2.46")


GOOD = {"none": 0.65, "scaling": 0.70, "soft_sync": 0.69, "scaling+soft_sync": 0.72,
        "lr_control:scaling+soft_sync": 0.60}


def _best(tau_rows: dict, sd: float = 0.005) -> pd.DataFrame:
    """{tau: {variant: acc_mean or (acc_mean, acc_sd)}} as a mitigation summary."""
    rows = []
    for tau, accs in tau_rows.items():
        for variant, a in accs.items():
            acc, s = a if isinstance(a, tuple) else (a, sd)
            rows.append((tau, variant, acc, s, 1.0))
    return _ms(rows)


def _best_row(tau_rows: dict):
    m = v.combined_best(_best(tau_rows), RUNS)
    return m, _row("scaling_soft_sync_best", m)


def test_combined_best_skips_tau_0_keeps_tau_1_and_shows_every_gap():
    worse_at_0 = {**GOOD, "scaling+soft_sync": 0.50}
    m, row = _best_row({0: worse_at_0, 16: GOOD})
    assert (m.holds, row["category"], row["basis"], row["runs"]) == (True, "consistent", "emulated", RUNS)
    assert m.ours == ("combination: tau = 16: +2.0 pts vs scaling alone, +3.0 pts vs soft_sync alone, "
                      "+12.0 pts vs its lr control, +7.0 pts vs no mitigation")
    m, _ = _best_row({1: GOOD, 16: GOOD})
    assert m.holds is True and m.ours.startswith("combination: tau = 1: +2.0 pts vs scaling alone")
    assert "; tau = 16: +2.0 pts vs scaling alone" in m.ours


def test_combined_best_needs_the_combination_and_one_mitigation_alone():
    only = {k: a for k, a in GOOD.items() if k not in ("scaling", "soft_sync")}
    m, row = _best_row({16: only})
    assert (m.ours, row["category"], row["basis"], row["runs"]) == ("–", "not measured", "none", 0)
    with_scaling = {k: a for k, a in GOOD.items() if k != "soft_sync"}
    m, row = _best_row({16: with_scaling})
    assert m.holds is True and row["category"] == "consistent"
    # soft_sync alone (no scaling run) 5 pts better than the combination: judged, and it does not hold
    with_soft = {**{k: a for k, a in GOOD.items() if k != "scaling"}, "soft_sync": 0.77}
    m, row = _best_row({16: with_soft})
    assert m.holds is False and row["category"] == "inconsistent"
    assert m.note == "below one mitigation alone beyond the seed spread at tau = 16"


def test_combined_best_equal_to_one_alone_is_best():
    m, row = _best_row({16: {**GOOD, "scaling": 0.72}})  # a gap of 0: within the tie
    assert m.holds is True and row["category"] == "consistent"


def test_combined_best_below_one_alone_reads_the_combinations_seed_sd():
    # 3 pts below scaling alone, but the combination's own sd is 2 pts: within the spread
    m, row = _best_row({16: {**GOOD, "scaling": 0.75, "scaling+soft_sync": (0.72, 0.02)}})
    assert (m.holds, row["category"], row["basis"], row["runs"]) == (None, "not comparable", "emulated", RUNS)
    assert m.gate.detail == "below one mitigation alone at tau = 16, within the seed spread"
    two, _ = _best_row({16: {**GOOD, "scaling": 0.75, "scaling+soft_sync": (0.72, 0.02)},
                        64: {**GOOD, "scaling": 0.75, "scaling+soft_sync": (0.72, 0.02)}})
    assert two.gate.detail == "below one mitigation alone at tau = 16, 64, within the seed spread"


def test_combined_best_worse_than_one_alone_stays_worse():
    # scaling alone 6 pts better (beyond the spread), then soft_sync 1 pt better within its 2-pt sd: still worse
    m, row = _best_row({16: {**GOOD, "scaling": 0.78, "soft_sync": (0.73, 0.02)}})
    assert m.holds is False and row["category"] == "inconsistent"
    two, _ = _best_row({16: {**GOOD, "scaling": 0.78}, 64: {**GOOD, "scaling": 0.78}})
    assert two.note == "below one mitigation alone beyond the seed spread at tau = 16, 64"


def test_combined_best_must_clearly_beat_its_learning_rate_control():
    why = ("at least as good as each alone, but not shown to beat plain async SGD at its matching learning rate "
           "at every tau: the edge may be the smaller learning rate")
    cases = {"no control run": {k: a for k, a in GOOD.items() if not k.startswith("lr_control")},
             "control better": {**GOOD, "lr_control:scaling+soft_sync": 0.80},
             "within the combination's sd": {**GOOD, "scaling+soft_sync": (0.72, 0.02),
                                              "lr_control:scaling+soft_sync": 0.69},
             "within the control's sd": {**GOOD, "lr_control:scaling+soft_sync": (0.69, 0.02)}}
    for case, accs in cases.items():
        m, row = _best_row({16: accs})
        assert (m.holds, row["category"], row["basis"], row["runs"]) == (
            None, "not comparable", "emulated", RUNS), case
        assert m.gate.detail == why, case


def test_mitigation_rows_without_a_run_at_tau_above_0():
    p = paramtypes.partial(v.NAME, {"mitigation_tau_dist": "geometric"})
    for ms in (_best({}), _best({0: GOOD})):
        out = v._mitigations({"mitigation_summary": ms}, p, RUNS)
        for cid, m in out.items():
            row = _row(cid, m)
            assert (m.ours, row["category"], row["basis"]) == ("–", "not measured", "none"), cid
            assert m.gate.detail == "no mitigation run with tau > 0 in this profile", cid
    out = v._mitigations({"mitigation_summary": _best({1: GOOD})}, p, RUNS)
    assert out["scaling_soft_sync_best"].holds is True and out["mitigation_soft_sync"].ours != "–"


# ---------------------------------------------------------------------------------------------
# State accuracy, one machine first
# ---------------------------------------------------------------------------------------------

def test_state_accuracy_gain_per_period():
    p = paramtypes.partial(v.NAME, {"state_optimizer": "adam", "state_workers": 2})
    ss = pd.DataFrame({"period": [16, 16, 64, 64], "state_mode": ["weights", "weights+state"] * 2,
                       "acc_mean": [0.70, 0.75, 0.70, 0.69]})
    m = v.state_measure(ss, p, RUNS)
    assert m.ours == "adam, N = 2: weights+state minus weights-only accuracy: k = 16: +5.0 pts; k = 64: -1.0 pts"
    assert m.runs == RUNS and m.gate.category.value == "not comparable"
    none = v.state_measure(ss.iloc[:0], p, RUNS)
    row = _row("state_averaging_needed", none)
    assert (row["category"], row["basis"], row["runs"]) == ("not measured", "none", 0)


def _history(epochs: int, finals: dict) -> pd.DataFrame:
    """One seed; (N, k) -> final accuracy (reached linearly); local steps 100 per epoch for N = 1, 50 for N > 1."""
    return pd.DataFrame([{"part": "grid", "workers": n, "period": k, "seed": 0, "epoch": e,
                          "test_accuracy": round(a * e / epochs, 6), "local_steps": (100 if n == 1 else 50) * e}
                         for (n, k), a in finals.items() for e in range(1, epochs + 1)])


def _om(workers, hist):
    ps = pd.DataFrame({"workers": workers, "period": 1})
    return v.one_machine_measure({"period_summary": ps, "averaging_history": hist}, RUNS)


def test_one_machine_pairs_each_n_with_its_best_k_at_equal_steps():
    hist = _history(4, {(1, 1): 0.80, (2, 1): 0.80, (2, 10): 0.82, (2, 16): 0.81, (4, 1): 0.76, (8, 1): 0.70})
    m = _om([1, 2, 4, 8], hist)
    assert m.ours == ("equal emulated time (minibatch steps per worker; communication free): "
                      "N = 2: one machine 0.400 after 2 epoch(s) (200 steps) vs best k = 10: 0.820 after 4 epochs "
                      "(200 steps per worker); N = 4: one machine 0.200 after 1 epoch(s) (100 steps) vs best k = 1: "
                      "0.760 after 4 epochs (200 steps per worker); N = 8: fewer epochs than N, no equal-time pair")
    assert m.runs == RUNS and m.gate.detail == (
        "with free communication N = 2: +42.0 pts vs one machine, N = 4: +56.0 pts vs one machine; whether "
        "communication eats a lead or widens a gap is not measured")
    two = _om([1, 2, 4, 8], _history(2, {(1, 1): 0.80, (2, 1): 0.80, (4, 1): 0.76, (8, 1): 0.70}))
    assert two.ours.endswith("; N = 4, 8: fewer epochs than N, no equal-time pair")
    assert "N = 2: one machine 0.400 after 1 epoch(s)" in two.ours


def test_one_machine_without_a_pair_or_without_its_runs():
    m = _om([1, 2], _history(1, {(1, 1): 0.80, (2, 1): 0.80}))
    assert m.runs == RUNS and m.gate.detail.startswith("no N-worker run has N x an epoch of the one machine")
    hist = _history(4, {(1, 1): 0.80, (2, 1): 0.80})
    for workers, h in (([1, 2], None), ([1], hist[hist["workers"] == 1]), ([2], hist)):
        none = _om(workers, h)
        row = _row("one_machine_first", none)
        assert (row["category"], row["basis"], row["runs"]) == ("not testable here", "none", 0), workers


# ---------------------------------------------------------------------------------------------
# A pipeline check: every stochastic claim gated by the profile's reason, without a note
# ---------------------------------------------------------------------------------------------

def test_pipeline_check_gates_the_thread_row_by_its_reason_first():
    root = results.project_root()
    run = sorted(p for p in (root / "published" / "cpu" / "staleness").glob("*/") if (p / "ledger.csv").is_file())[-1]
    r = harness.load_result(run)
    params = r.params.model_copy(update={"pipeline_check": True})
    tables = dict(r.tables, thread_staleness=r.tables["thread_staleness"].assign(runs=1, run_mean_sd=NAN))
    cheap = v.cheap_reason(params, r.provenance)
    out = v.measurements(tables, r.summary, params, r.provenance)
    assert out["staleness_equals_n_threads"].gate.detail == cheap  # not the '1 run(s) per N' rule
    assert cheap.startswith("cpu profile: 4 epoch(s) on 12,000 images")
    for cid in ("staleness_hurts", "scaling_soft_sync_best"):
        assert (out[cid].gate.detail, out[cid].note) == (cheap, ""), cid
    # the period judge gates the cpu grid itself, before the profile's reason: it does not respond to the period
    assert out["period_10_20_acceptable"].gate.detail.startswith("the grid cannot tell periods apart: N = 2, k = 64")


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
