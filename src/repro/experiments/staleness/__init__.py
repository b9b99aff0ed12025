"""Parameter-averaging period and asynchronous-SGD staleness (`savchenko2019`, digest §5)."""
