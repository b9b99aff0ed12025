import sys

from repro.core import progress

from .cli import main

progress.setup()  # `python -m repro.cluster node --slurm ...`: a SLURM task's log lines
sys.exit(main())
