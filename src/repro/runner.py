"""Execute an experiment's notebook with papermill into its own run directory."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from . import params as _params
from . import results

KERNEL = "repro"
# TensorFlow's start-up lines that no environment variable silences; kept out of the console log
_NOISE = ("oneDNN custom operations are on", "absl::InitializeLog()", "rebuild TensorFlow with the appropriate")  # the named kernel environment.yml / `make env` register


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


def execute(experiment: str, profile: str | None = None, overrides: dict | None = None,
            root: Path | None = None, log_output: bool = True) -> Path:
    """Run one experiment's notebook; returns the finished run directory.

    Parameters are validated here first, so a bad value fails in one line before a
    kernel starts. The notebook receives ``profile``, ``overrides`` and ``run_dir``.
    """
    import papermill as pm

    spec = _params.spec(experiment)
    profile = profile or spec.default_profile
    overrides = dict(overrides or {})
    spec.resolve(profile, overrides)
    notebook = notebooks_dir() / spec.notebook
    run_dir = results.create_run_dir(experiment, profile, root)
    os.environ["REPRO_COMMAND"] = " ".join(sys.argv)  # provenance: what started the run, not the kernel
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # the kernel inherits it: no C++ info lines in the book
    if log_output:
        _stream_papermill_log()
        print(f"[repro] {experiment} ({profile}) -> {run_dir}", flush=True)
    try:
        pm.execute_notebook(
            str(notebook),
            str(run_dir / "notebook.ipynb"),
            parameters={"profile": profile, "overrides": overrides, "run_dir": str(run_dir)},
            kernel_name=kernel_name(),
            cwd=str(notebook.parent),
            log_output=log_output,
            progress_bar=False,
        )
    except BaseException as exc:
        failed = results.mark_failed(run_dir)
        if isinstance(exc, pm.PapermillExecutionError):
            raise RunFailed(
                f"{experiment} ({profile}) failed: {exc.ename}: {exc.evalue.splitlines()[0] if exc.evalue else ''} "
                f"(executed notebook: {failed / 'notebook.ipynb'})"
            ) from None
        raise
    record = results.read_provenance(run_dir) if (run_dir / "provenance.json").exists() else {}
    if record.get("status") != "complete":
        results.mark_failed(run_dir)
        raise RunFailed(f"{experiment} ({profile}): the notebook finished but did not complete its run record")
    return results.finalize_run_dir(run_dir)

