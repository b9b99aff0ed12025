#!/usr/bin/env bash
# The GPU campaign's entry on the lent GPU machine (and here): the campaign itself is Python, repro.campaign
# (`python -m repro.campaign` with no command prints its usage: prepare, plan, run, resume, collect, --rehearse,
# rehearse-env). This only finds the interpreter (PYTHON, else .venv's, else python3: the lent machine's) and
# puts the tree's src first on PYTHONPATH (the lent machine has the tree, not an installed package).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON; elif [ -x "$ROOT/.venv/bin/python" ]; then PY=$ROOT/.venv/bin/python; else PY=python3; fi
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" -m repro.campaign "$@"
