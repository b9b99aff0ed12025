"""The judge's code is part of the rule a run is measured under (issue 55, item 1), end to end: a toy experiment in
a copy of the package is run, its judge module reworded (the run stands) and then changed (the run reads *rule
changed after the data*). Three Python processes on a copy of the package (seconds), so in the smoke tier; the
digests and the ledger's rule are tests/unit/test_judge_code.py."""

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))  # the unit tier's toy package builder
from test_toy_experiment import toy_package  # noqa: E402

JUDGE_MODULE = '''\
"""The toy's judge."""
from repro.core import claims

SHIFT = 0.0  # a threshold written in code


def measurements(flips):
    mean = float(flips["heads"].mean()) + SHIFT
    return {"fair": claims.Measured(f"{mean:.3f}", value=mean, runs=len(flips))}
'''


EXPERIMENT = '''\
"""A toy experiment: flip a coin."""
import numpy as np
import pandas as pd

from repro.core import harness
from repro.experiments.toy import verdicts


class Toy(harness.Experiment):
    name = "toy"

    def prepare(self, p):
        return None

    def measure(self, run, p, inputs):
        rows = [{"seed": s, "heads": float(np.random.default_rng(s).integers(0, 2, p.flips).mean())}
                for s in p.seeds]
        return harness.Output({"flips": pd.DataFrame(rows)})

    def judge(self, result):
        return verdicts.measurements(result.tables["flips"])

    def verdict_views(self, result, measured, ledger):
        return harness.Output({})


EXPERIMENT = Toy()
run = harness.entry(EXPERIMENT)
'''


RUN = """\
import json
from repro.experiments.toy import experiment as toy
print(json.dumps(str(toy.run("smoke").run_dir)))
"""


REJUDGE = """\
import json, sys
from repro.core import harness
ledger, _ = harness.rejudge_run(sys.argv[1])
print(json.dumps(ledger.to_dict("records")))
"""


def _py(script: str, env: dict, *args: str):
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_stored_run_rejudged_after_its_judge_code_moved_reads_rule_changed(tmp_path):
    folder, env = toy_package(tmp_path, EXPERIMENT, verdicts=JUDGE_MODULE)
    env["REPRO_SKIP_CHECK"] = "1"
    run_dir = _py(RUN, env)
    record = json.loads((Path(run_dir) / "provenance.json").read_text())["claims_measured_under"]
    assert "src/repro/experiments/toy/verdicts.py" in record["code"]  # recorded when the run started
    (folder / "verdicts.py").write_text(JUDGE_MODULE.replace("The toy's judge.", "The toy's judge, reworded."))
    assert _py(REJUDGE, env, run_dir)[0]["category"] == "reproduced"  # a docstring is not a rule
    (folder / "verdicts.py").write_text(JUDGE_MODULE.replace("SHIFT = 0.0", "SHIFT = 0.001"))
    row = _py(REJUDGE, env, run_dir)[0]
    assert row["category"] == "rule changed after the data", row["verdict"]
    assert "the judge's code (verdicts.py)" in row["verdict"] and "measured under: reproduced" in row["verdict"]
