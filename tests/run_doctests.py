"""Every public docstring example of jaxmetrics runs (the standard library's doctest; no pytest).

CI runs this file as a script with the Python of a fresh virtual environment holding the built
wheel (tests/test_wheel.py), so the examples are checked against the package as users install it:
``python run_doctests.py [--jobs N]`` exits 0 when every example of every module passed, and lists
the failures otherwise. tests/test_doctests.py runs the same modules one test each in the
development install (``slow``).
"""
from __future__ import annotations

import argparse
import doctest
import importlib
import io
import multiprocessing
import pkgutil
import sys

# Modules that hold only CLI glue get no examples run (their behaviour is the commands' tests').
SKIP_PREFIXES = ("jaxmetrics.commands.", "jaxmetrics.demo")


def modules() -> list[str]:
    """Every module of the importable ``jaxmetrics`` but the CLI glue, sorted."""
    import jaxmetrics

    names = ["jaxmetrics"]
    for info in pkgutil.walk_packages(jaxmetrics.__path__, "jaxmetrics."):
        if not info.name.startswith(SKIP_PREFIXES):
            names.append(info.name)
    return sorted(names)


def run_module(name: str) -> tuple[str, int, int, str]:
    """(module, examples failed, examples tried, the failure report) for one module's public
    docstrings (names starting with ``_`` are skipped)."""
    mod = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    for t in finder.find(mod, name):
        if t.examples and not t.name.split(".")[-1].startswith("_"):
            runner.run(t, out=report.write)
    result = runner.summarize(verbose=False)
    return name, result.failed, result.attempted, report.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2, help="processes, one module at a time each (default: 2)")
    args = ap.parse_args(argv)
    names = modules()
    with multiprocessing.get_context("spawn").Pool(args.jobs, maxtasksperchild=20) as pool:
        results = list(pool.imap_unordered(run_module, names))
    failed = [r for r in results if r[1]]
    tried = sum(r[2] for r in results)
    for name, n, _, text in sorted(failed):
        print(f"--- {name}: {n} example(s) failed\n{text}")
    print(f"docstring examples: {tried} tried in {len(names)} modules, "
          f"{sum(r[1] for r in failed)} failed in {len(failed)} modules")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
