"""The top-level package: lazy exports resolve, and the CLI lists every sub-command."""
import subprocess
import sys

import jaxmetrics
from jaxmetrics.cli import build_parser


def test_every_top_level_export_resolves():
    for name in jaxmetrics._EXPORTS:
        obj = getattr(jaxmetrics, name)
        assert callable(obj), name


def test_import_is_lazy():
    code = "import sys, jaxmetrics; print('flax' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_cli_has_all_subcommands():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"mauve", "featurize", "perplexity", "similarity", "mark-evaluate", "diversity-test"} <= set(sub.choices)


def test_exports_do_not_shadow_subpackages():
    import jaxmetrics.mark_evaluate.pipeline  # noqa: F401  (importing a submodule rebinds the parent attribute)
    import jaxmetrics.similarity.pipeline  # noqa: F401

    assert not set(jaxmetrics._EXPORTS) & set(jaxmetrics._SUBMODULES)
    assert callable(jaxmetrics.similarity.similarity) and callable(jaxmetrics.mark_evaluate.mark_evaluate)
