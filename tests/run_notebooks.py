"""The notebooks run headless at small sizes (nbclient; no pytest), each asserting its own claims.

CI runs this file as a script with the Python of a fresh virtual environment holding the built
wheel (tests/test_wheel.py, after installing nbclient, nbformat and ipykernel there), so the
notebooks run against the package as users install it: ``python run_notebooks.py`` exits 0 when
every notebook ran without an error cell and printed the size it was given.
tests/test_notebooks_mauve.py runs the same notebooks in the development install (``slow``).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

#: (notebook, the environment that sizes it: its first cell reads these)
SIZES = (
    ("mauve_as_a_loss.ipynb", {"JM_NB_N": "150", "JM_NB_STEPS": "40"}),
    ("metric_gradients.ipynb", {"JM_NB_N": "120"}),
    ("confidence_and_attribution.ipynb", {"JM_NB_N": "120"}),
    ("training_with_mauve.ipynb", {"JM_NB_N": "48", "JM_NB_STEPS": "2"}),
)


def run_notebook(name: str, env: dict) -> str:
    """Execute ``notebooks/<name>`` in a fresh kernel with ``env`` set; return what it printed.
    Raises on a failing cell (the notebooks assert their claims) or when the size did not reach it."""
    import nbclient
    import nbformat

    old = {k: os.environ.get(k) for k in (*env, "MPLBACKEND")}
    os.environ.update(env, MPLBACKEND="Agg")   # the kernel inherits the environment
    try:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                         resources={"metadata": {"path": str(NOTEBOOKS)}})
        client.execute()  # raises CellExecutionError on any failing cell
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    printed = "".join(o.get("text", "") for o in outputs)
    assert env["JM_NB_N"] in printed, f"{name}: the size did not come from the environment"
    return printed


def main() -> int:
    for name, env in SIZES:
        run_notebook(name, env)
        print(f"{name}: ran")
    print(f"{len(SIZES)} notebooks ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
