"""`slampa2017`: the thesis' equations for the speedup of distributed training."""
