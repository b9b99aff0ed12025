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


# --- The four networks of `slampa2017` (thesis chapter 2) ------------------------------
# Built from the thesis' tables, input size and class count as parameters (the thesis:
# 224x224 RGB Caltech256 images, 256 classes). Parameter counts are checked in
# tests/test_speedup.py against the published architectures at 1000 classes.


def vgg16e(input_size: int = 224, num_classes: int = 256):
    """`slampa2017` VGG16E: VGG configuration E (Table 2.1), i.e. 16 conv + 3 FC layers.

    Five blocks of 3x3 'same' convolutions (2, 2, 4, 4, 4 layers with 64, 128, 256, 512,
    512 filters, ReLU), each followed by 2x2/2 max pooling, then Dense(4096) -> Dense(4096)
    -> Dense(num_classes, softmax). The thesis calls it "VGG16E"; it is the network better
    known as VGG19. Its Table 2.1 lists 128x128 maps after the first convolution and an
    8192x4096 first dense layer (a 128x128 input), while its text and its code use 224x224
    inputs (25088x4096); the first dense layer simply follows ``input_size``. Dropout 0.5
    after the first two dense layers is from Simonyan & Zisserman (the thesis' table shows
    no dropout; it has no parameters). 1000 classes at 224: 143,667,240 parameters.
    """
    import keras
    from keras import layers

    inputs = keras.Input(shape=(input_size, input_size, 3))
    x = inputs
    for block, (convs, filters) in enumerate([(2, 64), (2, 128), (4, 256), (4, 512), (4, 512)], start=1):
        for i in range(1, convs + 1):
            x = layers.Conv2D(filters, 3, padding="same", activation="relu", name=f"conv{block}_{i}")(x)
        x = layers.MaxPooling2D(2, name=f"pool{block}")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(4096, activation="relu", name="fc6")(x)
    x = layers.Dropout(0.5)(x)
    x = layers.Dense(4096, activation="relu", name="fc7")(x)
    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(num_classes, activation="softmax", name="fc8")(x)
    return keras.Model(inputs, outputs, name="slampa2017_vgg16e")


def _inception(x, c1, r3, c3, r5, c5, pool_proj, name):
    """GoogLeNet Inception module with dimension reduction (thesis Fig. 2.8)."""
    from keras import layers

    def conv(t, filters, size, suffix):
        return layers.Conv2D(filters, size, padding="same", activation="relu", name=f"{name}_{suffix}")(t)

    b1 = conv(x, c1, 1, "1x1")
    b3 = conv(conv(x, r3, 1, "3x3_reduce"), c3, 3, "3x3")
    b5 = conv(conv(x, r5, 1, "5x5_reduce"), c5, 5, "5x5")
    bp = layers.MaxPooling2D(3, strides=1, padding="same", name=f"{name}_pool")(x)
    bp = conv(bp, pool_proj, 1, "pool_proj")
    return layers.Concatenate(name=f"{name}_concat")([b1, b3, b5, bp])


def _googlenet_side(x, num_classes: int, name: str):
    """A side classifier (thesis Table 2.3): avgpool 5x5/3, 1x1 conv 128, FC 1024, dropout 0.7, FC."""
    from keras import layers

    if x.shape[1] >= 5:  # 4x4 maps at 224x224 input; smaller inputs skip the pooling
        x = layers.AveragePooling2D(5, strides=3, name=f"{name}_pool")(x)
    x = layers.Conv2D(128, 1, activation="relu", name=f"{name}_conv")(x)
    x = layers.Flatten(name=f"{name}_flatten")(x)
    x = layers.Dense(1024, activation="relu", name=f"{name}_fc")(x)
    x = layers.Dropout(0.7)(x)
    return layers.Dense(num_classes, activation="softmax", name=name)(x)


def googlenet(input_size: int = 224, num_classes: int = 256, side_classifiers: bool = True):
    """`slampa2017` GoogLeNet (thesis Table 2.2, Szegedy et al. 2015).

    conv 7x7/2 (64) -> maxpool 3x3/2 -> conv 1x1 (64) + conv 3x3 (192) -> maxpool ->
    inception 3a, 3b -> maxpool -> 4a..4e -> maxpool -> 5a, 5b -> global average pool
    (the table's 7x7 avgpool at 224) -> dropout 0.4 -> linear -> softmax. All convolutions
    'same' with ReLU; local response normalisation (no parameters, not in the table) is
    left out. ``side_classifiers=True`` adds the two side classifiers of Table 2.3 on the
    outputs of 4a and 4d; the model then has three outputs (main, side 4a, side 4d).
    Without them, at 1000 classes: 6,998,552 parameters (published: "6.8M").
    """
    import keras
    from keras import layers

    inputs = keras.Input(shape=(input_size, input_size, 3))
    x = layers.Conv2D(64, 7, strides=2, padding="same", activation="relu", name="conv1")(inputs)
    x = layers.MaxPooling2D(3, strides=2, padding="same", name="pool1")(x)
    x = layers.Conv2D(64, 1, activation="relu", name="conv2_reduce")(x)
    x = layers.Conv2D(192, 3, padding="same", activation="relu", name="conv2")(x)
    x = layers.MaxPooling2D(3, strides=2, padding="same", name="pool2")(x)
    x = _inception(x, 64, 96, 128, 16, 32, 32, "inception_3a")
    x = _inception(x, 128, 128, 192, 32, 96, 64, "inception_3b")
    x = layers.MaxPooling2D(3, strides=2, padding="same", name="pool3")(x)
    x = _inception(x, 192, 96, 208, 16, 48, 64, "inception_4a")
    side = [_googlenet_side(x, num_classes, "side_4a")] if side_classifiers else []
    x = _inception(x, 160, 112, 224, 24, 64, 64, "inception_4b")
    x = _inception(x, 128, 128, 256, 24, 64, 64, "inception_4c")
    x = _inception(x, 112, 144, 288, 32, 64, 64, "inception_4d")
    if side_classifiers:
        side.append(_googlenet_side(x, num_classes, "side_4d"))
    x = _inception(x, 256, 160, 320, 32, 128, 128, "inception_4e")
    x = layers.MaxPooling2D(3, strides=2, padding="same", name="pool4")(x)
    x = _inception(x, 256, 160, 320, 32, 128, 128, "inception_5a")
    x = _inception(x, 384, 192, 384, 48, 128, 128, "inception_5b")
    x = layers.GlobalAveragePooling2D(name="pool5")(x)
    x = layers.Dropout(0.4)(x)
    main = layers.Dense(num_classes, activation="softmax", name="main")(x)
    return keras.Model(inputs, [main, *side] if side else main, name="slampa2017_googlenet")


def _fire(x, squeeze, expand1, expand3, name):
    """SqueezeNet Fire module (thesis Fig. 2.9): 1x1 squeeze, then 1x1 and 3x3 expand, concatenated."""
    from keras import layers

    s = layers.Conv2D(squeeze, 1, activation="relu", name=f"{name}_squeeze")(x)
    e1 = layers.Conv2D(expand1, 1, activation="relu", name=f"{name}_expand1x1")(s)
    e3 = layers.Conv2D(expand3, 3, padding="same", activation="relu", name=f"{name}_expand3x3")(s)
    return layers.Concatenate(name=f"{name}_concat")([e1, e3])


def squeezenet(input_size: int = 224, num_classes: int = 256):
    """`slampa2017` SqueezeNet v1.0 (thesis Table 2.4, Iandola et al. 2016).

    conv 7x7/2 (96) -> maxpool 3x3/2 -> fire 1-3 -> maxpool -> fire 4-7 -> maxpool ->
    fire 8 -> dropout 0.5 -> conv 1x1 (num_classes, ReLU) -> global average pool -> softmax.
    The thesis numbers the fire modules 1-8 (the original paper: fire2-fire9). Its table
    gives 112x112 maps after conv1, so conv1 pads ('same'); padding has no parameters.
    1000 classes: 1,248,424 parameters.
    """
    import keras
    from keras import layers

    inputs = keras.Input(shape=(input_size, input_size, 3))
    x = layers.Conv2D(96, 7, strides=2, padding="same", activation="relu", name="conv1")(inputs)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for i, (s, e) in enumerate([(16, 64), (16, 64), (32, 128)], start=1):
        x = _fire(x, s, e, e, f"fire{i}")
    x = layers.MaxPooling2D(3, strides=2, name="pool2")(x)
    for i, (s, e) in enumerate([(32, 128), (48, 192), (48, 192), (64, 256)], start=4):
        x = _fire(x, s, e, e, f"fire{i}")
    x = layers.MaxPooling2D(3, strides=2, name="pool3")(x)
    x = _fire(x, 64, 256, 256, "fire8")
    x = layers.Dropout(0.5)(x)
    x = layers.Conv2D(num_classes, 1, activation="relu", name="conv_final")(x)
    x = layers.GlobalAveragePooling2D(name="pool_final")(x)
    outputs = layers.Softmax(name="softmax")(x)
    return keras.Model(inputs, outputs, name="slampa2017_squeezenet")


def _residual(x, filters: int, downsample: bool, name: str):
    """ResNet basic block (thesis Fig. 2.10/2.12): two 3x3 conv + BN, projection shortcut when downsampling."""
    from keras import layers

    stride = 2 if downsample else 1
    y = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False, name=f"{name}_conv1")(x)
    y = layers.BatchNormalization(name=f"{name}_bn1")(y)
    y = layers.ReLU(name=f"{name}_relu1")(y)
    y = layers.Conv2D(filters, 3, padding="same", use_bias=False, name=f"{name}_conv2")(y)
    y = layers.BatchNormalization(name=f"{name}_bn2")(y)
    if downsample:
        x = layers.Conv2D(filters, 1, strides=2, use_bias=False, name=f"{name}_proj")(x)
        x = layers.BatchNormalization(name=f"{name}_proj_bn")(x)
    y = layers.Add(name=f"{name}_add")([x, y])
    return layers.ReLU(name=f"{name}_out")(y)


def resnet34(input_size: int = 224, num_classes: int = 256):
    """`slampa2017` Resnet34 (thesis Table 2.5, He et al. 2016).

    conv 7x7/2 (64) + BN + ReLU -> maxpool 3x3/2 -> 3, 4, 6, 3 basic residual blocks with
    64, 128, 256, 512 filters (the first block of stages 2-4 halves the maps with stride 2)
    -> global average pool -> dense softmax. The thesis shows both ways of matching the
    shortcut's channels (zero padding, Fig. 2.11; 1x1 convolution, Fig. 2.12) and notes the
    convolution works slightly better; we use the 1x1 projection (He et al.'s option B, the
    published 21.8M-parameter Resnet34). Convolutions have no bias (batch norm follows).
    1000 classes: 21,797,672 trainable parameters (+ 17,024 batch-norm moving statistics).
    """
    import keras
    from keras import layers

    inputs = keras.Input(shape=(input_size, input_size, 3))
    x = layers.Conv2D(64, 7, strides=2, padding="same", use_bias=False, name="conv1")(inputs)
    x = layers.BatchNormalization(name="bn1")(x)
    x = layers.ReLU(name="relu1")(x)
    x = layers.MaxPooling2D(3, strides=2, padding="same", name="pool1")(x)
    for stage, (blocks, filters) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)], start=2):
        for b in range(blocks):
            x = _residual(x, filters, downsample=(stage > 2 and b == 0), name=f"res{stage}_{b + 1}")
    x = layers.GlobalAveragePooling2D(name="pool_final")(x)
    outputs = layers.Dense(num_classes, activation="softmax", name="fc")(x)
    return keras.Model(inputs, outputs, name="slampa2017_resnet34")


SLAMPA2017_NETWORKS = {"VGG16E": vgg16e, "GoogLeNet": googlenet, "SqueezeNet": squeezenet, "Resnet34": resnet34}


def trainable_parameters(model) -> int:
    """Number of trainable weights (what a parameter server moves; BN moving statistics excluded)."""
    import numpy as np

    return int(sum(int(np.prod(w.shape)) for w in model.trainable_weights))


def small_cnn(input_shape=(28, 28, 1), num_classes: int = 10):
    """A small CNN for the `savchenko2019` averaging/staleness study (ours; the paper has no network).

    Conv2D(16, 3x3, relu) -> MaxPooling2D(2x2) -> Conv2D(32, 3x3, relu) -> MaxPooling2D(2x2)
    -> Flatten -> Dense(num_classes, softmax): about 13,000 weights on 28x28x1 input. No dropout
    and no batch normalisation, so a training step is a deterministic function of the weights
    and the minibatch (what the averaging-equals-single-machine check needs), and many
    configurations can be trained in one process on two CPU cores.
    """
    import keras
    from keras import layers

    return keras.Sequential(
        [
            keras.Input(shape=input_shape),
            layers.Conv2D(16, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Flatten(),
            layers.Dense(num_classes, activation="softmax"),
        ],
        name="savchenko2019_small_cnn",
    )


def polishchuk_cnn(input_shape=(32, 32, 3), num_classes: int = 10, filters=(32, 64, 64), dense_units: int = 64,
                   dropout: float = 0.5):
    """`polishchuk2019` Fig. 1 network for the optimizer comparison.

    The paper: three 3x3 convolutions with ReLU, each followed by max pooling, dropout before
    the output layer. Silent on filter counts, dense width and dropout rate: we take the
    TensorFlow CNN tutorial's 32-64-64 filters and Dense(64) (the closest well-known match)
    and dropout 0.5; all three are parameters of the experiment.
    """
    import keras
    from keras import layers

    stack = [keras.Input(shape=input_shape)]
    for f in filters:
        stack += [layers.Conv2D(f, 3, activation="relu"), layers.MaxPooling2D(2)]
    stack += [layers.Flatten(), layers.Dense(dense_units, activation="relu"), layers.Dropout(dropout),
              layers.Dense(num_classes, activation="softmax")]
    return keras.Sequential(stack, name="polishchuk2019_cnn")
