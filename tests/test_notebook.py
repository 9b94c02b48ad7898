"""The example notebook (docs/examples/tour.ipynb) runs from top to bottom in a Jupyter kernel,
and its cells show what they promise: a Dataset, the winner table, a figure, goodput, a report."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "examples" / "tour.ipynb"


@pytest.mark.slow
def test_the_example_notebook_runs(tmp_path, monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    root = str(NOTEBOOK.parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [c.get("outputs", []) for c in nb.cells if c.cell_type == "code"]
    assert not [o for out in outputs for o in out if o.get("output_type") == "error"]
    data = [o.get("data", {}) for out in outputs for o in out]
    assert any("xarray.Dataset" in d.get("text/plain", "") for d in data)  # the result
    shown = " ".join(str(o.get("text", "")) + str(o.get("data", {})) for o in outputs[0])
    assert "points" in shown and "IProgress" not in shown  # a progress bar, not a warning
    assert any("image/png" in d for d in data)  # the winner map
    assert any("goodput" in d.get("text/html", "") for d in data)  # the goodput table
    assert (tmp_path / "tour_report.html").stat().st_size > 1_000_000  # the report
