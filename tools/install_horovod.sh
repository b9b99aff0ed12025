#!/usr/bin/env bash
# Build and install Horovod 0.28.1 (the last release) into a Python environment,
# as repro's optional fourth backend for the parameter-server experiment.
#
#   tools/install_horovod.sh [--optional] [PYTHON]        # default: .venv/bin/python
#
# --optional (what `make env` uses): where Horovod cannot be built here (no cmake or g++, or the
# build fails), say so in one line and exit 0; the experiments then report the Horovod rows as
# "not measured (Horovod not installed: tools/install_horovod.sh)". Without it, any failure exits 1.
#
# Horovod is built from source against the TensorFlow already installed in that
# environment, with the Gloo controller (no MPI needed) and CPU operations
# (set HOROVOD_GPU_OPERATIONS=NCCL yourself on a CUDA machine).
# Against TensorFlow >= 2.16 its XLA ops do not compile (missing
# highwayhash/arch_specific.h); repro does not use XLA, so that one source
# file is left out of the CMake sources. The built wheel is cached under
# ${REPRO_WHEEL_CACHE:-~/.cache/repro/wheels}, keyed by the TensorFlow version,
# so a second install (CI on the same machine) takes seconds, not minutes.
set -euo pipefail
OPTIONAL=0
if [ "${1:-}" = "--optional" ]; then OPTIONAL=1; shift; fi
PY=${1:-.venv/bin/python}
# One line and go on (--optional), or fail.
give_up() {
    if [ "$OPTIONAL" = 1 ]; then
        echo "horovod: not installed ($1); optional: the Horovod rows will say 'not measured'. Install later with tools/install_horovod.sh" >&2
        exit 0
    fi
    echo "horovod: $1" >&2; exit 1
}
case "$PY" in */*) PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY");; esac
VERSION=0.28.1
TF=$("$PY" -c 'import importlib.metadata as m; print(m.version("tensorflow") if any(d.metadata["Name"]=="tensorflow" for d in m.distributions()) else m.version("tensorflow-cpu"))')
CACHE=${REPRO_WHEEL_CACHE:-$HOME/.cache/repro/wheels}/horovod-$VERSION-tf$TF
if "$PY" -c 'import horovod.tensorflow as h; h.init(); h.shutdown()' >/dev/null 2>&1; then
    echo "horovod: already importable in $PY"; exit 0
fi
if ! ls "$CACHE"/horovod-*.whl >/dev/null 2>&1; then
    command -v cmake >/dev/null && command -v g++ >/dev/null || give_up "needs cmake and g++: apt-get install cmake g++"
    WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
    LOG=${TMPDIR:-/tmp}/repro-horovod-build.log
    "$PY" -m pip download --quiet --no-deps --no-binary :all: "horovod==$VERSION" -d "$WORK" >"$LOG" 2>&1 \
        || give_up "could not download the horovod $VERSION sdist; see $LOG"
    tar -xzf "$WORK/horovod-$VERSION.tar.gz" -C "$WORK"
    SRC=$WORK/horovod-$VERSION
    sed -i '/xla_mpi_ops.cc/d' "$SRC/horovod/tensorflow/CMakeLists.txt"
    "$PY" -m pip install --quiet cloudpickle psutil pyyaml packaging cffi
    echo "horovod: building $VERSION against TensorFlow $TF (several minutes)"
    ( cd "$SRC" && HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITHOUT_PYTORCH=1 \
        HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
        MAKEFLAGS="-j$(nproc)" \
        "$PY" -m pip wheel --no-build-isolation --no-deps -w "$WORK/dist" . ) >>"$LOG" 2>&1 \
        || give_up "the build failed; see $LOG"
    mkdir -p "$CACHE"; cp "$WORK"/dist/horovod-*.whl "$CACHE"/
fi
"$PY" -m pip install --quiet --no-deps "$CACHE"/horovod-*.whl
"$PY" -m pip install --quiet cloudpickle psutil pyyaml packaging cffi
"$PY" -c 'import horovod.tensorflow as h; h.init(); print("horovod", h.__version__ if hasattr(h,"__version__") else "", "size", h.size(), "gloo", h.gloo_built())'
