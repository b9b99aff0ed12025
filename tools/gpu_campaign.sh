#!/usr/bin/env bash
# The GPU campaign: the paper-scale runs of mnist_cnn, optimizers and cost_study on one GPU machine
# (one H100, 16 cores, Python 3.12 with JAX but no TensorFlow, no package registry, <= 64 MiB carried,
# <= 10 min per command), run through Keras 3's JAX backend, brought back into published/gpu-h100/.
#
#   tools/gpu_campaign.sh prepare          here: .carry/ = wheels for Python 3.12 that the GPU machine
#                                          lacks + Fashion-MNIST's idx files (the optimizers' stand-in);
#                                          prints its size (must stay under 64 MiB)
#   tools/gpu_campaign.sh step NAME        on the GPU machine (device tool: carry .carry, command
#                                          `tools/gpu_campaign.sh step NAME`): one step of STEPS below in
#                                          under 10 min; the finished run is packed into $OUT/NAME.tar.gz,
#                                          an unfinished one's checkpoints into $OUT/NAME-state.tar.gz
#                                          (unpack that into .carry/state here and run the step again)
#   tools/gpu_campaign.sh collect TAR...   here: unpack finished runs into published/gpu-h100/, render their
#                                          notebooks against the stored results, build that book
#   tools/gpu_campaign.sh --rehearse [DIR] here, no GPU: every step under JAX on the CPU with the tiny
#                                          `rehearse` profiles, collected into DIR (default: a temp dir)
#                                          laid out like published/, and its book rendered
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CARRY=${CARRY:-$ROOT/.carry}
PY=${PYTHON:-python3}
STEPS=${STEPS:-"mnist optimizers cost"}
PROFILE=gpu-h100
STEP_LIMIT_S=${STEP_LIMIT_S:-540}            # under the device tool's 10 minutes, with room to pack
# what the GPU machine's image lacks (its own numpy, pandas, scipy, matplotlib, seaborn, psutil, pyyaml,
# jax stay); versions pinned to what this checkout is tested with
WHEELS="keras==3.15.1 namex==0.1.0 optree==0.20.0 mlxtend==0.25.0"

experiment_of() {
  case "$1" in
    mnist) echo mnist_cnn ;; optimizers) echo optimizers ;; cost) echo cost_study ;;
    *) echo "gpu_campaign: unknown step '$1'; steps: $STEPS" >&2; exit 2 ;;
  esac
}

prepare() {
  mkdir -p "$CARRY/wheels" "$CARRY/datasets/fashion-mnist" "$CARRY/state"
  exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || true)  # .carry travels but is never committed
  if [ -n "$exclude" ]; then mkdir -p "$(dirname "$exclude")"; grep -qx '/.carry/' "$exclude" 2>/dev/null || echo '/.carry/' >> "$exclude"; fi
  # shellcheck disable=SC2086
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$CARRY/wheels" $WHEELS
  src=$("$PY" -c "from repro.ml import data; print(data.fashion_dir() or '')")
  [ -n "$src" ] || { echo "gpu_campaign: Fashion-MNIST not found here (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
  cp "$src"/*.gz "$CARRY/datasets/fashion-mnist/"
  du -sh "$CARRY"
  size=$(du -sm "$CARRY" | cut -f1)
  [ "$size" -lt 60 ] || { echo "gpu_campaign: .carry is ${size} MiB; the device tool carries at most 64" >&2; exit 1; }
}

gpu_env() {  # on the GPU machine: the carried wheels beside its own packages, JAX, the carried data
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$CARRY"/wheels/*.whl
  export PYTHONPATH="$ROOT/src:/tmp/site" KERAS_BACKEND=jax REPRO_OFFLINE_DIRS="$CARRY/datasets"
  export REPRO_RESULTS="$CARRY/state/results" PYTHONUNBUFFERED=1
}

step() {
  local name=$1 exp out=${OUT:?step runs on the device machine, where \$OUT is set}
  [ "$name" = bench ] || exp=$(experiment_of "$name")
  gpu_env
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 > "$out/$name-gpu.csv" 2>/dev/null &
  local smi=$!
  if [ "$name" = bench ]; then
    { timeout 240 "$PY" benchmarks/training_overhead.py --dataset fashion_mnist --out "$out" || true
      timeout 300 "$PY" benchmarks/fused_training.py --dataset fashion_mnist_rgb32 --n-train 50000 --out "$out" || true
    } 2>&1 | tee "$out/bench.log"
  else
    timeout "$STEP_LIMIT_S" "$PY" -m repro.cli measure "$exp" --profile "${STEP_PROFILE:-$PROFILE}" \
      2>&1 | tee "$out/$name.log" || true
    pack "$name" "$exp" "$out"
  fi
  kill "$smi" 2>/dev/null || true
  return 0
}

pack() {  # the finished run, else what a rerun resumes from
  local name=$1 exp=$2 out=$3 base="$REPRO_RESULTS/${STEP_PROFILE:-$PROFILE}/$exp" run
  run=$(cat "$base/LATEST" 2>/dev/null || true)
  if [ -n "$run" ] && [ -f "$base/$run/provenance.json" ]; then
    tar -czf "$out/$name.tar.gz" -C "$REPRO_RESULTS" "${STEP_PROFILE:-$PROFILE}/$exp/$run"
    echo "gpu_campaign: $name finished: $out/$name.tar.gz"
  elif [ -d "$base/.checkpoints" ]; then
    tar -czf "$out/$name-state.tar.gz" -C "$REPRO_RESULTS" "${STEP_PROFILE:-$PROFILE}/$exp/.checkpoints"
    echo "gpu_campaign: $name not finished in ${STEP_LIMIT_S} s; checkpoints in $out/$name-state.tar.gz"
  else
    echo "gpu_campaign: $name left nothing to keep (see $out/$name.log)" >&2
  fi
}

collect() {  # $1: the published-like root; the rest: tarballs of finished runs
  local dest=$1; shift
  for tarball in "$@"; do tar -xzf "$tarball" -C "$dest"; done
  for dir in "$dest"/*/*/; do  # <profile>/<experiment>/: LATEST names the newest run
    latest=$(ls -1 "$dir" | grep -v '^\.' | grep -v LATEST | sort | tail -1)
    [ -n "$latest" ] && echo "$latest" > "$dir/LATEST"
  done
  "$PY" -m repro.cli render --published "${STEP_PROFILE:-$PROFILE}" --published-dir "$dest"
  "$PY" -m repro.cli book --published-dir "$dest" --profile "${STEP_PROFILE:-$PROFILE}" --partial
}

rehearse() {  # every step on this CPU under JAX with the tiny profiles, into a published-like dir
  local dest=${1:-$(mktemp -d)} work
  work=$(mktemp -d)
  export KERAS_BACKEND=jax REPRO_RESULTS="$work/results" STEP_PROFILE=rehearse PYTHONUNBUFFERED=1
  for name in $STEPS; do
    exp=$(experiment_of "$name")
    "$PY" -m repro.cli measure "$exp" --profile rehearse
    run=$(cat "$REPRO_RESULTS/rehearse/$exp/LATEST")
    tar -czf "$work/$name.tar.gz" -C "$REPRO_RESULTS" "rehearse/$exp/$run"
  done
  mkdir -p "$dest"
  collect "$dest" "$work"/*.tar.gz
  echo "gpu_campaign: rehearsal published under $dest"
}

case "${1:-}" in
  prepare) prepare ;;
  step) step "${2:?step NAME: one of $STEPS}" ;;
  collect) shift; dest="$ROOT/published"; collect "$dest" "$@" ;;
  --rehearse) shift; rehearse "${1:-}" ;;
  *) sed -n '2,21p' "$0"; exit 2 ;;
esac
