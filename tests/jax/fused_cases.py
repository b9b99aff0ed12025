"""Cases of the fused trainer (:mod:`repro.ml.fused`), which compiles with JAX: run by
``tests/smoke/test_fused_jax_smoke.py`` in a child process on Keras's JAX backend (TensorFlow and PyTorch
unimportable, as on the lent GPU machine). Not collected by the main test session (its name is not test_*)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.ml import data, fused, models, optim, training

OPTS = ("adam", "momentum", "adagrad")
METRICS = ["loss", "accuracy", "test_loss", "test_accuracy"]


@pytest.fixture(scope="module")
def ds():
    # 250 examples at batch 32: with steps_per_execution 3, two chunks of 3, one lone batch and a partial one of 26
    return data.load("mnist_subset_rgb32", 250, 100, seed=0)


def build(ds, opt, policy="float32"):
    import keras

    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    model = models.polishchuk_cnn(ds.input_shape, ds.num_classes, [8, 16, 16], 16, 0.5)
    return optim.compile_classifier(model, opt, 1e-2, 0.9)


def max_weight_gap(a, b) -> float:
    return max(float(np.max(np.abs(np.asarray(x, "float32") - np.asarray(y, "float32"))))
               for x, y in zip(a.get_weights(), b.get_weights()))


def test_keras_runs_on_jax():
    assert training.backend() == "jax"


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_fused_trajectories_are_model_fits(ds, policy):
    """Each of three models trained together follows the trajectory model.fit gives it alone: same
    losses and accuracies per epoch, same weights after two epochs (only float order differs)."""
    alone = [build(ds, o, policy) for o in OPTS]
    hist_alone = [training.fit(m, ds, epochs=2, batch_size=32, seed=3, verbose=0) for m in alone]
    together = [build(ds, o, policy) for o in OPTS]
    hist_together = fused.fit_many(together, ds, epochs=2, batch_size=32, seed=3, steps_per_execution=3, verbose=0)
    tol = 1e-5 if policy == "float32" else 2e-3
    for a, t, ha, ht in zip(alone, together, hist_alone, hist_together):
        assert list(ht["epoch"]) == [1, 2]
        np.testing.assert_allclose(ht[METRICS].to_numpy(), ha[METRICS].to_numpy(), atol=tol)
        assert max_weight_gap(a, t) <= tol
    # the three optimizers really differ (a trainer that trained one model three times would pass the above)
    assert len({round(float(h["loss"].iloc[-1]), 4) for h in hist_together}) == 3


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
