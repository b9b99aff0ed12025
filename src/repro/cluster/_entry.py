"""Process entry points (kept out of the package's imports so ``python -m`` runs them cleanly)::

    python -m repro.cluster._entry supervise PLAN.json
    python -m repro.cluster._entry node serve|run ...
"""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["supervise"]:
        from .supervisor import main
    else:
        from .node import main
    sys.exit(main(sys.argv[2:]))
