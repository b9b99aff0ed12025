"""``python -m repro.campaign prepare|plan|run|resume TAR...|collect TAR...|--rehearse [DIR]|rehearse-env``
(:mod:`repro.campaign`); a command that cannot go on is one line on stderr (``repro: error: ...``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import repro.campaign as _doc
from repro.core import errors

from .settings import Log, Settings, plan_lines


def main(argv: list[str]) -> int:
    s = Settings.from_env()
    log = Log(s.t0)
    cmd, rest = (argv[0] if argv else ""), [Path(a) for a in argv[1:]]
    if cmd == "run":
        from .device import main_run
        return main_run(s)
    if cmd == "plan":
        for line in plan_lines(s):
            log.say(line)
        return 0
    if cmd in ("prepare", "resume", "collect"):
        from . import carry
        if cmd == "prepare":
            carry.prepare(s, log)
        elif cmd == "resume":
            carry.resume(s, rest, log)
        else:
            carry.collect(s, Path(os.environ.get("PUBLISHED") or s.root / "published"), rest, log)
        return 0
    if cmd in ("--rehearse", "rehearse-env"):
        from . import rehearse
        if cmd == "rehearse-env":
            print(rehearse.rehearse_python(s, Log(s.t0, stream=sys.stderr)))
        else:
            rehearse.rehearse(s, rest[0] if rest else None, log)
        return 0
    sys.stdout.write((_doc.__doc__ or "").split("::", 1)[-1])
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except errors.ReproError as exc:  # the package's one handler: `repro: error: ...`, the family's exit code
        sys.exit(errors.report(exc))
