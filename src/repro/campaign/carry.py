"""Here, around a lent machine's calls: what a call carries (``prepare``), the state a second call resumes from
(``resume``), and the finished runs published (``collect``)."""

from __future__ import annotations

import gzip
import json
import lzma
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from repro.core import errors

from .settings import CARRY_MAX_MIB, CampaignError, Log, Settings, mib, size

# what the GPU machine's image lacks (its own numpy, pandas, scipy, matplotlib, seaborn, psutil, pyyaml, jax
# stay); versions pinned to what this checkout is tested with
WHEELS = ("keras==3.15.1 namex==0.1.0 optree==0.20.0 mlxtend==0.25.0 pydantic==2.14.4 pydantic_core==2.50.5 "
          "annotated-types==0.8.0 typing-inspection==0.4.5").split()


def _python_out(s: Settings, code: str, *args: str) -> str:
    return subprocess.run([s.python, "-c", code, *args], check=True, capture_output=True, text=True).stdout.strip()


def prepare_wheels(s: Settings) -> None:
    """The wheels the lent machine lacks, for its Python 3.12; .carry travels but is never committed."""
    (s.carry / "wheels").mkdir(parents=True, exist_ok=True)
    exclude = subprocess.run(["git", "rev-parse", "--git-path", "info/exclude"], cwd=s.root, capture_output=True,
                             text=True).stdout.strip()
    if exclude:
        path = s.root / exclude
        path.parent.mkdir(parents=True, exist_ok=True)
        if "/.carry/" not in (path.read_text().split() if path.is_file() else []):
            with open(path, "a") as f:
                f.write("/.carry/\n")
    subprocess.run([s.python, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                    "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                    "-d", str(s.carry / "wheels"), *WHEELS], check=True)


def carry_commit(s: Settings, log: Log) -> None:
    """The lent machine gets the tree without .git: the commit and the tree's state travel in .carry."""
    s.carry.mkdir(parents=True, exist_ok=True)
    text = _python_out(s, "import json; from repro.core import provenance; print(json.dumps(provenance.git_commit()))")
    (s.carry / "git.json.tmp").write_text(text + "\n")
    (s.carry / "git.json.tmp").replace(s.carry / "git.json")
    log.say(f"commit carried: {text}")


def carry_check(s: Settings, log: Log) -> bool:
    """Whether the tree (tracked files and untracked ones git does not ignore) and .carry fit the call."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=s.root,
                           capture_output=True, text=True).stdout.split("\0")
    tree = sum((s.root / n).stat().st_size for n in names if n and (s.root / n).is_file())
    carry = size(s.carry) + (0 if s.state.resolve().is_relative_to(s.carry.resolve()) else size(s.state))
    log.say(f"carried: tree {mib(tree)} MiB + .carry {mib(carry)} MiB = {mib(tree + carry)} MiB "
            f"(the device tool's limit: 64 MiB; kept under {CARRY_MAX_MIB})")
    return tree + carry <= CARRY_MAX_MIB * 1048576


def prepare(s: Settings, log: Log) -> None:
    """.carry/: the wheels, the commit, Fashion-MNIST's idx files (xz: 4.6 MiB less than gzip; the loader reads
    either); fails where the whole does not fit the call."""
    prepare_wheels(s)
    carry_commit(s, log)
    dest = s.carry / "datasets" / "fashion-mnist"
    dest.mkdir(parents=True, exist_ok=True)
    s.state.mkdir(parents=True, exist_ok=True)
    src = _python_out(s, "from repro.ml import data; print(data.fashion_dir() or '')")
    if not src:
        raise errors.MissingEnvironment("Fashion-MNIST not found here (apt-get install dataset-fashion-mnist)")
    if Path(src).resolve().is_relative_to(s.carry.resolve()):
        raise errors.MissingEnvironment(f"Fashion-MNIST found only in {src} (the carry itself): "
                            "apt-get install dataset-fashion-mnist")
    for old in dest.iterdir():
        old.unlink()
    for f in sorted(Path(src).glob("*-idx?-ubyte.gz")):
        with gzip.open(f) as raw, lzma.open(dest / (f.name.removesuffix(".gz") + ".xz"), "wb", preset=9) as xz:
            shutil.copyfileobj(raw, xz)
    if not carry_check(s, log):
        raise CampaignError("too much to carry: shrink .carry or the tree")


def _extract(t: tarfile.TarFile, dest: Path, member: str | None = None) -> None:
    """Extract (one member of) ``t`` into ``dest``, with the safe "data" filter where this Python has it."""
    kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    if member is None:
        t.extractall(dest, **kw)  # type: ignore[arg-type]  # (filter: Python >= 3.11.4)
    else:
        t.extract(member, dest, **kw)  # type: ignore[arg-type]


def _first_member(tarball: Path) -> str:
    with tarfile.open(tarball) as t:
        return next(iter(t.getnames()), "")


def resume(s: Settings, tarballs: list[Path], log: Log) -> None:
    """.carry/state becomes what an earlier call's tarballs hold: a cut run's state (relative to the state dir,
    or, the first version's layout, to its results), and of a finished run only its provenance (enough for the
    next call to skip it; ``collect`` takes the tarball)."""
    if not tarballs:
        raise CampaignError("resume TAR...: an earlier call's $OUT/*.tar.gz")
    carry_commit(s, log)
    shutil.rmtree(s.results, ignore_errors=True)
    shutil.rmtree(s.state / "jax-cache", ignore_errors=True)
    s.results.mkdir(parents=True)
    for tarball in tarballs:
        first = _first_member(tarball)
        with tarfile.open(tarball) as t:
            if first.startswith(("results/", "jax-cache/")) or first in ("results", "jax-cache"):
                _extract(t, s.state)
                log.say(f"resume: {tarball}: a cut run's state")
                continue
            run = "/".join(first.split("/")[:3])  # <profile>/<experiment>/<run>
            if f"{run}/provenance.json" in t.getnames():
                _extract(t, s.results, f"{run}/provenance.json")
                (s.results / run).parent.joinpath("LATEST").write_text(run.split("/")[-1] + "\n")
                log.say(f"resume: {tarball}: finished ({run})")
            else:
                _extract(t, s.results)
                log.say(f"resume: {tarball}: a cut run's state (the old layout)")
    cache = s.state / "jax-cache"
    if cache.is_dir():
        log.say(f"JAX compilation cache: {mib(size(cache))} MiB")
    if carry_check(s, log):
        return
    if not cache.is_dir():
        raise CampaignError("too much to carry: shrink .carry or the tree")
    shutil.rmtree(cache)
    log.say("the JAX cache left out (the next call compiles again)")
    if not carry_check(s, log):
        raise CampaignError("too much to carry: shrink .carry or the tree")


def _keep_reruns(target: Path, run: Path) -> None:
    """Of the runs already published in ``target``, those made with ``run``'s parameters stay (independent reruns,
    as ``repro publish`` keeps them); the others go."""
    if not target.is_dir():
        return
    params = json.loads((run / "provenance.json").read_text(encoding="utf-8")).get("parameters")
    for old in target.iterdir():
        prov = old / "provenance.json"
        if old.is_dir() and (not prov.is_file() or json.loads(prov.read_text(encoding="utf-8")).get("parameters")
                             != params):
            shutil.rmtree(old)


def collect(s: Settings, dest: Path, tarballs: list[Path], log: Log) -> None:
    """Finished runs into ``dest``/<gpu-model>/<experiment>/ (one per experiment and machine, as ``repro
    publish``), their notebooks rendered against the stored results, that book built."""
    names: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for tarball in tarballs:
            if tarball.name.endswith("-state.tar.gz"):
                log.say(f"collect: {tarball} is a cut run's state: skipped")
                continue
            with tarfile.open(tarball) as t:
                _extract(t, Path(tmp))
        for run in sorted(Path(tmp).glob("*/*/*/")):
            if not (run / "provenance.json").is_file():
                continue
            exp = run.parent.name
            name = _python_out(s, "import sys; from repro.core import provenance, results\n"
                                  "print(provenance.published_name(results.read_provenance(sys.argv[1])))", str(run))
            target = dest / name / exp
            _keep_reruns(target, run)
            target.mkdir(parents=True, exist_ok=True)
            shutil.move(str(run), str(target / run.name))
            (target / "LATEST").write_text(run.name + "\n")
            log.say(f"collect: {exp} -> {target / run.name}")
            names += [] if name in names else [name]
    if not names:
        raise CampaignError(f"collect: no finished run in {' '.join(map(str, tarballs))}")
    for name in names:
        subprocess.run([s.python, "-m", "repro.cli", "render", "--published", name, "--published-dir", str(dest)],
                       check=True)
        subprocess.run([s.python, "-m", "repro.cli", "book", "--published-dir", str(dest), "--profile", name,
                        "--partial"], check=True)

