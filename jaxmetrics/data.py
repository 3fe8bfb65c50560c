"""The bundled demo data: Shakespeare speeches and the small GPT-2 trained on them.

The files live in the repository's ``examples/`` folder (not inside the package): ``data/``
(``train.txt`` and ``heldout.txt``, one speech per line; public domain, see
``examples/README.md``) and ``model/`` (a Hugging Face GPT-2 checkpoint with its tokenizer).
They are found, in order, from the environment variable ``JAXMETRICS_EXAMPLES``, then
``examples/`` next to the installed package (an editable install of the repository), then
``./examples`` in the working directory.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["examples_dir", "load_shakespeare", "demo_model_dir"]

SPLITS = ("train", "heldout")


def examples_dir() -> Path:
    """Return the ``examples/`` folder holding the bundled data and model.

    Raises ``FileNotFoundError`` (saying where it looked) when none is found.

    Examples:
        >>> (examples_dir() / "data" / "heldout.txt").is_file()
        True
    """
    candidates = []
    env = os.environ.get("JAXMETRICS_EXAMPLES")
    if env:
        candidates.append(Path(env))
    candidates.append(Path(__file__).resolve().parent.parent / "examples")
    candidates.append(Path.cwd() / "examples")
    for c in candidates:
        if (c / "data" / "heldout.txt").is_file():
            return c
    raise FileNotFoundError(
        "examples: the bundled demo data was not found; looked in "
        + ", ".join(str(c) for c in candidates)
        + ". Run from a checkout of the jaxmetrics repository or set JAXMETRICS_EXAMPLES."
    )


def demo_model_dir() -> Path:
    """Directory of the demo's small GPT-2 checkpoint (``examples/model``).

    Examples:
        >>> (demo_model_dir() / "config.json").is_file()
        True
    """
    return examples_dir() / "model"


def load_shakespeare(split: str = "heldout", *, limit: int | None = None,
                     min_words: int = 0) -> list[str]:
    """Speeches from the bundled Shakespeare text, one string per speech, in play order.

    Args:
      split: ``"train"`` (33 plays) or ``"heldout"`` (Hamlet, Twelfth Night, Julius Caesar,
        The Tempest — never seen by the demo model).
      limit: keep only the first ``limit`` speeches (after filtering); ``None`` keeps all.
      min_words: drop speeches with fewer whitespace-separated words.

    Returns:
      a list of ``str``.

    Examples:
        >>> speeches = load_shakespeare("heldout", limit=3, min_words=20)
        >>> len(speeches), all(len(s.split()) >= 20 for s in speeches)
        (3, True)
    """
    if split not in SPLITS:
        raise ValueError(f"split: expected one of {SPLITS}, got {split!r}")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ValueError(f"limit: expected a positive int or None, got {limit!r}")
    if not isinstance(min_words, int) or isinstance(min_words, bool) or min_words < 0:
        raise ValueError(f"min_words: expected a non-negative int, got {min_words!r}")
    path = examples_dir() / "data" / f"{split}.txt"
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line and len(line.split()) >= min_words:
                out.append(line)
                if limit is not None and len(out) >= limit:
                    break
    return out
