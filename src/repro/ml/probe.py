"""A short probe of this machine's training speed for the preflight's time estimate (repro.core.preflight):
a compiled model trained a few steps on random data of the run's sizes, after one warm-up step."""

from __future__ import annotations

import time

import numpy as np

STEPS = 8  # timed steps after the warm-up (a few seconds on 2 CPU cores for the papers' small CNNs)


def images_per_second(model, input_shape: tuple, classes: int, batch_size: int, steps: int = STEPS) -> float:
    """Images/s of ``model.fit`` on random data, its first step (compilation) not counted."""
    rng = np.random.default_rng(0)
    x = rng.random((batch_size * (steps + 1), *input_shape), dtype=np.float32)
    y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, len(x))]  # one-hot, as the models are compiled
    model.fit(x[:batch_size], y[:batch_size], batch_size=batch_size, epochs=1, verbose=0)
    t0 = time.perf_counter()
    model.fit(x[batch_size:], y[batch_size:], batch_size=batch_size, epochs=1, verbose=0)
    return batch_size * steps / (time.perf_counter() - t0)


def estimate(images: int, build, input_shape: tuple, classes: int, batch_size: int, overhead: float = 1.15):
    """The preflight's estimator (:attr:`repro.core.preflight.Own.estimate`): ``images`` trained at the probe's
    images/s (``build()`` gives the compiled model), times ``overhead`` for the test passes and start-up."""
    def run() -> tuple[float, str]:
        rate = images_per_second(build(), input_shape, classes, batch_size)
        return images / rate * overhead, (f"{images:,} training images at {rate:,.0f} images/s, the probe's {STEPS} "
                                          f"steps of batch {batch_size} here, +{overhead - 1:.0%} for tests and "
                                          f"start-up")
    return run
