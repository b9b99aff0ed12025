"""Process entry points (kept out of the package's imports so ``python -m`` runs them cleanly)::

    python -m repro.cluster._entry supervise PLAN.json
    python -m repro.cluster._entry node serve|run ...
"""

import sys

if __name__ == "__main__":
    from repro.core import progress

    progress.setup()  # the task's log lines (its stdout and stderr go to its log file)
    if sys.argv[1:2] == ["supervise"]:
        from .supervisor import main
    else:
        from .node import main
    sys.exit(main(sys.argv[2:]))
