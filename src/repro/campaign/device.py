"""On the GPU machine: the carried wheels beside the machine's own packages, then each step under the time left,
its output in campaign.log, its finished run (or its state, where the deadline cut it) packed into $OUT.

Standard library only (the carried wheels, pydantic among them, are installed by :func:`environment`).
"""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import tarfile
import threading
import time
import zipfile
from pathlib import Path

from . import settings as st
from .settings import CampaignError, Log, Settings, experiment_of, finished_run, finished_runs, mib, plan_lines, size

UNFINISHED = 3  # run's exit status where a step did not finish


def environment(s: Settings, log: Log, site: Path, install: bool = True, how: str = "pip") -> dict[str, str]:
    """The steps' environment: the carried wheels in ``site`` (pip --target, or unzipped where there is no pip),
    Keras on JAX, the carried data, the carried state's results and JAX compilation cache."""
    site.mkdir(parents=True, exist_ok=True)
    wheels = sorted((s.carry / "wheels").glob("*.whl"))
    if not install:
        log.say(f"wheels not installed (INSTALL_WHEELS=0): {s.python}'s own packages")
    elif how == "pip" and subprocess.run([s.python, "-m", "pip", "--version"], capture_output=True).returncode == 0:
        subprocess.run([s.python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, wheels)], check=True)
    else:
        log.say(f"no pip in {s.python}: the wheels unzipped into {site}" if how == "pip" else
                f"the wheels unzipped into {site} (WHEEL_INSTALL={how})")
        for whl in wheels:
            with zipfile.ZipFile(whl) as z:
                z.extractall(site)
    (s.results).mkdir(parents=True, exist_ok=True)
    (s.state / "jax-cache").mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(x for x in (str(s.root / "src"), str(site), os.environ.get("PYTHONPATH", "")) if x)
    return {**os.environ, "PYTHONPATH": path, "KERAS_BACKEND": "jax", "REPRO_OFFLINE_DIRS": str(s.carry / "datasets"),
            "REPRO_RESULTS": str(s.results), "PYTHONUNBUFFERED": "1",
            "JAX_COMPILATION_CACHE_DIR": str(s.state / "jax-cache"),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.5",
            "REPRO_DEADLINE": str(int(s.t0 + s.deadline_s - s.stop_margin_s))}


def default_sigint() -> None:
    """In a child before it executes: SIGINT at its default. A shell without job control (``nohup … &``, a CI
    runner) starts this process with SIGINT ignored, the child would inherit that, and the deadline's SIGINT
    would do nothing (the step killed ``kill_after`` later instead of stopping cleanly)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def timed(cmd: list[str], seconds: float, env: dict, log: Log, kill_after: float = 20.0) -> int:
    """``cmd`` with its output into the log, SIGINT after ``seconds`` and SIGKILL ``kill_after`` later (as GNU
    ``timeout -s INT -k``): its exit status, 124 where it was interrupted, 137 where it had to be killed."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            preexec_fn=default_sigint)

    def pump():
        assert proc.stdout is not None
        for line in proc.stdout:
            log.raw(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=max(seconds, 0))
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=kill_after)
            rc = 124
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = 137
    reader.join(timeout=5)
    return rc


def pack_state(s: Settings, step: str, out: Path, log: Log) -> None:
    """What a second call resumes from (checkpoints, the JAX cache where small), relative to the state dir."""
    exp = experiment_of(step)
    ckpt = s.results / s.profile / exp / ".checkpoints"
    if not ckpt.is_dir():
        log.say(f"{step}: no checkpoints to keep")
        return
    keep, what, cache = [ckpt.relative_to(s.state)], "checkpoints", size(s.state / "jax-cache")
    if cache <= s.cache_max_mib * 1048576:
        keep.append(Path("jax-cache"))
        what += f", JAX cache {mib(cache)} MiB"
    else:
        what += f", not the JAX cache ({mib(cache)} MiB > {s.cache_max_mib:g})"
    tarball = out / f"{step}-state.tar.gz"
    with tarfile.open(tarball, "w:gz") as t:
        for k in keep:
            t.add(s.state / k, arcname=str(k))
    log.say(f"{step}: state ({what}) in {tarball}, {mib(tarball.stat().st_size)} MiB: "
            "`tools/gpu_campaign.sh resume` it here")


def step(s: Settings, name: str, out: Path, env: dict, log: Log) -> bool:
    """One step under the time left (as many independent runs as it makes); each finished run, else its state,
    packed into ``out``. Finished?"""
    exp, base = experiment_of(name), st.base_of(s, name)
    if st.done(s, name):
        log.say(f"{name}: finished by an earlier call ({' '.join(finished_runs(base))}): skipped")
        return True
    while not st.done(s, name):
        if not _one_run(s, name, exp, base, out, env, log):
            return False
    return True


def _one_run(s: Settings, name: str, exp: str, base: Path, out: Path, env: dict, log: Log) -> bool:
    left, before = s.left(), finished_runs(base)
    if left < s.least_s(name):
        log.say(f"{name}: skipped, {left} s left (needs {s.least_s(name)})")
        return False
    if (base / ".checkpoints").is_dir():
        log.say(f"{name}: resuming from the checkpoints in {base / '.checkpoints'}")
    nth = f" (run {len(before) + 1} of {st.runs_of(s, name)})" if name in st.STEP_RUNS else ""
    log.say(f"{name}: repro measure {exp} --profile {s.profile}{nth} ({left} s left)")
    t_start = time.time()
    rc = timed([s.python, "-m", "repro.cli", "measure", exp, "--profile", s.profile], left,
               {**env, **st.STEP_ENV.get(name, {})}, log)
    new = [r for r in finished_runs(base) if r not in before]
    if new and (run := finished_run(base)) in new:
        tarball = out / (f"{name}.tar.gz" if not before else f"{name}-{len(before) + 1}.tar.gz")
        with tarfile.open(tarball, "w:gz") as t:
            t.add(base / run, arcname=f"{s.profile}/{exp}/{run}")
        log.say(f"{name}: finished in {int(time.time() - t_start)} s: {tarball}")
        return True
    log.say(f"{name}: stopped at the deadline" if rc == 3 else
            f"{name}: interrupted at the deadline (exit {rc})" if rc in (124, 137) else f"{name}: failed (exit {rc})")
    pack_state(s, name, out, log)
    return False


def probe(s: Settings, out: Path, env: dict, log: Log) -> None:
    """Devices, compile time, images/s of the optimizers' fused program, into ``out`` first (not checkpointed:
    its own time bound, never cut by the step deadline)."""
    t = min(s.left(), s.probe_s)
    if t <= 0:
        log.say("probe: skipped, no time left" if s.probe_s > 0 else "probe: off (PROBE_S=0)")
        return
    env = {k: v for k, v in env.items() if k not in ("REPRO_STOP_AFTER_EPOCHS", "REPRO_DEADLINE")}
    probe = [s.python, "-m", "repro.experiments.optimizers.probe", str(out / "probe.json"), *s.probe_args, s.profile]
    rc = timed(probe, t, env, log, kill_after=10)
    if rc:
        log.say(f"probe: exit {rc} (the campaign goes on)")


def bench(s: Settings, out: Path, env: dict, log: Log) -> None:
    """Optional (STEPS=bench): the optimizers' two trainers compared, their JSON into ``out``: 14 model.fits one
    after another (float32) against the stacked program in float32 and in TF32, in one lease (issue 50); then,
    time left, a profiler trace of the pure-JAX stacked step in float32 (``im2col-highest.xplane.pb.gz``: what
    the time goes to). BENCH=overhead runs training_overhead.py first."""
    fused = ["--dataset", "fashion_mnist_rgb32", "--n-train", os.environ.get("BENCH_N_TRAIN", "50000"),
             "--epochs", "2", "--fused-epochs", "3", "--variants", "stacked", "--precisions", "float32,tf32"]
    trace = s.state / "trace"
    scripts = [("fused_training.py", [*fused, "--out", str(out)]),
               ("stacked_step.py", ["--variants", "im2col", "--precisions", "highest", "--reps", "3",
                                    "--trace", str(trace), "--out", str(out / "stacked_step-float32.json")])]
    if os.environ.get("BENCH") == "overhead":
        scripts.insert(0, ("training_overhead.py", ["--dataset", "fashion_mnist", "--out", str(out)]))
    for script, args in scripts:
        if s.left() < s.least_s("bench"):
            log.say(f"bench: {script} skipped, {s.left()} s left")
            return
        log.say(f"bench: {script} ({s.left()} s left)")
        timed([s.python, str(s.root / "benchmarks" / script), *args], s.left(), env, log, 10)
    for pb in sorted(trace.rglob("*.xplane.pb")):  # <variant>-<precision>/plugins/profile/<time>/<host>.xplane.pb
        with open(pb, "rb") as f, gzip.open(out / f"{pb.relative_to(trace).parts[0]}.xplane.pb.gz", "wb") as g:
            shutil.copyfileobj(f, g)


def run(s: Settings, out: Path, site: Path, install: bool = True, how: str = "pip") -> int:
    """The campaign, logged into ``out/campaign.log``: 0 where every step finished, else :data:`UNFINISHED`."""
    for name in s.steps:
        if name != "bench":
            experiment_of(name)
    out.mkdir(parents=True, exist_ok=True)
    log = Log(s.t0, out / "campaign.log")
    ends = time.strftime("%H:%M:%S", time.gmtime(s.t0 + s.deadline_s))
    version = subprocess.run([s.python, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True).stdout.strip()
    log.say(f"campaign {s.profile}: {' '.join(s.steps)}; work ends at {ends} UTC (DEADLINE_S={s.deadline_s}); "
            f"{s.python} {version}")
    env = environment(s, log, site, install, how)
    for line in plan_lines(s):
        log.say(line)
    smi = None
    if shutil.which("nvidia-smi"):
        log.raw(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout)
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,utilization.gpu,memory.used", "--format=csv",
                                "-l", "2"], stdout=open(out / "gpu.csv", "w"), stderr=subprocess.DEVNULL)
    unfinished = []
    try:
        probe(s, out, env, log)
        for name in s.steps:
            if name == "bench":
                bench(s, out, env, log)
            elif not step(s, name, out, env, log):
                unfinished.append(name)
    finally:
        if smi is not None:
            smi.terminate()
    if unfinished:
        log.say("unfinished: " + " ".join(unfinished))
        return UNFINISHED
    log.say("every step finished")
    return 0


def main_run(s: Settings) -> int:
    out = os.environ.get("OUT")
    if not out:
        raise CampaignError("run is for the device machine, where $OUT is set")
    site = Path(os.environ.get("SITE") or "/tmp/site")
    return run(s, Path(out), site, os.environ.get("INSTALL_WHEELS", "1") == "1", os.environ.get("WHEEL_INSTALL", "pip"))
