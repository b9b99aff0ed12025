"""``tools/gpu_campaign.sh``'s bookkeeping, fast: where ``collect`` publishes a run (the GPU model in its
provenance, the book's published dir, the commit a carried tree names, which reruns it keeps). The script's
``run``, ``plan`` and ``resume`` with a stand-in Python (real processes and deadlines) are
``tests/smoke/test_gpu_campaign_script_smoke.py``; the real path, under JAX with a cut and a resume, is
``tests/smoke/test_gpu_campaign_smoke.py``'s rehearsal."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from repro.book import build as book
from repro.core import provenance, results


@pytest.mark.parametrize("model, name", [
    ("NVIDIA H100 80GB HBM3", "gpu-h100"), ("NVIDIA H200", "gpu-h200"), ("NVIDIA H100 PCIe", "gpu-h100"),
    ("NVIDIA A100-SXM4-80GB", "gpu-a100"), ("Tesla V100-SXM2-16GB", "gpu-v100"), ("NVIDIA GeForce RTX 4090", "gpu-4090"),
])
def test_a_gpu_run_is_published_under_its_gpu_model(model, name):
    record = {"profile": "gpu-h100", "hardware": {"gpus": [{"name": "GPU:0", "model": model}]}}
    assert provenance.published_name(record) == name
    assert provenance.published_name({"profile": "rehearse", "hardware": {"gpus": []}}) == "rehearse"


def test_the_book_takes_a_published_dir_named_after_the_gpu_not_the_profile(tmp_path):
    """published/gpu-h200/ holds runs of profile gpu-h100: `repro book --profile gpu-h200` and
    `repro render --published gpu-h200` find them by the directory's name."""
    root = tmp_path / "published"
    run = results.experiment_dir("mnist_cnn", "gpu-h200", root) / "20260101T000000.000000Z-abcdef"
    run.mkdir(parents=True)
    (run / "provenance.json").write_text(json.dumps({"status": "complete", "profile": "gpu-h100",
                                                     "experiment": "mnist_cnn"}))
    (run / "notebook.ipynb").write_text(__import__("nbformat").writes(__import__("nbformat").v4.new_notebook()))
    assert results.latest_run("mnist_cnn", "gpu-h200", root, need="notebook.ipynb") == run
    used = book.stage("gpu-h200", tmp_path / "stage", root, partial=True)
    assert used == [run] and (tmp_path / "stage" / "notebooks" / "01_mnist_cnn.ipynb").is_file()


def test_a_tree_without_git_names_the_commit_the_campaign_carried(tmp_path):
    """The lent GPU machine gets the tree without .git: provenance reads .carry/git.json (written here by
    tools/gpu_campaign.sh prepare/resume), marked carried; with neither, the commit is unknown (None)."""
    import json

    from repro.core import provenance

    assert provenance.git_commit(tmp_path) == {"commit": None, "dirty": None}
    (tmp_path / ".carry").mkdir()
    (tmp_path / ".carry" / "git.json").write_text(json.dumps({"commit": "abc123", "dirty": False}))
    assert provenance.git_commit(tmp_path) == {"commit": "abc123", "dirty": False, "carried": True}
    here = provenance.git_commit()  # a checkout: git itself, nothing carried
    assert here["commit"] and "carried" not in here


def test_a_checkout_under_a_carried_tree_records_both_commits(tmp_path):
    """The lent machine's copy: the session's first commit's .git under the tree the campaign carried (dirty)."""
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.py").write_text("old\n")
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "old"], check=True)
    (tmp_path / ".carry").mkdir()
    (tmp_path / ".carry" / "git.json").write_text(json.dumps({"commit": "fa6d0db", "dirty": False}))
    assert "carried_commit" not in provenance.git_commit(tmp_path)  # clean: the checkout is what ran
    (tmp_path / "a.py").write_text("new\n")  # the newer tree
    got = provenance.git_commit(tmp_path)
    assert got["dirty"] and got["carried_commit"] == "fa6d0db"


def test_collect_keeps_the_published_reruns_of_the_same_parameters_and_drops_the_others(tmp_path):
    """Two runs of the thread step (the rerun rule needs both) land side by side; a run of other parameters goes."""
    from repro.campaign import carry

    def run(where: Path, name: str, params: dict) -> Path:
        (where / name).mkdir(parents=True)
        (where / name / "provenance.json").write_text(json.dumps({"parameters": params}))
        return where / name

    target = tmp_path / "published" / "gpu-h200" / "staleness"
    run(target, "r1", {"thread": {"workers": [1, 2, 16]}})
    run(target, "r0", {"thread": {"workers": [1, 2]}})
    carry._keep_reruns(target, run(tmp_path / "new", "r2", {"thread": {"workers": [1, 2, 16]}}))
    assert sorted(p.name for p in target.iterdir()) == ["r1"]
    carry._keep_reruns(target, run(tmp_path / "new", "r3", {"thread": {"workers": [4]}}))  # the counterfactual
    assert list(target.iterdir()) == []
