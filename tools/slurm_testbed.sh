#!/usr/bin/env bash
# A four-node SLURM cluster on this machine, for the SLURM launcher's tests: up | down | status | env.
# Root only; needs Debian's slurmctld, slurmd, slurm-client and munge. See tools/slurm_testbed.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
exec env PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" "$PY" tools/slurm_testbed.py "$@"
