"""``notebooks/quickstart.ipynb`` runs headless (nbclient) at a small size without errors."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"


@pytest.mark.slow  # the same tour as the README's Python snippets, which make test runs as printed
def test_quickstart_notebook_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("JAXMETRICS_QUICKSTART_N", "24")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    # every metric family printed its numbers
    for needle in ("sliding-window PPL", "Gen. PPL", "MAUVE", "MAUVE-drmm", "MAUVE-lattice", "soft MAUVE", "Distinct-4", "twmd",
                   "BERTScore", "petersen", "ME-Petersen"):
        assert needle in text, needle
    assert "N = 24" in text
