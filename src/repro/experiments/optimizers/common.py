"""Names shared by the modules of this experiment."""

NAME = "optimizers"
OPTIMIZERS = ("sgd", "momentum", "nesterov", "rmsprop", "adam", "adagrad", "nadam")
LABELS = {"sgd": "SGD", "momentum": "SGD + momentum", "nesterov": "SGD + Nesterov", "rmsprop": "RMSprop",
          "adam": "Adam", "adagrad": "Adagrad", "nadam": "Nadam"}
