"""Reading text corpora from files (one text per line, or JSON Lines with a ``"text"`` field)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

__all__ = ["read_json_lines", "read_texts"]


def read_texts(path: str | os.PathLike, *, field: str = "text", name: str = "path") -> list[str]:
    """Read texts from ``path``.

    ``.jsonl`` / ``.ndjson`` files hold one JSON object per line and the text is taken from
    ``field``; any other file holds one text per line (the trailing newline is removed,
    nothing else). Blank lines of a ``.jsonl`` file are skipped; blank lines of a text file
    are kept as empty texts (callers decide whether to drop or reject them). The file must
    be UTF-8.

    Args:
      path: file to read.
      field: JSON key holding the text in ``.jsonl`` files.
      name: argument name used in error messages.

    Returns:
      ``list[str]``.

    Examples:
      >>> import tempfile, os
      >>> p = os.path.join(tempfile.mkdtemp(), "t.jsonl")
      >>> _ = open(p, "w").write('{"text": "hello"}\\n{"text": "world"}\\n')
      >>> read_texts(p)
      ['hello', 'world']
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a file path, got {type(path).__name__}")
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{name}: file {os.fspath(path)!r} does not exist")
    try:
        content = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{name}: {os.fspath(path)!r} is not valid UTF-8 (byte {e.start}: {e.reason})") from None
    if content.startswith("\ufeff"):
        content = content[1:]
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    if p.suffix.lower() not in (".jsonl", ".ndjson"):
        return lines
    texts = []
    for i, obj in read_json_lines(lines, path=path, name=name):
        if field not in obj:
            raise ValueError(f"{name}: line {i} of {os.fspath(path)!r} has no {field!r} field")
        if not isinstance(obj[field], str):
            raise ValueError(f"{name}: line {i} of {os.fspath(path)!r}: {field!r} is not a string")
        texts.append(obj[field])
    return texts


def read_json_lines(lines: Sequence[str], *, path: str | os.PathLike, name: str = "path") -> list[tuple[int, dict]]:
    """``[(line number, object)]``: the JSON object of each non-blank line of a JSON Lines file
    (``lines`` its lines; ``path`` and ``name`` for the messages). A line that is not valid JSON or
    not an object raises ``ValueError`` naming ``name``, the line and the file.

    Examples:
      >>> read_json_lines(['{"a": 1}', '', '{"a": 2}'], path="x.jsonl")
      [(1, {'a': 1}), (3, {'a': 2})]
    """
    out = []
    for i, ln in enumerate(lines, 1):
        if not ln.strip():
            continue
        try:
            obj = json.loads(ln)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name}: line {i} of {os.fspath(path)!r} is not valid JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{name}: line {i} of {os.fspath(path)!r} is not a JSON object")
        out.append((i, obj))
    return out
