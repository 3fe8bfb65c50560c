"""Sentence pairs with human scores, read from the common STS-style TSV file.

``sentence1 <TAB> sentence2 <TAB> score [<TAB> group]`` (optional header) →
:class:`ScoredPairs`, the input of :func:`~jaxmetrics.similarity.correlation_sweep`.
``sentence1`` becomes the reference and ``sentence2`` the candidate.
"""
from __future__ import annotations

import math
import os
import re
from typing import Any

import numpy as np

from jaxmetrics.results import Result, static_field
from jaxmetrics.similarity.grouped import group_ids

__all__ = ["ScoredPairs", "read_scored_pairs"]


class ScoredPairs(Result):
    """Sentence pairs with human scores and group labels (:func:`read_scored_pairs`).

    Attributes:
      references: the N first sentences (``sentence1``), static.
      candidates: the N second sentences (``sentence2``), static.
      human: float64 ``[N]`` human scores.
      groups: int32 ``[N]`` group index of each pair into ``group_names``.
      group_names: the group labels in order of first appearance (``('all',)`` without a
        group column), static.
      source: the file the pairs were read from (``''`` when built in memory), static.
    """

    human: Any
    groups: Any
    references: tuple = static_field()
    candidates: tuple = static_field()
    group_names: tuple = static_field()
    source: str = static_field(default="")

    def __len__(self) -> int:
        return len(self.references)


_HEADER_SCORE = re.compile(r"^(human[ _-]?)?(score|scores|gold|label|labels|sim|similarity|rating|"
                           r"relatedness|human|z|da|z[ _-]?score)$", re.IGNORECASE)


def read_scored_pairs(path: str | os.PathLike) -> ScoredPairs:
    """Read sentence pairs with human scores from an STS-style TSV file.

    Format: one pair per line, tab-separated ``sentence1, sentence2, score[, group]`` (UTF-8;
    blank lines are skipped). The first line is a header when its third field is a column
    name (``score``, ``gold``, ``label``, ``similarity``, ``rating``, ``human``, ``z``, ``da``,
    ...), otherwise it is data. Either every row has a group column or none has. Errors name the
    file and the line: a wrong number of fields, an empty sentence or group, a score that is not
    a finite number (NaN and inf are rejected).

    ``sentence1`` becomes the reference and ``sentence2`` the candidate.

    Args:
      path: the TSV file.

    Returns:
      :class:`ScoredPairs`.

    Examples:
      >>> import os, tempfile
      >>> p = os.path.join(tempfile.mkdtemp(), "pairs.tsv")
      >>> _ = open(p, "w").write("s1\\ts2\\tscore\\tgroup\\na cat\\ta cat\\t5\\tx\\na dog\\ta car\\t1.5\\ty\\n")
      >>> pairs = read_scored_pairs(p)
      >>> pairs.human.tolist(), pairs.group_names, pairs.candidates
      ([5.0, 1.5], ('x', 'y'), ('a cat', 'a car'))
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise ValueError(f"{name}: file does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"{name}: is a directory, expected a TSV file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ValueError(f"{name}:{line}: not valid UTF-8 ({e.reason}); re-save the file as UTF-8") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    refs, cands, human, labels = [], [], [], []
    ncols = None
    first = True
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (3, 4):
            raise ValueError(f"{name}:{lineno}: expected 3 or 4 tab-separated fields (sentence1, sentence2, "
                             f"score[, group]), got {len(fields)}")
        if first:
            first = False
            if _parse_score(fields[2]) is None and _HEADER_SCORE.match(fields[2].strip()):
                ncols = len(fields)
                continue
        if ncols is None:
            ncols = len(fields)
        elif len(fields) != ncols:
            raise ValueError(f"{name}:{lineno}: {len(fields)} fields, but earlier rows have {ncols} "
                             f"(every row has a group column or none has)")
        s1, s2 = fields[0].strip(), fields[1].strip()
        if not s1 or not s2:
            raise ValueError(f"{name}:{lineno}: empty sentence{'1' if not s1 else '2'}")
        v = _parse_score(fields[2])
        if v is None:
            hint = " (a header's third column is named e.g. 'score')" if lineno == 1 else ""
            raise ValueError(f"{name}:{lineno}: score {fields[2].strip()!r} is not a number{hint}")
        if not math.isfinite(v):
            raise ValueError(f"{name}:{lineno}: score {fields[2].strip()!r} is not finite (NaN/inf scores "
                             f"are rejected)")
        if len(fields) == 4:
            g = fields[3].strip()
            if not g:
                raise ValueError(f"{name}:{lineno}: empty group label")
            labels.append(g)
        refs.append(s1)
        cands.append(s2)
        human.append(v)
    if not refs:
        raise ValueError(f"{name}: no sentence pairs")
    ids, names = group_ids(labels if ncols == 4 else None, len(refs))
    return ScoredPairs(np.asarray(human, np.float64), ids, references=tuple(refs), candidates=tuple(cands),
                       group_names=names, source=name)


def _parse_score(field: str) -> float | None:
    try:
        return float(field.strip())
    except ValueError:
        return None
