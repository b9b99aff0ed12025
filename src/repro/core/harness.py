"""One experiment interface and one harness that runs any experiment.

An experiment (``repro/experiments/<name>/experiment.py``) defines ``EXPERIMENT``, an instance of a
subclass of :class:`Experiment`, and ``run = harness.entry(EXPERIMENT)`` for its notebook. The
harness does the rest, the same way for every experiment, in the process that calls :func:`run`
(``repro run``/``repro measure``, or a notebook run by hand):

1. resolve and validate the parameters (one-line :class:`~repro.core.params.ParameterError`);
2. ``prepare``: load the inputs, so that a bad dataset never leaves an empty run directory;
3. open the run (provenance), ``measure``, write every table as CSV and the summary as JSON;
4. ``judge`` the written result against the claims of the folder's ``claims.yaml``
   (:func:`repro.core.claims.ledger`) and write ``ledger.csv``, then the experiment's
   ``verdict_views``: the chapter's tables that show verdicts, derived from the ledger;
5. finish the run (atomic rename).

``judge`` reads only what the run wrote, so :func:`rejudge_run` can re-derive the ledger of a stored
run (a published one) without retraining when the verdict rules or claims change; it re-derives
the verdict views with it, so a chapter never shows a verdict its ledger no longer gives. A run records
the digest of every claim and of the code that judges it when it starts (``claims_measured_under``:
:mod:`repro.core.judgecode`) and its first verdicts; a rejudge under a claim or judging code that changed since
shows *rule changed after the data* (:func:`repro.core.claims.measured_under`), and a run whose measured tables
are byte for byte those of a run published earlier is judged under that run's record (:func:`same_data`). The
load average is sampled while the experiment measures (:mod:`repro.core.load`): claims about time are not decided
where it exceeded the cores (:func:`judged`).
"""

from __future__ import annotations

import abc
import importlib
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

import pandas as pd

from repro.core import claims as _claims
from repro.core import errors, history, judgecode, preflight, provenance, results
from repro.core import load as _load
from repro.core import params as _params
from repro.core import paramtypes as _paramtypes
from repro.core.paramtypes import Params
from repro.core.results import Run

P = TypeVar("P", bound=Params)  # an experiment's parameters class (repro.core.paramtypes)
In = TypeVar("In")  # what an experiment's prepare gives its measure (a dataset, a price table, an Inputs record)
MEASURED_UNDER = "claims_measured_under"  # provenance: the claims' digests when the run began, its first verdicts


@dataclass
class Result(Generic[P]):
    """What an experiment's ``run`` returns to its notebook (and what ``judge`` reads); ``Result[DistributedParams]``
    where a chapter reads its parameters, so that mypy checks every ``result.params.<field>``."""

    run_dir: Path
    params: P  # the experiment's <Name>Params (repro.core.paramtypes), also when read back from provenance.json
    provenance: dict
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: dict = field(default_factory=dict)

    def __getitem__(self, name: str) -> pd.DataFrame:
        """A result table; if the run wrote it as ``<name>.csv`` it remembers that file (for downloads)."""
        df = self.tables[name]
        if (Path(self.run_dir) / f"{name}.csv").is_file():
            df.attrs[results.CSV_ATTR] = f"data/{self.provenance['experiment']}/{name}.csv"
        return df


@dataclass
class Output:
    """What ``measure`` returns: tables (each written as ``<name>.csv``) and a summary (``summary.json``)."""

    tables: dict[str, pd.DataFrame]
    summary: dict = field(default_factory=dict)
    discard: list[Path] = field(default_factory=list)  # what the run needs only until its judge has run (checkpoints)


ExperimentError = _params.ParameterError  # an experiment folder whose EXPERIMENT does not fit the interface


class Experiment(abc.ABC, Generic[P, In]):
    """What the harness needs of an experiment: subclass it in ``experiments/<name>/experiment.py`` and
    set ``EXPERIMENT`` to an instance; :func:`experiment` checks both when it finds the folder."""

    name: str  # the folder's name

    @abc.abstractmethod
    def prepare(self, params: P) -> In:
        """Load and check the inputs (datasets, price tables); raise before any run directory exists."""

    @abc.abstractmethod
    def measure(self, run: Run, params: P, inputs: In) -> Output:
        """Do the work; record datasets and devices with ``run.add_dataset`` / ``run.note``."""

    @abc.abstractmethod
    def judge(self, result: Result[P]) -> dict[str, _claims.Measured]:
        """One measurement per claim id of ``claims.yaml``, computed only from ``result``."""

    def preflight(self, params: P) -> "preflight.Own":
        """What this run needs beyond the shared checks (its data, a scheduler), how to estimate its time on this
        machine, and which statements it can decide (:mod:`repro.core.preflight`); nothing by default."""
        return preflight.Own()

    @abc.abstractmethod
    def verdict_views(self, result: Result[P], measured: dict, ledger: pd.DataFrame) -> Output:
        """The chapter's tables (and summary keys) that show verdicts, derived from the ledger: written
        after it, and again by :func:`rejudge_run` (``Output({})`` where the chapter shows the ledger only)."""


def start(experiment: str, profile: str | None, overrides: dict | None) -> tuple[Params, str]:
    """The parameters, validated (the one validation of a run), and the profile's name (the default profile when
    ``None``); ``overrides`` nested (papermill, a notebook) or dotted (``-p``)."""
    spec = _params.spec(experiment)
    profile = profile or spec.default_profile
    return spec.resolve(profile, overrides), profile


def judge_failed(run_dir) -> bool:
    """Whether ``run_dir`` holds a run whose measurement is kept but whose judge raised (``repro rejudge`` it)."""
    path = results.from_project(run_dir) / "provenance.json" if run_dir is not None else None
    return path is not None and path.is_file() and results.read_provenance(path.parent).get("status") == JUDGE_FAILED


def finished(run_dir) -> bool:
    """Whether ``run_dir`` holds a complete run (its notebook is then rendered from it, not re-run)."""
    path = results.from_project(run_dir) / "provenance.json" if run_dir is not None else None
    return path is not None and path.is_file() and results.read_provenance(path.parent).get("status") == "complete"


def run(exp: Experiment, profile: str | None = None, overrides: dict | None = None,
        root: Path | None = None) -> Result:
    """Run ``exp`` end to end in this process (module docstring) into a new run directory under
    ``root`` (``results/`` by default); returns its :class:`Result`. A run that raises (Ctrl-C included)
    leaves its directory marked failed, never half-finished."""
    p, profile = start(exp.name, profile, overrides)
    check(exp, p, profile, root)
    inputs = exp.prepare(p)
    run_ = Run(exp.name, profile, p.model_dump(), root)  # provenance is collected before its directory exists
    run_.note(MEASURED_UNDER, {"digests": _claims.digests(exp.name), "code": judgecode.digests(exp),
                               "source": "recorded when the run started"})
    run_.note("overrides", overrides_of(exp.name, p, overrides))  # the chapter shows them
    try:
        return _measure_and_judge(exp, run_, p, inputs)
    except BaseException:
        if run_.dir.name.startswith(results.INCOMPLETE):
            results.mark_failed(run_.dir)
        raise


def check(exp: Experiment, p: Params, profile: str, root: Path | None = None,
          probe: bool = False) -> preflight.Report | None:
    """The run's preflight (:mod:`repro.core.preflight`), printed (a notebook shows it in its first cell); raises
    :class:`~repro.core.preflight.PreflightFailed` where something blocks; None where ``REPRO_SKIP_CHECK`` is set."""
    if preflight.skipped():
        return None
    spec = _params.spec(exp.name)
    prof = spec.profiles.get(profile)
    rep = preflight.report(exp, p, profile, prof.cost if prof else "?", prof.gpus if prof else 0,
                           root or results.results_root(), probe)
    print(rep.text(), flush=True)
    if rep.blocked:
        raise preflight.PreflightFailed(preflight.refusal(rep))
    return rep


def overrides_of(experiment: str, p: Params, overrides: dict | None) -> dict:
    """The values ``overrides`` gave, as validated, nested like the parameters (``{"emulate": {"workers": [1]}}``)."""
    spec = _params.spec(experiment)
    given = spec.dotted(overrides or {})
    ran = spec.dotted(p.model_dump())
    return _params.nest({k: v for k, v in ran.items() if k in given})


JUDGE_FAILED = "judge failed"  # provenance status of a run whose measurement is kept but whose judge raised
DISCARD = "discard_after_judge"  # provenance: what goes once the judge has run (kept for `repro rejudge`)


def _measure_and_judge(exp: Experiment, run_: Run, p: Params, inputs: Any) -> Result:
    with _load.Sampler() as sampler:  # timing claims are not decided on oversubscribed cores (repro.core.load)
        out = exp.measure(run_, p, inputs)
    run_.note(_load.RECORD, sampler.record())
    for name, df in out.tables.items():
        run_.write_csv(name, df)
    run_.write_json("summary", out.summary)
    run_.note(DISCARD, [str(path) for path in out.discard])
    result = Result(run_.dir, p, run_.record, dict(out.tables), out.summary)
    try:
        _judge_into(exp, run_, result)
    except Exception as err:  # noqa: BLE001 - any fault of a judge: the measurement is kept, then it is re-raised
        run_.note("judge_error", f"{type(err).__name__}: {err}")
        kept = run_.finish(status=JUDGE_FAILED)
        raise errors.RunFailed(
            f"{exp.name}: the judge failed ({type(err).__name__}: {err}); the measurement is kept in {kept} "
            f"(status '{JUDGE_FAILED}'); once the judge is fixed, `repro rejudge {kept}` completes the run") from err
    discard(out.discard)
    result.run_dir = run_.finish()
    return result


def judged(exp: Experiment, result: Result) -> dict[str, _claims.Measured]:
    """``exp``'s judge on ``result``, with the claims about time gated where the run's cores were oversubscribed
    (:func:`repro.core.load.gate`)."""
    return _load.gate(_claims.timing(exp.name), exp.judge(result), result.provenance)


DATA = "data_files"  # provenance: the measured tables' files (what a byte-identical rerun is matched on)


def same_data(exp: Experiment, run_dir: Path, record: dict, code: dict, views=()) -> dict | None:
    """The record of an earlier published run whose measured tables are byte-identical to ``run_dir``'s
    (:func:`repro.core.history.first_seen`; ``views``: the verdict views' names, left out where the run did not
    record its data files), or None."""
    names = record.get(DATA) or [p.name for p in Path(run_dir).glob("*.csv")
                                 if p.name != "ledger.csv" and p.stem not in set(views)]
    return history.first_seen(record, Path(run_dir).name, history.data_blobs(run_dir, names), code)


def _judge_into(exp: Experiment, run_: Run, result: Result) -> None:
    measured = judged(exp, result)
    run_.note(DATA, sorted(p.name for p in run_.dir.glob("*.csv")))  # only the measured tables exist yet
    code = judgecode.digests(exp)
    earlier = same_data(exp, run_.dir, run_.record, code)
    ledger = _claims.ledger(exp.name, measured, under=earlier, code=code,
                            first=history.first_judged(exp.name, code))  # the paper's numbers: seen at their first run
    run_.note(MEASURED_UNDER, {**run_.record[MEASURED_UNDER], "verdicts": dict(zip(ledger["id"], ledger["verdict"]))})
    run_.write_csv("ledger", ledger)
    result.tables["ledger"] = ledger
    views = exp.verdict_views(result, measured, ledger)
    for name, df in views.tables.items():
        run_.write_csv(name, df)
        result.tables[name] = df
    if views.summary:
        result.summary = {**result.summary, **views.summary}
        run_.write_json("summary", result.summary)


def discard(paths) -> None:
    """Remove what a run needed only until its judge had run (its checkpoints)."""
    for path in map(Path, paths or []):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink()


def load(exp: Experiment, run_dir) -> Result:
    """A finished run of ``exp`` read back (its notebook rendered from it: ``repro run``'s second half,
    ``repro render``); one line if ``run_dir`` is not a finished run of ``exp``."""
    if not finished(run_dir):
        raise _params.ParameterError(f"run_dir {run_dir}: not a finished run (no provenance.json with status "
                                     "complete); leave run_dir empty to measure")
    result = load_result(results.from_project(run_dir))
    if result.provenance["experiment"] != exp.name:
        raise _params.ParameterError(f"run_dir {run_dir} holds a {result.provenance['experiment']} run, "
                                     f"not {exp.name}")
    return result


def entry(exp: Experiment) -> Callable[..., Result]:
    """The ``run(profile=None, overrides=None, run_dir=None)`` an experiment module offers its notebook:
    with a ``run_dir`` (``repro run`` and ``repro render`` pass the finished run) it loads and shows it;
    without one (Run All on a Jupyter server, ``papermill … -p profile cpu``) it measures."""

    def run_experiment(profile: str | None = None, overrides: dict | None = None, run_dir=None) -> Result:
        if run_dir:
            return load(exp, run_dir)
        return run(exp, profile, overrides)

    run_experiment.__doc__ = f"Run the {exp.name} experiment, or load a finished run (see repro.core.harness.entry)."
    return run_experiment


def experiment(name: str) -> Experiment:
    """The ``EXPERIMENT`` of folder ``name`` (found from its ``profile.yaml``), checked: an instance of
    :class:`Experiment` (every member defined) whose ``name`` is the folder's."""
    module = importlib.import_module(_params.spec(name).module)
    exp = getattr(module, "EXPERIMENT", None)
    if not isinstance(exp, Experiment):
        raise ExperimentError(f"experiment {name!r}: {module.__name__}.EXPERIMENT must be an instance of "
                              f"repro.core.harness.Experiment, got {type(exp).__name__}")
    if getattr(exp, "name", None) != name:
        raise ExperimentError(f"experiment {name!r}: EXPERIMENT.name is {getattr(exp, 'name', None)!r}, "
                              f"not its folder's name {name!r}")
    return exp


def load_result(run_dir: Path) -> Result:
    """A finished run as its ``run`` returned it: parameters, provenance, tables (every CSV), summary."""
    run_dir = Path(run_dir)
    record = results.read_provenance(run_dir)
    tables = {p.stem: results.read_csv(run_dir, p.stem) for p in sorted(run_dir.glob("*.csv"))}
    summary = results.read_json(run_dir, "summary") if (run_dir / "summary.json").is_file() else {}
    typed = _paramtypes.load(record["experiment"], record["parameters"])
    return Result(run_dir, typed, record, tables, summary)


def recovered(run_dir: Path, record: dict, code: dict) -> dict:
    """``record`` (a stored run's provenance) with what a run older than the record of its claims or judging code
    would have recorded, recovered from git (:mod:`repro.core.history`), written back where anything was found."""
    under = dict(record.get(MEASURED_UNDER) or {})
    if MEASURED_UNDER not in record and (found := history.recover(run_dir)) is not None:
        under = found
    stale = "code" in under and not judgecode.current_scheme(under["code"])  # digested the earlier way
    if under and ("code" not in under or stale) and (then := history.recover_code(run_dir, code)) is not None:
        under["code"] = then
        under["code_source"] = "recovered from git: the judging code at the run's commit"
    if under == (record.get(MEASURED_UNDER) or {}):
        return record
    record = {**record, MEASURED_UNDER: under}
    results.atomic_write_json(Path(run_dir) / "provenance.json", record)
    return record


def rejudge_run(run_dir: Path, git: dict | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Re-derive a stored run's ``ledger.csv`` (and its verdict views) from its tables with this
    checkout's claims and rules; returns the ledger and the files it rewrote.

    Nothing is retrained, and a file whose content stays the same is not touched. Where one changed,
    ``provenance.json`` records when and at which commit (``ledger_rejudged``; ``git``: the
    checkout's state taken before a batch of rejudges began writing), and the run's rendered
    notebook is stale until ``repro render --force`` (``repro rejudge`` does that)."""
    run_dir = Path(run_dir)
    result = load_result(run_dir)
    exp = experiment(result.provenance["experiment"])
    code = judgecode.digests(exp)
    result.provenance = recovered(run_dir, result.provenance, code)
    measured = judged(exp, result)
    first = history.first_judged(exp.name, code)
    ledger = _claims.ledger(exp.name, measured, under=result.provenance.get(MEASURED_UNDER, {}), code=code, first=first)
    views = exp.verdict_views(result, measured, ledger)
    if (earlier := same_data(exp, run_dir, result.provenance, code, views.tables)) is not None:
        ledger = _claims.ledger(exp.name, measured, under=earlier, code=code, first=first)  # data seen before
        views = exp.verdict_views(result, measured, ledger)
    texts = {"ledger.csv": results.csv_text(ledger),
             **{f"{name}.csv": results.csv_text(df) for name, df in views.tables.items()}}
    if views.summary:
        texts["summary.json"] = results.json_text({**result.summary, **views.summary})
    changed = [name for name, text in texts.items()
               if not (run_dir / name).is_file() or (run_dir / name).read_text() != text]
    for name in changed:
        results.atomic_write_text(run_dir / name, texts[name])
    record = dict(result.provenance)
    if record.get("status") == JUDGE_FAILED:  # its judge has run now: the run is complete, its checkpoints go
        record.update(status="complete", judge_error=None)
        discard(record.get(DISCARD))
        changed.append("provenance.json")
        latest = run_dir.parent / "LATEST"
        if not latest.is_file() or latest.read_text(encoding="utf-8").strip() < run_dir.name:
            results.atomic_write_text(latest, run_dir.name + "\n")  # the newest finished run again
    if changed:
        record["ledger_rejudged"] = {
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), **(git or provenance.git_commit())}
        results.atomic_write_json(run_dir / "provenance.json", record)
    return ledger, changed
