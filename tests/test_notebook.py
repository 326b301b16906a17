"""The quickstart notebook runs from top to bottom (small sizes), so it never rots."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_executes(monkeypatch):
    monkeypatch.setenv("ONO_QUICKSTART_STEPS", "4096")
    monkeypatch.setenv("ONO_QUICKSTART_GAMES", "200")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                      for o in c.get("outputs", []))
    assert "head to head" in outputs            # both arena tables printed
    assert "trained agent:" in outputs          # the training summary line
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) >= 2                     # the learning curve and the arena matrix
    assert os.environ["ONO_QUICKSTART_STEPS"] == "4096"
