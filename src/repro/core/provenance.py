"""What a result needs to be trusted later: versions, commit, hardware, times."""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from repro.core.paths import project_root

PACKAGES = (
    "repro", "tensorflow", "tensorflow-cpu", "keras", "jax", "jaxlib", "torch", "numpy", "pandas", "papermill",
    "nbclient", "jupyter-book", "seaborn", "matplotlib", "psutil", "mlxtend",
)


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


CARRIED_GIT = Path(".carry") / "git.json"  # written by tools/gpu_campaign.sh where .git is, read where it is not


def git_commit(root: Path | None = None) -> dict:
    """Commit of the checkout and whether source files differ from it (results ignored). A tree without
    ``.git`` (the lent GPU machine's copy) reads the state that ``tools/gpu_campaign.sh`` carried with it,
    marked ``carried``; with neither, the commit is None (unknown). A dirty checkout whose carried state names another
    commit (on the lent machine, the session's first commit's ``.git`` under the tree the campaign carried, seen
    2026-11-28) also records that one as ``carried_commit``."""
    root = root or project_root()
    if root is None:
        return {"commit": None, "dirty": None}
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True,
            timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return _carried_commit(root)
    out = {"commit": commit, "dirty": bool(status.strip())}
    carried = _carried_commit(root)["commit"]
    if out["dirty"] and carried and carried != commit:  # the lent machine: an older .git under a newer tree
        out["carried_commit"] = carried  # the commit the campaign carried (tools/gpu_campaign.sh prepare)
    return out


def _carried_commit(root: Path) -> dict:
    try:
        rec = json.loads((root / CARRIED_GIT).read_text(encoding="utf-8"))
        return {"commit": str(rec["commit"]), "dirty": bool(rec["dirty"]), "carried": True}
    except (OSError, ValueError, KeyError, TypeError):
        return {"commit": None, "dirty": None}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpus() -> list[dict]:
    """The NVIDIA GPUs this process may use (``nvidia-smi``; whatever the Keras backend), else those
    the backend already loaded here sees (TensorFlow or JAX; neither is imported for this);
    ``[]`` on a machine without either."""
    listed = nvidia_smi_gpus()
    if listed is not None:
        return listed
    if "tensorflow" in sys.modules:
        return _tensorflow_gpus()
    if "jax" in sys.modules:
        import jax

        try:
            return [{"name": f"GPU:{d.id}", "model": getattr(d, "device_kind", None)} for d in jax.devices("gpu")]
        except RuntimeError:  # no GPU backend
            return []
    return []


def _tensorflow_gpus() -> list[dict]:
    import tensorflow as tf

    out = []
    for dev in tf.config.list_physical_devices("GPU"):
        try:
            details = tf.config.experimental.get_device_details(dev)
        except Exception:  # noqa: BLE001 - details are optional
            details = {}
        out.append({"name": dev.name, "model": details.get("device_name"),
                    "compute_capability": details.get("compute_capability")})
    return out


def nvidia_smi_gpus() -> list[dict] | None:
    """``nvidia-smi``'s GPUs (restricted to ``CUDA_VISIBLE_DEVICES`` when set), or None where the tool is
    missing or fails."""
    import shutil

    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    keep = None if visible is None else {v.strip() for v in visible.split(",") if v.strip()}
    rows = [[c.strip() for c in line.split(",")] for line in out.stdout.strip().splitlines() if line.count(",") >= 3]
    return [{"name": f"GPU:{r[0]}", "model": r[1], "memory": r[2], "driver": r[3]}
            for r in rows if keep is None or r[0] in keep]


def hardware() -> dict:
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except AttributeError:
        affinity = list(range(os.cpu_count() or 1))
    return {
        "cpu_model": cpu_model(),
        "logical_cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "cores_available": len(affinity),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "gpus": gpus(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
    }


def keras_backend() -> str:
    """The backend Keras will use (``KERAS_BACKEND``, else ``~/.keras/keras.json``, else tensorflow),
    read without importing Keras."""
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    config = Path(os.environ.get("KERAS_HOME", Path.home() / ".keras")) / "keras.json"
    try:
        return json.loads(config.read_text()).get("backend", "tensorflow")
    except (OSError, ValueError):
        return "tensorflow"


BACKEND_NAMES = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}


def backend_label(record: dict | None) -> str:
    """"JAX 0.4.38, CPU": the Keras backend, its version and the device of a run, from its provenance
    record (``record["device"]``). Older runs have no ``device`` entry: their backend (the record's
    ``keras_backend``, else TensorFlow, the only one then) and its version from ``packages``; ``""``
    for anything unreadable. Never raises."""
    try:
        record = record or {}
        device = record.get("device")
        dev: dict[str, Any] = device if isinstance(device, dict) else {}
        name = dev.get("backend") or record.get("keras_backend") or "tensorflow"
        packages = record.get("packages") or {}
        version = dev.get("backend_version") or packages.get(name) or (
            packages.get("tensorflow-cpu") if name == "tensorflow" else None)
        label = BACKEND_NAMES.get(name, str(name)) + (f" {version}" if version and version != "unknown" else "")
        return label + (f", {dev['device']}" if dev.get("device") else "")
    except Exception:  # noqa: BLE001 - a caption must never break a figure
        return ""


def published_name(record: dict) -> str:
    """The directory under ``published/`` a run goes to: ``gpu-<model>`` (``gpu-h100``, ``gpu-h200``) for a
    run made on a machine with an NVIDIA GPU, from the model its record lists (``hardware.gpus``), else
    its profile. The book and ``repro render --published`` take that name where they take a profile."""
    gpus = (record.get("hardware") or {}).get("gpus") or []
    model = next((str(g["model"]) for g in gpus if isinstance(g, dict) and g.get("model")), None)
    if not model:
        return str(record["profile"])
    words = [w for w in re.split(r"[\s_/-]+", model) if w and w.upper() != "NVIDIA"]
    # the model's own name: "H100" of "NVIDIA H100 80GB HBM3", "V100" of "Tesla V100-SXM2-16GB"
    name = next((w for w in words if re.search(r"[A-Za-z]", w) and re.search(r"\d", w)), None) or next(
        (w for w in words if re.search(r"\d", w)), model)
    return "gpu-" + (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown")


DIFF_MAX_CHARS = 200_000  # a dirty tree's diff kept in provenance up to this size (then cut, and said so)


def git_diff(root: Path | None = None) -> str | None:
    """``git diff HEAD`` of the checkout's tracked files (the changes a dirty run ran with; results, published
    runs and notebooks' outputs left out), cut to :data:`DIFF_MAX_CHARS`; None where git cannot say."""
    root = root or project_root()
    if root is None:
        return None
    try:
        out = subprocess.run(["git", "diff", "HEAD", "--", ".", ":(exclude)published", ":(exclude)results"],
                             cwd=root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    text = out.stdout
    return text if len(text) <= DIFF_MAX_CHARS else text[:DIFF_MAX_CHARS] + f"\n[cut: {len(text)} characters in all]\n"


def collect(experiment: str, profile: str, params: dict) -> dict:
    """The provenance record written when a run starts (with the tree's diff where it differs from its commit)."""
    git = git_commit()
    if git.get("dirty") and not git.get("carried"):
        git = {**git, "diff": git_diff()}
    return {
        "experiment": experiment,
        "profile": profile,
        "parameters": params,
        "started_at": datetime.now(timezone.utc).isoformat(),
        "git": git,
        "packages": package_versions(),
        "keras_backend": keras_backend(),
        "hardware": hardware(),
        "command": " ".join(sys.argv),
    }
