"""Cloud cost of a training run: billing steps, an instance price table, formula (1).

The paper (`cloudcost2017`) bills the total run time of a VM, formula (1)::

    t_sum = t_startup + t_install + t_data_load + t_start + t_learn + t_verify + t_save_data + t_poweroff

rounded up to the provider's billing step::

    cost = ceil(t_sum / step) * step * price_per_hour / 3600

with, optionally, a minimum billed time (Google Compute Engine billed at least 10 minutes,
then per minute, when the paper was written). That model and the price table (``repro/predict/prices.yaml``
or the user's own, same schema, every number with a ``source``) live in :mod:`repro.predict.billing`, shared
with ``repro predict``; here: formula (1) term by term and the ``repro cost`` command.

Command line (``repro cost``)::

    repro cost --seconds 601 --price-per-hour 0.9 --billing-step 600      # -> 0.3
    repro cost --seconds 601 --provider azure --instance NC6              # price and step from the table

prints one bare number in the table's currency. Bad input (negative time, unknown
provider or instance, a malformed table) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import math

import pandas as pd

from repro.predict.billing import FORMULA_1, PriceTable, PriceTableError, cost, load_prices

#: Billing steps the paper names, in seconds (Google Cloud 10 min, Azure 1 min, local 10 min to 1 h).
PAPER_BILLING_STEPS_S = {"google_cloud": 600, "azure": 60, "local_min": 600, "local_max": 3600}


def formula_table(prices: PriceTable, measured: dict[str, float] | None = None) -> pd.DataFrame:
    """Formula (1) term by term: measured seconds where we have them, the table's assumptions elsewhere."""
    assumed = prices.assumed_phases.set_index("phase")
    rows = []
    for phase, is_measured, what in FORMULA_1:
        if is_measured:
            rows.append({"term": f"t_{phase}", "what": what, "seconds": (measured or {}).get(phase, float("nan")),
                         "kind": "measured here", "source": "this run"})
        elif phase in assumed.index:
            rows.append({"term": f"t_{phase}", "what": what, "seconds": float(assumed.loc[phase, "seconds"]),
                         "kind": "assumption",
                         "source": f"{assumed.loc[phase, 'source']}: {assumed.loc[phase, 'note']}"})
        else:
            rows.append({"term": f"t_{phase}", "what": what, "seconds": 0.0, "kind": "assumption (not in table: 0)",
                         "source": prices.path})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# `repro cost`

def _float_arg(name: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise PriceTableError(f"{name} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise PriceTableError(f"{name} must be a finite number, got {text!r}")
    return value


def format_number(value: float) -> str:
    """A bare number: at most 6 decimals, no trailing zeros (0.3, 1.2, 0.000875)."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def _cmd_cost(args) -> int:
    seconds = _float_arg("--seconds", args.seconds)
    price = _float_arg("--price-per-hour", args.price_per_hour)
    step = _float_arg("--billing-step", args.billing_step)
    minimum = _float_arg("--minimum", args.minimum)
    if seconds is None or seconds < 0:
        raise PriceTableError(f"--seconds must be a number >= 0, got {args.seconds!r}")
    if args.provider or args.instance or args.prices:
        table = load_prices(args.prices)
        if args.provider:
            rule = table.provider(args.provider)
            step = rule["billing_step_s"] if step is None else step
            minimum = rule["minimum_s"] if minimum is None else minimum
            if args.instance:
                price = table.instance(args.provider, args.instance)["price_per_hour"] if price is None else price
        elif args.instance:
            raise PriceTableError("--instance needs --provider")
    if price is None:
        raise PriceTableError("give --price-per-hour P (or --provider NAME --instance NAME)")
    if step is None:
        raise PriceTableError("give --billing-step S in seconds (or --provider NAME)")
    value = cost(seconds, price, step, minimum or 0.0)
    print(format_number(value))
    return 0


def add_cli(subparsers) -> None:
    """``repro cost``: the billed cost of one run (a bare number)."""
    p = subparsers.add_parser(
        "cost",
        help="billed cost of one run: ceil(T/step)*step*price/3600 (prints a bare number)",
        description="Billed cost of a run of T seconds: ceil(max(T, minimum)/step)*step*price_per_hour/3600. "
                    "Price and step may come from a price table (--provider/--instance); the packaged table is "
                    "repro/predict/prices.yaml.",
    )
    p.add_argument("--seconds", required=True, metavar="T", help="run time in seconds (t_sum of formula (1))")
    p.add_argument("--price-per-hour", metavar="P", help="instance price per hour (currency of your choice)")
    p.add_argument("--billing-step", metavar="S",
                   help="billing step in seconds (Google 2017: 60 after a 600 s minimum; Azure: 60; "
                        "local: 600-3600)")
    p.add_argument("--minimum", metavar="M", help="minimum billed seconds (default 0, or the provider's)")
    p.add_argument("--provider", help="take the billing step/minimum of this provider from the price table")
    p.add_argument("--instance", help="take the price of this instance of --provider from the price table")
    p.add_argument("--prices", metavar="FILE", help="your own price table (YAML, same schema as the packaged one)")
    p.set_defaults(func=_cmd_cost)
