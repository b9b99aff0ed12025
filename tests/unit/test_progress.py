"""Progress lines of long work (repro.core.progress): k/N, elapsed, an ETA from the pace so far."""

import logging

import pytest

from repro import cli
from repro.core import progress


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_a_progress_line_says_k_of_n_elapsed_and_the_eta_by_the_pace_so_far(caplog):
    clock, log = Clock(), logging.getLogger("repro.test")
    caplog.set_level(logging.INFO, logger="repro")
    p = progress.Progress(log, "clusters", 3, now=clock)
    clock.t += 90
    assert p.done("ring, 2 workers", "12 images/s") == "clusters 1/3 ring, 2 workers (12 images/s), elapsed 1:30, ETA 3:00"
    clock.t += 30
    assert p.done("ring, 4 workers") == "clusters 2/3 ring, 4 workers, elapsed 2:00, ETA 1:00"
    clock.t += 3600
    assert p.done() == "clusters 3/3, elapsed 1:02:00"  # the last: no ETA
    assert [r.getMessage() for r in caplog.records][0] == "clusters: 3 to do"


def test_weights_make_the_eta_follow_the_work_left_not_the_count():
    clock = Clock()
    p = progress.Progress(logging.getLogger("repro.test"), "grid", 3, weights=[1, 1, 8], now=clock)
    clock.t += 10
    p.done()
    assert p.eta() == pytest.approx(90.0)  # 10 s for 1 unit of 10; 9 units left
    with pytest.raises(ValueError, match="2 weights for 3"):
        progress.Progress(logging.getLogger("repro.test"), "grid", 3, weights=[1, 2])


def test_the_command_line_sets_the_level_with_v_and_q(capsys):
    for flags, level in (([], logging.INFO), (["-v"], logging.DEBUG), (["-q"], logging.WARNING)):
        assert cli.main([*flags, "list"]) == 0
        assert logging.getLogger("repro").level == level
    capsys.readouterr()
    progress.setup(0)


def test_a_heartbeat_inside_a_long_item_at_most_once_a_minute(caplog):
    """Inside one long item (a cluster of the cpu profile) a line still comes at least once a minute."""
    clock, log = Clock(), logging.getLogger("repro.test")
    caplog.set_level(logging.INFO, logger="repro")
    p = progress.Progress(log, "clusters", 3, now=clock)
    clock.t += 59
    assert p.beat() is None  # less than a minute since the last line
    clock.t += 1
    assert p.beat() == "clusters: 0/3 done, item 1 running for 1:00, elapsed 1:00"  # no pace yet: no ETA
    assert p.beat() is None  # just logged
    clock.t += 30
    p.done("ring, 2 workers")  # 1/3 after 1:30: 3:00 left
    clock.t += 60
    assert p.beat() == "clusters: 1/3 done, item 2 running for 1:00, elapsed 2:30, ETA 2:00"
    clock.t += 600
    assert p.beat() == "clusters: 1/3 done, item 2 running for 11:00, elapsed 12:30, ETA 0:00"  # over the pace
    p.done(), p.done()
    clock.t += 600
    assert p.beat() is None  # all done


def test_the_heartbeat_thread_runs_only_inside_with(caplog, monkeypatch):
    import time

    caplog.set_level(logging.INFO, logger="repro")
    monkeypatch.setattr(progress.Progress, "HEARTBEAT_S", 0.05)
    with progress.Progress(logging.getLogger("repro.test"), "children", 2) as p:
        time.sleep(0.4)
        inside = sum("running for" in r.getMessage() for r in caplog.records)
    time.sleep(0.3)
    after = sum("running for" in r.getMessage() for r in caplog.records)
    assert inside >= 1 and after <= inside + 1 and p._stop.is_set()
