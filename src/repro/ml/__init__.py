"""Data (real loaders and declared stand-ins), the model registry, optimizers and training."""
