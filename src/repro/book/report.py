"""Notebook-side display helpers: tables with ids, provenance boxes, glued numbers, figures."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from repro.core.results import CSV_ATTR  # where Result[...] records a table's CSV


def table_html(df: pd.DataFrame, table_id: str, caption: str = "", float_format: str = "{:.4g}") -> str:
    """An HTML table with a stable id (tests and readers find it) and a caption."""
    body = df.to_html(index=False, table_id=table_id, border=0, classes="repro-table",
                      float_format=lambda v: float_format.format(v), na_rep="–")
    if caption:
        body = body.replace(">\n  <thead>", f">\n  <caption>{html.escape(caption)}</caption>\n  <thead>", 1)
    return body


def show_table(df: pd.DataFrame, table_id: str, caption: str = "", float_format: str = "{:.4g}") -> None:
    """Display a results table (rendered as HTML in the book) with a link to download its CSV.

    Tables taken from a run (``result["name"]``) know their CSV file; the book copies the run's
    files to ``data/<experiment>/`` beside the chapter, which is where the link points.
    """
    from IPython.display import HTML, display

    body = table_html(df, table_id, caption, float_format)
    csv = df.attrs.get(CSV_ATTR)
    if csv:
        body += (f'<p class="repro-download"><a href="{html.escape(csv)}" download>'
                 f"Download the data of this table (CSV)</a></p>")
    display(HTML(body))


def provenance_markdown(record: dict, run_dir: str | Path | None = None) -> str:
    """The provenance box of a chapter: profile, data, hardware, versions, commit, time."""
    hw = record.get("hardware", {})
    pk = record.get("packages", {})
    git = record.get("git", {})
    datasets = "; ".join(
        f"{d['name']} from {d['source']} ({d['n_train']:,} train / {d['n_test']:,} test"
        + (f", stand-in for {d['stand_in_for']}" if d.get("stand_in_for") else "") + ")"
        for d in record.get("datasets", [])
    ) or "none"
    gpus = ", ".join(g.get("model") or g["name"] for g in hw.get("gpus", [])) or "none"
    commit = (git.get("commit") or "unknown")[:10] + (" (uncommitted changes)" if git.get("dirty") else "")
    backend = record.get("keras_backend", "tensorflow")
    dist = {"tensorflow": pk.get("tensorflow") or pk.get("tensorflow-cpu"), "jax": pk.get("jax"),
            "torch": pk.get("torch")}
    device = record.get("device", {}).get("device") if isinstance(record.get("device"), dict) else None
    rows = [
        ("profile", record.get("profile")),
        ("parameters", ", ".join(f"{k}={v}" for k, v in sorted(record.get("parameters", {}).items()))),
        ("dataset actually used", datasets),
        ("hardware", f"{hw.get('cpu_model')}, {hw.get('cores_available')} of {hw.get('logical_cores')} cores, "
                     f"{hw.get('memory_gb')} GB RAM; GPUs: {gpus}"),
        ("software", f"Python {pk.get('python')}, Keras {pk.get('keras')} on {backend} {dist.get(backend) or '?'}"
                     + (f" ({device})" if device else "") + f", repro {pk.get('repro')}"),
        ("commit", commit),
        ("started", record.get("started_at", "?")),
        ("run time", f"{record['duration_s']:.0f} s" if record.get("duration_s") else "in progress"),
    ]
    if run_dir is not None:
        rows.append(("results directory", f"`{Path(run_dir).name}`"))
    lines = ["| provenance | |", "|---|---|"] + [f"| {k} | {str(v).replace('|', '/')} |" for k, v in rows]
    return "\n".join(lines)


def show_provenance(record: dict, run_dir: str | Path | None = None) -> None:
    from IPython.display import Markdown, display

    display(Markdown(provenance_markdown(record, run_dir)))


def glue(name: str, value, display: bool = False) -> None:
    """Make a number available to the chapter's prose (``{glue:text}`name```)."""
    from myst_nb import glue as _glue

    _glue(name, value, display=display)
