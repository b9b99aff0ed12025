"""What the sweep will run, decided before any run directory exists: core counts, GPUs, Docker, the plan."""

from __future__ import annotations

import os
import shutil

from repro.core.params import ParameterError
from repro.experiments.cost_study import sweep
from repro.experiments.cost_study.child import COUNT_GPUS_ENTRY
from repro.experiments.cost_study.paramtypes import CostStudyParams

DOCKER_ENV = "REPRO_IN_DOCKER"


def core_counts(requested: list[int], available: int) -> list[int]:
    """The core counts to sweep: ``[0]`` means 1..all; anything beyond the machine is an error."""
    if requested == [0]:
        return list(range(1, available + 1))
    if 0 in requested:
        raise ParameterError("parameter 'cores': 0 (meaning 1..all cores) must be given alone, as [0]")
    too_many = [k for k in requested if k > available]
    if too_many:
        raise ParameterError(
            f"parameter 'cores': {max(too_many)} cores requested but this machine lets us use {available}"
        )
    return sorted(set(requested))


def gpu_status(timeout: float = 300.0) -> dict:
    """GPUs visible here, without starting Keras's backend in this process: ``nvidia-smi`` (or a GPU
    device node) says whether to look, then a child process counts the GPUs with the backend's own
    device list (TensorFlow, JAX or PyTorch, whichever ``KERAS_BACKEND`` names)."""
    from repro.core.provenance import keras_backend, nvidia_smi_gpus

    name = keras_backend()
    devices = [d for d in ("/dev/nvidia0", "/dev/dxg", "/dev/kfd") if os.path.exists(d)]
    listed = nvidia_smi_gpus() if shutil.which("nvidia-smi") else None
    if not devices and not listed and os.environ.get("CUDA_VISIBLE_DEVICES") is None:
        return {"gpus": 0, "backend": name, "reason": "no GPU: no NVIDIA/ROCm device node and nvidia-smi lists none"}
    try:
        res = sweep.run_child({"kind": "call", "entry": COUNT_GPUS_ENTRY, "label": "gpu-probe"},
                              sweep.available_cores(), timeout=timeout, sample_interval=None)
    except sweep.ChildFailed as exc:
        return {"gpus": 0, "backend": name, "reason": f"no usable GPU: the probe failed: {exc}"}
    n, name = int(res["gpus_visible"]), res.get("backend", name)
    smi = f" (nvidia-smi lists {len(listed)})" if listed is not None else ""
    models = sorted({g["model"] for g in listed or []})
    return {"gpus": n, "backend": name, "model": " / ".join(models),  # what the GPU runs are priced as
            "reason": f"{n} GPU(s) visible to {name}{smi}" if n else f"no GPU: {name} sees none{smi}"}


def docker_status() -> dict:
    """Whether this run is inside a container, and whether a Docker engine can be reached."""
    inside = os.environ.get(DOCKER_ENV) == "1" or os.path.exists("/.dockerenv")
    client = shutil.which("docker")
    engine = False
    if client:
        import subprocess

        try:
            engine = subprocess.run([client, "info"], capture_output=True, timeout=20).returncode == 0
        except (OSError, subprocess.SubprocessError):
            engine = False
    reason = ("docker engine reachable" if engine else
              "docker client installed but no engine running" if client else "no docker client")
    return {"inside_docker": inside, "docker_client": bool(client), "docker_engine": engine, "reason": reason}


CORES_PER_GPU = 8  # the CPU share of the packaged prices' 1-GPU instance (n1-standard-8 + 1 K80)


def gpu_cores(g: int, available: int) -> int:
    """Cores a run with ``g`` GPUs is pinned to: ``CORES_PER_GPU`` per GPU (at most what the host has),
    so that it is priced as the cloud instance it would run on, not as the whole host."""
    return min(available, CORES_PER_GPU * g)


def plan(p: CostStudyParams, cores: list[int], n_gpus: int) -> list[dict]:
    """Every child to run, repetition-major (rep 1 of everything, then rep 2, ...) to spread drift."""
    all_cores = sweep.available_cores()
    configs = []
    for net in p.networks:
        for k in cores:
            configs.append({"network": net, "cores": k, "gpus": 0, "device": "cpu"})
        if p.gpu_sweep and n_gpus:
            for g in range(1, n_gpus + 1):  # 0 GPUs = the core sweep's all-core run
                configs.append({"network": net, "cores": gpu_cores(g, len(all_cores)), "gpus": g, "device": "gpu"})
    out = []
    for rep in range(1, p.repetitions + 1):
        for c in configs:
            out.append({**c, "rep": rep, "label": f"{c['network']}-{c['device']}-k{c['cores']}-g{c['gpus']}-r{rep}"})
    return out


def net_params(p: CostStudyParams, net: str) -> dict:
    """The parameters of one network (``mnist_*`` or ``cifar_*``) under neutral names."""
    g = p.mnist if net == "mnist_cnn" else p.cifar
    return {"dataset": g.dataset, "n_train": g.train_samples, "n_test": g.test_samples, "epochs": g.epochs,
            "batch_size": g.batch_size, "target_accuracy": g.target_accuracy}
