"""Here, without a GPU: the lent machine's exact path, rehearsed. ``run`` as the GPU machine runs it (pyenv's
Python 3.12 with the GPU image's packages in a venv cached under ~/.cache/repro, only .carry's wheels,
TensorFlow and PyTorch unimportable) on the tiny ``rehearse`` profiles: a first call cut after one epoch, its
tarballs ``resume``d, a second call (the wheels unzipped, as on a machine without pip), then ``collect``."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from repro.core import errors

from . import carry
from .device import UNFINISHED
from .settings import Log, Settings

# what the GPU machine's image has and the campaign uses: the rehearsal's venv gets these
GPU_IMAGE = ("jax==0.11.2 jaxlib==0.11.2 numpy==2.5.2 pandas==3.1.1 scipy==1.18.1 matplotlib==3.11.2 seaborn==0.13.2 "
             "psutil==7.2.2 PyYAML==6.0.4 absl-py==2.5.1 rich==15.0.0 h5py==3.16.0 ml_dtypes==0.6.0 packaging==26.4 "
             "typing_extensions==4.16.0 scikit-learn==1.9.1 joblib==1.6.0").split()
BLOCK = '''import sys
class _Block:  # a JAX-only machine, as the GPU machine is
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "torch"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: a JAX-only machine)")
sys.meta_path.insert(0, _Block())
'''


def _version(path: Path) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", path.parts[-3]))


def rehearse_python(s: Settings, log: Log) -> str:
    """pyenv's newest Python 3.12 in a venv with the GPU image's packages (created once, from the package index);
    this interpreter and its own packages where there is no 3.12."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = sorted(root.glob("3.12*/bin/python"), key=_version)
    if not found:
        log.say(f"no Python 3.12 under ~/.pyenv: rehearsing with {s.python} and its own packages, not .carry's wheels")
        return s.python
    base = found[-1]
    version = subprocess.run([str(base), "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True).stdout.strip()
    tag = hashlib.md5(" ".join(GPU_IMAGE).encode()).hexdigest()[:8]
    venv = Path.home() / ".cache" / "repro" / f"gpu-rehearse-{version}-{tag}"
    if not (venv / ".complete").is_file():
        log.say(f"creating {venv} (the GPU image's packages, from the package index)")
        shutil.rmtree(venv, ignore_errors=True)
        clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the image's packages alone
        subprocess.run([str(base), "-m", "venv", str(venv)], check=True, env=clean)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        *GPU_IMAGE], check=True, env=clean)
        (venv / ".complete").touch()
    return str(venv / "bin" / "python")


def _call(py: str, env: dict, **more: str) -> int:
    return subprocess.run([py, "-m", "repro.campaign", "run"], env={**env, **more}, check=False).returncode


def rehearse(s: Settings, dest: Path | None, log: Log) -> Path:
    """Two calls as on the GPU machine (the first cut after one epoch, the second resumed), collected into
    ``dest`` (a temporary folder by default); returns it."""
    dest = dest or Path(tempfile.mkdtemp())
    work = Path(os.environ.get("REHEARSE_WORK") or tempfile.mkdtemp())
    for d in ("state", "call1", "call2", "site1", "site2"):
        shutil.rmtree(work / d, ignore_errors=True)
    (work / "block").mkdir(parents=True, exist_ok=True)
    (work / "block" / "sitecustomize.py").write_text(BLOCK)
    py = rehearse_python(s, log)
    wheels = py != s.python
    have = [list((s.carry / "wheels").glob(f"{w}-*.whl")) for w in ("keras", "pydantic_core")]
    if wheels and not all(have):
        carry.prepare_wheels(s)
    path = os.pathsep.join(x for x in (str(work / "block"), str(s.root / "src"), os.environ.get("PYTHONPATH")) if x)
    env = {**os.environ, "PYTHONPATH": path, "STATE": str(work / "state"), "STEP_PROFILE": "rehearse",
           "CARRY": str(s.carry), "PYTHON": py, "INSTALL_WHEELS": "1" if wheels else "0",
           "DEADLINE_S": os.environ.get("REHEARSE_DEADLINE_S") or "600",
           "PROBE_ARGS": os.environ.get("PROBE_ARGS") or "96 32",
           "PROBE_S": os.environ.get("REHEARSE_PROBE_S") or "75"}  # the probe is off by default: keep its path tested
    log.say(f"rehearsal: call 1 (cut after one epoch) into {work / 'call1'}")
    rc = _call(py, env, OUT=str(work / "call1"), SITE=str(work / "site1"), REPRO_STOP_AFTER_EPOCHS="1")
    if rc != UNFINISHED:
        raise errors.RunFailed(f"rehearsal: call 1 should leave an unfinished step (exit {UNFINISHED}), exit {rc}")
    resumed = Settings.from_env({**os.environ, "STATE": str(work / "state"), "CARRY": str(s.carry),
                                 "PYTHON": s.python}, s.root)
    carry.resume(resumed, sorted((work / "call1").glob("*.tar.gz")), log)
    log.say(f"rehearsal: call 2 (resumed{'; the wheels unzipped, as without pip' if wheels else ''}) "
            f"into {work / 'call2'}")
    env.pop("REPRO_STOP_AFTER_EPOCHS", None)
    rc = _call(py, env, OUT=str(work / "call2"), SITE=str(work / "site2"), WHEEL_INSTALL="unzip")
    if rc != 0:
        raise errors.RunFailed(f"rehearsal: call 2 should finish every step, exit {rc}")
    dest.mkdir(parents=True, exist_ok=True)
    carry.collect(s, dest, sorted((work / "call1").glob("*.tar.gz")) + sorted((work / "call2").glob("*.tar.gz")),
                  log)
    log.say(f"rehearsal published under {dest} (its calls: {work})")
    return dest
