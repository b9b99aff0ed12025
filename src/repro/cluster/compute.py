"""Emulated computation for cluster programs: wait as long as a paper's hardware computed, in the graph.

An emulated worker does not compute its gradients: it waits the hardware profile's ``t_grad``
(:mod:`repro.predict.hardware`) once every weight it pulled has arrived, then hands on tensors of
the real gradients' shapes and dtypes (zeros), which travel and are applied like real ones. The
wait is a TensorFlow op (``SleepDataset`` read once), so it runs on the worker inside a function
dispatched there by ``ClusterCoordinator`` (a Python ``time.sleep`` would run on the coordinator).
TensorFlow is imported inside the function.
"""

from __future__ import annotations


def wait_then_zeros(tensors, seconds):
    """``(done, zeros)``: wait ``seconds`` after all ``tensors`` exist, then zeros shaped like each of them.

    ``seconds`` is a number or a scalar tensor: a function traced once can then wait 0 in its
    warm-up steps (which only trace, connect and allocate) and the emulated time in its timed ones.

    ``done`` (a float32 scalar, 0) comes out of the wait; every zero tensor depends on it, and
    the wait depends on one element of every input tensor, so the order is pull -> wait -> push.
    """
    import tensorflow as tf

    tensors = list(tensors)
    micro = tf.cast(tf.round(tf.maximum(tf.cast(seconds, tf.float64), 0.0) * 1e6), tf.int64)
    first = [tf.cast(tf.reshape(t, [-1])[:1], tf.float32) for t in tensors]
    start = tf.reduce_sum(tf.concat(first, axis=0)) * 0.0
    spec = {"output_types": [tf.float32], "output_shapes": [[]]}
    handle = tf.raw_ops.TensorDataset(components=[start], output_shapes=[[]])
    handle = tf.raw_ops.SleepDataset(input_dataset=handle, sleep_microseconds=micro, **spec)
    # one GetNext only: DatasetToSingleElement asks twice, and every request of a SleepDataset sleeps
    handle = tf.raw_ops.TakeDataset(input_dataset=handle, count=tf.constant(1, tf.int64), **spec)
    (done,) = tf.raw_ops.DatasetToSingleElement(dataset=handle, **spec)
    # t * 0 (from the wait) is computed where t is, the worker: a Fill would be placed next to the
    # variable it updates, on the parameter server, and no gradient would cross the link
    return done, [t * tf.cast(done, t.dtype) for t in tensors]


def wait_tensors(seconds: float | None):
    """(warm-up, timed) waits as float64 scalar tensors, arguments of one traced step: warm-up steps wait 0
    (they trace, connect and allocate, and are not timed), timed steps ``seconds`` (0 when None)."""
    import tensorflow as tf

    return tf.constant(0.0, tf.float64), tf.constant(seconds or 0.0, tf.float64)
