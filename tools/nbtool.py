"""Write a clean notebook from a compact cell list (used to author notebooks/; outputs never committed).

Usage from Python: ``write(path, cells)`` with cells as ("md"|"code"|"params"|"run", source);
"run" is a code cell whose (long, per-epoch) output the book shows collapsed (tag ``hide-output``).
Also ``python tools/nbtool.py strip notebooks/*.ipynb`` removes outputs and execution counts.
"""

from __future__ import annotations

import sys

import nbformat

KERNELSPEC = {"name": "repro", "display_name": "Python (repro)", "language": "python"}


def write(path: str, cells: list[tuple[str, str]]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    for kind, src in cells:
        src = src.strip("\n")
        if kind == "md":
            nb.cells.append(nbformat.v4.new_markdown_cell(src))
        else:
            cell = nbformat.v4.new_code_cell(src)
            if kind == "params":
                cell.metadata["tags"] = ["parameters"]
            elif kind == "run":
                cell.metadata["tags"] = ["hide-output"]
            nb.cells.append(cell)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    nbformat.validate(nb)
    nbformat.write(nb, path)


def strip(path: str) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nbformat.write(nb, path)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "strip":
        for p in sys.argv[2:]:
            strip(p)
