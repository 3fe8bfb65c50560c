"""Every public docstring example runs: docstrings carry runnable examples."""
import doctest
import importlib
import pkgutil

import pytest

import jaxmetrics

# Modules whose import needs the optional notebook/plot machinery or that hold only CLI glue
# still get collected; a module without examples simply contributes no test.
_SKIP_PREFIXES = ("jaxmetrics.commands.", "jaxmetrics.demo")


def _modules():
    names = ["jaxmetrics"]
    for info in pkgutil.walk_packages(jaxmetrics.__path__, "jaxmetrics."):
        if not info.name.startswith(_SKIP_PREFIXES):
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(mod, name) if t.examples]
    for t in tests:
        if t.name.split(".")[-1].startswith("_"):
            continue
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
