#!/usr/bin/env bash
# Build and install Horovod 0.28.1 (the last release) into a Python environment,
# as repro's optional fourth backend for the parameter-server experiment.
#
#   tools/install_horovod.sh [PYTHON]        # default: .venv/bin/python
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
PY=${1:-.venv/bin/python}
case "$PY" in */*) PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY");; esac
VERSION=0.28.1
TF=$("$PY" -c 'import importlib.metadata as m; print(m.version("tensorflow") if any(d.metadata["Name"]=="tensorflow" for d in m.distributions()) else m.version("tensorflow-cpu"))')
CACHE=${REPRO_WHEEL_CACHE:-$HOME/.cache/repro/wheels}/horovod-$VERSION-tf$TF
if "$PY" -c 'import horovod.tensorflow as h; h.init(); h.shutdown()' >/dev/null 2>&1; then
    echo "horovod: already importable in $PY"; exit 0
fi
if ! ls "$CACHE"/horovod-*.whl >/dev/null 2>&1; then
    command -v cmake >/dev/null && command -v g++ >/dev/null || {
        echo "horovod: needs cmake and g++ (apt-get install cmake g++)" >&2; exit 1; }
    WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
    "$PY" -m pip download --quiet --no-deps --no-binary :all: "horovod==$VERSION" -d "$WORK"
    tar -xzf "$WORK/horovod-$VERSION.tar.gz" -C "$WORK"
    SRC=$WORK/horovod-$VERSION
    sed -i '/xla_mpi_ops.cc/d' "$SRC/horovod/tensorflow/CMakeLists.txt"
    "$PY" -m pip install --quiet cloudpickle psutil pyyaml packaging cffi
    echo "horovod: building $VERSION against TensorFlow $TF (several minutes)"
    ( cd "$SRC" && HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITHOUT_PYTORCH=1 \
        HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
        MAKEFLAGS="-j$(nproc)" \
        "$PY" -m pip wheel --no-build-isolation --no-deps -w "$WORK/dist" . )
    mkdir -p "$CACHE"; cp "$WORK"/dist/horovod-*.whl "$CACHE"/
fi
"$PY" -m pip install --quiet --no-deps "$CACHE"/horovod-*.whl
"$PY" -m pip install --quiet cloudpickle psutil pyyaml packaging cffi
"$PY" -c 'import horovod.tensorflow as h; h.init(); print("horovod", h.__version__ if hasattr(h,"__version__") else "", "size", h.size(), "gloo", h.gloo_built())'
