"""Progress of long work as log lines: ``k/N``, what just finished, elapsed time and an ETA.

Every long loop of the package (the distributed and speedup grids, the cost study's children, the
staleness runs, a trainer's epochs) reports through :class:`Progress` on its module's logger, so a
console (``repro -v/-q``) and a CI log show a line per finished item, at least once a minute where an
item is long; :func:`setup` configures the ``repro`` loggers once for the command line.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

FORMAT = "%(asctime)s %(name)s: %(message)s"
_HANDLER_FLAG = "_repro_console"


class _Stderr(logging.StreamHandler):
    """A handler on whatever ``sys.stderr`` is when a record is written (pytest's capture, a redirected run),
    never on a stream that was closed since."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def setup(verbosity: int = 0) -> None:
    """Log ``repro.*`` to stderr: INFO by default, DEBUG with ``-v``, WARNING with ``-q`` (``verbosity``
    1 / -1). Idempotent: a second call only changes the level."""
    level = logging.DEBUG if verbosity > 0 else logging.WARNING if verbosity < 0 else logging.INFO
    root = logging.getLogger("repro")
    root.setLevel(level)
    if not any(getattr(h, _HANDLER_FLAG, False) for h in root.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter(FORMAT, datefmt="%H:%M:%S"))
        setattr(handler, _HANDLER_FLAG, True)
        root.addHandler(handler)
        root.propagate = False


def clock(seconds: float) -> str:
    """``h:mm:ss`` (or ``m:ss`` under an hour) of a duration."""
    s = int(round(max(seconds, 0.0)))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


class Progress:
    """``total`` items of ``what``, reported on ``log`` as each finishes (:meth:`done`). The ETA is the
    mean time of the finished items times those left (``weights``: an item's share of the work, where
    items differ, e.g. a cluster's workers); ``now`` is injectable for tests."""

    HEARTBEAT_S = 60.0  # inside ``with``: a line at least this often while an item runs

    def __init__(self, log: logging.Logger, what: str, total: int, weights=None, now=time.monotonic):
        self.log, self.what, self.total, self.now = log, what, max(int(total), 0), now
        self._stop = threading.Event()
        self._last = now()  # when the last line was logged
        self.weights = list(weights) if weights is not None else [1.0] * self.total
        if len(self.weights) != self.total:
            raise ValueError(f"progress of {what}: {len(self.weights)} weights for {total} items")
        self.start, self.k = now(), 0
        self._last_done = self.start  # when the last item finished (or the start)
        self._eta_done: float | None = None  # the ETA logged then
        if not logging.getLogger("repro").handlers and not logging.getLogger().handlers:
            setup()  # a process that configured no logging (a child, `python -m ...`) still shows progress
        log.info("%s: %d to do", what, self.total)

    def eta(self) -> float | None:
        """Seconds left by the pace so far; None before the first item."""
        done = sum(self.weights[: self.k])
        if not self.k or done <= 0:
            return None
        left = sum(self.weights[self.k:])
        return (self.now() - self.start) * left / done

    def done(self, label: str = "", detail: str = "") -> str:
        """One more item finished: logs and returns ``what k/N label (detail), elapsed m:ss, ETA m:ss``."""
        self.k = min(self.k + 1, self.total)
        self._last_done = self.now()
        eta = self._eta_done = self.eta()
        line = (f"{self.what} {self.k}/{self.total}" + (f" {label}" if label else "")
                + (f" ({detail})" if detail else "") + f", elapsed {clock(self.now() - self.start)}"
                + (f", ETA {clock(eta)}" if eta is not None and self.k < self.total else ""))
        self.log.info(line)
        self._last = self.now()
        return line

    def beat(self) -> str | None:
        """The line for an item still running (``what: k/N done, item k+1 running m:ss, elapsed, ETA``), logged
        where nothing was logged for :attr:`HEARTBEAT_S`; ``None`` otherwise."""
        if self.k >= self.total or self.now() - self._last < self.HEARTBEAT_S:
            return None
        eta, since = self._eta_done, self.now() - self._last_done  # the ETA of the last finished item, run down
        line = (f"{self.what}: {self.k}/{self.total} done, item {self.k + 1} running for {clock(since)}, "
                f"elapsed {clock(self.now() - self.start)}"
                + (f", ETA {clock(max(eta - since, 0.0))}" if eta is not None else ""))
        self.log.info(line)
        self._last = self.now()
        return line

    def __enter__(self) -> Progress:
        """A heartbeat while the block runs: :meth:`beat` checked every few seconds on a daemon thread, so
        a console and a notebook's log show the run alive even inside one long item."""
        def loop():
            while not self._stop.wait(min(5.0, self.HEARTBEAT_S)):
                self.beat()

        threading.Thread(target=loop, name=f"progress {self.what}", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()


class ByteBar:
    """A download's progress: a bar redrawn on a terminal, else a log line every tenth of the way (a CI log,
    a notebook), each with the bytes so far, the rate and an ETA; ``now`` is injectable for tests."""

    def __init__(self, what: str, stream=None, now=time.monotonic):
        self.what, self.now, self.start = what, now, now()
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._tenth, self._drawn = -1, False
        self.log = logging.getLogger("repro.data")

    def line(self, done: int, total: int) -> str:
        elapsed = max(self.now() - self.start, 1e-9)
        rate = done / elapsed
        share = done / total if total else None
        eta = (total - done) / rate if share is not None and rate > 0 else None
        bar = f"[{'#' * int(30 * share):<30}] {share:5.1%} " if share is not None else ""
        return (f"{self.what}: {bar}{done / 2**20:,.1f}" + (f" of {total / 2**20:,.1f}" if total else "")
                + f" MiB, {rate / 2**20:,.1f} MiB/s" + (f", ETA {clock(eta)}" if eta is not None else ""))

    def update(self, done: int, total: int) -> None:
        if self.tty:
            self.stream.write("\r" + self.line(done, total))
            self.stream.flush()
            self._drawn = True
            return
        tenth = int(10 * done / total) if total else done // (16 * 2**20)
        if tenth != self._tenth:
            self._tenth = tenth
            self.log.info(self.line(done, total))

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
