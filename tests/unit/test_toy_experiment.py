"""Adding an experiment touches only its folder (plus its notebook, _toc.yml, bibliography, tests).

A copy of the package gets a new folder ``experiments/toy/`` and nothing else; the copy then
discovers it, validates its profile, runs it through the harness, writes its ledger from its
``claims.yaml`` and re-derives that ledger from the stored run.
"""

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import repro

PROFILE = """\
title: "Toy: a fair coin"
paper: cloudcost2017
notebook: 99_toy.ipynb
parameters:
  flips: {type: int, min: 1, help: "coin flips per run"}
  seeds: {type: "list[int]", help: "independent runs"}
profiles:
  smoke: {cost: "instant", description: "a few flips", values: {flips: 2000, seeds: [0, 1]}}
"""
CLAIMS = """\
claims:
  - id: fair
    paper: cloudcost2017
    text: "a fair coin shows heads half of the time"
    paper_value: "0.5"
    source: "a toy, not a paper"
    evidence: toy-flips
    check: within
    reference: 0.5
    tolerance: 0.05
    tolerance_source: "about 4.5 standard errors at 2,000 flips"
    stochastic: true
    counterfactual: "a coin biased to heads, whose flips table shows heads 60 % of the time in both seeds (a toy: no falsification test)"
"""
EXPERIMENT = '''\
"""A toy experiment: flip a coin."""
import numpy as np
import pandas as pd

from repro.core import claims, harness

NAME = "toy"


class Toy(harness.Experiment):
    name = NAME

    def prepare(self, p):
        return None

    def measure(self, run, p, inputs):
        rows = [{"seed": s, "heads": float(np.random.default_rng(s).integers(0, 2, p.flips).mean())}
                for s in p.seeds]
        return harness.Output({"flips": pd.DataFrame(rows)}, {"mean_heads": float(np.mean([r["heads"] for r in rows]))})

    def judge(self, result):
        flips = result.tables["flips"]
        mean = float(flips["heads"].mean())
        return {"fair": claims.Measured(f"{mean:.3f}", value=mean, runs=len(flips))}

    def verdict_views(self, result, measured, ledger):  # the chapter's tables that show verdicts
        return harness.Output({"verdicts": ledger[["claim", "verdict"]]}, {"reproduced": int(
            ledger["verdict"].str.startswith("reproduced").sum())})


EXPERIMENT = Toy()
run = harness.entry(EXPERIMENT)
'''
SCRIPT = """\
import json, sys
from repro.core import harness, params
from repro.experiments.toy import experiment as toy
assert "toy" in params.experiments(), list(params.experiments())
try:
    params.resolve("toy", "smoke", {"flips": 0})
except params.ParameterError as exc:
    bad = str(exc)
result = toy.run("smoke")
view = (result.run_dir / "verdicts.csv").read_text()
(result.run_dir / "verdicts.csv").write_text("claim,verdict\\nstale,differs\\n")  # a view left behind by old rules
again, changed = harness.rejudge_run(result.run_dir)
_, unchanged = harness.rejudge_run(result.run_dir)
print(json.dumps({"bad": bad, "ledger": result["ledger"].to_dict("records"), "again": again.to_dict("records"),
                  "files": sorted(p.name for p in result.run_dir.iterdir()), "summary": result.summary,
                  "view": view, "view_again": (result.run_dir / "verdicts.csv").read_text(), "changed": changed,
                  "unchanged": unchanged,
                  "rejudged": "ledger_rejudged" in json.load(open(result.run_dir / "provenance.json"))}))
"""


def toy_package(tmp_path, experiment: str = EXPERIMENT, **files: str) -> tuple[Path, dict]:
    """A copy of the package with the folder ``experiments/toy/`` (``files``: more modules of it, by name) and its
    parameters class generated; returns the folder and the environment that imports the copy."""
    src = tmp_path / "src"
    shutil.copytree(Path(repro.__file__).parent, src / "repro", ignore=shutil.ignore_patterns("__pycache__"))
    folder = src / "repro" / "experiments" / "toy"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""Toy."""\n')
    (folder / "profile.yaml").write_text(PROFILE)
    (folder / "claims.yaml").write_text(CLAIMS)
    (folder / "experiment.py").write_text(textwrap.dedent(experiment))
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text)
    env = {"PYTHONPATH": str(src), "REPRO_RESULTS": str(tmp_path / "results"), "PATH": "/usr/bin:/bin"}
    gen = subprocess.run([sys.executable, "-m", "repro.core.paramtypes"], env=env, capture_output=True, text=True,
                         timeout=120)  # its parameters class, generated from its profile.yaml
    assert gen.returncode == 0 and "toy" in gen.stdout and (folder / "paramtypes.py").is_file(), gen.stderr[-3000:]
    return folder, env


def test_a_new_experiment_is_one_folder(tmp_path):
    folder, env = toy_package(tmp_path)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["bad"].startswith("parameter 'flips': expected an integer (>= 1)")
    row = got["ledger"][0]
    assert (row["claim"], row["paper_value"], row["evidence"]) == (
        "a fair coin shows heads half of the time", "0.5", "toy-flips")
    assert (row["verdict"], row["basis"], row["runs"]) == ("reproduced", "measured", 2)
    assert got["again"] == got["ledger"]
    assert {"flips.csv", "summary.json", "ledger.csv", "provenance.json", "verdicts.csv"} <= set(got["files"])
    # the verdict views: written after the ledger, merged into the summary, rewritten by rejudge
    assert got["view"] == "claim,verdict\na fair coin shows heads half of the time,reproduced\n"
    assert got["summary"]["reproduced"] == 1 and "mean_heads" in got["summary"]
    assert got["view_again"] == got["view"]
    # rejudge rewrites only what changed (and records it); a second rejudge touches nothing
    assert got["changed"] == ["verdicts.csv"] and got["unchanged"] == [] and got["rejudged"]
