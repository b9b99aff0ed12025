"""Networks named after the papers, built as the papers describe them.

Where a paper is silent, the choice is documented here and in the book chapter.
"""

from __future__ import annotations


def mnist_cnn(input_shape=(28, 28, 1), num_classes: int = 10):
    """`cloudcost2017` MNIST network (the Keras ``mnist_cnn`` example).

    Conv2D(32, 3x3, relu) -> Conv2D(64, 3x3, relu) -> MaxPooling2D(2x2) -> Dropout(0.25)
    -> Flatten -> Dense(128, relu) -> Dropout(0.5) -> Dense(10, softmax).
    The paper says "Dropout after the 3rd and 4th layers" without rates; 0.25 and 0.5 are
    the rates of the Keras example it follows.
    """
    import keras
    from keras import layers

    return keras.Sequential(
        [
            keras.Input(shape=input_shape),
            layers.Conv2D(32, 3, activation="relu"),
            layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Dropout(0.25),
            layers.Flatten(),
            layers.Dense(128, activation="relu"),
            layers.Dropout(0.5),
            layers.Dense(num_classes, activation="softmax"),
        ],
        name="cloudcost2017_mnist_cnn",
    )


def cifar10_cnn(input_shape=(32, 32, 3), num_classes: int = 10):
    """`cloudcost2017` CIFAR-10 network (the Keras ``cifar10_cnn`` example).

    Conv(32) -> Conv(32) -> MaxPool -> Dropout(0.25) -> Conv(64) -> Conv(64) -> MaxPool ->
    Dropout(0.25) -> Flatten -> Dense(512, relu) -> Dropout(0.5) -> Dense(10, softmax).
    The Keras example pads the first conv of each block ('same'); the paper does not say,
    so we follow the example. Dropout rates are the example's.
    """
    import keras
    from keras import layers

    return keras.Sequential(
        [
            keras.Input(shape=input_shape),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Dropout(0.25),
            layers.Conv2D(64, 3, padding="same", activation="relu"),
            layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Dropout(0.25),
            layers.Flatten(),
            layers.Dense(512, activation="relu"),
            layers.Dropout(0.5),
            layers.Dense(num_classes, activation="softmax"),
        ],
        name="cloudcost2017_cifar10_cnn",
    )
