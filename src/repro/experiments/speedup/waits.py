"""The least time each emulated cluster must take, against ``timeout``, before any process starts.

Every emulated batch waits the hardware profile's ``t_grad`` times the cluster's dilation, and no machine
speed shortens a wait: a cluster of N workers running D batches of each network in each mode waits at least
``D / N x t_grad x dilation`` per network and mode, in one run under one ``timeout``. A grid (its dilation
check, its replay) whose waits alone exceed ``timeout`` would fail after the real grid trained; it is
refused here in one line naming the parameter that made it so.
"""

from __future__ import annotations

from repro.experiments.speedup import emulation
from repro.experiments.speedup.paramtypes import SpeedupEmulate, SpeedupParams
from repro.predict import hardware


def least_seconds(cluster: dict, emu: emulation.Emulation, grid: SpeedupEmulate) -> float:
    """Seconds of dilated waits alone in one planned cluster (``emulation.plan``'s dict) of ``grid``."""
    t_grad = sum(emu.profile.t_grad(m) if m in emu.profile.t_grad_s else emu.extra_t_grad[m]
                 for m in cluster["networks"])
    return grid.batches / cluster["workers"] * t_grad * cluster["dilation"] * len(grid.modes)


def check(p: SpeedupParams, prof: hardware.Profile) -> None:
    """Refuse (one line) an emulated grid, dilation check or replay whose waits exceed ``timeout``."""
    emu = emulation.setup(p, prof)
    todo = emulation.plan(p, emu, {})
    named = [(c, p.emulate, "emulate.batches", "the emulated grid") for c in todo]
    named += [(c, p.emulate, "dilation_check", "the dilation check") for c in emulation.check_clusters(p, emu, {})]
    if p.replay.repeats:
        named.append((emulation.replay_cluster(p, todo), emulation.replay_grid(p), "replay.batches", "the replay"))
    for c, grid, param, what in named:
        hardware.check_waits(least_seconds(c, emu, grid), p.timeout, param,
                             f"{what}'s cluster of N = {c['workers']} on the {c['server']} server "
                             f"(dilation {c['dilation']:g})")
