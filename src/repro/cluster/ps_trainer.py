"""Training one Keras model on TensorFlow's ``ParameterServerStrategy``, as cluster programs do.

Runs in the chief (coordinator) process of a cluster (:func:`repro.cluster.run_cluster`); the
variables live on the parameter-server tasks, each scheduled *closure* runs on a free worker:

* it reads the weights from the PS (a *pull*), computes one batch's gradients (or, emulated, waits
  the hardware profile's ``t_grad`` and hands on zeros of the gradients' shapes:
  :mod:`repro.cluster.compute`), and sends them back (a *push*);
* **sync**: the push adds the gradients to PS-side accumulators; after each step's closures,
  ``coordinator.join()`` is the barrier, then ONE update with the mean gradient is applied on the PS
  and the accumulators are zeroed;
* **async**: the push applies its own update (plain SGD) to the PS variables as it arrives.

Each closure counts itself in a per-worker counter (:meth:`PSTrainer.counts`), which, unlike an
optimizer's ``iterations``, loses no increment under asynchronous updates. TensorFlow and Keras are
imported inside the functions.
"""

from __future__ import annotations

from typing import Any

from .compute import wait_tensors, wait_then_zeros


def ps_strategy():
    """``(strategy, coordinator)`` of this cluster, from its ``TF_CONFIG``."""
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    return strategy, tf.distribute.coordinator.ClusterCoordinator(strategy)


class PSTrainer:
    """One model on a ParameterServerStrategy: closures pull, compute (or wait), push; sync or async.

    ``stateless``: each closure pulls the weights explicitly (``tf.identity`` on the worker) and
    computes with ``model.stateless_call`` on those copies, so a pull and a push are separate steps
    (batch-norm statistics are read, not written back); otherwise it calls the model, which reads
    the variables where it needs them. ``semaphore`` (needs ``stateless``): the pull and the push
    each run in a ``tf.CriticalSection`` on the first variable's PS, one closure at a time.
    ``optimizer``: async updates go through a Keras SGD optimizer (its ``iterations`` is
    :attr:`opt`'s), not a plain ``assign_sub``. ``wait_s``: emulated compute, seconds a closure
    waits in timed steps (None: it computes). ``loss_fn(y, pred)``: sparse categorical
    cross-entropy unless given.
    """

    accs: list[Any]  # sync: one accumulator (a tf.Variable) per trainable variable, next to it
    opt: Any  # async with ``optimizer``: the Keras SGD optimizer (None otherwise)
    sections: tuple[Any, Any] | None  # ``semaphore``: the pull and push tf.CriticalSection

    def __init__(self, strategy, coordinator, net, learning_rate: float, *, sync: bool, stateless: bool = False,
                 semaphore: bool = False, optimizer: bool = False, wait_s: float | None = None, loss_fn=None):
        import tensorflow as tf

        if semaphore and not stateless:
            raise ValueError("semaphore guards the explicit pull: it needs stateless=True")
        self.tf, self.strategy, self.coordinator, self.net = tf, strategy, coordinator, net
        self.learning_rate, self.sync = learning_rate, sync
        self.tvars = list(net.trainable_variables)
        self.ntvars = list(net.non_trainable_variables)
        self.accs, self.opt, self.sections = [], None, None
        self._variables(optimizer)
        if semaphore:
            with tf.device(self.tvars[0].value.device):
                self.sections = (tf.CriticalSection(name="pull"), tf.CriticalSection(name="push"))
        closure = self._closure(stateless, wait_s is not None, loss_fn)

        @tf.function
        def step(iterator, wait):
            x, y = next(iterator)
            return strategy.run(closure, args=(x, y, wait))

        @tf.function
        def step_on(x, y, wait):
            return strategy.run(closure, args=(x, y, wait))

        @tf.function
        def apply(scale):
            for v, a in zip(self.tvars, self.accs):
                with tf.device(a.device):  # the update is computed on the PS, not on the coordinator
                    v.value.assign_sub(a * tf.cast(scale, a.dtype))
                    a.assign(tf.zeros_like(a))
            return tf.constant(0)

        self.step, self.step_on, self.apply = step, step_on, apply
        self.warm, self.wait = wait_tensors(wait_s)
        self.scheduled = 0  # closures scheduled
        self.updates = 0  # updates applied to the PS variables

    def _variables(self, optimizer: bool) -> None:
        """The per-worker counter, and the sync accumulators (next to their variables) or the async optimizer."""
        import keras

        tf = self.tf
        with self.strategy.scope():
            self.counter = tf.Variable(0, dtype=tf.int64, trainable=False, per_worker_variable=True)
            if self.sync:
                for v in self.tvars:
                    with self.strategy.extended.colocate_vars_with(v.value):
                        self.accs.append(tf.Variable(tf.zeros(v.shape, v.value.dtype), trainable=False))
            elif optimizer:
                self.opt = keras.optimizers.SGD(learning_rate=self.learning_rate)
                self.opt.build(self.tvars)

    def _exclusive(self, section: int, fn):
        if self.sections is None:
            return fn()
        # pull and push touch the same variables: no exclusive access to them
        return self.sections[section].execute(fn, exclusive_resource_access=False)

    def _closure(self, stateless: bool, emulated: bool, loss_fn):
        """The replica function of one closure: pull, compute or wait, push, count; returns the loss."""
        import keras

        tf, net = self.tf, self.net
        loss_fn = loss_fn or keras.losses.sparse_categorical_crossentropy
        n_t = len(self.tvars)

        def pulled():
            return tuple(tf.identity(v.value) for v in self.tvars + (self.ntvars if stateless else []))

        def closure(x, y, wait):
            if stateless or emulated:
                flat = self._exclusive(0, pulled)
                tw, ntw = list(flat[:n_t]), list(flat[n_t:])
            if emulated:  # wait t_grad once the weights are here, push zeros of the real shapes
                loss, grads = wait_then_zeros(tw, wait)
            else:
                with tf.GradientTape() as tape:
                    if stateless:
                        tape.watch(tw)
                        pred, _ = net.stateless_call(tw, ntw, x, training=True)
                    else:
                        pred = net(x, training=True)
                    loss = tf.reduce_mean(loss_fn(y, pred))
                grads = tape.gradient(loss, tw if stateless else self.tvars)
            done = self._exclusive(1, lambda: self._push(grads))
            inc = self.counter.assign_add(1, read_value=False)
            with tf.control_dependencies([inc, done]):
                return tf.identity(loss)

        return closure

    def _push(self, grads):
        tf = self.tf
        ops = []
        if self.sync:  # into the accumulators, on the PS; atomic per variable
            ops = [a.assign_add(g, read_value=False) for a, g in zip(self.accs, grads)]
        elif self.opt is not None:  # applied on the PS as it arrives
            self.opt.apply_gradients(zip(grads, self.tvars))
        else:
            ops = [v.value.assign_sub(self.learning_rate * g, read_value=False) for v, g in zip(self.tvars, grads)]
        with tf.control_dependencies(ops):
            return tf.constant(0)

    def counts(self) -> list[int]:
        """Closures each worker has run so far."""
        import numpy as np

        return [int(np.asarray(v)) for v in self.counter.read_all()]

    def schedule(self, iterator=None, batch=None, warmup: bool = False):
        """Schedule one closure on a batch of the per-worker ``iterator`` or on ``batch`` ``(x, y)``;
        ``warmup``: an emulated closure waits 0 (:func:`repro.cluster.compute.wait_tensors`). Its RemoteValue."""
        wait = self.warm if warmup else self.wait
        self.scheduled += 1
        if batch is None:
            return self.coordinator.schedule(self.step, args=(iterator, wait))
        return self.coordinator.schedule(self.step_on, args=(*batch, wait))

    def update(self, closures: int) -> None:
        """Sync: the barrier, then ONE update with the mean of ``closures`` closures' gradients."""
        self.coordinator.join()
        self.apply(self.tf.constant(self.learning_rate / closures)).numpy()
        self.updates += 1

    def run(self, steps: int, closures: int, iterator=None, batches=None, warmup: bool = False) -> None:
        """``steps`` steps of ``closures`` closures each (one per batch of ``batches`` when given); sync:
        one update per step; async: every closure updates. Returns once every closure has finished."""
        for _ in range(steps):
            for batch in batches if batches is not None else [None] * closures:
                self.schedule(iterator, batch, warmup)
            if self.sync:
                self.update(len(batches) if batches is not None else closures)
        self.coordinator.join()
        if not self.sync:
            self.updates = self.scheduled
