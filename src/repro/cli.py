"""``repro`` command line: list, run, book, data status (and the experiments' own tools)."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import time
from pathlib import Path

from repro.book import build as book
from repro.core import errors, harness, preflight, progress, provenance, results, runner, statements
from repro.core import ledger as _ledger
from repro.core import params as _params
from repro.core.errors import ReproError
from repro.ml import data


def _cmd_list(args) -> int:
    width = max(len(p) for s in _params.experiments().values() for p in s.profiles) + 1
    for spec in _params.experiments().values():
        print(f"{spec.name}  [{spec.paper}]  {spec.title}")
        print(f"    notebook: notebooks/{spec.notebook}")
        for prof in spec.profiles.values():
            default = " (default)" if prof.name == spec.default_profile else ""
            print(f"    --profile {prof.name:<{width}}{default:<10} {prof.cost}: {prof.description}")
            changes = ", ".join(f"{k}={_params.format_value(v)}" for k, v in prof.changes.items())
            print(f"        changes from the defaults: {changes or 'none (the defaults)'}")
        print()
    return 0


def _cmd_run(args) -> int:

    names = list(_params.experiments()) if args.experiment == "all" else [args.experiment]
    plans = []
    for name in names:  # names and types checked here; each run validates its parameters once, when it starts
        spec = _params.spec(name)
        overrides = spec.parse_overrides(args.param)
        if len(names) > 1:  # `repro run all`: every experiment's parameters checked before the first one runs
            spec.resolve(args.profile, overrides)
        plans.append((name, overrides))
    for name, overrides in plans:
        run_dir = runner.execute(name, args.profile, overrides)
        print(f"[repro] {name}: results in {run_dir}", flush=True)
    return 0


def _cmd_book(args) -> int:
    source = args.source or ("published" if args.published_dir or not args.profile else "results")
    if source == "published":
        root = Path(args.published_dir).resolve() if args.published_dir else book.published_root()
        profile = args.profile or book.default_published_profile()
        out = (results.project_root() or Path.cwd()) / "_build" / f"published-{profile}"  # as book.build's own
        index = book.build(profile, out=out, results_dir=root, partial=args.partial)
    else:
        index = book.build(args.profile or "smoke", partial=args.partial)
    print(f"[repro] book built from {source} runs: {index}")
    return 0


def _cmd_check(args) -> int:
    """``repro check``: every named experiment's preflight (all where none is named), with the probe; exit 1
    where something blocks."""
    names = args.experiment or list(_params.experiments())
    blocked = []
    for name in names:
        spec = _params.spec(name)
        profile = args.profile or spec.default_profile
        if profile not in spec.profiles:
            print(f"preflight: {name} has no profile {profile!r} (its profiles: {', '.join(spec.profiles)})")
            continue
        p = spec.resolve(profile, spec.parse_overrides(args.param))
        try:
            harness.check(harness.experiment(name), p, profile, probe=not args.no_probe)
        except preflight.PreflightFailed:
            blocked.append(name)
        print()
    if blocked:
        print(f"[repro] check: {', '.join(blocked)} cannot start here (MISSING lines above say what to get)")
    return 1 if blocked else 0


def _cmd_measure(args) -> int:
    spec = _params.spec(args.experiment)
    overrides = spec.parse_overrides(args.param)
    result = harness.run(harness.experiment(args.experiment), args.profile, overrides)
    print(f"[repro] {args.experiment}: results in {result.run_dir} (render its notebook with `repro render`)")
    return 0


def _cmd_predict(args) -> int:
    from repro.predict import command, perfmodel

    if args.validate:
        named = args.validate in ("loso", "measurements") or args.validate.endswith(".csv")
        print(command.validation(args.validate, None if named else results.from_project(args.validate)))
        return 0
    missing = [o for o in ("hardware", "model", "method") if not getattr(args, o)]
    if missing:
        raise _params.ParameterError(f"predict: --{missing[0]} is needed (or --validate RUN_DIR)")
    try:
        workers = [int(w) for w in args.workers.split(",")]
    except ValueError:
        raise _params.ParameterError(f"predict: --workers {args.workers!r} is not a list of integers") from None
    prof = perfmodel.hardware_profile(args.hardware)
    batch = args.batch or prof.batch or 32
    for model in args.model.split(","):
        print(command.prediction(prof, model.strip(), args.method.split(","), workers, batch, args.parameters,
                                 args.ps, args.prices))
    return 0


def _run_dirs(args, judge_failed: bool = False) -> list[Path]:
    """The run directories a command names: its arguments, plus every experiment's newest run in
    ``--published PROFILE`` (of ``--published-dir``, else published/), each with every earlier run of the same
    parameters beside it (its reruns: a rejudge keeps them under today's claims too). ``judge_failed``: a named
    run whose judge failed is accepted as well (``repro rejudge`` completes it)."""
    dirs = [results.from_project(d) for d in args.run_dir]
    if args.published:
        root = Path(args.published_dir).resolve() if args.published_dir else book.published_root()
        for n in _params.experiments():
            if (r := results.latest_run(n, args.published, root)) is not None:
                dirs += [r, *statements.same_protocol_runs(r)]
    if not dirs:
        raise _params.ParameterError(f"{args.command}: name run directories or --published PROFILE")
    for run_dir in dirs:
        if judge_failed and harness.judge_failed(run_dir):
            continue
        if not harness.finished(run_dir):
            what = "does not exist" if not run_dir.exists() else "is not a finished run (provenance.json status)"
            raise _params.ParameterError(f"{args.command}: run directory {run_dir} {what}")
    return dirs


def _cmd_render(args) -> int:
    for run_dir in _run_dirs(args):
        if (run_dir / "notebook.ipynb").is_file() and not args.force:
            print(f"[repro] {run_dir}: notebook.ipynb exists (--force renders it again)")
            continue
        runner.render(run_dir)
        print(f"[repro] rendered {run_dir / 'notebook.ipynb'}")
    return 0


def _cmd_publish(args) -> int:

    published = book.publish(args.profile)
    for path in published:
        print(f"[repro] published {path}")
    missing = set(_params.experiments()) - {p.parent.name for p in published}
    if missing:
        print(f"[repro] no {args.profile} run to publish for: {', '.join(sorted(missing))}")
    return 0


def _cmd_rejudge(args) -> int:
    dirs = _run_dirs(args, judge_failed=True)
    git = provenance.git_commit()  # before the first ledger is rewritten (published/ is tracked)
    for run_dir in dirs:
        completed = harness.judge_failed(run_dir)
        ledger, changed = harness.rejudge_run(run_dir, git)
        counts = ledger["verdict"].map(_ledger.category).value_counts().to_dict()
        where = results.relative_to_project(run_dir)
        print(f"[repro] {where}: {len(ledger)} claims {counts}; "
              + (f"rewrote {', '.join(changed)}" if changed else "unchanged"))
        if changed and ((Path(run_dir) / "notebook.ipynb").is_file() or completed):  # old verdicts, or none
            runner.render(run_dir, log_output=False)
            print(f"[repro] {where}: notebook.ipynb rendered again")
    return 0


def _cmd_data_status(args) -> int:
    t0 = time.perf_counter()
    rows = data.status()
    width = max(len(r["dataset"]) for r in rows)
    for r in rows:
        where = r["source"] if r["offline"] else f"get it: {r['how_to_get']}"
        if r["offline"] and r.get("how_to_get"):  # found but not the published files: say why
            where += f"; {r['how_to_get']}"
        took = f" (found, verified and read in {r['seconds']:.1f} s)" if "verify_seconds" in r else ""
        print(f"{r['dataset']:<{width}}  {r['state']:<10} {where}{took}")
    print(f"[repro] data status in {time.perf_counter() - t0:.1f} s; the papers' files verified against their "
          f"published checksums (repro.ml.archives)")
    return 0


def _print_record(what: str, copy, record: dict) -> None:
    state = "verified" if record["verified"] else "NOT verified"
    print(f"[repro] {what}: {copy.path} ({copy.layout}), {state} ({record['algorithm']}, "
          f"{record['verify_seconds']:.1f} s)" + (f": {record['reason']}" if not record["verified"] else ""))


def _cmd_data_import(args) -> int:
    from repro.ml import archives

    try:
        copy, record = archives.import_path(Path(args.path))
    except (OSError, ValueError) as exc:
        raise errors.MissingEnvironment(str(exc)) from None
    _print_record(f"imported {copy.spec.name}", copy, record)
    return 0


def _cmd_data_fetch(args) -> int:
    from repro.ml import archives

    spec = archives.SPECS.get(args.name)
    if spec is None:
        raise _params.ParameterError(f"data fetch: name must be one of {', '.join(archives.SPECS)}, got {args.name!r}")
    bar = progress.ByteBar(f"{spec.archive} from {archives.source_url(spec)}")
    try:
        copy, record = archives.fetch(spec, bar.update)
    except (OSError, ValueError) as exc:
        raise errors.MissingEnvironment(f"data fetch {spec.name}: {exc}; {archives.how_to_get(spec)}") from None
    finally:
        bar.close()
    _print_record(f"fetched {spec.name}", copy, record)
    return 0


def _add_data(sub) -> None:
    p = sub.add_parser("data", help="datasets")
    dsub = p.add_subparsers(dest="data_command", required=True, metavar="SUBCOMMAND")
    q = dsub.add_parser("status", help="which datasets are here, from where, and whether the papers' files verify "
                                       "against their published checksums (each is found, checked and read)")
    q.set_defaults(func=_cmd_data_status)
    q = dsub.add_parser("import", help="copy CIFAR-10 (cifar-10-python.tar.gz or its cifar-10-batches-py folder) or "
                                       "MNIST (mnist.npz) into repro's data directory and verify it, "
                                       "e.g. `repro data import ~/Downloads/cifar-10-python.tar.gz`")
    q.add_argument("path", help="the archive or folder")
    q.set_defaults(func=_cmd_data_import)
    q = dsub.add_parser("fetch", help="download cifar10 or mnist into repro's data directory (internet, or a mirror "
                                      "named by REPRO_DATA_MIRROR) and verify it, e.g. `repro data fetch cifar10`")
    q.add_argument("name", help="cifar10 or mnist")
    q.set_defaults(func=_cmd_data_fetch)


def _add_check(sub) -> None:
    p = sub.add_parser("check", help="preflight: what a run needs (data verified?, devices through the backend, "
                                     "scheduler, disk), its time here and what it can decide; exit 1 where something "
                                     "blocks, e.g. `repro check --profile paper optimizers`")
    p.add_argument("experiment", nargs="*", help="experiment names (default: every experiment)")
    p.add_argument("--profile", help="parameter profile (default: each experiment's default)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE", help="override one parameter")
    p.add_argument("--no-probe", action="store_true", help="skip the few seconds of training that time this machine")
    p.set_defaults(func=_cmd_check)


def _add_predict(sub) -> None:
    p = sub.add_parser("predict", help="images/s and efficiency of a data-parallel cluster by the analytic model "
                                       "(repro.predict.perfmodel) of a hardware profile; --validate: against a run")
    p.add_argument("--hardware", help="a profile of predict/hardware.yaml (k80-p2.16xlarge, ...) or a .yaml file")
    p.add_argument("--model", help="vgg16, vgg19, resnet50, resnet152, inception_v3 (or any with --parameters); "
                                   "comma-separated for several")
    p.add_argument("--method", help="horovod, ring, ddp, ps_sync, ps_async (comma-separated for several)")
    p.add_argument("--workers", default="1,2,4,8,16,20", help="comma-separated worker counts")
    p.add_argument("--batch", type=int, help="images per worker and step (default: the batch the hardware profile's "
                                             "images/s were measured at, else 32)")
    p.add_argument("--ps", type=int, default=1, help="parameter servers")
    p.add_argument("--parameters", type=int, help="the model's weights (default: the Table 1 audit's count)")
    p.add_argument("--validate", metavar="WHAT", help="'loso' (each origin of the published real measurements "
                                                       "predicted from the others), 'measurements' (their train/test "
                                                       "split), a .csv of your own in that schema, or an emulated "
                                                       "distributed run's directory")
    p.add_argument("--prices", metavar="FILE", help="a price table for the cost per epoch where the profile names an "
                                                   "instance (default: repro/predict/prices.yaml)")
    p.set_defaults(func=_cmd_predict)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="repro",
        description="Reproduce the papers' experiments with papermill and render them as a Jupyter Book.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log lines (debug)")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="warnings only: no progress lines")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", help="experiments and their profiles, with what each costs roughly")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("run", help="execute an experiment's notebook with papermill into a new run directory")
    p.add_argument("experiment", help="experiment name (see `repro list`) or 'all'")
    p.add_argument("--profile", default="smoke", help="parameter profile (default: smoke)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                   help="override one parameter (repeatable); lists as 1,2,3")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("book", help="build the HTML book from executed runs (never trains)")
    p.add_argument("--profile", default=None,
                   help="whose runs to render; without it, the largest published profile (published/)")
    p.add_argument("--source", choices=["results", "published"], default=None,
                   help="results/ (your runs; default with --profile) or published/ (runs kept in the repository)")
    p.add_argument("--published-dir", metavar="DIR", help="another directory laid out like published/ (implies it)")
    p.add_argument("--partial", action="store_true",
                   help="leave out chapters without a run (their list is on the front page) instead of failing")
    p.set_defaults(func=_cmd_book)

    p = sub.add_parser("measure", help="run an experiment without Jupyter (harness only; render its notebook later)")
    p.add_argument("experiment", help="experiment name (see `repro list`)")
    p.add_argument("--profile", default="smoke", help="parameter profile (default: smoke)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE", help="override one parameter")
    p.set_defaults(func=_cmd_measure)

    _add_check(sub)

    p = sub.add_parser("render", help="execute finished runs' notebooks against their stored results (never trains)")
    p.add_argument("run_dir", nargs="*", help="finished run directories")
    p.add_argument("--published", metavar="PROFILE", help="every experiment's newest run in published/PROFILE")
    p.add_argument("--published-dir", metavar="DIR", help="another directory laid out like published/")
    p.add_argument("--force", action="store_true", help="render again where notebook.ipynb exists")
    p.set_defaults(func=_cmd_render)

    p = sub.add_parser("publish", help="copy the newest run of every experiment into published/<profile>/")
    p.add_argument("--profile", required=True)
    p.set_defaults(func=_cmd_publish)

    p = sub.add_parser("rejudge", help="re-derive stored runs' ledger.csv and the tables that show its verdicts "
                                      "from their tables (claims.yaml, verdict rules of this checkout); a run whose "
                                      "files changed gets its notebook rendered again; never trains")
    p.add_argument("run_dir", nargs="*", help="finished run directories")
    p.add_argument("--published", metavar="PROFILE", help="every experiment's newest run in published/PROFILE")
    p.add_argument("--published-dir", metavar="DIR", help="another directory laid out like published/")
    p.set_defaults(func=_cmd_rejudge)

    _add_predict(sub)

    _add_data(sub)

    # Experiment modules may add their own tools (e.g. `repro estimate`, `repro cost`):
    # an experiment module (repro/experiments/<name>/experiment.py) that defines add_cli(subparsers).
    # Such modules must import cheaply (TensorFlow only inside functions).

    for spec in _params.experiments().values():
        module = importlib.import_module(spec.module)
        if hasattr(module, "add_cli"):
            module.add_cli(sub)
    from repro.cluster import cli as cluster_cli  # `repro cluster`: the cluster runtime's own tools

    cluster_cli.add_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # A shell without job control starts background commands (`repro run all &`, a CI script run with
    # nohup) with SIGINT ignored, and Python then keeps it ignored: `kill -INT` would do nothing, and
    # every kernel and cluster process started from here would inherit the ignore. `repro` always stops.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # `timeout`, a cancelled CI job or a closed terminal stop a run as Ctrl-C does: its clusters are torn
    # down and its directory marked failed
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no C++ info lines from TensorFlow, here or in children
    parser = build_parser()
    args = parser.parse_args(argv)
    progress.setup(args.verbose - args.quiet)
    try:
        return args.func(args)
    except ReproError as exc:  # one line, no traceback; exit 2 bad input or environment, 1 a failed run, 3 a deadline
        return errors.report(exc)
    except KeyboardInterrupt:
        print("repro: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `repro list | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
