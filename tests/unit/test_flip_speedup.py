"""Could it flip on the inputs? `speedup` (slampa2017): every decisive claim whose published row rests on the
thesis' own numbers (basis equations), its judge (:func:`repro.experiments.speedup.statements.measurements`, or
the judge function the claim's check names) fed the thesis' inputs scaled by random factors (``flip.py``).

The thesis' equations are homogeneous in (t_grad, t_comm): every predicted speedup depends on one network's
r = t_comm / t_grad alone, so scaling both inputs of a network x0.2-x5 moves r x0.04-x25. The best-configuration
rows that hold over the whole domain (400 draws each) are tests/smoke/test_flip_speedup_smoke.py.
"""

import functools
import sys
from pathlib import Path

import flip
import numpy as np
import pandas as pd
import pytest

from repro.core import claims, paramtypes
from repro.experiments.speedup import equations as eq
from repro.experiments.speedup import statements

EXPERIMENT = "speedup"
DOMAIN = flip.Domain("each Table 6.1 input the claim reads x0.2-x5, log-uniform, independently (a network's t_grad and "
                     "t_comm; for a t_comm ratio the two networks' t_comm; for t_grad_similar the four t_grad; for "
                     "t_comm_follows_parameters the four t_comm and our four parameter counts; for the §8 claim all "
                     "four networks' t_grad and t_comm)")
D = 128
LIMITS = {"VGG16E": 4, "GoogLeNet": 8, "SqueezeNet": 8, "Resnet34": 8}
PUBLISHED = Path(__file__).resolve().parents[2] / "published" / "cpu" / EXPERIMENT


@functools.lru_cache(maxsize=None)
def _table_6_1(networks: tuple = tuple(eq.NETWORKS)) -> pd.DataFrame:
    return eq.table_6_1(list(networks))


def _table(networks: tuple = tuple(eq.NETWORKS)) -> pd.DataFrame:
    """Table 6.1 (a copy: the samplers scale it)."""
    return _table_6_1(networks).copy()


def _params(networks):
    return paramtypes.partial(EXPERIMENT, {"measure": False, "networks": list(networks), "emulate": None})


def _judged(cid: str, table: pd.DataFrame) -> claims.Measured:
    """The claim's measurement by the experiment's judge, on the predictions of ``table`` (Table 6.1's rows)."""
    grid = eq.predict_grid(table, D, {n: LIMITS[n] for n in table["network"]}, semaphore=False)
    return statements.measurements({"predictions": grid}, _params(table["network"]), ids=(cid,))[cid]


def _network(cid: str, net: str):
    """One network's t_grad and t_comm, each x0.2-x5."""
    def sample(draw: flip.Draw):
        g, c = draw.factors([f"{net} t_grad", f"{net} t_comm"])
        table = _table((net,))
        return _judged(cid, table.assign(t_grad=table["t_grad"] * g, t_comm=table["t_comm"] * c))
    return sample


def _ratio(cid: str, net: str):
    """The t_comm of ``net`` and of SqueezeNet, each x0.2-x5, through §7.1's ratio."""
    def sample(draw: flip.Draw):
        table = _table()
        f = [draw.factor(f"{n} t_comm") if n in (net, "SqueezeNet") else 1.0 for n in table["network"]]
        return statements.t_comm_ratio(table.assign(t_comm=table["t_comm"] * f), net, claims.load(EXPERIMENT)[cid])
    return sample


def _t_grad_similar(draw: flip.Draw):
    table = _table()
    scaled = table.assign(t_grad=table["t_grad"] * draw.factors(f"{n} t_grad" for n in table["network"]))
    return statements.t_grad_similar(scaled, claims.load(EXPERIMENT)["t_grad_similar"])


@functools.lru_cache(maxsize=None)
def _parameters() -> pd.DataFrame:
    """The parameters table of the published cpu run (our builds' counts at the thesis' 224 px, 256 classes)."""
    run = PUBLISHED / (PUBLISHED / "LATEST").read_text().strip()
    return pd.read_csv(run / "parameters.csv")


def _follows_parameters(draw: flip.Draw):
    par = _parameters()
    scaled = par.assign(ours=par["ours"] * draw.factors(f"{n} parameters" for n in par["network"]),
                        t_comm=par["t_comm"] * draw.factors(f"{n} t_comm" for n in par["network"]))
    return statements.follows_parameters(scaled, claims.load(EXPERIMENT)["t_comm_follows_parameters"])


def _ideal_found(draw: flip.Draw):
    table = _table()
    scaled = table.assign(t_grad=table["t_grad"] * draw.factors(f"{n} t_grad" for n in table["network"]),
                          t_comm=table["t_comm"] * draw.factors(f"{n} t_comm" for n in table["network"]))
    return _judged("estimates_found_ideal", scaled)


NETWORK_ROWS = {  # the rows on one network's t_grad and t_comm
    "vgg16e_below_one": "VGG16E",
    "squeezenet_above_one": "SqueezeNet",
    "squeezenet_servers_equal": "SqueezeNet",
    "squeezenet_split_central_best_4": "SqueezeNet",
    "googlenet_split_distributed_predicted_up": "GoogLeNet",
    "googlenet_join_central_above_one": "GoogLeNet",
    "googlenet_split_central_below_one": "GoogLeNet",
    # holds exactly when t_comm < 4 t_grad (below); Table 6.1's r = 0.99 is x4.05 from that bound: one input moved
    # within the domain flips it (the SqueezeNet and GoogLeNet best-configuration rows are x92 and x14.5 away)
    "resnet34_best_config": "Resnet34",
    "resnet34_split_below_one": "Resnet34",
    "resnet34_async_central_below_one": "Resnet34",
    "resnet34_async_distributed_above_one": "Resnet34",
    "resnet34_join_central_above_one": "Resnet34",
    # not decisive: they hold on (nearly) every draw (claims.yaml)
    "squeezenet_best_config": "SqueezeNet",
    "googlenet_join_best": "GoogLeNet",
    "googlenet_async_best": "GoogLeNet",
}
RATIOS = {f"t_comm_ratio_{net.lower()}": net for net in ("GoogLeNet", "Resnet34", "VGG16E")}
_ALL = tuple(eq.NETWORKS)
DOMAINS = {cid: DOMAIN.of(f"{net} t_grad", f"{net} t_comm") for cid, net in NETWORK_ROWS.items()}
DOMAINS.update({cid: DOMAIN.of(f"{net} t_comm", "SqueezeNet t_comm") for cid, net in RATIOS.items()})
DOMAINS.update({
    "t_grad_similar": DOMAIN.of(*(f"{n} t_grad" for n in _ALL)),
    "t_comm_follows_parameters": DOMAIN.of(*(f"{n} parameters" for n in _ALL), *(f"{n} t_comm" for n in _ALL)),
    "estimates_found_ideal": DOMAIN.of(*(f"{n} t_grad" for n in _ALL), *(f"{n} t_comm" for n in _ALL)),
})

_ALL_SAMPLERS = {cid: _network(cid, net) for cid, net in NETWORK_ROWS.items()}
_ALL_SAMPLERS.update({cid: _ratio(cid, net) for cid, net in RATIOS.items()})
_ALL_SAMPLERS.update({"t_grad_similar": _t_grad_similar, "t_comm_follows_parameters": _follows_parameters,
                      "estimates_found_ideal": _ideal_found})
# the claims whose samplers give an outcome on fewer than 5 % of the draws: decisive: false (claims.yaml), with the
# shares their test below checks
_SAID = claims.load(EXPERIMENT)
SAMPLERS = {cid: f for cid, f in _ALL_SAMPLERS.items() if _SAID[cid].decisive}
UNDECIDED = {cid: f for cid, f in _ALL_SAMPLERS.items() if not _SAID[cid].decisive}


@pytest.mark.parametrize("cid", sorted(SAMPLERS))
def test_flips(cid):
    flip.check(sys.modules[__name__], cid)


@pytest.mark.parametrize("cid", sorted(UNDECIDED))
def test_rows_that_do_not_flip_over_the_domain_are_not_decisive(cid):
    """The best-configuration rows of SqueezeNet and GoogLeNet hold on 400 and 398 of 400 draws (only t_comm / t_grad
    moved x92 and x14.5 flips them); the §7.1 ratios of Resnet34 and VGG16E fall within the printed ratio's rounding
    on 2 and 13 of 400; the two statements about how Table 6.1's numbers compare on none: each claims.yaml entry
    says so."""
    flip.check_undecided(sys.modules[__name__], cid)


BEST = {"squeezenet_best_config": "SqueezeNet", "googlenet_join_best": "GoogLeNet",
        "googlenet_async_best": "GoogLeNet", "resnet34_best_config": "Resnet34"}


@pytest.mark.parametrize("cid", sorted(BEST))
def test_best_configuration_rows_hold_exactly_when_t_comm_is_below_4_t_grad(cid):
    """The four best-configuration statements say one thing of the equations: t_comm < 4 t_grad (S(8) > S(1) on the
    distributed server, which every other configuration trails). 150 inputs with r over 1e-4..1e4, log-uniform."""
    rng = np.random.default_rng(7)
    seen = {True: 0, False: 0}
    for _ in range(150):
        t_grad, t_comm = np.exp(rng.uniform(np.log(0.01), np.log(10))), np.exp(rng.uniform(np.log(1e-3), np.log(100)))
        if abs(t_comm / t_grad - 4) < 1e-6:
            continue
        table = _table((BEST[cid],)).assign(t_grad=t_grad, t_comm=t_comm)
        holds = _judged(cid, table).holds
        assert holds == (t_comm < 4 * t_grad), (cid, t_grad, t_comm)
        seen[holds] += 1
    assert min(seen.values()) > 30, seen
