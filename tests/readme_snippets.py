"""The README's ```python blocks run exactly as printed, in order, in one namespace, and print what
they say they print. No pytest here: the wheel test (tests/test_wheel.py) runs this file as a
script with the Python of a fresh virtual environment holding the built wheel, in an empty folder
(``python readme_snippets.py README.md``: exit status 0 when every block ran and every check held);
tests/test_readme.py runs the same checks in the development install (``slow``).
"""
from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks(readme: Path = README) -> list[str]:
    return re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.S)


def run_blocks(blocks: list[str]) -> tuple[dict, str, list[str]]:
    """Run the blocks in one namespace: (the namespace, what they printed, transformers' warnings)."""
    namespace: dict = {"__name__": "__readme__"}
    out = io.StringIO()
    notices: list = []

    class Keep(logging.Handler):           # transformers' "sequence length is longer ..." notice
        def emit(self, record):
            notices.append(record.getMessage())

    log, keep = logging.getLogger("transformers.tokenization_utils_base"), Keep(level=logging.WARNING)
    log.addHandler(keep)
    try:
        for i, block in enumerate(blocks):
            with contextlib.redirect_stdout(out):
                try:
                    exec(compile(block, f"README.md python block {i}", "exec"), namespace)
                except Exception as e:  # noqa: BLE001 - re-raised with the block that failed
                    raise AssertionError(f"README python block {i} failed:\n{block}") from e
    finally:
        log.removeHandler(keep)
    return namespace, out.getvalue(), notices


def check(namespace: dict, printed: str, notices: list[str]) -> None:
    """What the snippets claim: models print as one line each; bertscore runs on the README's
    encoder with its default layer; fit_to_mauve raises the fresh MAUVE; a MAUVE in (0, 1], finite
    perplexity on the defaults (the model's 128-token context as window and stride) and with
    stride 64 (about twice the windows), an inf top-k perplexity exactly when tokens were filtered,
    P/R/F means, Mark-Evaluate scores in [0, 1], fine-tuning curves from a KL of 0 and a checkpoint
that loads, the generation report's rows."""
    assert not [m for m in notices if "sequence length is longer" in m], notices
    model_lines = [ln for ln in printed.splitlines() if ln.startswith("LoadedModel(")]
    assert [ln.split(",")[0] for ln in model_lines] == ["LoadedModel(kind='gpt2'", "LoadedModel(kind='bert'",
                                                         "LoadedModel(kind='gpt2'"]   # the fine-tuned checkpoint
    assert "num_layers=6, params=22.6M, dtype=float32)" in model_lines[1]
    half = len(namespace["human"]) // 2
    assert namespace["F"].shape == (half,) and np.all((namespace["F"] > 0) & (namespace["F"] <= 1))
    fit = namespace["fit"]
    assert fit.mauve_after > fit.mauve_before + 0.1, (fit.mauve_before, fit.mauve_after)
    assert fit.loss.shape == (60,) and fit.temperature[-1] < fit.temperature[0]
    assert 0.0 < namespace["out"].mauve <= 1.0
    res, res64 = namespace["res"], namespace["res64"]
    assert res.perplexity > 1.0 and (res.max_length, res.stride) == (128, 128)
    assert res64.perplexity > 1.0 and res64.num_tokens == res.num_tokens + len(namespace["human"]) - 1
    assert res64.stride == 64 and res64.num_windows > 1.8 * res.num_tokens / 128
    assert namespace["gen"].tokens.shape == (8, 48)
    scores = namespace["scores"]
    assert (scores.perplexity == float("inf")) == (scores.num_filtered > 0)
    assert 0.0 <= namespace["me"].petersen <= 1.0
    assert namespace["grad_q"].shape == namespace["q"].shape
    ft = namespace["ft"]
    assert ft.loss.shape == ft.reward_mean.shape == ft.kl.shape == (2,) and np.all(np.isfinite(ft.loss))
    assert abs(float(ft.kl[0])) < 1e-6 and "params=1.3M" in model_lines[2]
    assert "PRF(precision=" in printed
    report = namespace["report"]
    assert list(report.rows) == ["human", "greedy", "top_p=0.9", "typical_p=0.95"]
    assert len(report.rows["top_p=0.9"]["mauve_runs"]) == 2 and "| Decoding | MAUVE" in printed


def main(argv: list[str]) -> int:
    readme = Path(argv[0]) if argv else README
    namespace, printed, notices = run_blocks(python_blocks(readme))
    check(namespace, printed, notices)
    print(f"{len(python_blocks(readme))} README python blocks ran and printed what they claim")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
