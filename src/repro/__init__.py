"""repro: re-running three papers and a thesis on deep-learning training, and checking a fourth paper that reports no
experiments; papermill notebooks call this package, and a Jupyter Book renders them."""

__version__ = "0.1.0"
