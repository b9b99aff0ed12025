"""Parameter averaging and asynchronous-SGD staleness (`savchenko2019`): the engines train on hand-made cases.

The async tests use a one-weight linear model ``f(x) = w x`` with x = 1, target 0 and mean
squared error, so the gradient is ``2 w`` and plain SGD with lr = 0.25 gives
``w_{t+1} = w_t - 0.5 * w_{read}``: every trajectory below is computed by hand. What needs no
training is in ``tests/unit/test_staleness.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from repro.core.params import ParameterError
from repro.experiments.staleness import averaging as av
from repro.experiments.staleness import experiment as st

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


def test_run_rejects_more_workers_than_the_data_feeds_in_one_line(results_root):
    """Found once the dataset is loaded: each worker's shard is smaller than one minibatch."""
    with pytest.raises(ParameterError) as err:
        st.run("smoke", {"workers": [64], "train_samples": 500})
    assert "fewer than one minibatch" in str(err.value) and "\n" not in str(err.value)
    assert not results_root.exists() or not any(results_root.rglob("provenance.json"))


def test_averaging_rejects_bad_period_and_tiny_shards():
    x, y = _softmax_problem()
    tr, init = _softmax_trainer("sgd")
    with pytest.raises(av.EngineError, match="period must be an integer >= 1"):
        av.train_averaging(tr, x, y, workers=2, period=0, epochs=1, batch_size=4, init_weights=init)
    with pytest.raises(av.EngineError, match="fewer than one minibatch"):
        av.train_averaging(tr, x, y, workers=8, period=1, epochs=1, batch_size=16, init_weights=init)
