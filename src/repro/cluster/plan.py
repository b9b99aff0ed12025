"""The plan of one cluster run: what :func:`repro.cluster.launch.run_cluster` decided, as ``plan.json`` in the run
directory, read by the local supervisor, the SLURM launcher and every SLURM task.

One pydantic model (:class:`ClusterPlan`) is the schema on both sides: the launcher writes an instance, the
readers get an instance back (attributes, not dictionary keys), and a plan.json that is truncated, hand-edited
or from another version of the package is one line naming the file and the field, before any process starts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repro.core import atomic
from repro.core.params import one_line

from .spec import ClusterError

FILE = "plan.json"


class ClusterPlan(BaseModel):
    """Everything a cluster's processes need to know about the run, decided once by the launcher."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_dir: str  # absolute; on a shared filesystem for SLURM
    isolation: Literal["netns", "none", "slurm"]  # local: a private network namespace, or none (allowed exposed)
    workers: int = Field(ge=0)
    ps: int = Field(ge=0)
    chief: bool
    cluster: dict[str, Any] | None = None  # a given cluster mapping (ClusterSpec.as_dict), else made from the counts
    program_roles: list[str]  # the roles that run the program; the others serve
    program_cmd: list[str]
    server_cmd: list[str]
    kwargs: dict[str, Any] = Field(default_factory=dict)  # the program's keyword arguments (JSON)
    timeout: float = Field(gt=0)  # seconds the program may run once the cluster is ready
    ready_timeout: float = Field(gt=0)  # seconds for every server to listen
    grace: float = Field(ge=0)  # seconds between SIGTERM and SIGKILL at teardown
    fail_fast: bool  # a task that dies ends the cluster
    network: dict[str, Any] | None = None  # an emulated network (Network.validate), one namespace per node
    env: dict[str, str] = Field(default_factory=dict)  # added to every task's environment (wins over the device's)
    cwd: str | None = None
    gpus: list[str] = Field(default_factory=list)  # handed out per worker by device_env

    @property
    def path(self) -> Path:
        return Path(self.run_dir) / FILE

    def write(self) -> Path:
        """Write ``run_dir/plan.json`` atomically; a run directory used before is one line."""
        if self.path.exists():
            raise ClusterError(f"run directory {self.run_dir} was already used by a cluster run")
        try:
            json.dumps(self.kwargs)
        except TypeError as exc:
            raise ClusterError(f"kwargs must be JSON-serialisable: {exc}") from None
        atomic.write_text(self.path, self.model_dump_json(indent=1))
        return self.path


def read(path: str | Path) -> ClusterPlan:
    """The plan in ``path`` (a ``plan.json`` or the run directory holding one), validated."""
    path = Path(path)
    path = path / FILE if path.is_dir() else path
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ClusterError(f"{path}: not a readable cluster plan ({exc})") from None
    try:
        return ClusterPlan.model_validate(raw)
    except ValidationError as err:
        raise ClusterError(one_line(err, str(path))) from None
