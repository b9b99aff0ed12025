"""Parameter averaging and asynchronous-SGD staleness (`savchenko2019`) without training: arithmetic,
delays, logs, summaries and bad input. The engines' training runs on hand-made cases are in
``tests/smoke/test_staleness_engines_smoke.py``.
"""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from repro.core import paramtypes
from repro.core.params import ParameterError
from repro.experiments.staleness import averaging as av
from repro.experiments.staleness import experiment as st
from repro.experiments.staleness import study, summaries

# ---------------------------------------------------------------------------------------------
# Asynchronous emulation: the delay queue and the mitigations
# ---------------------------------------------------------------------------------------------


def test_wait_charge_gives_the_throughput_of_bounded_equal_speed_workers():
    # fixed delay tau = 64, bound 8: at most 9 of 65 equal-speed workers in flight -> each arrival costs 65/9 slots
    assert 1 + st.wait_charge(64, 8) == pytest.approx(65 / 9)
    assert st.wait_charge(8, 8) == 0.0 and st.wait_charge(3, None) == 0.0
    assert st.wait_charge(5, 0) == 5.0


def test_lr_control_factors_match_the_mitigations_learning_rate_change():
    assert study.control_factor("scaling", 0.25, 4) == pytest.approx(0.25)
    assert study.control_factor("soft_sync", 1.0, 4) == pytest.approx(0.25)
    assert study.control_factor("scaling+soft_sync", 0.5, 4) == pytest.approx(0.125)
    assert study.control_factor("bounded", 1.0, 4) is None and study.control_factor("none", 1.0, 4) is None


def test_mitigation_summary_has_control_gains_and_waiting():
    rows = [("none", 0.50, 0.0, 1.0), ("scaling", 0.60, 0.0, 1.0), ("bounded", 0.55, 40.0, 1.0),
            ("lr_control:scaling", 0.58, 0.0, 0.3)]
    fin = pd.DataFrame([{"part": "mitigation", "tau": 8, "variant": v, "seed": seed, "test_accuracy": a + 0.01 * seed,
                         "updates": 100, "arrivals": 100 - w, "mean_staleness": 8.0, "mean_scale": 1.0,
                         "held_back": 3 * w, "wait_time": w, "emulated_time": 100.0, "lr_factor": f}
                        for v, a, w, f in rows for seed in (0, 1)])
    ms = summaries.mitigation_summary(fin).set_index("variant")
    assert list(ms.index) == ["none", "scaling", "bounded", "lr_control:scaling"]
    assert ms.loc["scaling", "gain_vs_control"] == pytest.approx(0.02)
    assert ms.loc["scaling", "gain_vs_none"] == pytest.approx(0.10)
    assert np.isnan(ms.loc["bounded", "gain_vs_control"])
    assert ms.loc["bounded", "wait_time"] == 40.0 and ms.loc["bounded", "arrivals"] == 60.0


def test_mitigation_names_map_to_engine_options():
    assert st.mitigation_options("none", 4, 8) == {"scaling": False, "soft_sync": 1, "bound": None}
    assert st.mitigation_options("scaling+soft_sync", 4, 8) == {"scaling": True, "soft_sync": 4, "bound": None}
    assert st.mitigation_options("bounded", 4, 8) == {"scaling": False, "soft_sync": 1, "bound": 8}


def test_random_delays_have_the_requested_mean():
    rng = np.random.default_rng(0)
    geo = [st.draw_staleness(rng, 8, "geometric") for _ in range(20000)]
    uni = [st.draw_staleness(rng, 8, "uniform") for _ in range(20000)]
    assert np.mean(geo) == pytest.approx(8, rel=0.03)
    assert np.mean(uni) == pytest.approx(8, rel=0.03)
    assert min(uni) == 0 and max(uni) == 16
    assert max(geo) <= st.GEOMETRIC_CAP * 8
    assert st.draw_staleness(rng, 5, "fixed") == 5


# ---------------------------------------------------------------------------------------------
# Synchronous parameter averaging
# ---------------------------------------------------------------------------------------------

def test_shards_are_equal_and_disjoint():
    parts = av.shards(10, 3, 0)
    assert [len(p) for p in parts] == [3, 3, 3]
    assert len(set(np.concatenate(parts))) == 9


# ---------------------------------------------------------------------------------------------
# Staleness logs: format and analysis
# ---------------------------------------------------------------------------------------------

def test_staleness_summary_and_distribution_of_hand_made_counts():
    counts = [0, 1, 1, 2, 2, 2, 3, 3]
    s = st.staleness_summary(counts)
    assert s["updates"] == 8 and s["mean"] == 1.75 and s["median"] == 2.0 and s["max"] == 3 and s["min"] == 0
    d = st.staleness_distribution(counts)
    assert d["staleness"].tolist() == [0, 1, 2, 3]
    assert d["count"].tolist() == [1, 2, 3, 2]
    assert d["fraction"].tolist() == [0.125, 0.25, 0.375, 0.25]


def test_staleness_log_from_versions_and_csv(tmp_path):
    log = pd.DataFrame({"update": [1, 2, 3, 4], "worker": [0, 1, 0, 1], "read_version": [0, 0, 1, 2],
                        "apply_version": [0, 1, 2, 3]})
    assert st.read_staleness_log(log)["staleness"].tolist() == [0, 1, 1, 1]
    path = tmp_path / "log.csv"
    st.read_staleness_log(log).to_csv(path, index=False)
    assert st.staleness_summary(path)["mean"] == 0.75


@pytest.mark.parametrize("bad, fragment", [
    (pd.DataFrame({"x": [1]}), "needs a 'staleness' column"),
    (pd.DataFrame({"staleness": [1, -1]}), "non-negative integers"),
    (pd.DataFrame({"staleness": [1.5]}), "non-negative integers"),
    (pd.DataFrame({"staleness": [2], "read_version": [0], "apply_version": [1]}), "must equal"),
    ([], "empty"),
])
def test_bad_staleness_logs_are_rejected_in_one_line(bad, fragment):
    with pytest.raises(st.StalenessLogError) as err:
        st.staleness_summary(bad)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_cli_staleness_log(tmp_path, capsys):
    from repro import cli

    path = tmp_path / "log.csv"
    pd.DataFrame({"staleness": [0, 1, 1, 2, 2, 2, 3, 3]}).to_csv(path, index=False)
    assert cli.main(["staleness-log", str(path), "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "mean staleness 1.750" in out and "mean / N = 0.875" in out
    assert cli.main(["staleness-log", str(tmp_path / "missing.csv")]) == 2
    assert capsys.readouterr().err.startswith("repro: error: staleness log")


def test_thread_runs_run_once_per_n_and_seed_and_count_the_runs(monkeypatch):
    def fake(model_fn, x, y, *, workers, updates_per_worker, batch_size, learning_rate, seed):
        stale = [seed + w % 2 for w in range(workers * updates_per_worker)]  # seed 0: mean 0.5, seed 1: mean 1.5
        return pd.DataFrame({"update": range(1, len(stale) + 1), "worker": 0, "read_version": 0,
                             "apply_version": stale, "staleness": stale})

    monkeypatch.setattr(study, "threaded_async_run", fake)
    p = paramtypes.partial("staleness", {"seeds": [7], "thread_seeds": [0, 1], "thread_workers": [2, 4],
                                         "thread_updates": 3, "batch_size": 2, "async_learning_rate": 0.1})
    m = study.Models(p, types.SimpleNamespace(x_train=None, y_train=None))
    log, summary, dist = study.thread_runs(m)
    assert len(log) == (2 + 4) * 3 * 2 and set(log["seed"]) == {0, 1}
    assert summary["runs"].tolist() == [2, 2] and summary["mean"].tolist() == pytest.approx([1.0, 1.0])
    assert summary["run_mean_sd"].tolist() == pytest.approx([2 ** 0.5 / 2] * 2)
    assert set(dist["workers"]) == {2, 4}


# ---------------------------------------------------------------------------------------------
# Bad parameters: one line
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, fragment", [
    (lambda: st.check_async_options(-1, "fixed", 1, None), "tau must be an integer >= 0"),
    (lambda: st.check_async_options(2, "poisson", 1, None), "tau_dist must be one of"),
    (lambda: st.check_async_options(2, "fixed", 0, None), "soft_sync (S) must be"),
    (lambda: st.check_async_options(2, "fixed", 1, -3), "staleness bound"),
    (lambda: st.mitigation_options("magic", 2, 2), "mitigation must be one of"),
    (lambda: av.shards(10, 0, 0), "workers must be an integer >= 1"),
    (lambda: av.make_optimizer("rmsprop", 0.1), "optimizer must be one of"),
])
def test_engine_rejects_bad_arguments(call, fragment):
    with pytest.raises(av.EngineError) as err:
        call()
    assert fragment in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("overrides, fragment", [
    ({"workers": [0]}, "parameter 'workers'"),
    ({"tau_dists": ["poisson"]}, "parameter 'tau_dists'"),
    ({"mitigations": ["magic"]}, "parameter 'mitigations'"),
    ({"soft_sync": 0}, "parameter 'soft_sync'"),
    ({"staleness_bound": -1}, "parameter 'staleness_bound'"),
    ({"periods": []}, "parameter 'periods'"),
])
def test_run_rejects_bad_parameters_in_one_line(results_root, overrides, fragment):
    with pytest.raises(ParameterError) as err:
        st.run("smoke", overrides)
    assert fragment in str(err.value) and "\n" not in str(err.value)
    assert not results_root.exists() or not any(results_root.rglob("provenance.json"))


def test_profiles_list_every_parameter_and_the_notebook():
    from repro.core import params

    spec = params.spec("staleness")
    assert spec.notebook == "05_staleness.ipynb" and spec.module == "repro.experiments.staleness.experiment"
    assert set(spec.profiles) == {"smoke", "cpu", "threads", "gpu-h100", "rehearse", "paper"}
    for name in spec.profiles:
        spec.resolve(name)  # every profile validates


def test_threads_profile_measures_threads_alone_where_they_do_not_outnumber_the_cores():
    from repro.core import claims, params

    p = params.spec("staleness").resolve("threads")
    need = claims.load("staleness")["staleness_equals_n_threads"].threshold("min_runs")
    assert max(p.thread.workers) <= 2 and 2 in p.thread.workers  # this machine's 2 cores
    assert len(p.thread.seeds) >= need and p.thread.updates > 0 and not p.pipeline_check
    # the rest at its smallest: no grid that any claim could judge
    assert p.workers == [1] and p.periods == [1] and p.taus == [0] and p.mitigations == ["none"]


def test_the_chapter_of_periods_without_k1_renders_without_the_sections_that_need_it(monkeypatch):
    """``-p periods=16`` (issue 57): no N > 1 run with k = 1, so no drop against it: the chapter's numbers and its
    guide leave the period's drop out (its section is left out by ``needs:summary.period_mid_worst_drop``), never
    an error; the published cpu run's own tables keep them (the counterfactual)."""
    from repro.book import report
    from repro.core import harness, results
    from repro.experiments.staleness import chapter, summaries

    root = results.project_root()
    run = sorted(p for p in (root / "published" / "cpu" / "staleness").glob("*/") if (p / "ledger.csv").is_file())[-1]
    r = harness.load_result(run)
    glued: dict = {}
    monkeypatch.setattr(report, "glue", lambda name, value, display=False: glued.__setitem__(name, value))
    chapter.glue_numbers(r)
    assert "stale_worst_drop_pts" in glued and "Averaging period, N = 2" in chapter.guide_markdown(r)
    ps = r.tables["period_summary"]
    no_k1 = ps[(ps["workers"] == 1) | (ps["period"] != 1)].assign(
        drop_vs_k1=lambda d: d["drop_vs_k1"].where(d["workers"] == 1), acceptable=lambda d: d["workers"] == 1)
    r.tables = dict(r.tables, period_summary=no_k1)
    glued.clear()
    chapter.glue_numbers(r)
    assert "stale_worst_drop_pts" not in glued and glued["stale_mid_worst_drop_pts"] != glued["stale_mid_worst_drop_pts"]
    assert "Averaging period" not in chapter.guide_markdown(r)
    tables = {name: r.tables[name] for name in ("period_summary", "tau_summary", "mitigation_summary",
                                                 "thread_staleness", "averaging_final", "async_final")}
    assert "period_mid_worst_drop" not in summaries.run_summary(tables, r.summary["equivalence"], {})
