"""`polishchuk2019` part A: seven Keras optimizers on one CIFAR-10 CNN, and whether the verdict survives tuning."""
