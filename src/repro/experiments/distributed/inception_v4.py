"""InceptionV4 (Szegedy, Ioffe, Vanhoucke, Alemi 2016, "Inception-v4, Inception-ResNet and the Impact of
Residual Connections", Figures 3-9) with the Keras functional API: the paper's Inception4 of Table 1,
which ``keras.applications`` does not provide.

Stem, 4 x Inception-A, Reduction-A (k, l, m, n = 192, 224, 256, 384), 7 x Inception-B, Reduction-B,
3 x Inception-C, global average pooling, dropout (keep 0.8), dense softmax; 299 x 299 input. Every
convolution has no bias and is followed by batch normalisation (with scale) and ReLU, as in the
TF-slim reference (``nets/inception_v4.py``) and its PyTorch port (Cadene ``pretrainedmodels``,
timm ``inception_v4``), whose 1000-class model has 42,679,816 trainable parameters; Keras also
counts batch norm's moving mean and variance (non-trainable) in ``count_params``. Keras is imported
inside the functions (see :mod:`.models`).
"""

from __future__ import annotations

# the trainable parameters of the 1000-class reference (timm / Cadene pretrainedmodels ``inception_v4``)
REFERENCE_TRAINABLE_1000 = 42_679_816


def _conv(x, filters: int, kh: int, kw: int, strides: int = 1, padding: str = "same"):
    """Conv2D without bias, batch norm, ReLU."""
    from keras import layers

    x = layers.Conv2D(filters, (kh, kw), strides=strides, padding=padding, use_bias=False)(x)
    x = layers.BatchNormalization(axis=-1, momentum=0.9997, epsilon=1e-3)(x)
    return layers.Activation("relu")(x)


def _concat(branches):
    from keras import layers

    return layers.Concatenate(axis=-1)(branches)


def _avg_pool(x):
    from keras import layers

    return layers.AveragePooling2D((3, 3), strides=1, padding="same")(x)


def _max_pool(x):
    from keras import layers

    return layers.MaxPooling2D((3, 3), strides=2, padding="valid")(x)


def stem(x):
    """299 x 299 x 3 -> 35 x 35 x 384 (the paper's Figure 3)."""
    x = _conv(x, 32, 3, 3, strides=2, padding="valid")
    x = _conv(x, 32, 3, 3, padding="valid")
    x = _conv(x, 64, 3, 3)
    x = _concat([_max_pool(x), _conv(x, 96, 3, 3, strides=2, padding="valid")])
    a = _conv(_conv(x, 64, 1, 1), 96, 3, 3, padding="valid")
    b = _conv(x, 64, 1, 1)
    b = _conv(_conv(b, 64, 1, 7), 64, 7, 1)
    b = _conv(b, 96, 3, 3, padding="valid")
    x = _concat([a, b])
    return _concat([_conv(x, 192, 3, 3, strides=2, padding="valid"), _max_pool(x)])


def inception_a(x):
    """35 x 35 x 384 -> 35 x 35 x 384 (Figure 4)."""
    a = _conv(x, 96, 1, 1)
    b = _conv(_conv(x, 64, 1, 1), 96, 3, 3)
    c = _conv(_conv(_conv(x, 64, 1, 1), 96, 3, 3), 96, 3, 3)
    d = _conv(_avg_pool(x), 96, 1, 1)
    return _concat([a, b, c, d])


def reduction_a(x, k: int = 192, l: int = 224, m: int = 256, n: int = 384):  # noqa: E741 (the paper's names)
    """35 x 35 x 384 -> 17 x 17 x 1024 (Figure 7, InceptionV4's k, l, m, n of Table 1 there)."""
    a = _conv(x, n, 3, 3, strides=2, padding="valid")
    b = _conv(_conv(_conv(x, k, 1, 1), l, 3, 3), m, 3, 3, strides=2, padding="valid")
    return _concat([a, b, _max_pool(x)])


def inception_b(x):
    """17 x 17 x 1024 -> 17 x 17 x 1024 (Figure 5)."""
    a = _conv(x, 384, 1, 1)
    b = _conv(_conv(_conv(x, 192, 1, 1), 224, 1, 7), 256, 7, 1)
    c = _conv(x, 192, 1, 1)
    for filters, kh, kw in ((192, 7, 1), (224, 1, 7), (224, 7, 1), (256, 1, 7)):
        c = _conv(c, filters, kh, kw)
    d = _conv(_avg_pool(x), 128, 1, 1)
    return _concat([a, b, c, d])


def reduction_b(x):
    """17 x 17 x 1024 -> 8 x 8 x 1536 (Figure 8)."""
    a = _conv(_conv(x, 192, 1, 1), 192, 3, 3, strides=2, padding="valid")
    b = _conv(_conv(_conv(x, 256, 1, 1), 256, 1, 7), 320, 7, 1)
    b = _conv(b, 320, 3, 3, strides=2, padding="valid")
    return _concat([a, b, _max_pool(x)])


def inception_c(x):
    """8 x 8 x 1536 -> 8 x 8 x 1536 (Figure 6)."""
    a = _conv(x, 256, 1, 1)
    b = _conv(x, 384, 1, 1)
    b = _concat([_conv(b, 256, 1, 3), _conv(b, 256, 3, 1)])
    c = _conv(_conv(_conv(x, 384, 1, 1), 448, 3, 1), 512, 1, 3)
    c = _concat([_conv(c, 256, 1, 3), _conv(c, 256, 3, 1)])
    d = _conv(_avg_pool(x), 256, 1, 1)
    return _concat([a, b, c, d])


def inception_v4(input_shape=(299, 299, 3), classes: int = 1000, dropout: float = 0.2):
    """The whole network (Figure 9) as a ``keras.Model``, weights freshly initialised."""
    import keras
    from keras import layers

    inputs = keras.Input(shape=input_shape)
    x = stem(inputs)
    for _ in range(4):
        x = inception_a(x)
    x = reduction_a(x)
    for _ in range(7):
        x = inception_b(x)
    x = reduction_b(x)
    for _ in range(3):
        x = inception_c(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(dropout)(x)
    outputs = layers.Dense(classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="inception_v4")
