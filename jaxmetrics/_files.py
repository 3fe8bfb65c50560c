"""File checks shared by the command line and the loaders: no JAX, no numpy.

They live apart from :mod:`jaxmetrics._validation` so that a command can check its files, and
``jaxmetrics --help`` can build every command's options, without importing JAX (about a second).
Each raises ``ValueError`` whose message names the option or argument.
"""
from __future__ import annotations

import os
from typing import Any

__all__ = ["EMPTY_POLICIES", "PAIR_EMPTY_POLICIES", "SET_EMPTY_POLICIES", "check_folder_writable", "check_input_file",
           "text_line_numbers"]

#: What a reader of an input file does with an empty (blank or whitespace-only) text: ``error``
#: (refuse it, naming the file and its lines), ``drop`` (leave it out, counted) or ``zero`` (keep
#: it; a per-pair similarity scores its pair 0, as bert_score does).
EMPTY_POLICIES = ("error", "drop", "zero")
#: The policies of a set metric (MAUVE, Mark-Evaluate), which cannot featurize an empty text: the
#: first is the default.
SET_EMPTY_POLICIES = ("error", "drop")
#: The policies of a per-pair similarity, whose pairing must not shift: the first is the default.
PAIR_EMPTY_POLICIES = ("zero", "error")


def check_folder_writable(folder: Any, message: str) -> None:
    """Raise ``ValueError(f"{message} ({reason})")`` unless a file can be created in the existing
    ``folder`` (a probe file is created there and removed at once: permission bits alone miss
    read-only mounts and ACLs)."""
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".jaxmetrics-write-check-")
    except OSError as e:
        raise ValueError(f"{message} ({e.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def check_input_file(path: str, option: str, *, text: bool = True) -> str:
    """Check that ``path`` is a readable file (and, with ``text``, valid UTF-8).

    Raises ``ValueError`` naming ``option``, the file and, for bad UTF-8, the line.
    """
    if os.path.isdir(path):
        raise ValueError(f"{option}: {path!r} is a directory, expected a file")
    if not os.path.isfile(path):
        raise ValueError(f"{option}: file {path!r} does not exist")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{option}: file {path!r} is not readable")
    if text:
        with open(path, "rb") as f:
            data = f.read()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
            raise ValueError(f"{option}: {path!r} is not valid UTF-8: line {line}, column {col} "
                             f"(byte {e.start}: {e.reason}); re-save the file as UTF-8") from None
    return path


def text_line_numbers(path: str) -> list[int]:
    """The 1-based line of ``path`` (as an editor numbers it) that holds each text
    :func:`jaxmetrics.models.read_texts` returns, in order: every line of a text file, the non-blank
    lines of a ``.jsonl`` / ``.ndjson`` file (whose blank lines ``read_texts`` skips). Lines end at
    ``\\n`` only, as ``read_texts`` splits them; the file is assumed checked
    (:func:`check_input_file`)."""
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if os.path.splitext(path)[1].lower() not in (".jsonl", ".ndjson"):
        return list(range(1, len(lines) + 1))
    return [i for i, ln in enumerate(lines, 1) if ln.strip()]
