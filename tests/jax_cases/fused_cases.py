"""Cases of the fused trainer (:mod:`repro.ml.fused`), which compiles with JAX: run by
``tests/smoke/test_fused_jax_smoke.py`` in a child process on Keras's JAX backend (TensorFlow and PyTorch
unimportable, as on the lent GPU machine). Not collected by the main test session (its name is not test_*)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.ml import data, fused, models, optim, training

OPTS = ("adam", "momentum", "adagrad")
# Adam normalises each step by its gradient's running size, so a gradient component near zero moves its weight
# by a full learning rate whichever sign rounding gives it: in float32 a one-ulp change of the initial weights
# moves model.fit's first-epoch loss by up to 1.6e-4, its accuracy by 1 in 250 and its test accuracy by 2 in 100
# (benchmarks/fused_rounding.py --noise-floor 5, docs/fused-rounding.md), what an AMD EPYC gave against this
# Intel CPU. Two programs that round differently (vmapped, scanned) are therefore compared with Adam in float64,
# and in float32 only with optimizers whose measured floor is far under the tolerance (momentum: 2.4e-7).
STEADY = ("momentum", "adagrad")
METRICS = ["loss", "accuracy", "test_loss", "test_accuracy"]


@pytest.fixture(scope="module")
def ds():
    # 250 examples at batch 32: with steps_per_execution 3, two chunks of 3, one lone batch and a partial one of 26
    return data.load("mnist_subset_rgb32", 250, 100, seed=0)


@pytest.fixture
def float64():
    """Keras and JAX in float64 for one test (JAX keeps float32 unless x64 is enabled), float32 after."""
    import jax
    import keras

    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)
    keras.mixed_precision.set_global_policy("float32")


def build(ds, opt, policy="float32", seed=0):
    import keras

    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(seed)
    model = models.polishchuk_cnn(ds.input_shape, ds.num_classes, [8, 16, 16], 16, 0.5)
    return optim.compile_classifier(model, opt, 1e-2, 0.9)


def max_weight_gap(a, b) -> float:
    return max(float(np.max(np.abs(np.asarray(x, "float32") - np.asarray(y, "float32"))))
               for x, y in zip(a.get_weights(), b.get_weights()))


def test_keras_runs_on_jax():
    assert training.backend() == "jax"


@pytest.mark.parametrize("policy,scan", [("float32", False), ("float32", True), ("float64", False), ("float64", True),
                                         ("mixed_float16", False)])
def test_fused_trajectories_are_model_fits(ds, policy, scan, request):
    """Each of six models trained together (stacked and vmapped, two seeds or three) follows the trajectory
    model.fit gives it alone: same losses and accuracies per epoch, same weights after two epochs (only float
    order differs); also with the epoch's full chunks in one lax.scan dispatch. Adam is among them in float64
    and mixed_float16; in float32 the optimizers that do not amplify rounding (see STEADY)."""
    if policy == "float64":
        request.getfixturevalue("float64")
    opts = STEADY if policy == "float32" else OPTS
    jobs = [(o, s) for s in (3, 4, 5)[:6 // len(opts)] for o in opts]
    alone = [build(ds, o, policy, seed=s) for o, s in jobs]
    assert alone[0].get_weights()[0].dtype == {"float64": "float64"}.get(policy, "float32")
    hist_alone = [training.fit(m, ds, epochs=2, batch_size=32, seed=s, verbose=0) for m, (_, s) in zip(alone, jobs)]
    together = [build(ds, o, policy, seed=s) for o, s in jobs]
    hist_together = fused.fit_many(together, ds, epochs=2, batch_size=32, seed=[s for _, s in jobs],
                                   steps_per_execution=3, verbose=0, scan=scan)
    # float16 rounds a grouped (vmapped) convolution differently from a single one, and Adam's
    # normalised steps carry that into the weights: under mixed_float16 losses agree within 5e-3
    # (jax 0.11.2: 4.1e-3 seen), test accuracies within 10 of 100 examples (6 seen), weights within 0.1 (0.07).
    # float64: the fused trainer sums losses in float32 (2.6e-7 seen); Adam's float64 one-ulp floor in the
    # weights is 1.3e-5 (docs/fused-rounding.md), hence 1e-4 there.
    tol = {"float32": (1e-5, 1e-5, 1e-5), "float64": (1e-5, 1e-5, 1e-4), "mixed_float16": (5e-3, 0.1, 0.1)}[policy]
    for a, t, ha, ht in zip(alone, together, hist_alone, hist_together):
        assert list(ht["epoch"]) == [1, 2]
        np.testing.assert_allclose(ht[["loss", "test_loss"]].to_numpy(), ha[["loss", "test_loss"]].to_numpy(),
                                   atol=tol[0])
        np.testing.assert_allclose(ht[["accuracy", "test_accuracy"]].to_numpy(),
                                   ha[["accuracy", "test_accuracy"]].to_numpy(), atol=tol[1])
        assert max_weight_gap(a, t) <= tol[2]
    # the six really differ (a trainer that trained one model six times, or ignored the seeds, would pass the above)
    assert len({round(float(h["loss"].iloc[-1]), 4) for h in hist_together}) == 6


def test_deadline_stops_with_checkpoints_and_a_rerun_resumes(ds, tmp_path, monkeypatch):
    """REPRO_STOP_AFTER_EPOCHS (the deadline's deterministic twin) stops before epoch 2 with every model's
    checkpoint written; a rerun without it lands on the uninterrupted run's numbers. Six models, each
    optimizer twice (two seeds): stacked by optimizer, so the stacked order is not the models' order and
    every checkpoint must go back to its own model."""
    jobs = [(o, s) for s in (1, 2) for o in OPTS]
    run = lambda **kw: fused.fit_many([build(ds, o, seed=s) for o, s in jobs], ds, epochs=2,  # noqa: E731
                                      batch_size=32, seed=[s for _, s in jobs], steps_per_execution=2, verbose=0, **kw)
    straight = run()
    dirs = [tmp_path / f"{o}-{s}" for o, s in jobs]
    monkeypatch.setenv(training.STOP_AFTER_ENV, str(training._EPOCHS_DONE[0] + 1))
    with pytest.raises(training.DeadlineReached, match="stopped after epoch 1 of 2"):
        run(checkpoint_dirs=dirs, checkpoint_every_s=1e9)
    assert all(len(pd.read_csv(d / "history.csv")) == 1 for d in dirs)
    monkeypatch.delenv(training.STOP_AFTER_ENV)
    monkeypatch.setenv(training.DEADLINE_ENV, "1e12")  # far away: no effect
    resumed = run(checkpoint_dirs=dirs)
    for s, r in zip(straight, resumed):
        np.testing.assert_allclose(r[METRICS].to_numpy(), s[METRICS].to_numpy(), atol=1e-5)
    assert len({round(float(h["loss"].iloc[-1]), 4) for h in resumed}) == 6
    monkeypatch.setenv(training.DEADLINE_ENV, "0")  # passed: nothing more starts, the finished run stays finished
    again = run(checkpoint_dirs=dirs)
    np.testing.assert_allclose(again[3][METRICS].to_numpy(), resumed[3][METRICS].to_numpy())


@pytest.mark.parametrize("policy,opt", [("float64", "adam"), ("float32", "momentum")])
def test_scan_with_one_step_per_chunk_is_fit(ds, policy, opt, request):
    """steps_per_execution 1 with the epoch scanned: every full batch a chunk, the partial one apart. Adam in
    float64 (in float32 its one-ulp floor, 1.6e-4 in the loss, is what another x86-64 CPU's rounding gives);
    momentum in float32 (its floor 2.4e-7). Here the float64 weights are bit-identical to model.fit's."""
    if policy == "float64":
        request.getfixturevalue("float64")
    other = "momentum" if opt == "adam" else "adam"
    alone_model = build(ds, opt, policy)
    alone = training.fit(alone_model, ds, epochs=1, batch_size=32, seed=5, verbose=0)
    together_model = build(ds, opt, policy)
    together = fused.fit_many([together_model, build(ds, other, policy)], ds, epochs=1, batch_size=32, seed=5,
                              steps_per_execution=1, scan=True, verbose=0)
    np.testing.assert_allclose(together[0][METRICS].to_numpy(), alone[METRICS].to_numpy(), atol=1e-5)
    assert max_weight_gap(alone_model, together_model) <= {"float64": 1e-4, "float32": 1e-5}[policy]


def test_resumed_fused_run_is_the_uninterrupted_one(ds, tmp_path):
    """Interrupted after epoch 1 (checkpoints), the run continues to epoch 3 as if never stopped; a model
    whose checkpoint is older than the others' trains in its own group and lands on the same numbers."""
    straight = fused.fit_many([build(ds, o) for o in OPTS], ds, epochs=3, batch_size=32, seed=1,
                              steps_per_execution=2, verbose=0)
    dirs = [tmp_path / o for o in OPTS]
    fused.fit_many([build(ds, o) for o in OPTS[:2]], ds, epochs=1, batch_size=32, seed=1, steps_per_execution=2,
                   checkpoint_dirs=dirs[:2], checkpoint_every_s=0, verbose=0)
    assert all(len(pd.read_csv(d / "history.csv")) == 1 for d in dirs[:2]) and not dirs[2].exists()
    resumed = fused.fit_many([build(ds, o) for o in OPTS], ds, epochs=3, batch_size=32, seed=1,
                             steps_per_execution=2, checkpoint_dirs=dirs, verbose=0)
    for s, r, d in zip(straight, resumed, dirs):
        np.testing.assert_allclose(r[METRICS].to_numpy(), s[METRICS].to_numpy(), atol=1e-5)
        assert len(pd.read_csv(d / "history.csv")) == 3  # the last epoch is always checkpointed


def test_fit_resumes_a_fused_checkpoint(ds, tmp_path):
    """Both trainers write the same checkpoints: model.fit continues where the fused trainer stopped."""
    straight = training.fit(build(ds, "adam"), ds, epochs=2, batch_size=32, seed=2, verbose=0)
    fused.fit_many([build(ds, "adam")], ds, epochs=1, batch_size=32, seed=2, checkpoint_dirs=[tmp_path],
                   verbose=0)
    resumed = training.fit(build(ds, "adam"), ds, epochs=2, batch_size=32, seed=2, checkpoint_dir=tmp_path,
                           verbose=0)
    np.testing.assert_allclose(resumed[METRICS].to_numpy(), straight[METRICS].to_numpy(), atol=1e-5)


def test_the_stacked_forward_is_each_models_own_call():
    """repro.ml.stacked on a Sequential with padding 'same', a lone Dense, dropout (each model's own masks,
    training=True) and a layer it has no stacked form for (BatchNormalization, vmapped): the outputs and the
    new seed states of K=3 models are those of each model's stateless_call, within float32 rounding."""
    import jax.numpy as jnp
    import keras
    from keras import layers

    from repro.ml import stacked

    def net(seed):
        keras.utils.set_random_seed(seed)
        return keras.Sequential([keras.Input((12, 12, 3)), layers.Conv2D(4, 3, padding="same", activation="relu"),
                                 layers.BatchNormalization(), layers.MaxPooling2D(2), layers.Flatten(),
                                 layers.Dense(8, activation="tanh"), layers.Dropout(0.5), layers.Dense(5)])

    nets = [net(s) for s in (0, 1, 2)]
    assert stacked.stackable(nets[0]) == ""
    x = np.random.default_rng(0).random((3, 6, 12, 12, 3), dtype="float32")
    t = [jnp.stack([m.trainable_variables[i].value for m in nets]) for i in range(len(nets[0].trainable_variables))]
    n = [jnp.stack([m.non_trainable_variables[i].value for m in nets])
         for i in range(len(nets[0].non_trainable_variables))]
    out, new_n = stacked.forward(nets[0], t, n, jnp.asarray(x), training=True)
    for k, m in enumerate(nets):
        ref, ref_n = m.stateless_call([v.value for v in m.trainable_variables],
                                      [v.value for v in m.non_trainable_variables], x[k], training=True)
        np.testing.assert_allclose(np.asarray(out[k]), np.asarray(ref), atol=1e-5)
        for a, b in zip(new_n, ref_n):
            np.testing.assert_allclose(np.asarray(a[k]), np.asarray(b), atol=1e-5)
    assert len({float(out[k].sum()) for k in range(3)}) == 3  # three models, three outputs
    # a frozen Dense (its weights non-trainable) and a Dense on a 4-d input run as Keras runs them
    keras.utils.set_random_seed(3)
    odd = [keras.Sequential([keras.Input((6, 6, 2)), layers.Dense(3), layers.Dense(4, trainable=False)])
           for _ in range(2)]
    assert stacked.stackable(odd[0]) == "" and stacked._kind(odd[0].layers[1])[0] == "vmap"
    x4 = np.random.default_rng(1).random((2, 5, 6, 6, 2), dtype="float32")
    t4 = [jnp.stack([m.trainable_variables[i].value for m in odd]) for i in range(2)]
    n4 = [jnp.stack([m.non_trainable_variables[i].value for m in odd]) for i in range(2)]
    out4, _ = stacked.forward(odd[0], t4, n4, jnp.asarray(x4), training=True)
    for k, m in enumerate(odd):
        np.testing.assert_allclose(np.asarray(out4[k]), np.asarray(m(x4[k])), atol=1e-5)
    strided = keras.Sequential([keras.Input((8, 8, 1)), layers.Conv2D(2, 3, strides=2)])
    assert "strides, dilation or groups other than 1" in stacked.stackable(strided)
    assert stacked.stackable(keras.Model(strided.inputs, strided.outputs)) == "Functional is not a Sequential"


def test_vmapped_and_stacked_programs_train_alike(ds):
    """The same three models trained by the stacked program (the default) and the vmapped one (stack=False):
    equal histories within 1e-5; asking to stack a model that cannot be stacked is an error naming why."""
    run = lambda stack: fused.fit_many([build(ds, o, seed=3) for o in STEADY], ds, epochs=1,  # noqa: E731
                                       batch_size=32, seed=3, steps_per_execution=2, verbose=0, stack=stack)
    for a, b in zip(run(None), run(False)):
        np.testing.assert_allclose(a[METRICS].to_numpy(), b[METRICS].to_numpy(), atol=1e-5)
    import keras

    try:
        half = [build(ds, "momentum", "mixed_float16")]
        assert fused.Layout(half).stacked is False
        with pytest.raises(ValueError, match="cannot be stacked: a 16-bit compute dtype"):
            fused.Layout(half, stack=True)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_fits_epoch_time_waits_for_its_steps_under_jax():
    """Keras's JAX trainer dispatches steps asynchronously: an epoch's training time read without waiting for them
    (training._wait_for) was a fifth of the test pass's on this CPU (0.5 s against 1.2 s for 1,024 training and
    1,000 test images, the paper's CNN). Training an image costs about three times testing one, so the training
    part must take longer than the test pass (the counterfactual: without the wait, it reads less)."""
    import keras

    more = data.load("mnist_subset_rgb32", 1024, 1000, seed=0)
    keras.utils.set_random_seed(0)
    model = optim.compile_classifier(models.polishchuk_cnn(more.input_shape, more.num_classes, [32, 64, 64], 64, 0.5),
                                     "adam", 1e-3, 0.9)
    h = training.fit(model, more, epochs=2, batch_size=32, seed=0, verbose=0)
    assert h["epoch_time_s"].iloc[1] > h["eval_time_s"].iloc[1], h
