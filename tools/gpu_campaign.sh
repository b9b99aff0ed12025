#!/usr/bin/env bash
# The GPU campaign: the paper-scale runs of optimizers, cost_study and mnist_cnn in ONE call on a lent GPU
# machine (one H100 or H200, 16 cores, Python 3.12 with JAX but no TensorFlow, no package registry,
# <= 64 MiB carried with the tree, <= 10 min per command), through Keras 3's JAX backend.
#
#   tools/gpu_campaign.sh prepare          here: .carry/ = wheels for Python 3.12 that the GPU machine
#                                          lacks + Fashion-MNIST's idx files (the optimizers' stand-in);
#                                          says the tree's and .carry's sizes (together <= 63 of the 64 MiB)
#   tools/gpu_campaign.sh plan             here or there: the steps, each one's estimated time (measured on a
#                                          lent H100) and what fits DEADLINE_S; `run` prints it first
#   tools/gpu_campaign.sh run              on the GPU machine (device tool: carry .carry, timeout 600 s):
#                                          optimizers, mnist, cost (STEPS), work ending DEADLINE_S (575) s
#                                          after the start; a probe first only if PROBE_S > 0. Into $OUT:
#                                          campaign.log, probe.json, gpu.csv, each finished run as <step>.tar.gz as it
#                                          finishes, a run cut at the deadline as <step>-state.tar.gz
#                                          (its checkpoints and the JAX compilation cache). Exit 0: all
#                                          finished; 3: not all (cut, skipped or failed: campaign.log says)
#   tools/gpu_campaign.sh resume TAR...    here, before a second call: .carry/state becomes what an earlier
#                                          call's tarballs hold ($OUT/*.tar.gz; the checkpoints go under
#                                          .carry/state/results, the call's REPRO_RESULTS): the second
#                                          `run` resumes the cut run and skips the finished ones
#   tools/gpu_campaign.sh collect TAR...   here: finished runs into published/gpu-<model>/ (the GPU their
#                                          provenance records: gpu-h100, gpu-h200; PUBLISHED=DIR for
#                                          another root), their notebooks rendered against the stored
#                                          results, that book built
#   tools/gpu_campaign.sh --rehearse [DIR] here, no GPU: `run` as the GPU machine runs it (pyenv's Python
#                                          3.12 with the GPU image's packages in a venv cached under
#                                          ~/.cache/repro, only .carry's wheels, TensorFlow and PyTorch
#                                          blocked) on the tiny `rehearse` profiles, cut after one epoch,
#                                          `resume`d, run again, collected into DIR (default: a temp dir)
#   tools/gpu_campaign.sh rehearse-env     here: create (or find) the rehearsal's venv; prints its python
#
# Environment: PYTHON (the interpreter; default .venv's here, python3 on the GPU machine), STEPS,
# STEP_PROFILE (gpu-h100), DEADLINE_S, OUT (the device tool sets it), REHEARSE_WORK (the rehearsal's calls).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SELF=$ROOT/tools/gpu_campaign.sh
CARRY=${CARRY:-$ROOT/.carry}
STATE=${STATE:-$CARRY/state}                 # REPRO_RESULTS=$STATE/results, the JAX cache in $STATE/jax-cache
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON; elif [ -x "$ROOT/.venv/bin/python" ]; then PY=$ROOT/.venv/bin/python; else PY=python3; fi
STEPS=${STEPS:-"optimizers mnist cost"}      # call 1 finishes the first two; cost, cut, resumes in the next call
PROFILE=${STEP_PROFILE:-gpu-h100}
DEADLINE_S=${DEADLINE_S:-575}                # work ends this long after the start (a command: 600 s at most)
STOP_MARGIN_S=${STOP_MARGIN_S:-15}           # REPRO_DEADLINE this much earlier: a cut run's checkpoints are written
MIN_STEP_S=${MIN_STEP_S:-}                   # set: every step's least time; else each step's own (min_s)
PROBE_S=${PROBE_S:-0}                        # > 0: probe first (compiles the optimizers' program, 41 s on an H200; the step loads it from the JAX cache)
PROBE_ARGS=${PROBE_ARGS:-}                   # the probe's training and test images (default "0 0": the profile's)
CARRY_MAX_MIB=63                             # the device tool carries <= 64 MiB, tree and .carry together
CACHE_MAX_MIB=${CACHE_MAX_MIB:-5}            # a larger JAX cache is left out of the state tarball (<= 16 MiB)
T0=$(date +%s)
# what the GPU machine's image lacks (its own numpy, pandas, scipy, matplotlib, seaborn, psutil, pyyaml,
# jax stay); versions pinned to what this checkout is tested with
WHEELS="keras==3.15.1 namex==0.1.0 optree==0.20.0 mlxtend==0.25.0 pydantic==2.14.4 pydantic_core==2.50.5
  annotated-types==0.8.0 typing-inspection==0.4.5"
# what the GPU machine's image has and the campaign uses: the rehearsal's venv gets these
GPU_IMAGE="jax==0.11.2 jaxlib==0.11.2 numpy==2.5.2 pandas==3.1.1 scipy==1.18.1 matplotlib==3.11.2 seaborn==0.13.2
  psutil==7.2.2 PyYAML==6.0.4 absl-py==2.5.1 rich==15.0.0 h5py==3.16.0 ml_dtypes==0.6.0 packaging==26.4
  typing_extensions==4.16.0 scikit-learn==1.9.1 joblib==1.6.0"

say() { echo "gpu_campaign +$(($(date +%s) - T0))s: $*"; }
die() { echo "gpu_campaign: $*" >&2; exit 1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

experiment_of() {
  case "$1" in
    mnist) echo mnist_cnn ;; optimizers) echo optimizers ;; cost) echo cost_study ;;
    *) die "unknown step '$1'; steps: optimizers cost mnist (and bench)" ;;
  esac
}

# --- here: what the call carries -------------------------------------------------------------------

prepare() {
  prepare_wheels
  carry_commit
  local src
  mkdir -p "$CARRY/datasets/fashion-mnist" "$STATE"
  src=$("$PY" -c "from repro.ml import data; print(data.fashion_dir() or '')")
  [ -n "$src" ] || die "Fashion-MNIST not found here (apt-get install dataset-fashion-mnist)"
  case "$(cd "$src" && pwd -P)" in "$(cd "$CARRY" && pwd -P)"*) die "Fashion-MNIST found only in $src (the carry itself): apt-get install dataset-fashion-mnist" ;; esac
  rm -f "$CARRY"/datasets/fashion-mnist/*
  # xz instead of gzip: 4.6 MiB less to carry (the loader reads either)
  for f in "$src"/*-idx?-ubyte.gz; do
    gzip -dc "$f" | xz -9 -T2 > "$CARRY/datasets/fashion-mnist/$(basename "${f%.gz}").xz"
  done
  carry_check
}

prepare_wheels() {
  local exclude
  mkdir -p "$CARRY/wheels"
  exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || true)  # .carry travels but is never committed
  if [ -n "$exclude" ]; then mkdir -p "$(dirname "$exclude")"; grep -qx '/.carry/' "$exclude" 2>/dev/null || echo '/.carry/' >> "$exclude"; fi
  # shellcheck disable=SC2086
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$CARRY/wheels" $WHEELS
}

carry_commit() {  # the GPU machine gets the tree without .git: the commit and tree state travel in .carry
  mkdir -p "$CARRY"
  "$PY" -c "import json; from repro.core import provenance; print(json.dumps(provenance.git_commit()))" \
    > "$CARRY/git.json.tmp" && mv "$CARRY/git.json.tmp" "$CARRY/git.json"
  say "commit carried: $(cat "$CARRY/git.json")"
}

carry_check() {  # the call carries the tree (tracked, and untracked files git does not ignore) and .carry
  local tree carry over=${1:-die}
  tree=$(git ls-files -z --cached --others --exclude-standard | { du --files0-from=- -cb 2>/dev/null || true; } | tail -1 | cut -f1)
  carry=$(du -sb "$CARRY" | cut -f1)
  case "$STATE/" in "$CARRY"/*) ;; *) carry=$((carry + $(du -sb "$STATE" | cut -f1))) ;; esac  # a rehearsal's
  say "carried: tree $(mib "$tree") MiB + .carry $(mib "$carry") MiB = $(mib $((tree + carry))) MiB" \
      "(the device tool's limit: 64 MiB; kept under $CARRY_MAX_MIB)"
  [ $((tree + carry)) -le $((CARRY_MAX_MIB * 1048576)) ] && return 0
  [ "$over" = die ] && die "too much to carry: shrink .carry or the tree"
  return 1
}

resume() {  # .carry/state becomes what the tarballs hold: checkpoints, the JAX cache, finished runs
  local tarball first
  carry_commit
  rm -rf "$STATE/results" "$STATE/jax-cache"
  mkdir -p "$STATE/results"
  for tarball in "$@"; do
    first=$(tar -tzf "$tarball" | sed -n 1p)
    case "$first" in  # a state tarball holds results/... and jax-cache/ (relative to the state dir),
      results/*|jax-cache/*) tar -xzf "$tarball" -C "$STATE"; say "resume: $tarball: a cut run's state" ;;
      *) first=$(echo "$first" | cut -d/ -f1-3)  # a finished run <profile>/<experiment>/<run>/, or an old state
         if tar -tzf "$tarball" | grep -qx "$first/provenance.json"; then
           # only its provenance travels: enough for the next call to skip it (collect takes the tarball)
           tar -xzf "$tarball" -C "$STATE/results" "$first/provenance.json"
           echo "${first##*/}" > "$STATE/results/${first%/*}/LATEST"
           say "resume: $tarball: finished ($first)"
         else tar -xzf "$tarball" -C "$STATE/results"; say "resume: $tarball: a cut run's state (the old layout)"; fi ;;
    esac
  done
  [ -d "$STATE/jax-cache" ] && say "JAX compilation cache: $(mib "$(du -sb "$STATE/jax-cache" | cut -f1)") MiB"
  carry_check ask && return 0
  [ -d "$STATE/jax-cache" ] || die "too much to carry: shrink .carry or the tree"
  rm -rf "$STATE/jax-cache"
  say "the JAX cache left out (the next call compiles again)"
  carry_check
}

# --- on the GPU machine ----------------------------------------------------------------------------

gpu_env() {  # the carried wheels beside the machine's own packages, Keras on JAX, the carried data
  local site=${SITE:-/tmp/site} whl
  mkdir -p "$site"
  if [ "${INSTALL_WHEELS:-1}" != 1 ]; then
    say "wheels not installed (INSTALL_WHEELS=${INSTALL_WHEELS}): $PY's own packages"
  elif [ "${WHEEL_INSTALL:-pip}" = pip ] && "$PY" -m pip --version >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
      "$CARRY"/wheels/*.whl
  else
    if [ "${WHEEL_INSTALL:-pip}" = pip ]; then say "no pip in $PY: the wheels unzipped into $site"
    else say "the wheels unzipped into $site (WHEEL_INSTALL=$WHEEL_INSTALL)"; fi
    for whl in "$CARRY"/wheels/*.whl; do "$PY" -m zipfile -e "$whl" "$site"; done
  fi
  mkdir -p "$STATE/results" "$STATE/jax-cache"
  export PYTHONPATH="$ROOT/src:$site${PYTHONPATH:+:$PYTHONPATH}" KERAS_BACKEND=jax
  export REPRO_OFFLINE_DIRS="$CARRY/datasets" REPRO_RESULTS="$STATE/results" PYTHONUNBUFFERED=1
  export JAX_COMPILATION_CACHE_DIR="$STATE/jax-cache" JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0.5
}

left() { echo $((T0 + DEADLINE_S - $(date +%s))); }

# Each step's estimated seconds on a lent H100 with the gpu-h100 profiles (2026-11-27,
# benchmarks/results/gpu-h100-2026-11-27-campaign; an H200: about 10 % less) and the least time worth
# starting it with: the optimizers' first epoch compiles (31.5 s), a cost child takes up to 45 s.
est_s() {
  case "$1" in
    optimizers) echo 484 ;; mnist) echo 23 ;; bench) echo 300 ;;
    cost) echo $((25 * $(cost_children_left))) ;;  # 24 children of 17-45 s; a resumed sweep has fewer left
  esac
}
min_s() {
  [ -z "$MIN_STEP_S" ] || { echo "$MIN_STEP_S"; return; }
  case "$1" in optimizers) echo 60 ;; mnist) echo 30 ;; cost) echo 50 ;; *) echo 20 ;; esac
}
cost_children_left() {  # of the gpu-h100 sweep's 24: those not kept by an earlier call
  local kept
  kept=$(find "$REPRO_RESULTS/$PROFILE/cost_study/.checkpoints" -maxdepth 2 -name '*.json' ! -name machine.json \
         2>/dev/null | wc -l)
  echo $((kept < 24 ? 24 - kept : 0))
}

plan() {  # one line per step: done earlier, fits, cut at the deadline (resumable) or skipped
  local name t=0 est work=$((DEADLINE_S - STOP_MARGIN_S))
  say "plan ($PROFILE, estimates measured on an H100): $work s of work"
  for name in $STEPS; do
    if [ "$name" != bench ] && [ -n "$(finished_run "$REPRO_RESULTS/$PROFILE/$(experiment_of "$name")")" ]; then
      say "  $name: finished by an earlier call"; continue
    fi
    est=$(est_s "$name")
    if [ $((t + est)) -le "$work" ]; then say "  $name: ~${est} s, fits (ends near +$((t + est)) s)"
    elif [ $((work - t)) -ge "$(min_s "$name")" ]; then say "  $name: ~${est} s, cut at the deadline after ~$((work - t)) s (its state kept: resume it)"
    else say "  $name: ~${est} s, skipped (needs at least $(min_s "$name") s)"; fi
    t=$((t + est < work ? t + est : work))
  done
}

run() {  # the campaign, logged into $OUT/campaign.log; exit 0: every step finished, 3: not every step
  local out=${OUT:?run is for the device machine, where \$OUT is set} rc=0 name
  for name in $STEPS; do [ "$name" = bench ] || experiment_of "$name" >/dev/null; done  # errexit is off below
  mkdir -p "$out"
  campaign "$out" 2>&1 | tee -a "$out/campaign.log" || rc=$?
  return "$rc"
}

campaign() {
  local out=$1 name smi="" unfinished=""
  export REPRO_DEADLINE=$((T0 + DEADLINE_S - STOP_MARGIN_S))
  say "campaign $PROFILE: $STEPS; work ends at $(date -u -d "@$((T0 + DEADLINE_S))" +%H:%M:%S) UTC" \
      "(DEADLINE_S=$DEADLINE_S); $PY $("$PY" -c 'import platform; print(platform.python_version())')"
  gpu_env
  plan
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L || true
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 2 > "$out/gpu.csv" 2>/dev/null &
    smi=$!
  fi
  probe "$out"
  for name in $STEPS; do
    if [ "$name" = bench ]; then bench "$out"; else campaign_step "$name" "$out" || unfinished+=" $name"; fi
  done
  [ -z "$smi" ] || kill "$smi" 2>/dev/null || true
  if [ -n "$unfinished" ]; then say "unfinished:$unfinished"; return 3; fi
  say "every step finished"
}

probe() {  # devices, compile time, images/s of the optimizers' fused program: into $OUT first
  local t rc=0
  t=$(left); [ "$t" -lt "$PROBE_S" ] || t=$PROBE_S
  [ "$t" -gt 0 ] || { say "probe: skipped, no time left"; return 0; }
  # shellcheck disable=SC2086
  env -u REPRO_STOP_AFTER_EPOCHS -u REPRO_DEADLINE timeout -s INT -k 10 "$t" "$PY" -m repro.ml.fused probe "$1/probe.json" \
    ${PROBE_ARGS:-0 0} "$PROFILE" || rc=$?  # not a checkpointed run: the timeout bounds it
  [ "$rc" = 0 ] || say "probe: exit $rc (the campaign goes on)"
}

finished_run() {  # the finished run LATEST names in $1, else nothing
  local run
  run=$(cat "$1/LATEST" 2>/dev/null || true)
  if [ -n "$run" ] && [ -f "$1/$run/provenance.json" ]; then echo "$run"; fi
}

campaign_step() {  # one step under the time left; its finished run, else its state, packed into $2
  local name=$1 out=$2 exp base t run rc=0 t_start
  exp=$(experiment_of "$name")
  base=$REPRO_RESULTS/$PROFILE/$exp
  run=$(finished_run "$base")
  if [ -n "$run" ]; then say "$name: finished by an earlier call ($run): skipped"; return 0; fi
  t=$(left)
  if [ "$t" -lt "$(min_s "$name")" ]; then say "$name: skipped, ${t} s left (needs $(min_s "$name"))"; return 1; fi
  if [ -d "$base/.checkpoints" ]; then say "$name: resuming from the checkpoints in $base/.checkpoints"; fi
  say "$name: repro measure $exp --profile $PROFILE (${t} s left)"
  t_start=$(date +%s)
  timeout -s INT -k 20 "$t" "$PY" -m repro.cli measure "$exp" --profile "$PROFILE" || rc=$?
  run=$(finished_run "$base")
  if [ -n "$run" ]; then
    tar -czf "$out/$name.tar.gz" -C "$REPRO_RESULTS" "$PROFILE/$exp/$run"
    say "$name: finished in $(($(date +%s) - t_start)) s: $out/$name.tar.gz"
    return 0
  fi
  case "$rc" in
    3) say "$name: stopped at the deadline" ;; 124|137) say "$name: interrupted at the deadline (exit $rc)" ;;
    *) say "$name: failed (exit $rc)" ;;
  esac
  pack_state "$name" "$exp" "$out"
  return 1
}

pack_state() {  # what a second call resumes from, relative to $STATE (see resume)
  local name=$1 exp=$2 out=$3 cache what="checkpoints"
  if [ ! -d "$REPRO_RESULTS/$PROFILE/$exp/.checkpoints" ]; then say "$name: no checkpoints to keep"; return 0; fi
  local keep=("results/$PROFILE/$exp/.checkpoints")
  cache=$(du -sb "$STATE/jax-cache" | cut -f1)
  if [ "$cache" -le $((CACHE_MAX_MIB * 1048576)) ]; then keep+=(jax-cache); what+=", JAX cache $(mib "$cache") MiB"
  else what+=", not the JAX cache ($(mib "$cache") MiB > $CACHE_MAX_MIB)"; fi
  tar -czf "$out/$name-state.tar.gz" -C "$STATE" "${keep[@]}"
  say "$name: state ($what) in $out/$name-state.tar.gz, $(mib "$(stat -c %s "$out/$name-state.tar.gz")") MiB:" \
      "\`tools/gpu_campaign.sh resume\` it here"
}

bench() {  # optional (STEPS=bench): the two benchmarks' JSON into $OUT
  local t
  t=$(left); [ "$t" -ge "$(min_s bench)" ] || { say "bench: skipped, ${t} s left"; return 0; }
  timeout -s INT -k 10 "$t" "$PY" benchmarks/training_overhead.py --dataset fashion_mnist --out "$1" || true
  t=$(left); [ "$t" -ge "$MIN_STEP_S" ] || { say "bench: fused_training skipped, ${t} s left"; return 0; }
  timeout -s INT -k 10 "$t" "$PY" benchmarks/fused_training.py --dataset fashion_mnist_rgb32 --n-train 50000 --out "$1" || true
}

# --- here: publishing -----------------------------------------------------------------------------

collect() {  # $1: the published-like root; the rest: tarballs of finished runs (state tarballs are skipped)
  local dest=$1 tmp tarball run exp name names=""
  shift
  tmp=$(mktemp -d)
  for tarball in "$@"; do
    case "$tarball" in *-state.tar.gz) say "collect: $tarball is a cut run's state: skipped" ;;
      *) tar -xzf "$tarball" -C "$tmp" ;; esac
  done
  for run in "$tmp"/*/*/*/; do  # <profile>/<experiment>/<run>/
    [ -f "$run/provenance.json" ] || continue
    exp=$(basename "$(dirname "$run")")
    name=$("$PY" -c 'import sys; from repro.core import provenance, results
print(provenance.published_name(results.read_provenance(sys.argv[1])))' "$run")
    rm -rf "${dest:?}/$name/$exp"  # one published run per experiment and machine, as `repro publish`
    mkdir -p "$dest/$name/$exp"
    mv "$run" "$dest/$name/$exp/"
    basename "$run" > "$dest/$name/$exp/LATEST"
    say "collect: $exp -> $dest/$name/$exp/$(basename "$run")"
    case " $names " in *" $name "*) ;; *) names+=" $name" ;; esac
  done
  rm -rf "$tmp"
  [ -n "$names" ] || die "collect: no finished run in $*"
  for name in $names; do
    "$PY" -m repro.cli render --published "$name" --published-dir "$dest"
    "$PY" -m repro.cli book --published-dir "$dest" --profile "$name" --partial
  done
}

# --- here: the rehearsal ---------------------------------------------------------------------------

rehearse_python() {  # the GPU machine's stack: pyenv's Python 3.12 and the image's packages, in a cached venv
  local base venv
  base=$(find "${PYENV_ROOT:-$HOME/.pyenv}/versions" -maxdepth 3 -path '*/3.12*/bin/python' 2>/dev/null | sort -V | tail -1)
  if [ -z "$base" ]; then
    say "no Python 3.12 under ~/.pyenv: rehearsing with $PY ($("$PY" -V 2>&1)) and its own packages, not .carry's wheels" >&2
    echo "$PY"
    return 0
  fi
  venv=$HOME/.cache/repro/gpu-rehearse-$("$base" -c 'import platform; print(platform.python_version())')-$(echo "$GPU_IMAGE" | md5sum | cut -c1-8)
  if [ ! -f "$venv/.complete" ]; then
    say "creating $venv (the GPU image's packages, from the package index)" >&2
    rm -rf "$venv"
    "$base" -m venv "$venv"
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install -q --disable-pip-version-check $GPU_IMAGE >&2
    touch "$venv/.complete"
  fi
  echo "$venv/bin/python"
}

rehearse() {  # `run` twice as on the GPU machine (cut after one epoch, then resumed), collected into $1
  local dest=${1:-} work py wheels=1 rc=0
  [ -n "$dest" ] || dest=$(mktemp -d)
  work=${REHEARSE_WORK:-$(mktemp -d)}
  rm -rf "$work/state" "$work/call1" "$work/call2" "$work/site1" "$work/site2"
  mkdir -p "$work/block"
  py=$(rehearse_python)
  [ "$py" != "$PY" ] || wheels=0
  [ "$wheels" = 0 ] || ls "$CARRY"/wheels/keras-*.whl "$CARRY"/wheels/pydantic_core-*.whl >/dev/null 2>&1 || prepare_wheels
  cat > "$work/block/sitecustomize.py" <<'EOF'
import sys
class _Block:  # a JAX-only machine, as the GPU machine is
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "torch"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: a JAX-only machine)")
sys.meta_path.insert(0, _Block())
EOF
  export PYTHONPATH="$work/block${PYTHONPATH:+:$PYTHONPATH}" STATE="$work/state" STEP_PROFILE=rehearse
  export INSTALL_WHEELS=$wheels DEADLINE_S=${REHEARSE_DEADLINE_S:-600} PROBE_ARGS=${PROBE_ARGS:-"96 32"}
  export PROBE_S=${REHEARSE_PROBE_S:-75}  # the probe is off by default; the rehearsal keeps its path tested
  say "rehearsal: call 1 (cut after one epoch) into $work/call1"
  PYTHON=$py OUT=$work/call1 SITE=$work/site1 REPRO_STOP_AFTER_EPOCHS=1 "$SELF" run || rc=$?
  [ "$rc" = 3 ] || die "rehearsal: call 1 should leave an unfinished step (exit 3), exit $rc"
  "$SELF" resume "$work"/call1/*.tar.gz
  say "rehearsal: call 2 (resumed$([ "$wheels" = 0 ] || echo '; the wheels unzipped, as without pip')) into $work/call2"
  PYTHON=$py OUT=$work/call2 SITE=$work/site2 WHEEL_INSTALL=unzip "$SELF" run
  mkdir -p "$dest"
  collect "$dest" "$work"/call1/*.tar.gz "$work"/call2/*.tar.gz
  say "rehearsal published under $dest (its calls: $work)"
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  plan) REPRO_RESULTS=$STATE/results plan ;;
  resume) shift; [ $# -gt 0 ] || die "resume TAR...: an earlier call's \$OUT/*.tar.gz"; resume "$@" ;;
  collect) shift; collect "${PUBLISHED:-$ROOT/published}" "$@" ;;
  rehearse-env) rehearse_python ;;
  --rehearse) shift; rehearse "${1:-}" ;;
  *) sed -n '2,32p' "$0"; exit 2 ;;
esac
