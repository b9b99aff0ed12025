"""The Jupyter Book: build and publish (``build``), chapter helpers (``report``), plot style (``plots``)."""
