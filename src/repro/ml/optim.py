"""The one optimizer factory of the package: every experiment names its optimizer here."""

from __future__ import annotations

OPTIMIZERS = ("sgd", "momentum", "nesterov", "rmsprop", "adam", "adagrad", "nadam", "adadelta")


def make_optimizer(name: str, learning_rate: float, momentum: float = 0.9):
    """The Keras optimizer ``name`` (one of :data:`OPTIMIZERS`) at ``learning_rate``.

    ``momentum`` is used by ``momentum`` (SGD with momentum) and ``nesterov``; every other
    hyperparameter is the Keras default."""
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {name!r}")
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be > 0, got {learning_rate!r}")
    import keras

    opt = keras.optimizers
    factories = {
        "sgd": lambda: opt.SGD(learning_rate=learning_rate),
        "momentum": lambda: opt.SGD(learning_rate=learning_rate, momentum=momentum),
        "nesterov": lambda: opt.SGD(learning_rate=learning_rate, momentum=momentum, nesterov=True),
        "rmsprop": lambda: opt.RMSprop(learning_rate=learning_rate),
        "adam": lambda: opt.Adam(learning_rate=learning_rate),
        "adagrad": lambda: opt.Adagrad(learning_rate=learning_rate),
        "nadam": lambda: opt.Nadam(learning_rate=learning_rate),
        "adadelta": lambda: opt.Adadelta(learning_rate=learning_rate),
    }
    return factories[name]()


def compile_classifier(model, optimizer: str, learning_rate: float, momentum: float = 0.9):
    """``model`` compiled with :func:`make_optimizer`, categorical cross-entropy and accuracy."""
    model.compile(optimizer=make_optimizer(optimizer, learning_rate, momentum),
                  loss="categorical_crossentropy", metrics=["accuracy"])
    return model
