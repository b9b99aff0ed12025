"""Compiled gradient, train, apply and evaluate steps of a Keras model, for any Keras backend.

Custom training loops (the staleness experiment's averaging, stale-gradient emulation and
threaded asynchronous SGD) need four steps that ``model.fit`` does not expose one by one:

* ``grads(x, y)``: the loss and the gradients of the trainable variables (nothing applied);
* ``train(x, y)``: one optimizer step on a minibatch; returns the loss;
* ``apply(grads)``: the optimizer applies gradients computed elsewhere;
* ``evaluate(x, y)``: the loss and the number of correct predictions (0 for one output).

:func:`make_steps` builds them once per model for the backend in use: TensorFlow traces them with
``tf.function`` around a ``GradientTape``; JAX compiles them with ``jax.jit`` over the model's
``stateless_call`` and the optimizer's ``stateless_apply`` and writes the results back into the
Keras variables; PyTorch runs autograd eagerly, as Keras's own PyTorch trainer does. Everything
else (losses, accuracy counts) is ``keras.ops``, so callers see backend tensors they can add,
scale and pass back to ``apply`` whatever the backend.

Backends are imported inside functions only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class Steps:
    grads: Callable
    train: Callable | None
    apply: Callable | None
    evaluate: Callable


def hits(pred, y):
    """Correct predictions in a minibatch (argmax of ``pred`` equals integer label ``y``); 0 when
    the model has a single output."""
    from keras import ops

    if not (pred.shape[-1] and pred.shape[-1] > 1):
        return ops.zeros((), dtype="float32")
    right = ops.equal(ops.cast(ops.argmax(pred, axis=-1), "int32"), ops.cast(ops.reshape(y, (-1,)), "int32"))
    return ops.sum(ops.cast(right, "float32"))


def make_steps(model, loss, optimizer=None) -> Steps:
    """The four steps of ``model`` with ``loss`` (a Keras loss: ``loss(y_true, y_pred)``) and, unless
    None, a built ``optimizer`` (``train`` and ``apply`` are None without one)."""
    import keras

    builders = {"tensorflow": _tensorflow_steps, "jax": _jax_steps, "torch": _torch_steps}
    name = keras.backend.backend()
    if name not in builders:
        raise ValueError(f"custom training steps support the backends {', '.join(builders)}, not {name!r}")
    return builders[name](model, loss, optimizer)


def _tensorflow_steps(model, loss, optimizer) -> Steps:
    import tensorflow as tf

    variables = list(model.trainable_variables)

    def _grads(x, y):
        with tf.GradientTape() as tape:
            value = loss(y, model(x, training=True))
        return value, tape.gradient(value, variables)

    def _train(x, y):
        value, g = _grads(x, y)
        optimizer.apply(g, variables)
        return value

    def _apply(g):
        optimizer.apply(list(g), variables)

    def _evaluate(x, y):
        pred = model(x, training=False)
        return loss(y, pred), hits(pred, y)

    fn = lambda f: tf.function(f, reduce_retracing=True)  # noqa: E731
    return Steps(fn(_grads), fn(_train) if optimizer else None, fn(_apply) if optimizer else None, fn(_evaluate))


def _jax_steps(model, loss, optimizer) -> Steps:
    import jax

    tv, ntv = list(model.trainable_variables), list(model.non_trainable_variables)
    ov = list(optimizer.variables) if optimizer else []
    values = lambda vs: [v.value for v in vs]  # noqa: E731

    def store(vs, new) -> None:
        for v, a in zip(vs, new):
            v.assign(a)

    def loss_fn(t, n, x, y):
        pred, n = model.stateless_call(t, n, x, training=True)
        return loss(y, pred), n

    value_and_grad = jax.value_and_grad(loss_fn, has_aux=True)
    grads_jit = jax.jit(value_and_grad)

    @jax.jit
    def train_jit(t, n, o, x, y):
        (value, n), g = value_and_grad(t, n, x, y)
        t, o = optimizer.stateless_apply(o, g, t)
        return value, t, n, o

    apply_jit = jax.jit(lambda t, o, g: optimizer.stateless_apply(o, g, t))
    eval_jit = jax.jit(lambda t, n, x, y: _eval_pure(model, loss, t, n, x, y))

    def grads(x, y):
        (value, n), g = grads_jit(values(tv), values(ntv), x, y)
        store(ntv, n)
        return value, g

    def train(x, y):
        value, t, n, o = train_jit(values(tv), values(ntv), values(ov), x, y)
        store(tv, t)
        store(ntv, n)
        store(ov, o)
        return value

    def apply(g):
        t, o = apply_jit(values(tv), values(ov), list(g))
        store(tv, t)
        store(ov, o)

    def evaluate(x, y):
        return eval_jit(values(tv), values(ntv), x, y)

    return Steps(grads, train if optimizer else None, apply if optimizer else None, evaluate)


def _eval_pure(model, loss, t, n, x, y):
    pred, _ = model.stateless_call(t, n, x, training=False)
    return loss(y, pred), hits(pred, y)


def _torch_steps(model, loss, optimizer) -> Steps:
    import torch
    from keras import ops

    variables = list(model.trainable_variables)

    def grads(x, y):
        for v in variables:
            v.value.grad = None
        value = loss(ops.convert_to_tensor(y), model(ops.convert_to_tensor(x), training=True))
        value.backward()
        return value.detach(), [v.value.grad.detach().clone() for v in variables]

    def apply(g):
        with torch.no_grad():
            optimizer.apply(list(g), variables)

    def train(x, y):
        value, g = grads(x, y)
        apply(g)
        return value

    def evaluate(x, y):
        with torch.no_grad():
            pred = model(ops.convert_to_tensor(x), training=False)
            return loss(ops.convert_to_tensor(y), pred), hits(pred, ops.convert_to_tensor(y))

    return Steps(grads, train if optimizer else None, apply if optimizer else None, evaluate)
