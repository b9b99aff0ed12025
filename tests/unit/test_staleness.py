"""Parameter averaging and asynchronous-SGD staleness (`savchenko2019`): engines on hand-made cases.

The async tests use a one-weight linear model ``f(x) = w x`` with x = 1, target 0 and mean
squared error, so the gradient is ``2 w`` and plain SGD with lr = 0.25 gives
``w_{t+1} = w_t - 0.5 * w_{read}``: every trajectory below is computed by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.core import claims, harness, ledger, results
from repro.core.params import ParameterError
from repro.experiments.staleness import averaging as av
from repro.experiments.staleness import experiment as st
from repro.experiments.staleness import study, summaries, verdicts

LR = 0.25


def _linear_model(w0: float = 1.0):
    import keras

    model = keras.Sequential([keras.Input(shape=(1,)),
                              keras.layers.Dense(1, use_bias=False, kernel_initializer=keras.initializers.Constant(w0))])
    return model


def _async_trainers():
    import keras

    server = av.Trainer(_linear_model(), av.make_optimizer("sgd", LR), loss=keras.losses.MeanSquaredError())
    reader = av.Trainer(_linear_model(), None, loss=keras.losses.MeanSquaredError())
    return server, reader


def _ones(n: int):
    return np.ones((n, 1), np.float32), np.zeros((n, 1), np.float32)


def _trajectory(arrivals: int, **opts):
    server, reader = _async_trainers()
    x, y = _ones(arrivals)
    res = st.train_async(server, reader, x, y, epochs=1, batch_size=1, init_weights=[np.array([[1.0]], np.float32)],
                         shuffle=False, trace=True, **opts)
    return [float(w[0].ravel()[0]) for w in res.trajectory], res


# ---------------------------------------------------------------------------------------------
# Asynchronous emulation: the delay queue and the mitigations
# ---------------------------------------------------------------------------------------------

def test_tau_zero_is_plain_sgd():
    traj, res = _trajectory(3, tau=0)
    assert traj == pytest.approx([1.0, 0.5, 0.25, 0.125], abs=1e-7)
    assert [r["staleness"] for r in res.log] == [0, 0, 0]


def test_delay_queue_applies_gradients_tau_steps_late():
    # w_{t+1} = w_t - 0.5 w_{t - min(2, t)}:
    # 1 -> 1-0.5*1=0.5 -> 0.5-0.5*1=0 -> 0-0.5*1=-0.5 -> -0.5-0.5*0.5=-0.75 -> -0.75-0.5*0=-0.75 -> -0.75+0.25=-0.5
    traj, res = _trajectory(6, tau=2)
    assert traj == pytest.approx([1.0, 0.5, 0.0, -0.5, -0.75, -0.75, -0.5], abs=1e-7)
    assert [r["staleness"] for r in res.log] == [0, 1, 2, 2, 2, 2]
    assert [r["read_version"] for r in res.log] == [0, 0, 0, 1, 2, 3]
    assert res.updates == 6


def test_staleness_scaling_divides_the_update_by_its_staleness():
    # lambda = 1/max(tau,1): t=2 and t=3 are 2 stale -> half steps: 0 - 0.25*1 = -0.25; -0.25 - 0.25*0.5 = -0.375
    traj, res = _trajectory(4, tau=2, scaling=True)
    assert traj == pytest.approx([1.0, 0.5, 0.0, -0.25, -0.375], abs=1e-7)
    assert [r["scale"] for r in res.log] == [1.0, 1.0, 0.5, 0.5]


def test_soft_sync_applies_the_mean_of_s_gradients():
    # S = 2, tau = 2: arrivals 0,1 read version 0 (g = 2) -> w1 = 1 - 0.25*2 = 0.5;
    # arrivals 2,3 read version (t-2)//2 = 0 -> w2 = 0.5 - 0.5 = 0; arrivals 4,5 read version 1 (g = 1) -> w3 = -0.25
    traj, res = _trajectory(6, tau=2, soft_sync=2)
    assert traj == pytest.approx([1.0, 0.5, 0.0, -0.25], abs=1e-7)
    assert res.updates == 3
    assert [r["staleness"] for r in res.log] == [0, 0, 1, 1, 1, 1]


def test_scaling_plus_soft_sync_combines_both():
    # S = 2, tau = 4: staleness in versions [0,0,1,1,2,2,2,2]; the two 2-stale groups are halved.
    traj, _ = _trajectory(8, tau=4, soft_sync=2, scaling=True)
    assert traj == pytest.approx([1.0, 0.5, 0.0, -0.25, -0.375], abs=1e-7)
    plain, _ = _trajectory(8, tau=4, soft_sync=2)
    assert plain == pytest.approx([1.0, 0.5, 0.0, -0.5, -0.75], abs=1e-7)


def test_bounded_staleness_holds_back_delays_above_the_bound():
    # tau = 4, bound 1 -> every delay is min(t, 1): the tau = 1 trajectory; held back 0+0+1+2+3 = 6 arrivals
    traj, res = _trajectory(5, tau=4, bound=1)
    assert traj == pytest.approx([1.0, 0.5, 0.0, -0.25, -0.25, -0.125], abs=1e-7)
    assert res.held_back == 6
    assert max(r["staleness"] for r in res.log) == 1
    # charged waiting: (delay - 1) / 2 for the delays 2, 3, 4 = 0.5 + 1 + 1.5 slots
    assert res.wait_time == pytest.approx(3.0) and res.arrivals == 5


def test_wait_charge_gives_the_throughput_of_bounded_equal_speed_workers():
    # fixed delay tau = 64, bound 8: at most 9 of 65 equal-speed workers in flight -> each arrival costs 65/9 slots
    assert 1 + st.wait_charge(64, 8) == pytest.approx(65 / 9)
    assert st.wait_charge(8, 8) == 0.0 and st.wait_charge(3, None) == 0.0
    assert st.wait_charge(5, 0) == 5.0


def test_time_budget_stops_bounded_staleness_at_equal_emulated_time():
    # tau = 4, bound 1: slots after each arrival 1, 2, 3.5, 5.5, then 5.5 + 1 + 1.5 = 8 > 6 -> stop after 4 arrivals
    traj, res = _trajectory(6, tau=4, bound=1, time_budget=6)
    assert res.arrivals == 4 and res.updates == 4
    assert res.wait_time == pytest.approx(1.5)
    assert traj == pytest.approx([1.0, 0.5, 0.0, -0.25, -0.25], abs=1e-7)
    assert res.history[-1]["arrivals"] == 4
    # without a bound nothing is charged: the budget of 6 slots admits all 6 arrivals
    _, plain = _trajectory(6, tau=4, time_budget=6)
    assert plain.arrivals == 6 and plain.wait_time == 0.0


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

def _softmax_problem(seed=0, n=64, d=5, classes=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = rng.integers(0, classes, size=n)
    return x, y


def _softmax_trainer(opt="sgd", lr=0.5, seed=0):
    import keras

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input(shape=(5,)), keras.layers.Dense(3, activation="softmax")])
    return av.Trainer(model, av.make_optimizer(opt, lr, 0.9)), model.get_weights()


@pytest.mark.parametrize("opt", ["sgd", "momentum"])
def test_k1_averaging_equals_single_machine_on_the_global_batch(opt):
    x, y = _softmax_problem()
    tr, init = _softmax_trainer(opt)
    res = av.train_averaging(tr, x, y, workers=4, period=1, epochs=2, batch_size=4, init_weights=init,
                             average_state=True, seed=3)
    ref = av.single_machine_reference(tr, x, y, workers=4, epochs=2, batch_size=4, init_weights=init, seed=3)
    assert res.rounds == 8  # 64 / 4 workers = 16 per shard = 4 steps per epoch, 2 epochs
    assert av.max_abs_difference(res.weights, ref) < 1e-5
    assert av.max_abs_difference(res.weights, init) > 1e-2  # it did train


def test_longer_period_is_not_single_machine_training():
    x, y = _softmax_problem()
    tr, init = _softmax_trainer("sgd")
    res = av.train_averaging(tr, x, y, workers=4, period=4, epochs=2, batch_size=4, init_weights=init, seed=3)
    ref = av.single_machine_reference(tr, x, y, workers=4, epochs=2, batch_size=4, init_weights=init, seed=3)
    assert av.max_abs_difference(res.weights, ref) > 1e-3


def test_averaging_matches_a_numpy_reimplementation():
    """k = 3 with plain SGD on softmax regression, recomputed in NumPy from the same data order."""
    x, y = _softmax_problem(n=48)
    tr, init = _softmax_trainer("sgd", lr=0.3)
    res = av.train_averaging(tr, x, y, workers=2, period=3, epochs=1, batch_size=4, init_weights=init, seed=1)
    w0, b0 = (np.asarray(a, np.float64) for a in init)
    parts = av.shards(len(y), 2, 1)
    batches = [av.epoch_batches(parts[i], 4, 1, 0, i) for i in range(2)]  # 6 steps each: rounds after 3 and 6

    def step(w, b, idx):
        z = x[idx] @ w + b
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(idx)), y[idx]] -= 1
        return w - 0.3 * x[idx].T @ p / len(idx), b - 0.3 * p.mean(0)

    w, b = w0, b0
    for r in range(2):
        ws = []
        for i in range(2):
            wi, bi = w, b
            for idx in batches[i][3 * r:3 * r + 3]:
                wi, bi = step(wi, bi, idx)
            ws.append((wi, bi))
        w, b = np.mean([a for a, _ in ws], 0), np.mean([c for _, c in ws], 0)
    assert res.rounds == 2
    assert av.max_abs_difference(res.weights, [w, b]) < 1e-5


def test_rounds_count_partial_round_at_the_end():
    x, y = _softmax_problem()
    tr, init = _softmax_trainer("sgd")
    # 2 workers x 32 examples, batch 4 -> 8 local steps per epoch; k = 3 over 16 steps: rounds at 3,6 | 9,12,15 | +1 final
    res = av.train_averaging(tr, x, y, workers=2, period=3, epochs=2, batch_size=4, init_weights=init)
    assert [h["rounds"] for h in res.history] == [2, 6]
    assert res.local_steps == 16


def test_weights_only_keeps_per_worker_state_and_weights_state_averages_it():
    x, y = _softmax_problem()
    tr, init = _softmax_trainer("adam", lr=0.05)
    both = av.train_averaging(tr, x, y, workers=2, period=2, epochs=1, batch_size=4, init_weights=init, average_state=True)
    only = av.train_averaging(tr, x, y, workers=2, period=2, epochs=1, batch_size=4, init_weights=init, average_state=False)
    assert av.max_abs_difference(both.weights, only.weights) > 1e-6
    # averaging a list of states: floats are averaged, the integer step counter is kept
    s = av.average([[np.array([1.0, 3.0]), np.array(5)], [np.array([3.0, 5.0]), np.array(5)]])
    assert s[0].tolist() == [2.0, 4.0] and int(s[1]) == 5


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


def test_threaded_run_logs_every_update_consistently():
    import keras

    x, y = _ones(16)
    log = st.threaded_async_run(_linear_model, x, y, workers=2, updates_per_worker=5, batch_size=2,
                                learning_rate=0.01, seed=0, loss=keras.losses.MeanSquaredError())
    assert list(log.columns) == list(st.LOG_COLUMNS)
    assert log["update"].tolist() == list(range(1, 11))
    assert (log["apply_version"] == log["update"] - 1).all()
    assert (log["staleness"] == log["apply_version"] - log["read_version"]).all()
    assert log["worker"].value_counts().tolist() == [5, 5]
    # a worker's next read comes after its own update: it sees at least the version that update created,
    # so its staleness never counts its own updates (a log that did would break this)
    for _, g in log.sort_values("update").groupby("worker"):
        assert (g["read_version"].to_numpy()[1:] >= g["update"].to_numpy()[:-1]).all()
        assert (g["read_version"].diff().dropna() >= 1).all()
    # two workers: at most the other worker's updates since the read, and it has 5
    assert log["staleness"].between(0, 5).all()


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


def test_averaging_rejects_bad_period_and_tiny_shards():
    x, y = _softmax_problem()
    tr, init = _softmax_trainer("sgd")
    with pytest.raises(av.EngineError, match="period must be an integer >= 1"):
        av.train_averaging(tr, x, y, workers=2, period=0, epochs=1, batch_size=4, init_weights=init)
    with pytest.raises(av.EngineError, match="fewer than one minibatch"):
        av.train_averaging(tr, x, y, workers=8, period=1, epochs=1, batch_size=16, init_weights=init)


@pytest.mark.parametrize("overrides, fragment", [
    ({"workers": [0]}, "parameter 'workers'"),
    ({"tau_dists": ["poisson"]}, "parameter 'tau_dists'"),
    ({"mitigations": ["magic"]}, "parameter 'mitigations'"),
    ({"soft_sync": 0}, "parameter 'soft_sync'"),
    ({"staleness_bound": -1}, "parameter 'staleness_bound'"),
    ({"periods": []}, "parameter 'periods'"),
    ({"workers": [64], "train_samples": 500}, "fewer than one minibatch"),
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
    assert set(spec.profiles) == {"smoke", "cpu", "paper"}
    for name in spec.profiles:
        spec.resolve(name)  # every profile validates


# ---------------------------------------------------------------------------------------------
# Claims: one measurement per claim id, from the written tables only
# ---------------------------------------------------------------------------------------------

def _hand_made_result(pipeline_check: bool, thread_means=(1.0,)) -> harness.Result:
    """A tiny written run: N 1/2, k 1/10/16/20; Adam state; tau 0/8 fixed; every mitigation and its lr control at
    tau 8 (bounded charged for its waiting); threads N = 2; 4 epochs of history for the equal-time comparison."""
    params = {"seeds": [0, 1], "workers": [1, 2], "batch_size": 32, "acceptable_drop": 0.02, "epochs": 4,
              "state_optimizer": "adam", "state_workers": 2, "mitigation_tau_dist": "geometric",
              "pipeline_check": pipeline_check}
    ps = pd.DataFrame({"workers": [1, 2, 2, 2, 2], "period": [1, 1, 10, 16, 20], "acc_mean": [0.85, 0.80, 0.79, 0.79, 0.785],
                       "rounds": [0, 100, 10, 7, 5], "comm_mb": [0.0, 5.0, 0.5, 0.35, 0.25],
                       "drop_vs_k1": [0.0, 0.0, 0.01, 0.01, 0.015], "acceptable": [True] * 5})
    fin = pd.DataFrame({"part": ["grid", "grid"], "workers": [2, 2], "period": [1, 16], "local_steps": [100, 100]})
    hist = pd.DataFrame([{"part": "grid", "workers": n, "period": k, "seed": seed, "epoch": e, "test_accuracy": a,
                          "local_steps": (100 if n == 1 else 50) * e}
                         for n, k, accs in [(1, 1, [0.70, 0.80, 0.83, 0.85]), (2, 1, [0.60, 0.70, 0.75, 0.80]),
                                            (2, 16, [0.62, 0.72, 0.76, 0.79])]
                         for e, a in enumerate(accs, 1) for seed in (0, 1)])
    ss = pd.DataFrame({"period": [16, 16], "state_mode": ["weights", "weights+state"], "acc_mean": [0.70, 0.75]})
    ts = pd.DataFrame({"tau_dist": ["fixed", "fixed"], "tau": [0, 8], "acc_mean": [0.8, 0.5], "drop_vs_sync": [0.0, 0.3]})
    variants = ["none", "scaling", "soft_sync", "bounded", "scaling+soft_sync",
                "lr_control:scaling", "lr_control:soft_sync", "lr_control:scaling+soft_sync"]
    acc = [0.5, 0.6, 0.49, 0.7, 0.65, 0.55, 0.52, 0.647]
    ms = pd.DataFrame({"tau": [8] * 8, "variant": variants, "acc_mean": acc,
                       "arrivals": [400, 400, 400, 150, 400, 400, 400, 400],
                       "held_back": [0, 0, 0, 900, 0, 0, 0, 0], "wait_time": [0, 0, 0, 250, 0, 0, 0, 0],
                       "emulated_time": [400] * 8, "lr_factor": [1, 1, 1, 1, 1, 0.3, 0.25, 0.075]})
    ms["gain_vs_none"] = ms["acc_mean"] - 0.5
    ctl = ms.set_index("variant")["acc_mean"]
    ms["gain_vs_control"] = [a - ctl.get("lr_control:" + v, np.nan) for v, a in zip(ms["variant"], ms["acc_mean"])]
    th = pd.DataFrame({"workers": [2] * len(thread_means), "mean": list(thread_means)})
    tables = {"period_summary": ps, "averaging_final": fin, "averaging_history": hist, "state_summary": ss,
              "tau_summary": ts, "mitigation_summary": ms, "thread_staleness": th}
    summary = {"equivalence_max_abs_difference": 3e-8, "weight_bytes": 1000, "state_optimizer_state_bytes": 2000}
    prov = {"experiment": "staleness", "profile": "smoke", "datasets": [{"n_train": 2000}]}
    return harness.Result("/nonexistent", params, prov, tables, summary)


def _judge(result: harness.Result) -> dict[str, str]:
    led = claims.ledger(st.NAME, st.EXPERIMENT.judge(result))
    return dict(zip(claims.load(st.NAME), led["verdict"]))


def _set(df: pd.DataFrame, where: dict, **values) -> None:
    mask = np.ones(len(df), bool)
    for col, v in where.items():
        mask &= (df[col] == v).to_numpy()
    assert mask.any()
    for col, v in values.items():
        df.loc[mask, col] = v


def _categories(measured) -> dict[str, str]:
    led = claims.ledger(st.NAME, measured)
    return dict(zip(claims.load(st.NAME), led["verdict"].map(ledger.category)))


def test_judge_gives_every_claim_a_measurement_from_a_hand_made_run():
    measured = st.EXPERIMENT.judge(_hand_made_result(pipeline_check=False))
    assert set(measured) == set(claims.load(st.NAME))
    cats = _categories(measured)
    assert cats["k1_equals_single_machine"] == "consistent"  # 3e-8 <= 1e-5: an identity of plain SGD, checked
    assert cats["period_10_20_acceptable"] == "reproduced"  # k = 10, 16, 20 within 2 pts for N = 2, two seeds
    assert cats["state_averaging_needed"] == "reproduced"  # +5 pts > 2, two seeds
    assert cats["staleness_hurts"] == "reproduced"
    # mean 1 + 1 = 2 = N holds, but one thread run per N of a stochastic quantity cannot be "reproduced"
    assert cats["staleness_equals_n_threads"] == "not comparable"
    assert cats["mitigation_scaling"] == "reproduced"  # +10 vs none, +5 vs its lr control
    assert cats["mitigation_soft_sync"] == "differs"
    assert cats["mitigation_bounded"] == "reproduced"  # +20 pts at equal emulated time, waiting charged
    assert cats["mitigation_scaling_soft_sync"] == "partly"  # +15 vs none, but only +0.3 vs its lr control
    assert cats["scaling_soft_sync_best"] == "differs"  # bounded is best
    assert cats["one_machine_first"] == "reproduced"  # equal steps: one machine 0.80 vs N = 2 best 0.80
    assert cats["staleness_equals_n_cluster"] == "not measured"
    assert cats["data_parallel_preferred"] == cats["async_higher_throughput"] == "not testable here"


def test_period_verdict_needs_both_ends_acceptable_for_every_n():
    r = _hand_made_result(pipeline_check=False)
    ps = r.tables["period_summary"]
    _set(ps, {"workers": 2, "period": 20}, drop_vs_k1=0.03)  # k = 20 loses 3 pts > 2
    v = _judge(r)["period_10_20_acceptable"]
    assert v.startswith("differs") and "k = 20 loses 3.0 pts" in v
    r = _hand_made_result(pipeline_check=False)
    r.tables["period_summary"] = r.tables["period_summary"].query("period != 10").reset_index(drop=True)
    v = _judge(r)["period_10_20_acceptable"]
    assert v.startswith("partly") and "missing N = 2: k = 10" in v
    r = _hand_made_result(pipeline_check=False)  # a second N with only k = 16: both ends missing for N = 4
    ps4 = pd.DataFrame({"workers": [4, 4], "period": [1, 16], "acc_mean": [0.8, 0.8], "rounds": [50, 3],
                        "comm_mb": [1.0, 0.1], "drop_vs_k1": [0.0, 0.0], "acceptable": [True, True]})
    r.tables["period_summary"] = pd.concat([r.tables["period_summary"], ps4], ignore_index=True)
    r.tables["averaging_final"] = pd.DataFrame({"part": ["grid"] * 2, "workers": [4, 4], "period": [1, 16],
                                                "local_steps": [50, 50]})
    assert _judge(r)["period_10_20_acceptable"].startswith("partly")


def test_lr_changing_mitigation_must_beat_its_learning_rate_control():
    r = _hand_made_result(pipeline_check=False)
    ms = r.tables["mitigation_summary"]
    _set(ms, {"variant": "scaling"}, gain_vs_control=0.004)  # a mere learning-rate change does as well
    v = _judge(r)
    assert v["mitigation_scaling"].startswith("partly") and "matching lower learning rate" in v["mitigation_scaling"]
    r.tables["mitigation_summary"] = ms.drop(columns=["gain_vs_control"])  # no control rows at all (older runs)
    v = _judge(r)
    assert v["mitigation_scaling"].startswith("not comparable (beats plain async SGD at the same learning rate")
    assert v["mitigation_soft_sync"].startswith("differs")  # below no mitigation: no control needed to say so


def test_bounded_is_judged_at_equal_emulated_time_with_its_waiting_charged():
    r = _hand_made_result(pipeline_check=False)
    ms = r.tables["mitigation_summary"]
    _set(ms, {"variant": "bounded"}, acc_mean=0.45, gain_vs_none=-0.05)
    assert _judge(r)["mitigation_bounded"].startswith("differs")
    assert "150 gradients + 250 slots of waiting charged = 400 slots" in st.EXPERIMENT.judge(r)["mitigation_bounded"].ours
    _set(ms, {"variant": "bounded"}, acc_mean=0.7, gain_vs_none=0.2, emulated_time=450)
    assert _judge(r)["mitigation_bounded"].startswith("not comparable (bounded used more emulated time")
    r.tables["mitigation_summary"] = ms.drop(columns=["wait_time"])  # a run that did not charge the waiting
    assert _judge(r)["mitigation_bounded"].startswith("not comparable (accuracy per update improves")


def test_combined_mitigation_best_needs_to_beat_the_others_and_its_control():
    r = _hand_made_result(pipeline_check=False)
    ms = r.tables["mitigation_summary"]
    _set(ms, {"variant": "bounded"}, acc_mean=0.6, gain_vs_none=0.1)  # the combination (0.65) is now best
    assert _judge(r)["scaling_soft_sync_best"].startswith("partly")  # only +0.3 pt vs its lr control
    _set(ms, {"variant": "scaling+soft_sync"}, gain_vs_control=0.05)
    assert ledger.category(_judge(r)["scaling_soft_sync_best"]) == "reproduced"


def test_one_machine_is_compared_at_equal_emulated_time():
    r = _hand_made_result(pipeline_check=False)
    hist = r.tables["averaging_history"]
    _set(hist, {"workers": 2, "period": 16, "epoch": 4}, test_accuracy=0.83)  # N = 2 ahead at equal steps
    v = _judge(r)["one_machine_first"]
    assert v.startswith("not comparable (at equal emulated time with free communication N = 2 is ahead by 3.0 pts")
    _set(hist, {"workers": 2, "period": 16, "epoch": 4}, test_accuracy=0.70)
    r.tables["averaging_history"] = hist[hist["epoch"] <= 1]  # one epoch: no N = 2 run reaches its steps
    assert _judge(r)["one_machine_first"].startswith("not comparable (no N-worker run")
    r = _hand_made_result(pipeline_check=False)
    h = r.tables["averaging_history"]
    h8 = h[h["workers"] == 2].assign(workers=8, local_steps=lambda d: d["epoch"] * 12)
    r.tables["averaging_history"] = pd.concat([h, h8], ignore_index=True)  # N = 8 needs 8 epochs
    assert _judge(r)["one_machine_first"].startswith("partly")


def test_judge_marks_stochastic_claims_of_a_pipeline_check_not_comparable():
    measured = st.EXPERIMENT.judge(_hand_made_result(pipeline_check=True, thread_means=(3.0,)))
    led = claims.ledger(st.NAME, measured).assign(id=list(claims.load(st.NAME)))
    cats = led.set_index("id")["verdict"].map(ledger.category)
    assert cats[cats == "reproduced"].index.tolist() == []
    assert cats["k1_equals_single_machine"] == "consistent"  # an identity, checked: exact, one run suffices
    verdict = led.set_index("id")["verdict"]
    assert verdict["staleness_hurts"].startswith("not comparable (smoke profile: 4 epoch(s) on 2,000 images")
    assert verdict["period_10_20_acceptable"].startswith("not comparable (smoke profile")


def test_claims_table_shows_the_ledgers_verdicts():
    measured = st.EXPERIMENT.judge(_hand_made_result(pipeline_check=False, thread_means=(3.0,)))
    led = claims.ledger(st.NAME, measured)
    table = verdicts.claims_table(led)
    assert table["verdict"].tolist() == led["verdict"].tolist()
    assert table["paper"].tolist() == led["paper_value"].tolist()
    assert table.set_index("claim").loc[claims.load(st.NAME)["staleness_equals_n_threads"].text,
                                        "verdict"].endswith("the one run: differs (N = 2: 4.00; within 0.5 of N "
                                                            "required))")  # mean 4 vs N = 2, one thread run


def test_published_cpu_run_rejudges_to_the_same_categories():
    root = results.project_root()
    runs = sorted(p for p in (root / "published" / "cpu" / "staleness").glob("*/") if (p / "ledger.csv").is_file())
    assert runs, "the repository carries a published cpu run of staleness"
    result = harness.load_result(runs[-1])
    measured = st.EXPERIMENT.judge(result)
    assert set(measured) == set(claims.load(st.NAME))
    new = claims.ledger(st.NAME, measured)
    old = pd.read_csv(runs[-1] / "ledger.csv", keep_default_na=False)
    assert new["claim"].str[:40].tolist() == old["claim"].str[:40].tolist()
    assert new["verdict"].map(ledger.category).tolist() == old["verdict"].map(ledger.category).tolist()


# ---------------------------------------------------------------------------------------------
# The notebook on the smoke profile
# ---------------------------------------------------------------------------------------------

