"""``repro estimate``: the thesis' estimate.py on the command line (speedup of distributed training)."""

from __future__ import annotations

from pathlib import Path

from repro.experiments.speedup.equations import EstimateError, check_inputs, estimate
from repro.experiments.speedup.plots import plot_estimate


def _number(text, name: str) -> float:
    if text is None:
        raise EstimateError(f"--{name} is required")
    try:
        return float(text)
    except ValueError:
        raise EstimateError(f"--{name} must be a positive number of seconds, got {text!r}") from None


def _integer(text, name: str, default=None) -> int:
    if text is None:
        if default is None:
            raise EstimateError(f"--{name} is required")
        return default
    try:
        return int(text)
    except ValueError:
        raise EstimateError(f"--{name} must be an integer >= 1, got {text!r}") from None


def _fmt(x: float) -> str:
    return format(float(x), ".10g")


def _cmd_estimate(args) -> int:
    t_grad = _number(args.t_grad, "t-grad")
    t_comm = _number(args.t_comm, "t-comm")
    workers = _integer(args.workers, "workers")
    batches = _integer(args.batches, "batches", default=128)
    if args.output not in ("single", "csv", "plot"):
        raise EstimateError(f"unknown output {args.output!r}; choose from: single, csv, plot")
    check_inputs(t_grad, t_comm, args.mode, args.server, workers, batches, args.rounding)
    if args.output == "single":
        df = estimate(t_grad, t_comm, args.mode, args.server, [workers], batches, args.semaphore, args.rounding)
        print(_fmt(df["speedup"].iloc[0]))
        return 0
    df = estimate(t_grad, t_comm, args.mode, args.server, list(range(1, workers + 1)), batches,
                  args.semaphore, args.rounding)
    if args.output == "csv":
        print("workers,speedup,speedup_best,speedup_worst")
        for r in df.itertuples(index=False):
            print(f"{r.workers},{_fmt(r.speedup)},{_fmt(r.speedup_best)},{_fmt(r.speedup_worst)}")
        return 0
    sem = "+semaphore" if args.semaphore and args.server == "central" else ""
    out = Path(args.out) if args.out else Path.cwd() / f"speedup_{args.mode}_{args.server}{sem}.png"
    if out.parent and not out.parent.is_dir():
        raise EstimateError(f"--out: directory {str(out.parent)!r} does not exist")
    fig = plot_estimate(df, f"{args.mode}, {args.server}{sem} server: t_grad={t_grad:g} s, "
                            f"t_comm={t_comm:g} s, D={batches}")
    fig.savefig(out, dpi=args.dpi)
    import matplotlib.pyplot as plt

    plt.close(fig)
    print(out)
    return 0


def add_cli(subparsers) -> None:
    """``repro estimate``: the thesis' estimate.py (speedup of distributed training)."""
    p = subparsers.add_parser(
        "estimate", help="predicted speedup of distributed training (slampa2017's estimate.py)",
        description="Speedup S = D*t_grad/t_parallel predicted by the equations of Šlampa (2017), chapter 4.",
    )
    p.add_argument("--t-grad", metavar="T", help="seconds to compute the gradients of one batch on one worker")
    p.add_argument("--t-comm", metavar="T", help="seconds to move the network's weights between server and one worker")
    p.add_argument("--mode", "--type", dest="mode", default="async", metavar="MODE",
                   help="sync-join, sync-split or async (default: async, as estimate.py)")
    p.add_argument("--server", default="central", metavar="SERVER", help="central or distributed (default: central)")
    p.add_argument("--workers", metavar="N", help="number of workers (csv and plot: 1..N)")
    p.add_argument("--batches", metavar="D", help="number of batches to train (default: 128, as the thesis)")
    p.add_argument("--output", default="single", metavar="FORM",
                   help="single (mean-case speedup at N), csv (rows 1..N) or plot (PNG; prints its path)")
    p.add_argument("--out", metavar="PATH", help="PNG path for --output plot (default: ./speedup_<mode>_<server>.png)")
    p.add_argument("--dpi", type=int, default=120, help="PNG resolution for --output plot (default: 120)")
    p.add_argument("--semaphore", action="store_true",
                   help="central server with the thesis' proposed semaphore (§7.2): the estimate is the best case")
    p.add_argument("--rounding", default="exact", metavar="R",
                   help="D/N when N does not divide D: exact (true division, as estimate.py) or ceil")
    p.set_defaults(func=_cmd_estimate)
