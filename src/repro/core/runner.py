"""``repro run``: the harness in this process, then the notebook rendered with papermill against the finished run."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from repro.core import errors, results
from repro.core import params as _params

KERNEL = "repro"  # the named kernel environment.yml / `make env` register
# TensorFlow's start-up lines that no environment variable silences; kept out of the console log
_NOISE = ("oneDNN custom operations are on", "absl::InitializeLog()", "rebuild TensorFlow with the appropriate")


RunFailed = errors.RunFailed  # the notebook raised; the message names the error and where the executed notebook is


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


def _ipc_kernel_manager():
    """A kernel manager on Unix-domain sockets: the notebook's kernel is local, so nothing listens on TCP,
    and ipykernel's 'running over TCP without encryption' warning never reaches the console. TCP where the
    platform has no Unix sockets.

    Each kernel's sockets get a path of their own (:func:`ipc_path`). jupyter_client's default, ``kernel-ipc`` in
    the working directory, is one path for every kernel started there: two renders at once (two ``repro run``
    from one checkout, ``make test``'s two workers) both found ``kernel-ipc-1`` to ``-5`` free, took the same
    sockets, and a kernel read the other's messages ("Invalid Signature")."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import CaselessStrEnum, default

    class IPCKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc" if os.name == "posix" else "tcp", config=True)

        @default("ip")
        def _ip_default(self) -> str:
            return ipc_path() if self.transport == "ipc" else super()._ip_default()

    return IPCKernelManager


def ipc_path() -> str:
    """A path no other kernel's sockets use: the temporary directory, this process and a random part (the kernel
    adds ``-1`` to ``-5``; short enough for a Unix socket's 107 characters)."""
    import tempfile
    import uuid

    return os.path.join(tempfile.gettempdir(), f"repro-kernel-{os.getpid()}-{uuid.uuid4().hex[:12]}-ipc")


class _ConsoleHandler(logging.StreamHandler):
    """The handler :func:`_stream_papermill_log` adds, marked ``_repro`` so that it is added once."""

    _repro = True


def _stream_papermill_log() -> None:
    """Show the notebook's output (one line per epoch) while it runs."""
    logger = logging.getLogger("papermill")
    logger.setLevel(logging.INFO)
    if not any(getattr(h, "_repro", False) for h in logger.handlers):
        handler = _ConsoleHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("  %(message)s"))
        handler.addFilter(lambda rec: not any(noise in rec.getMessage() for noise in _NOISE))
        logger.addHandler(handler)
        logger.propagate = False


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


def overrides_of(record: dict) -> dict:
    """The parameters a run was given on top of its profile (``-p epochs=3``), as validated, nested like the
    parameters, for the rendered notebook's parameters cell, so that the chapter shows how the run was made: the
    run's record of them (``overrides``), else the names its recorded command line gave with ``-p`` (runs older
    than the record); flat names of runs stored before the nesting read through the one adapter."""
    spec = _params.spec(record["experiment"])
    if isinstance(record.get("overrides"), dict):
        return _params.nest(spec.dotted(record["overrides"]))
    words, ran = str(record.get("command") or "").split(), spec.dotted(record.get("parameters") or {})
    named = spec.dotted({w.split("=", 1)[0]: None for flag, w in zip(words, words[1:])
                         if flag in ("-p", "--param") and "=" in w})
    return _params.nest({k: ran[k] for k in named if k in ran})


def _papermill(run_dir: Path, log_output: bool) -> None:
    """Execute the run's experiment notebook against the finished run into ``run_dir/notebook.ipynb``:
    the notebook loads the stored results and shows them (nothing is measured in the kernel). It is
    written under a hidden name and renamed only when every cell ran, so a failed or interrupted render
    never stands as the run's chapter (it is kept as ``.notebook-failed.ipynb``, never published)."""
    import papermill as pm

    record = results.read_provenance(run_dir)
    experiment, profile = record["experiment"], record["profile"]
    notebook = notebooks_dir() / _params.spec(experiment).notebook
    partial, failed = run_dir / ".notebook-rendering.ipynb", run_dir / ".notebook-failed.ipynb"
    if log_output:
        _stream_papermill_log()
    try:
        pm.execute_notebook(
            str(notebook), str(partial),
            # relative to the checkout: published notebooks must not show the path of the machine that ran them
            parameters={"profile": profile, "overrides": overrides_of(record),
                        "run_dir": results.relative_to_project(run_dir)},
            kernel_name=kernel_name(), cwd=str(notebook.parent), log_output=log_output, progress_bar=False,
            kernel_manager_class=_ipc_kernel_manager(),
        )
    except BaseException as exc:
        if partial.is_file():
            partial.replace(failed)
        if not isinstance(exc, pm.PapermillExecutionError):
            raise
        raise RunFailed(
            f"{experiment} ({profile}): rendering the notebook failed: {exc.ename}: "
            f"{exc.evalue.splitlines()[0] if exc.evalue else ''} (the results are complete in {run_dir}; "
            f"executed notebook: {failed}; `repro render --force` renders it again)"
        ) from None
    relative_paths(partial)
    partial.replace(run_dir / "notebook.ipynb")


def execute(experiment: str, profile: str | None = None, overrides: dict | None = None,
            root: Path | None = None, log_output: bool = True) -> Path:
    """``repro run``: measure in this process (:func:`repro.core.harness.run`: parameters validated
    first, then prepare, measure, judge, atomic rename), then render the notebook against the finished
    run directory. Clusters and child processes start here, never in a Jupyter kernel, so Ctrl-C,
    SIGTERM and timeouts are handled in one process. Returns the run directory."""
    from repro.core import harness

    exp = harness.experiment(experiment)
    if log_output:
        print(f"[repro] {experiment} ({profile or _params.spec(experiment).default_profile}): measuring", flush=True)
    result = harness.run(exp, profile, overrides, root=root)
    if log_output:
        print(f"[repro] {experiment}: rendering {result.run_dir / 'notebook.ipynb'}", flush=True)
    _papermill(result.run_dir, log_output)
    return result.run_dir


def render(run_dir: Path, log_output: bool = True) -> Path:
    """Execute a finished run's notebook against its stored results (nothing is trained):
    ``repro run``'s second half, and ``repro render`` for runs made with ``repro measure``
    (e.g. on a GPU machine without Jupyter); writes ``run_dir/notebook.ipynb``."""
    run_dir = Path(run_dir).resolve()
    record = results.read_provenance(run_dir) if (run_dir / "provenance.json").is_file() else {}
    if record.get("status") != "complete":
        raise RunFailed(f"{run_dir} is not a complete run (provenance.json status)")
    _papermill(run_dir, log_output)
    return run_dir
