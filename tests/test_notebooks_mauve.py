"""The MAUVE notebooks (and the confidence / attribution and training ones) run headless at small sizes (nbclient)."""
from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.mark.parametrize(
    "name, env",
    [
        ("mauve_as_a_loss.ipynb", {"JM_NB_N": "150", "JM_NB_STEPS": "40"}),
        ("metric_gradients.ipynb", {"JM_NB_N": "120"}),
        ("confidence_and_attribution.ipynb", {"JM_NB_N": "120"}),
        ("training_with_mauve.ipynb", {"JM_NB_N": "48", "JM_NB_STEPS": "2"}),
    ],
)
def test_notebook_runs(name, env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)  # the kernel inherits the environment; the first cell reads it
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError on any failing cell (the notebooks assert their claims)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert env["JM_NB_N"] in printed  # the size really came from the environment
