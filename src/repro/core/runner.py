"""Execute an experiment's notebook with papermill into its own run directory."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

from repro.core import params as _params
from repro.core import results

KERNEL = "repro"
# TensorFlow's start-up lines that no environment variable silences; kept out of the console log
_NOISE = ("oneDNN custom operations are on", "absl::InitializeLog()", "rebuild TensorFlow with the appropriate")  # the named kernel environment.yml / `make env` register


INTERRUPT_GRACE_S = 20.0  # after Ctrl-C, time for the cell's own teardown before the kernel is terminated


class RunFailed(RuntimeError):
    """The notebook raised; the message names the error and where the executed notebook is."""


def notebooks_dir() -> Path:
    root = results.project_root()
    if root is None or not (root / "notebooks").is_dir():
        raise RunFailed("notebooks/ not found: install repro from a checkout (pip install -e .) to run notebooks")
    return root / "notebooks"


def kernel_name() -> str:
    """``$REPRO_KERNEL``, else the named ``repro`` kernel if registered, else this Python's ``python3``."""
    if os.environ.get("REPRO_KERNEL"):
        return os.environ["REPRO_KERNEL"]
    from jupyter_client.kernelspec import KernelSpecManager

    return KERNEL if KERNEL in KernelSpecManager().find_kernel_specs() else "python3"


def _stream_papermill_log() -> None:
    """Show the notebook's output (one line per epoch) while it runs."""
    logger = logging.getLogger("papermill")
    logger.setLevel(logging.INFO)
    if not any(getattr(h, "_repro", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("  %(message)s"))
        handler.addFilter(lambda rec: not any(noise in rec.getMessage() for noise in _NOISE))
        handler._repro = True
        logger.addHandler(handler)
        logger.propagate = False


def _kernels() -> list:
    """This process's kernels: children started by jupyter_client, each leading its own session."""
    import psutil

    return [c for c in psutil.Process().children() if "ipykernel" in " ".join(_cmdline(c))]


def _cmdline(proc) -> list[str]:
    try:
        return proc.cmdline()
    except Exception:  # noqa: BLE001 - gone already
        return []


def _alive(proc) -> bool:
    try:
        return proc.is_running() and proc.status() != "zombie"
    except Exception:  # noqa: BLE001 - psutil.NoSuchProcess: gone
        return False


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(os.getpgid(pid), sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_kernels(worker: threading.Thread, kernels: list, grace: float) -> None:
    """Interrupt the kernels' process groups (the cell's own teardown runs), then terminate, then kill.

    A second Ctrl-C while waiting skips to the kill."""
    steps = ((signal.SIGINT, grace), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0))
    for sig, wait in steps:
        alive = [k for k in kernels if _alive(k)]
        if not alive and not worker.is_alive():
            return
        for k in alive:
            _signal_group(k.pid, sig)
        deadline = time.monotonic() + wait
        try:
            while (worker.is_alive() or any(map(_alive, alive))) and time.monotonic() < deadline:
                worker.join(0.1)
        except KeyboardInterrupt:
            for k in kernels:
                _signal_group(k.pid, signal.SIGKILL)
            return


def interruptible(call, grace: float = INTERRUPT_GRACE_S):
    """Run ``call`` (a papermill execution) in a thread, so that SIGINT/SIGTERM reach this process.

    nbclient, run in the main thread, takes SIGINT and SIGTERM for itself and only asks the kernel
    to shut down politely while the cell keeps running (a ``kill -INT`` was ignored for over 35 s
    while the cell started clusters) and closes sockets under a poller (zmq tracebacks). In a thread
    it cannot install those handlers; here a signal interrupts the kernel's whole process group (the
    cell's own teardown stops its clusters), then terminates and kills what is left, and raises
    :class:`KeyboardInterrupt`.
    """
    if threading.current_thread() is not threading.main_thread():
        return call()  # signals reach only the main thread: nothing to take over
    box: dict = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="papermill", daemon=True)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        worker.start()
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        log = logging.getLogger("papermill")
        log.disabled = True  # the dying kernel's messages are not the user's news
        try:
            _stop_kernels(worker, _kernels(), grace)
            worker.join(5.0)
        finally:
            log.disabled = False
        raise KeyboardInterrupt from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def relative_paths(notebook: Path) -> None:
    """Paths of this checkout in an executed notebook's papermill record, made relative to it.

    The injected-parameters cell and ``metadata.papermill`` otherwise show the absolute paths of
    the machine that ran the notebook (published runs are read on other machines).
    """
    import nbformat

    root = results.project_root()
    if root is None or not notebook.is_file():
        return
    nb = nbformat.read(notebook, as_version=4)
    prefix = str(root) + "/"

    def strip(text):
        return text.replace(prefix, "") if isinstance(text, str) else text

    for cell in nb.cells:
        if "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            cell.source = strip(cell.source)
    pm_meta = nb.metadata.get("papermill", {})
    for key in ("input_path", "output_path"):
        if key in pm_meta:
            pm_meta[key] = strip(pm_meta[key])
    pm_meta.get("parameters", {}).update({k: strip(v) for k, v in pm_meta.get("parameters", {}).items()})
    results.atomic_write_text(notebook, nbformat.writes(nb) + "\n")


def _papermill(experiment: str, profile: str, overrides: dict, run_dir: Path, log_output: bool) -> None:
    """Execute the experiment's notebook into ``run_dir/notebook.ipynb`` (papermill, interruptible)."""
    import papermill as pm

    notebook = notebooks_dir() / _params.spec(experiment).notebook
    os.environ["REPRO_COMMAND"] = " ".join(sys.argv)  # provenance: what started the run, not the kernel
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # the kernel inherits it: no C++ info lines in the book
    if log_output:
        _stream_papermill_log()
        print(f"[repro] {experiment} ({profile}) -> {run_dir}", flush=True)
    try:
        interruptible(lambda: pm.execute_notebook(
            str(notebook),
            str(run_dir / "notebook.ipynb"),
            # relative to the checkout: published notebooks must not show the path of the machine that ran them
            parameters={"profile": profile, "overrides": overrides, "run_dir": results.relative_to_project(run_dir)},
            kernel_name=kernel_name(),
            cwd=str(notebook.parent),
            log_output=log_output,
            progress_bar=False,
        ))
    except pm.PapermillExecutionError as exc:
        raise RunFailed(
            f"{experiment} ({profile}) failed: {exc.ename}: {exc.evalue.splitlines()[0] if exc.evalue else ''} "
            f"(executed notebook: {run_dir / 'notebook.ipynb'})"
        ) from None
    relative_paths(run_dir / "notebook.ipynb")


def execute(experiment: str, profile: str | None = None, overrides: dict | None = None,
            root: Path | None = None, log_output: bool = True) -> Path:
    """Run one experiment's notebook; returns the finished run directory.

    Parameters are validated here first, so a bad value fails in one line before a
    kernel starts. The notebook receives ``profile``, ``overrides`` and ``run_dir``.
    """
    spec = _params.spec(experiment)
    profile = profile or spec.default_profile
    overrides = dict(overrides or {})
    spec.resolve(profile, overrides)
    run_dir = results.create_run_dir(experiment, profile, root)
    try:
        _papermill(experiment, profile, overrides, run_dir, log_output)
    except BaseException as exc:
        failed = results.mark_failed(run_dir)
        if isinstance(exc, RunFailed):
            raise RunFailed(str(exc).replace(str(run_dir), str(failed))) from None
        raise
    record = results.read_provenance(run_dir) if (run_dir / "provenance.json").exists() else {}
    if record.get("status") != "complete":
        results.mark_failed(run_dir)
        raise RunFailed(f"{experiment} ({profile}): the notebook finished but did not complete its run record")
    return results.finalize_run_dir(run_dir)


def render(run_dir: Path, log_output: bool = True) -> Path:
    """Execute a finished run's notebook against its stored results (nothing is trained): for runs
    made without Jupyter (``repro measure``, e.g. on a GPU machine); writes ``run_dir/notebook.ipynb``."""
    run_dir = Path(run_dir).resolve()
    record = results.read_provenance(run_dir) if (run_dir / "provenance.json").is_file() else {}
    if record.get("status") != "complete":
        raise RunFailed(f"{run_dir} is not a complete run (provenance.json status)")
    _papermill(record["experiment"], record["profile"], {}, run_dir, log_output)
    return run_dir
