"""Build the Jupyter Book from executed notebooks and their results; never trains.

The book's sources (``_config.yml``, ``_toc.yml``, ``book/``) are staged together with
the executed notebook of the newest finished run of every experiment in the table of
contents, then ``jupyter-book build -W`` renders them (``execute_notebooks: off``).
A missing run is an error, so a partial book never passes for a whole one.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from repro.book import front
from repro.core import errors, ledger, results, statements
from repro.core import params as _params

BookError = errors.RunFailed  # The book cannot be built (missing runs, Sphinx warnings or errors).


CHEAP_PROFILES = ("smoke", "rehearse")  # their books show their own rows only, and never join another's


def companion_runs(profile: str, results_dir: Path | None, used: dict) -> dict[tuple[str, str], Path]:
    """The newest run of each of the book's experiments under the other profiles of the same results root
    (``cpu`` beside ``emulated``, a GPU run's profile, ...): (experiment, profile) -> run directory. A cheap
    profile's book (smoke, rehearse) has none, and no book takes a cheap profile's runs."""
    root = Path(results_dir) if results_dir else results.results_root()
    if profile in CHEAP_PROFILES or not root.is_dir():
        return {}
    out = {}
    for other in sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if other in (profile, *CHEAP_PROFILES):
            continue
        for name in used:
            if (run := results.latest_run(name, other, root, need="ledger.csv")) is not None:
                out[(name, other)] = run
    return out


def front_rows(profile: str, used: dict, companions: dict, pages: dict) -> pd.DataFrame:
    """Every ledger row of the book's runs and their companions, each checked against its reruns
    (:func:`repro.core.statements.confirmed_ledger`): the book's own profile first."""
    own = ledger.collect(used, profile, reader=statements.confirmed_ledger)
    frames = [own] + [ledger.collect({name: (run, pages.get((name, other), ""))}, other,
                                     reader=statements.confirmed_ledger)
                      for (name, other), run in companions.items()]
    return pd.concat(frames, ignore_index=True)


def retitle(notebook: Path, profile: str) -> None:
    """A companion chapter's first heading names its profile (the navigation shows both chapters apart)."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
            first, _, rest = cell.source.lstrip().partition("\n")
            cell.source = f"{first} (the `{profile}` run)\n{rest}"
            break
    nbformat.write(nb, notebook)


def fold_code(notebook: Path) -> None:
    """Every code cell of a staged chapter folded (``hide-input``): the chapter reads as a report, the code
    one click away."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            tags = cell.metadata.setdefault("tags", [])
            if "hide-input" not in tags and "remove-input" not in tags:
                tags.append("hide-input")
    nbformat.write(nb, notebook)


def add_chapter_summary(notebook: Path, rows: pd.DataFrame) -> None:
    """A line under the chapter's title: its claims' decided verdicts per tier (from its run's ledger)."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    text = (f"**Claims of this chapter** (ledger of this run): {ledger.tier_counts(rows)}. "
            "The tiers are explained on the front page.")
    at = 1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0
    nb.cells.insert(at, nbformat.v4.new_markdown_cell(text))
    nbformat.write(nb, notebook)


def toc_files(root: Path) -> list[str]:
    """Every file named in ``_toc.yml`` (without suffix)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    out = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                out.append(e["file"])
            walk(e.get("sections"))
            walk(e.get("chapters"))
    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return out


def toc_experiments() -> list:
    """The experiments whose notebooks are chapters of the book, in ``_toc.yml`` order."""
    root = results.project_root()
    if root is None:
        raise BookError("book sources (_toc.yml, book/) not found: build from a checkout of the repository")
    by_notebook = {Path(s.notebook).stem: s for s in _params.experiments().values()}
    out = []
    for entry in toc_files(root):
        if entry.startswith("notebooks/"):
            if Path(entry).name not in by_notebook:
                raise BookError(f"_toc.yml names {entry}, which belongs to no experiment folder in repro/experiments")
            out.append((by_notebook[Path(entry).name], entry))
    return [spec for spec, _ in out]


def profiles_markdown() -> str:
    """The table of experiments, profiles and costs, generated from repro/experiments/*/profile.yaml."""
    lines = ["| experiment | profile | cost | what it runs |", "|---|---|---|---|"]
    for spec in _params.experiments().values():
        for prof in spec.profiles.values():
            default = " (default)" if prof.name == spec.default_profile else ""
            lines.append(f"| `{spec.name}` | `{prof.name}`{default} | {prof.cost} | {prof.description} |")
    return "\n".join(lines) + "\n"


def drop_chapters(toc_path: Path, files: set[str]) -> None:
    """Remove the entries naming ``files`` (without suffix) from a staged ``_toc.yml``."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))

    def keep(entries):
        out = []
        for e in entries or []:
            if e.get("file") in files:
                continue
            for key in ("sections", "chapters"):
                if key in e:
                    e[key] = keep(e[key])
            out.append(e)
        return out

    for part in toc.get("parts", []):
        part["chapters"] = keep(part.get("chapters"))
    toc["parts"] = [part for part in toc.get("parts", []) if part.get("chapters")] or toc.get("parts", [])
    if "chapters" in toc:
        toc["chapters"] = keep(toc["chapters"])
    toc_path.write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")


def _absent_markdown(profile: str, missing: list[str]) -> str:
    if not missing:
        return ""
    return (f"```{{note}}\nThis book of profile `{profile}` has no run of: {', '.join(missing)}; "
            "those chapters are left out.\n```\n")


NEEDS = "needs:"  # a cell tag: ``needs:<file>`` or ``needs:summary.<key>``: the section reads that part of the run


def _has(run: Path, need: str) -> bool:
    """Whether the run made ``need``: a file (a table, ``.csv``, with at least one row: the parameters of a run
    can leave a table with its header alone), or (``summary.<key>``, ``summary.<key>.<key>`` into a mapping) a
    key of its summary.json that is set (not missing, null, zero, NaN or empty)."""
    if need.startswith("summary."):
        path = run / "summary.json"
        value = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        for key in need[len("summary."):].split("."):
            value = value.get(key) if isinstance(value, dict) else None
        return bool(value) and not (isinstance(value, float) and math.isnan(value))  # NaN: nothing to show
    path = run / need
    if need.endswith(".csv") and path.is_file():
        return len(path.read_text(encoding="utf-8").strip().splitlines()) > 1
    return path.exists()


def prune_sections(notebook: Path, run: Path) -> list[str]:
    """Leave out of a staged chapter the cells whose section reads a part this run did not make (tag
    ``needs:<file>`` or ``needs:summary.<key>``: e.g. the emulated grid of a profile that runs none), with one
    line where they were, so that no sentence of the chapter is left with a hole ("not run in this profile"). A
    cell with several such tags needs every one. Returns the parts missed."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    kept, missed = [], []
    for cell in nb.cells:
        need = next((t[len(NEEDS):] for t in cell.metadata.get("tags", [])
                     if t.startswith(NEEDS) and not _has(run, t[len(NEEDS):])), None)
        if need is None:
            kept.append(cell)
            continue
        if need not in missed:
            missed.append(need)
            kept.append(nbformat.v4.new_markdown_cell(
                f"```{{note}}\nA section is left out here: it reads `{need}`, which this profile's run does not "
                "make (the profile, or the parameters it ran with, do not run that part, or leave its table "
                "empty). A run of a profile that does (in the published book, "
                "the chapter this one is a section of, or a section beside it) shows it.\n```"))
    if missed:
        nb.cells = kept
        nbformat.write(nb, notebook)
    return missed


def stage_chapter(run: Path, notebook: Path, profile: str, entry: str, name: str) -> None:
    """One executed notebook staged as a chapter: its claims line, code folded, its files beside it
    (``data/<experiment>/``, where the chapter's download links point)."""
    notebook.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(run / "notebook.ipynb", notebook)
    if (run / "ledger.csv").is_file():
        add_chapter_summary(notebook, ledger.collect({name: (run, entry)}, profile, reader=statements.confirmed_ledger))
    fold_code(notebook)
    prune_sections(notebook, run)
    data_dir = notebook.parent / "data" / name
    data_dir.mkdir(parents=True, exist_ok=True)
    for f in run.iterdir():
        if f.suffix in (".csv", ".json"):
            shutil.copy2(f, data_dir / f.name)


def stage_companions(dest: Path, companions: dict, used: dict) -> dict[tuple[str, str], str]:
    """The other profiles' chapters of a book (:func:`companion_runs`), each a section under the book's own
    chapter of the experiment (``notebooks/<profile>/<notebook>``): every ledger row links to its evidence.
    Returns (experiment, profile) -> page."""
    pages: dict[tuple[str, str], str] = {}
    sections: dict[str, list[str]] = {}
    for (name, other), run in companions.items():
        if not (run / "notebook.ipynb").is_file():
            continue
        spec = _params.spec(name)
        page = f"notebooks/{other}/{Path(spec.notebook).stem}"
        stage_chapter(run, dest / f"{page}.ipynb", other, page, name)
        retitle(dest / f"{page}.ipynb", other)
        pages[(name, other)] = page
        sections.setdefault(used[name][1], []).append(page)
    add_sections(dest / "_toc.yml", sections)
    return pages


def add_sections(toc_path: Path, sections: dict[str, list[str]]) -> None:
    """Entries of a staged ``_toc.yml`` given sections (file -> the files under it)."""
    if not sections:
        return
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    for part in toc.get("parts", []):
        for e in part.get("chapters") or []:
            if e.get("file") in sections:
                e["sections"] = [*e.get("sections", []), *({"file": f} for f in sections[e["file"]])]
    toc_path.write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")


def write_front(dest: Path, profile: str, results_dir: Path | None, used: dict) -> None:
    """The generated parts of the front page and of the page of every ledger row (:mod:`repro.book.front`)."""
    companions = companion_runs(profile, results_dir, used)
    pages = {(name, profile): page for name, (_, page) in used.items()}
    pages.update(stage_companions(dest, companions, used))
    rows = front_rows(profile, used, companions, dict(pages))
    pages = {k: (page, (dest / f"{page}.ipynb").read_text(encoding="utf-8")) for k, page in pages.items()}
    st = statements.statements(rows)
    generated = dest / "book" / "_generated"
    (generated / "bottom.md").write_text(front.bottom_line(st, rows) if len(st) else "", encoding="utf-8")
    (generated / "rest.md").write_text(front.the_rest(st, rows) if len(st) else "", encoding="utf-8")
    table = (front.counts_table(st) + "\n" + front.statements_table(st, pages)) if len(st) else \
        "*No claims recorded by the rendered runs.*\n"
    (generated / "ledger.md").write_text(table, encoding="utf-8")
    (generated / "rows.md").write_text(front.all_rows(rows, pages), encoding="utf-8")


def stage(profile: str, dest: Path, results_dir: Path | None = None, partial: bool = False) -> list[Path]:
    """Copy book sources and executed notebooks into ``dest``; returns the runs used.

    A chapter without a run is an error, or (``partial``) left out of the staged table of contents
    and named on the front page."""
    root = results.project_root()
    if root is None:
        raise BookError("book sources (_toc.yml, book/) not found: build from a checkout of the repository")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, dest / name)
    shutil.copytree(root / "book", dest / "book")
    (dest / "book" / "_generated").mkdir(exist_ok=True)
    used, missing = {}, []
    for spec in toc_experiments():
        entry = "notebooks/" + Path(spec.notebook).stem
        run = results.latest_run(spec.name, profile, results_dir, need="notebook.ipynb")
        if run is None:
            missing.append(spec.name)
            continue
        stage_chapter(run, dest / "notebooks" / spec.notebook, profile, entry, spec.name)
        used[spec.name] = (run, entry)
    if missing and (not partial or not used):
        raise BookError(
            f"no executed run for profile '{profile}' of: {', '.join(missing)}; "
            f"run `repro run all --profile {profile}` first"
        )
    absent = {"notebooks/" + Path(_params.spec(n).notebook).stem for n in missing}
    drop_chapters(dest / "_toc.yml", absent)
    for page in (dest / "book").glob("*.md"):  # links to left-out chapters become plain text
        text = page.read_text(encoding="utf-8")
        for entry in absent:
            text = text.replace(f"{{doc}}`../{entry}`", f"`{Path(entry).name}` (not in this book)")
        page.write_text(text, encoding="utf-8")
    generated = dest / "book" / "_generated"
    (generated / "absent.md").write_text(_absent_markdown(profile, missing), encoding="utf-8")
    write_front(dest, profile, results_dir, used)
    (generated / "profiles.md").write_text(profiles_markdown(), encoding="utf-8")
    return [run for run, _ in used.values()]


PROFILE_ORDER = ("paper", "cpu", "smoke")  # the largest profile published is the default book


def published_root() -> Path:
    """``published/`` in the checkout: executed runs kept in the repository (small CSV/JSON/PNG)."""
    root = results.project_root()
    if root is None:
        raise BookError("published/ not found: build from a checkout of the repository")
    return root / "published"


def default_published_profile() -> str:
    """The largest profile with a published run of every chapter in ``_toc.yml``."""
    names = [spec.name for spec in toc_experiments()]
    for profile in PROFILE_ORDER:
        if all(results.latest_run(n, profile, published_root(), need="notebook.ipynb") for n in names):
            return profile
    raise BookError("no complete set of published runs under published/; "
                    "run `repro run all --profile cpu` then `repro publish --profile cpu`")


def publish(profile: str, results_dir: Path | None = None) -> list[Path]:
    """Copy the newest finished run of each experiment into ``published/<profile>/`` (same layout). Earlier
    published runs with the same parameters stay beside it (independent reruns: a random verdict is decided only
    when two agree, :mod:`repro.core.statements`); those made with other parameters go.

    Experiments without a run of that profile are left as they are (``repro book`` then says which
    chapter has no published run)."""
    names = list(_params.experiments())
    latest = {n: results.latest_run(n, profile, results_dir, need="notebook.ipynb") for n in names}
    runs = {n: r for n, r in latest.items() if r is not None}
    if not runs:
        raise BookError(f"nothing to publish for profile '{profile}': run `repro run all --profile {profile}` first")
    out = []
    for name, run in runs.items():
        dest_dir = results.experiment_dir(name, profile, published_root())
        params = results.read_provenance(run).get("parameters")
        for old in results.finished_runs(name, profile, published_root()):  # reruns of the same parameters stay:
            if old.name != run.name and results.read_provenance(old).get("parameters") != params:  # the rerun rule
                shutil.rmtree(old)
        dest = dest_dir / run.name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(run, dest, ignore=shutil.ignore_patterns(".*"))
        compress_traces(dest)
        results.atomic_write_text(dest_dir / "LATEST", run.name + "\n")
        out.append(dest)
    return out


def compress_traces(run: Path) -> list[Path]:
    """Gzip a published run's raw traces (``link_samples.jsonl``, an emulated network's byte counters every
    0.2 s: nothing in the book reads them) in place: ``published/`` stays a few MiB, which a lent GPU
    machine's call (64 MiB with everything it carries) needs. Returns the compressed files."""
    import gzip

    out = []
    for f in sorted(Path(run).rglob("link_samples.jsonl")):
        gz = f.with_name(f.name + ".gz")
        with open(f, "rb") as src, gzip.GzipFile(gz, "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
        f.unlink()
        out.append(gz)
    return out


def build(profile: str = "smoke", out: Path | None = None, results_dir: Path | None = None, quiet: bool = False,
          partial: bool = False) -> Path:
    """Stage and build the HTML book; returns the path of its ``index.html``."""
    root = results.project_root()
    out = Path(out) if out else (root or Path.cwd()) / "_build" / profile
    src = out / "src"
    stage(profile, src, results_dir, partial)
    cmd = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(src),
           "--path-output", str(out), "--builder", "html", "--warningiserror", "--keep-going"]
    if quiet:
        cmd.append("--quiet")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise BookError(f"jupyter-book build failed (warnings are errors):\n{tail}")
    index = out / "_build" / "html" / "index.html"
    for data in (src / "notebooks").rglob("data"):  # the CSV/JSON behind every table, beside its chapter
        if data.is_dir():
            shutil.copytree(data, index.parent / data.relative_to(src), dirs_exist_ok=True)
    if not index.is_file():
        raise BookError(f"jupyter-book reported success but {index} is missing")
    return index
