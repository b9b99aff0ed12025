"""Synchronous parameter averaging in one process (`savchenko2019`, digest §5).

N workers are N replicas of one network, each with its own fixed shard of the training
set. Every worker takes ``period`` (k) local minibatch steps from the common weights, then
the weights (and, optionally, the optimizer state) are replaced by their average over the
workers: one *averaging round*. With k = 1 and plain SGD this is, up to float rounding,
single-machine SGD on the global minibatch (the union of the workers' minibatches), because
``mean_i(w - lr g_i) = w - lr mean_i(g_i)`` and the mean of per-shard mean losses is the
global mean loss when the minibatches are of equal size; :func:`single_machine_reference`
trains that reference so the equivalence can be checked numerically.

Everything runs in one Python process with custom training loops whose steps
(:func:`repro.ml.steps.make_steps`) are compiled for the Keras backend in use.
One Keras model and one optimizer do the arithmetic for all workers: each worker's weights
and optimizer state live in NumPy arrays and are loaded into the model before its local
steps and saved after them, so the training step is traced once per model and input shape
however many workers and configurations are trained.

Data order (shared with the tests and the reference): the training set is split once into N
equal shards of a seeded permutation (the remainder is dropped); in every epoch each worker
shuffles its own shard with a seed that depends on ``(seed, epoch, worker)`` and cuts it into
minibatches of ``batch_size``, dropping a last partial minibatch so that all minibatches are
of equal size.

Keras and its backend are imported inside functions only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from repro.core import errors
from repro.ml import optim, steps

OPTIMIZERS = ("sgd", "momentum", "adam")
STATE_MODES = ("weights", "weights+state")


EngineError = errors.BadInput  # A bad argument to a training engine (one-line message).


def _check(cond: bool, message: str) -> None:
    if not cond:
        raise EngineError(message)


# ----------------------------------------------------------------------------------------------
# Data order
# ----------------------------------------------------------------------------------------------

def shards(n: int, workers: int, seed: int) -> list[np.ndarray]:
    """Fixed, equal, disjoint shards of ``range(n)`` (a seeded permutation; remainder dropped)."""
    _check(isinstance(workers, (int, np.integer)) and workers >= 1, f"workers must be an integer >= 1, got {workers!r}")
    _check(n >= workers, f"cannot split {n} examples into {workers} shards")
    perm = np.random.default_rng([seed, 1]).permutation(n)
    m = n // workers
    return [np.sort(perm[i * m:(i + 1) * m]) for i in range(workers)]


def epoch_batches(index: np.ndarray, batch_size: int, seed: int, epoch: int, worker: int = 0,
                  shuffle: bool = True) -> list[np.ndarray]:
    """Minibatches (index arrays) of one worker's shard for one epoch; last partial one dropped."""
    _check(batch_size >= 1, f"batch_size must be >= 1, got {batch_size!r}")
    order = np.random.default_rng([seed, 2, epoch, worker]).permutation(index) if shuffle else np.asarray(index)
    steps = len(order) // batch_size
    return [order[s * batch_size:(s + 1) * batch_size] for s in range(steps)]


# ----------------------------------------------------------------------------------------------
# One model + optimizer doing the arithmetic for every worker
# ----------------------------------------------------------------------------------------------

def make_optimizer(name: str, learning_rate: float, momentum: float = 0.9):
    """Keras optimizer by name: ``sgd`` (plain), ``momentum`` (SGD with momentum), ``adam``
    (the engines' subset of :func:`repro.ml.optim.make_optimizer`, with one-line :class:`EngineError`)."""
    _check(name in OPTIMIZERS, f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {name!r}")
    _check(learning_rate > 0, f"learning_rate must be > 0, got {learning_rate!r}")
    return optim.make_optimizer(name, learning_rate, momentum)


def default_loss():
    import keras

    return keras.losses.SparseCategoricalCrossentropy()


class Trainer:
    """A Keras model, an optimizer (or None) and traced train/gradient/apply/evaluate steps.

    ``loss`` defaults to sparse categorical cross-entropy on softmax outputs (integer
    labels); the tests pass mean squared error for a tiny linear model.
    """

    def __init__(self, model, optimizer, loss=None):
        self.model = model
        self.optimizer = optimizer
        self.loss = loss or default_loss()
        self.variables = list(model.trainable_variables)
        self.state_variables = []
        if optimizer is not None:  # a gradient-only trainer (the async emulation's reader) has none
            optimizer.build(self.variables)
            # optimizer state = every optimizer variable except the learning rate (iteration count,
            # momenta, Adam's first and second moments)
            self.state_variables = [v for v in optimizer.variables if not v.path.endswith("learning_rate")]
        self.initial_state = self.get_state()
        compiled = steps.make_steps(model, self.loss, optimizer)  # any Keras backend
        self.grads, self.train_step, self.apply_grads = compiled.grads, compiled.train, compiled.apply
        self._evaluate = compiled.evaluate

    # weights and state as lists of NumPy arrays -------------------------------------------
    def get_weights(self) -> list[np.ndarray]:
        return [np.array(v.numpy(), copy=True) for v in self.variables]

    def set_weights(self, weights) -> None:
        for v, w in zip(self.variables, weights):
            v.assign(w)

    def get_state(self) -> list[np.ndarray]:
        return [np.array(v.numpy(), copy=True) for v in self.state_variables]

    def set_state(self, state) -> None:
        for v, s in zip(self.state_variables, state):
            v.assign(s)

    def reset(self, weights) -> None:
        """Load ``weights`` and a fresh optimizer state (as right after ``build``)."""
        self.set_weights(weights)
        self.set_state(self.initial_state)

    def weight_bytes(self) -> int:
        return int(sum(np.prod(v.shape) * np.dtype(v.dtype).itemsize for v in self.variables))

    def state_bytes(self) -> int:
        """Bytes of the per-weight optimizer state (momenta, moments); scalars excluded."""
        return int(sum(np.prod(v.shape) * np.dtype(v.dtype).itemsize for v in self.state_variables if len(v.shape)))

    def evaluate(self, x: np.ndarray, y: np.ndarray, batch_size: int = 1000) -> tuple[float, float]:
        """(mean loss, accuracy) on ``x, y``."""
        if len(y) == 0:
            return float("nan"), float("nan")
        total_loss, hits = 0.0, 0.0
        for s in range(0, len(y), batch_size):
            loss, hit = self._evaluate(x[s:s + batch_size], y[s:s + batch_size])
            n = min(batch_size, len(y) - s)
            total_loss += float(loss) * n
            hits += float(hit)
        return total_loss / len(y), hits / len(y)


def average(arrays: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Element-wise mean over workers of lists of arrays; integer arrays (counters) from worker 0."""
    out = []
    for parts in zip(*arrays):
        if np.issubdtype(parts[0].dtype, np.floating):
            out.append(np.mean(np.stack(parts), axis=0).astype(parts[0].dtype))
        else:
            out.append(np.array(parts[0], copy=True))
    return out


@dataclass
class AveragingResult:
    history: list[dict] = field(default_factory=list)  # one row per epoch
    rounds: int = 0
    local_steps: int = 0  # per worker
    weights: list = field(default_factory=list)  # final (averaged) weights
    wall_s: float = 0.0


def train_averaging(trainer: Trainer, x: np.ndarray, y: np.ndarray, *, workers: int, period: int, epochs: int,
                    batch_size: int, init_weights, average_state: bool = True, seed: int = 0,
                    x_test=None, y_test=None, shuffle: bool = True, log=None) -> AveragingResult:
    """Synchronous parameter averaging: ``workers`` replicas, averaging every ``period`` local steps.

    Per epoch the history row holds the test loss/accuracy of the average of the workers'
    current weights (when the epoch does not end on a round, this average is evaluated
    without being sent back to the workers and is not counted as a round), the mean training
    loss of the epoch's local steps, and the rounds so far. After the last epoch an unfinished
    round is completed (counted) so that the result is one model.

    ``average_state=False`` averages the weights only: every worker keeps its own optimizer
    state across rounds. ``True`` also replaces each worker's state by the workers' mean.
    """
    _check(isinstance(period, (int, np.integer)) and period >= 1, f"period must be an integer >= 1, got {period!r}")
    _check(isinstance(epochs, (int, np.integer)) and epochs >= 1, f"epochs must be an integer >= 1, got {epochs!r}")
    parts = shards(len(y), workers, seed)
    _check(len(parts[0]) >= batch_size,
           f"each of {workers} workers gets {len(parts[0])} examples, fewer than one minibatch of {batch_size}")
    t0 = time.perf_counter()
    trainer.reset(init_weights)
    weights = [list(init_weights) for _ in range(workers)]
    states = [trainer.get_state() for _ in range(workers)]
    res = AveragingResult()
    in_round = 0  # local steps taken since the last averaging

    def do_average():
        nonlocal weights, states
        mean_w = average(weights)
        weights = [list(mean_w) for _ in range(workers)]
        if average_state:
            mean_s = average(states)
            states = [list(mean_s) for _ in range(workers)]

    for epoch in range(epochs):
        batches = [epoch_batches(parts[i], batch_size, seed, epoch, i, shuffle) for i in range(workers)]
        steps = len(batches[0])
        done, losses = 0, []
        while done < steps:
            chunk = min(period - in_round, steps - done)
            for i in range(workers):
                if workers > 1:
                    trainer.set_weights(weights[i])
                    trainer.set_state(states[i])
                for b in batches[i][done:done + chunk]:
                    losses.append(float(trainer.train_step(x[b], y[b])))
                if workers > 1:
                    weights[i] = trainer.get_weights()
                    states[i] = trainer.get_state()
                else:
                    weights[0] = trainer.get_weights()
            done += chunk
            in_round += chunk
            res.local_steps += chunk
            if in_round == period:
                if workers > 1:
                    do_average()
                res.rounds += 1 if workers > 1 else 0
                in_round = 0
        last = epoch == epochs - 1
        if last and in_round and workers > 1:
            do_average()
            res.rounds += 1
            in_round = 0
        current = average(weights) if workers > 1 else weights[0]
        test_loss, test_acc = float("nan"), float("nan")
        if x_test is not None and len(y_test):
            trainer.set_weights(current)
            test_loss, test_acc = trainer.evaluate(x_test, y_test)
        res.history.append({"epoch": epoch + 1, "train_loss": float(np.mean(losses)) if losses else float("nan"),
                            "test_loss": test_loss, "test_accuracy": test_acc, "rounds": res.rounds,
                            "local_steps": res.local_steps})
        if log:
            log(f"epoch {epoch + 1}/{epochs}: test accuracy {test_acc:.4f}, rounds {res.rounds}")
    res.weights = average(weights) if workers > 1 else weights[0]
    res.wall_s = time.perf_counter() - t0
    return res


def single_machine_reference(trainer: Trainer, x: np.ndarray, y: np.ndarray, *, workers: int, epochs: int,
                             batch_size: int, init_weights, seed: int = 0, shuffle: bool = True) -> list[np.ndarray]:
    """Single-machine training on the global minibatch: at each step the union of the minibatches
    that the ``workers`` workers of :func:`train_averaging` would use at that step (same init, same
    data order, global minibatch ``workers * batch_size``). Returns the final weights."""
    parts = shards(len(y), workers, seed)
    trainer.reset(init_weights)
    for epoch in range(epochs):
        batches = [epoch_batches(parts[i], batch_size, seed, epoch, i, shuffle) for i in range(workers)]
        for s in range(len(batches[0])):
            idx = np.concatenate([batches[i][s] for i in range(workers)])
            trainer.train_step(x[idx], y[idx])
    return trainer.get_weights()


def max_abs_difference(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return float(max(np.max(np.abs(np.asarray(u, np.float64) - np.asarray(v, np.float64))) for u, v in zip(a, b)))
