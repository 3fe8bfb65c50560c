"""Every public docstring example runs: docstrings carry runnable examples.

CI runs them once, from the built wheel (tests/run_doctests.py through tests/test_wheel.py); here
they run in the development install, one test per module (``slow``: ``make test-all``), and
``make test`` checks that the runner finds the modules and their examples."""
import pytest

import run_doctests


def test_the_runner_finds_every_module_with_examples():
    names = run_doctests.modules()
    assert "jaxmetrics.mauve.pipeline.compute" in names and not any(n.startswith("jaxmetrics.commands.") for n in names)
    name, failed, tried, _ = run_doctests.run_module("jaxmetrics.results")
    assert (name, failed) == ("jaxmetrics.results", 0) and tried > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", run_doctests.modules())
def test_docstring_examples(name):
    name, failed, _, report = run_doctests.run_module(name)
    assert failed == 0, f"{failed} docstring example(s) failed in {name}:\n{report}"
