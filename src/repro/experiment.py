"""What every experiment module does first: resolve parameters, open a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import params as _params
from .results import Run


def start(experiment: str, profile: str | None, overrides: dict | None, run_dir: str | Path | None) -> tuple[dict, str, callable]:
    """Validate parameters (one-line :class:`~repro.params.ParameterError` on bad input).

    Returns ``(params, profile, open_run)``; call ``open_run()`` once the inputs are known
    to be loadable, so that a bad dataset never leaves an empty run directory behind.
    """
    spec = _params.spec(experiment)
    profile = profile or spec.default_profile
    p = spec.resolve(profile, overrides)
    return p, profile, lambda: Run(experiment, profile, p, run_dir)


@dataclass
class Result:
    """What an experiment's ``run`` returns to its notebook."""

    run_dir: Path
    params: dict
    provenance: dict
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: dict = field(default_factory=dict)

    def __getitem__(self, name: str) -> pd.DataFrame:
        """A result table; if the run wrote it as ``<name>.csv`` it remembers that file (for downloads)."""
        from .report import CSV_ATTR

        df = self.tables[name]
        if (Path(self.run_dir) / f"{name}.csv").is_file():
            df.attrs[CSV_ATTR] = f"data/{self.provenance['experiment']}/{name}.csv"
        return df
