"""The `cloudcost2017` MNIST CNN trained with Adam: the spine's first experiment."""
