"""Staging a chapter: a section that reads a file the run did not make is left out with one line (no holes in
the prose), code is folded, and a companion profile's chapter is retitled."""

import nbformat

from repro.book import build as book


def _nb(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nbformat.write(nb, path)


def test_a_section_needing_a_file_the_run_lacks_is_left_out_with_a_note(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    emu = nbformat.v4.new_markdown_cell("## The cluster, emulated\\nhardware profile {glue:text}`x`")
    emu.metadata["tags"] = ["needs:emulated_throughput.csv"]
    code = nbformat.v4.new_code_cell("show(result['emulated_throughput'])")
    code.metadata["tags"] = ["needs:emulated_throughput.csv"]
    path = tmp_path / "ch.ipynb"
    _nb(path, [nbformat.v4.new_markdown_cell("# Title"), emu, code, nbformat.v4.new_markdown_cell("## Discussion")])
    assert book.prune_sections(path, run) == ["emulated_throughput.csv"]
    cells = nbformat.read(path, as_version=4).cells
    assert [c.cell_type for c in cells] == ["markdown", "markdown", "markdown"]
    assert "left out" in cells[1].source and "{glue" not in "".join(c.source for c in cells)
    # the counterfactual: a run that made the file keeps the section whole
    _nb(path, [nbformat.v4.new_markdown_cell("# Title"), emu, code])
    (run / "emulated_throughput.csv").write_text("a\n1\n")
    assert book.prune_sections(path, run) == [] and len(nbformat.read(path, as_version=4).cells) == 3
    # a table the run's parameters left empty (its header alone) is absent data too
    (run / "emulated_throughput.csv").write_text("a,b\n")
    assert book.prune_sections(path, run) == ["emulated_throughput.csv"]


def test_code_is_folded_and_a_companion_chapter_names_its_profile(tmp_path):
    path = tmp_path / "ch.ipynb"
    params = nbformat.v4.new_code_cell("profile = 'smoke'")
    params.metadata["tags"] = ["parameters"]
    _nb(path, [nbformat.v4.new_markdown_cell("# Staleness\nintro"), params, nbformat.v4.new_code_cell("x = 1")])
    book.fold_code(path)
    book.retitle(path, "threads")
    cells = nbformat.read(path, as_version=4).cells
    assert cells[0].source == "# Staleness (the `threads` run)\nintro"
    assert [c.metadata["tags"] for c in cells[1:]] == [["parameters", "hide-input"], ["hide-input"]]


def test_a_section_can_need_a_summary_key_the_run_set(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    cell = nbformat.v4.new_markdown_cell("At mean staleness {glue:text}`tau` the best was ...")
    cell.metadata["tags"] = ["needs:summary.max_tau"]
    path = tmp_path / "ch.ipynb"
    for summary, kept in (('{"max_tau": 0}', False), ("{}", False), ('{"max_tau": NaN}', False),
                          ('{"max_tau": 64}', True)):
        _nb(path, [nbformat.v4.new_markdown_cell("# T"), cell])
        (run / "summary.json").write_text(summary)
        assert (book.prune_sections(path, run) == []) is kept
        assert ("{glue" in nbformat.read(path, as_version=4).cells[1].source) is kept


def test_a_section_can_need_a_key_inside_a_summary_mapping_and_several_parts(tmp_path):
    """``-p networks=SqueezeNet`` (issue 57): a sentence about GoogLeNet needs ``summary.best.GoogLeNet``; a cell with
    two ``needs:`` tags is kept only where the run made both."""
    run = tmp_path / "run"
    run.mkdir()
    cell = nbformat.v4.new_markdown_cell("GoogLeNet's best is {glue:text}`sp_best_googlenet`")
    cell.metadata["tags"] = ["needs:summary.best.GoogLeNet", "needs:parameters.csv"]
    path = tmp_path / "ch.ipynb"
    for summary, table, kept in (('{"best": {"SqueezeNet": {"workers": 8}}}', True, False),
                                 ('{"best": {"GoogLeNet": {"workers": 2}}}', False, False),
                                 ('{"best": 3}', True, False), ('{"best": {"GoogLeNet": {"workers": 2}}}', True, True)):
        _nb(path, [nbformat.v4.new_markdown_cell("# T"), cell])
        (run / "summary.json").write_text(summary)
        (run / "parameters.csv").unlink(missing_ok=True)
        if table:
            (run / "parameters.csv").write_text("network,p\nGoogLeNet,1\n")
        assert (book.prune_sections(path, run) == []) is kept, (summary, table)


def test_a_row_whose_table_the_chapter_left_out_links_to_the_chapter_alone():
    from repro.book import front

    row = {"experiment": "staleness", "profile": "threads", "basis": "measured", "evidence": "staleness-periods"}
    kept = {("staleness", "threads"): ("notebooks/threads/05_staleness", r'"<table id=\"staleness-periods\">"')}
    # the id named as a value (a claims table's evidence column) is not the table
    cut = {("staleness", "threads"): ("notebooks/threads/05_staleness", "<td>staleness-periods</td>")}
    assert 'href="../notebooks/threads/05_staleness.html#staleness-periods"' in front.link(row, kept)
    assert 'href="../notebooks/threads/05_staleness.html"' in front.link(row, cut)
    assert front.link(row, {}) == "measured · threads (not in this book)"
