"""Parameter averaging and asynchronous-SGD staleness (`savchenko2019`): engines on hand-made cases.

The async tests use a one-weight linear model ``f(x) = w x`` with x = 1, target 0 and mean
squared error, so the gradient is ``2 w`` and plain SGD with lr = 0.25 gives
``w_{t+1} = w_t - 0.5 * w_{read}``: every trajectory below is computed by hand.
"""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from repro.core.params import ParameterError
from repro.experiments.staleness import averaging as av
from repro.experiments.staleness import experiment as st
from repro.experiments.staleness import study, summaries

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


def test_thread_runs_run_once_per_n_and_seed_and_count_the_runs(monkeypatch):
    def fake(model_fn, x, y, *, workers, updates_per_worker, batch_size, learning_rate, seed):
        stale = [seed + w % 2 for w in range(workers * updates_per_worker)]  # seed 0: mean 0.5, seed 1: mean 1.5
        return pd.DataFrame({"update": range(1, len(stale) + 1), "worker": 0, "read_version": 0,
                             "apply_version": stale, "staleness": stale})

    monkeypatch.setattr(study, "threaded_async_run", fake)
    m = study.Models({"seeds": [0, 1], "thread_workers": [2, 4], "thread_updates": 3, "batch_size": 2,
                      "async_learning_rate": 0.1}, types.SimpleNamespace(x_train=None, y_train=None))
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
