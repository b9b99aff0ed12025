"""repro: papermill notebooks and shared helpers that reproduce five deep-learning papers."""

__version__ = "0.1.0"
