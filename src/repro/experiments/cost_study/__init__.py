"""`cloudcost2017`: CPU (and GPU) training time, memory and cloud cost of two Keras CNNs."""
