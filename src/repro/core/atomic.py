"""Atomic file writes (no third-party imports, so cluster and sweep child processes can use them).

Readers see the old file or the new one, never half of one: write to a temporary name in the
same directory, ``fsync``, then ``os.replace``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

_UMASK = os.umask(0)
os.umask(_UMASK)


def write_bytes(path: str | Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; results are meant to be shared
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, obj: Any, default: Callable | None = str, indent: int | None = 1) -> None:
    write_text(path, json.dumps(obj, indent=indent, default=default) + "\n")
