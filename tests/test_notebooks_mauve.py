"""The MAUVE, confidence / attribution and training notebooks run headless at small sizes
(nbclient; tests/run_notebooks.py). CI runs them once, from the built wheel (tests/test_wheel.py);
here they run in the development install (``slow``: ``make test-all``), and ``make test`` checks
that every notebook of the folder is sized and run."""
from __future__ import annotations

import pytest

import run_notebooks


def test_every_notebook_is_run_at_a_small_size():
    named = {name for name, _ in run_notebooks.SIZES}
    on_disk = {p.name for p in run_notebooks.NOTEBOOKS.glob("*.ipynb")} - {"quickstart.ipynb"}   # its own test
    assert named == on_disk, (named, on_disk)
    assert all("JM_NB_N" in env for _, env in run_notebooks.SIZES)


@pytest.mark.slow
@pytest.mark.parametrize("name, env", run_notebooks.SIZES)
def test_notebook_runs(name, env):
    pytest.importorskip("nbclient")
    run_notebooks.run_notebook(name, env)
