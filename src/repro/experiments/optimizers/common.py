"""Names shared by the modules of this experiment."""

NAME = "optimizers"
OPTIMIZERS = ("sgd", "momentum", "nesterov", "rmsprop", "adam", "adagrad", "nadam")  # the paper's seven
# every optimizer a run may train (repro.ml.optim builds each), with its label; one beyond the paper's seven gets
# "no claim of the paper" in the chapter and never changes a verdict about the seven

LABELS = {"sgd": "SGD", "momentum": "SGD + momentum", "nesterov": "SGD + Nesterov", "rmsprop": "RMSprop",
          "adam": "Adam", "adagrad": "Adagrad", "nadam": "Nadam", "adadelta": "Adadelta"}
