"""Every example a user is shown is run (issue 57, item 2): each `repro …` line of README.md, docs/*.md, the
`--help` texts and the profile.yaml files, and each notebook's overrides example as the `repro run` it stands for
(collected by tests/examples_found.py, so a new example is run without a new test), through `repro.cli.main` in a
scratch place (its own results root, data directory and working directory; a dataset mirror with nothing in it,
so `repro data fetch` fails here as it does offline).

Each either finishes (a `run` with its rendered chapter, a `measure` with its ledger, a `rejudge` of the
published runs that rewrites nothing), or is refused in one line (`repro: error: …`) before any run directory
exists; a refusal by the preflight may name only what this machine lacks (the papers' data, a GPU, a cluster).
A placeholder is filled as a reader would (`<run-id>`: the newest such run, measured first where there is none;
`<profile>`: cpu; `<name>`: the paper's hardware profile; `<yours>`: left out). A usage line (`data import FILE`)
is run as typed and must be refused in one line.

Cost: a `run` or `measure` that the preflight lets start trains here only where its experiment's smoke run takes
seconds (CHEAP, on the smoke profile, on this machine); the others (another profile, a cluster experiment, every
experiment at once) would train for minutes to hours, so this tier skips them, naming their cost, after checking
that their preflight lets them start; ``make fuzz`` (``REPRO_EXAMPLES_ALL=1``) runs them too.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from examples_found import PLACEHOLDER, ROOT, examples, filled, notebook_examples

from repro import cli
from repro.core import params as _params

EVERY = os.environ.get("REPRO_EXAMPLES_ALL") == "1"
CHEAP = ("mnist_cnn", "optimizers", "staleness")  # smoke runs of seconds to a minute here
ABSENT_HERE = ("data", "devices", "scheduler")  # what the preflight may name as missing: see tests/unit/test_examples.py


def _unique(found: list) -> list:
    seen, out = set(), []
    for param in found:
        args = param.values[0]
        key = tuple(args[:args.index("-p")] if "-p" in args else args) + tuple(filled(_pairs(args)))
        if key not in seen:
            seen.add(key)
            out.append(param)
    return out


def _pairs(args: list[str]) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-p"]


EXAMPLES = _unique(examples() + notebook_examples())


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """A scratch place: results root, data directory and working directory of their own, an empty mirror."""
    root = tmp_path_factory.mktemp("examples")
    for d in ("results", "data", "mirror"):
        (root / d).mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REPRO_RESULTS", str(root / "results"))
        mp.setenv("REPRO_DATA_DIR", str(root / "data"))
        mp.setenv("REPRO_DATA_MIRROR", (root / "mirror").as_uri())
        mp.chdir(root)
        yield root


def _runs(place: Path, name: str, profile: str) -> list[Path]:
    return sorted((place / "results" / profile / name).glob("2*"))


def _main(args: list[str], capsys) -> tuple[int, str, str]:
    try:
        rc = cli.main(list(args))
    except SystemExit as done:  # argparse: --help, or arguments it refuses
        rc = done.code if isinstance(done.code, int) else 2
    out = capsys.readouterr()
    return rc, out.out, out.err


def _fill(args: list[str], place: Path, capsys) -> list[str]:
    """The example with its placeholders filled as a reader would."""
    out = []
    for arg in args:
        if "<run-id>" in arg:
            arg = _run_id(arg, place, capsys)
        elif PLACEHOLDER.match(arg):
            fills = {"<profile>": "cpu", "<name>": "k80-p2.16xlarge"}
            assert arg in fills, f"an example's placeholder {arg} that this test cannot fill: teach _fill"
            arg = fills[arg]
        out.append(arg)
    if "-p" in out:
        pairs = filled(_pairs(out))
        out = out[:out.index("-p")] + [x for pair in pairs for x in ("-p", pair)]
    return out


def _run_id(arg: str, place: Path, capsys) -> str:
    """``results/<profile>/<experiment>/<run-id>``: the newest such run (measured first where none is there);
    ``published/…/<run-id>``: the newest published one."""
    parts = Path(arg).parts
    if parts[0] == "published":
        return str(sorted((ROOT / Path(*parts[:-1])).glob("2*"))[-1])
    profile, name = parts[-3], parts[-2]
    if not _runs(place, name, profile):
        assert _main(["measure", name, "--profile", profile], capsys)[0] == 0
    return str(_runs(place, name, profile)[-1])


def _heavy(args: list[str]) -> str | None:
    """Why a run or measure example would train for minutes or more here (None where it takes seconds)."""
    if args[0] not in ("run", "measure"):
        return None
    name, profile = args[1], args[args.index("--profile") + 1] if "--profile" in args else None
    if name == "all":
        return "every experiment's notebook (make book runs them on the default profile)"
    spec = _params.spec(name)
    profile = profile or spec.default_profile
    slurm = "launcher=slurm" in args
    if profile == "smoke" and name in CHEAP and not slurm:
        return None
    why = "" if name in CHEAP else f"{name}'s smoke run is not one of seconds; "
    return f"{why}{name} --profile {profile}{' on SLURM' if slurm else ''}: the profile states {spec.profiles[profile].cost}"


def _blocked(args: list[str]) -> bool:
    """Whether the preflight refuses this run here (then running it costs a check, not a training)."""
    from repro.core import harness, preflight, results

    name = args[1]
    spec = _params.spec(name)
    profile = args[args.index("--profile") + 1] if "--profile" in args else spec.default_profile
    p = spec.resolve(profile, spec.parse_overrides(_pairs(args)))
    prof = spec.profiles[profile]
    rep = preflight.report(harness.experiment(name), p, profile, prof.cost, prof.gpus, results.results_root(),
                           probe=False)
    return bool(rep.blocked)


@pytest.mark.slow
@pytest.mark.parametrize("args", EXAMPLES)
def test_every_example_runs_or_is_refused_in_one_line(args, place, capsys):
    args = _fill(args, place, capsys)
    why = _heavy(args)
    if why and not EVERY and not (args[1] != "all" and _blocked(args)):
        pytest.skip(f"trains for minutes here ({why}); make fuzz runs it")
    if args[0] == "rejudge":
        return _rejudge_rewrites_nothing(args, capsys)
    before = set((place / "results").rglob("provenance.json"))
    with pytest.MonkeyPatch.context() as mp:  # `publish` writes into a scratch published/, not the checkout's
        if args[0] == "publish":
            mp.setattr("repro.book.build.published_root", lambda: place / "published")
        rc, out, err = _main(args, capsys)
    if rc == 0:
        return _finished(args, place, before)
    lines = [line for line in err.splitlines() if line.startswith("repro")]
    report = args[0] == "check" and rc == 1 and not lines  # `repro check`: its report is its answer
    assert report or (len(lines) == 1 and lines[0].startswith("repro: error: ")), f"not refused in one line: {err}"
    missing = re.findall(r"^\s+MISSING\s+(\w+)", out, flags=re.MULTILINE)
    assert set(missing) <= set(ABSENT_HERE), f"the preflight names {missing}: {out}"
    made = {p for p in (place / "results").rglob("provenance.json")} - before
    assert not made, f"refused after a run directory was made: {made}"


def _finished(args: list[str], place: Path, before: set) -> None:
    if args[0] not in ("run", "measure"):
        return
    made = [p.parent for p in (place / "results").rglob("provenance.json") if p not in before]
    assert len(made) == 1, f"`repro {' '.join(args)}` made {made}"
    assert (made[0] / "ledger.csv").is_file()
    if args[0] == "run":
        assert (made[0] / "notebook.ipynb").is_file()


def _rejudge_rewrites_nothing(args: list[str], capsys) -> None:
    """`repro rejudge --published P` on this checkout: every published run is what the code derives (a run it
    would rewrite is put back as it was, and the test fails: rejudge and commit it)."""
    profile = args[args.index("--published") + 1]
    where = ROOT / "published" / profile
    keep = Path(os.environ["REPRO_DATA_DIR"]).parent / f"published-{profile}"
    shutil.copytree(where, keep, dirs_exist_ok=True)
    try:
        rc, out, err = _main(args, capsys)
    finally:
        shutil.copytree(keep, where, dirs_exist_ok=True)
    assert rc == 0, err
    rewrote = [line for line in out.splitlines() if "rewrote" in line]
    assert not rewrote, f"`repro rejudge --published {profile}` rewrites published runs: {rewrote}"


def test_the_runner_fills_placeholders_and_refuses_a_placeholder_it_cannot(place, capsys):
    """The counterfactual of the filling: a placeholder nobody taught it fails the example."""
    assert _fill(["run", "optimizers", "-p", "optimizers=sgd,adam,<yours>"], place, capsys) == \
        ["run", "optimizers", "-p", "optimizers=sgd,adam"]
    assert _fill(["rejudge", "--published", "<profile>"], place, capsys) == ["rejudge", "--published", "cpu"]
    with pytest.raises(AssertionError, match="teach _fill"):
        _fill(["render", "<somewhere>"], place, capsys)
