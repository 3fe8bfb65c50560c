"""Items with human scores from a file, and their metric scores: the input of ``jaxmetrics meta-eval``.

A file of items (CSV, TSV or JSONL) holds one item per row: a ``candidate`` (a system output, or
the second text of a pair), its reference(s), a ``human`` score and optionally a ``group``
(dataset, document, source segment) and a ``system``; numeric columns of precomputed metric
scores may follow. :func:`read_meta_items` reads it into :class:`MetaItems`;
:func:`score_items` adds the scores of the library's similarity metrics (F1 against the best
reference) through :func:`jaxmetrics.similarity.compute_similarity`.
"""
from __future__ import annotations

import csv
import io
import math
import os
from typing import Any, Sequence

import numpy as np

from jaxmetrics.results import Result, static_field

__all__ = ["ITEM_METRICS", "MetaItems", "read_meta_items", "score_items"]

#: field names read as the human score, the candidate, the group and the system (first found wins)
HUMAN_FIELDS = ("human", "score", "gold", "human_score", "da", "z")
CANDIDATE_FIELDS = ("candidate", "output", "hypothesis", "sentence2")
GROUP_FIELDS = ("group", "document", "dataset", "source_id")
SYSTEM_FIELDS = ("system",)


def _item_metrics() -> tuple[str, ...]:
    from jaxmetrics.similarity.settings import SIMILARITY_METRICS

    return tuple(SIMILARITY_METRICS)


#: metrics :func:`score_items` computes from text: the similarity metrics (F1, best reference)
ITEM_METRICS = _item_metrics()


class MetaItems(Result):
    """Items with human scores (:func:`read_meta_items`), and metric scores (:func:`score_items`).

    Attributes:
      human: float64 ``[n]`` human scores.
      groups: int32 ``[n]`` group index into ``group_names`` (all 0 without a group field).
      systems: int32 ``[n]`` system index into ``system_names`` (all 0 without a system field).
      scores: float64 ``[K, n]`` metric scores, one row per name of ``score_names``.
      candidates: the n candidate texts (``()`` when the file has none), static.
      references: per item, the tuple of its reference texts, static.
      group_names, system_names: labels in order of first appearance (``()`` when absent), static.
      score_names: the K metric names (the file's numeric columns, then the scored metrics), static.
      source: the file read (static).
    """

    human: Any
    groups: Any
    systems: Any
    scores: Any
    candidates: tuple = static_field()
    references: tuple = static_field()
    group_names: tuple = static_field()
    system_names: tuple = static_field()
    score_names: tuple = static_field()
    source: str = static_field(default="")

    def __len__(self) -> int:
        return int(np.asarray(self.human).size)


def _records(name: str, text: str) -> list[tuple[int, dict]]:
    ext = os.path.splitext(name)[1].lower()
    if ext in (".jsonl", ".json"):
        from jaxmetrics.models.io import read_json_lines

        return read_json_lines(text.split("\n"), path=name, name="path")
    if ext not in (".csv", ".tsv"):
        raise ValueError(f"{name}: expected a .csv, .tsv or .jsonl file")
    reader = csv.DictReader(io.StringIO(text), delimiter="\t" if ext == ".tsv" else ",")
    if not reader.fieldnames:
        raise ValueError(f"{name}: no header line")
    return [(reader.line_num, {k.strip(): v for k, v in row.items() if k is not None}) for row in reader]


def _field(keys: Sequence[str], options: Sequence[str]) -> str | None:
    lower = {k.lower(): k for k in keys}
    return next((lower[o] for o in options if o in lower), None)


def _number(v: Any, where: str, what: str) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {what} {v!r} is not a number") from None
    if not math.isfinite(x):
        raise ValueError(f"{where}: {what} {v!r} is not finite")
    return x


def _labels(values: list, present: bool) -> tuple[np.ndarray, tuple]:
    from jaxmetrics.similarity.grouped import group_ids

    if not present:
        return np.zeros(len(values), np.int32), ()
    return group_ids([str(v) for v in values], len(values))


def read_meta_items(path: str | os.PathLike, *, columns: Sequence[str] = ()) -> MetaItems:
    """Read items with human scores from a CSV, TSV or JSONL file.

    Fields (names case-insensitive; the first of each list found is used): the human score
    ``human`` / ``score`` / ``gold`` / ``human_score`` / ``da`` / ``z`` (required, finite); the
    candidate ``candidate`` / ``output`` / ``hypothesis`` / ``sentence2``; the references: every
    field whose name starts with ``reference`` (``reference``, ``reference_2``, ...; in JSONL
    also a list), or ``sentence1``; ``group`` / ``document`` / ``dataset`` / ``source_id``;
    ``system``. ``columns`` names numeric fields holding precomputed metric scores. Errors name
    the file and the line.

    Args:
      path: the file (``.csv``, ``.tsv``, ``.jsonl``).
      columns: numeric fields to read as metric scores.

    Returns:
      :class:`MetaItems`.

    Examples:
      >>> import os, tempfile
      >>> p = os.path.join(tempfile.mkdtemp(), "items.csv")
      >>> _ = open(p, "w").write("candidate,reference,human,system,bleu\\na cat,the cat,3,A,0.2\\na,b,1,B,0.1\\n")
      >>> items = read_meta_items(p, columns=["bleu"])
      >>> items.human.tolist(), items.references, items.system_names, items.scores.tolist()
      ([3.0, 1.0], (('the cat',), ('b',)), ('A', 'B'), [[0.2, 0.1]])
    """
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8-sig") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise ValueError(f"{name}: file does not exist") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{name}: not valid UTF-8 ({e.reason})") from None
    recs = _records(name, text)
    if not recs:
        raise ValueError(f"{name}: no items")
    keys = list(recs[0][1])
    hf = _field(keys, HUMAN_FIELDS)
    if hf is None:
        raise ValueError(f"{name}: no human score field (one of {', '.join(HUMAN_FIELDS)})")
    cf, gf, sf = _field(keys, CANDIDATE_FIELDS), _field(keys, GROUP_FIELDS), _field(keys, SYSTEM_FIELDS)
    rf = [k for k in keys if k.lower().startswith("reference")] or [k for k in keys if k.lower() == "sentence1"]
    cols = [str(c) for c in columns]
    for c in cols:
        if c not in keys:
            raise ValueError(f"columns: {name} has no field {c!r} (fields: {', '.join(keys)})")
    human, cands, refs, groups, systems, extra = [], [], [], [], [], [[] for _ in cols]
    for lineno, rec in recs:
        where = f"{name}:{lineno}"
        human.append(_number(rec.get(hf), where, "human score"))
        if cf is not None:
            c = rec.get(cf)
            if not isinstance(c, str) or not c.strip():
                raise ValueError(f"{where}: empty {cf}")
            cands.append(c.strip())
        rs = []
        for k in rf:
            v = rec.get(k)
            for r in (v if isinstance(v, list) else [v]):
                if isinstance(r, str) and r.strip():
                    rs.append(r.strip())
        if cf is not None and rf and not rs:
            raise ValueError(f"{where}: no reference")
        refs.append(tuple(rs))
        for lst, f, what in ((groups, gf, "group"), (systems, sf, "system")):
            if f is not None:
                v = rec.get(f)
                if v is None or not str(v).strip():
                    raise ValueError(f"{where}: empty {what}")
                lst.append(str(v).strip())
        for lst, c in zip(extra, cols):
            lst.append(_number(rec.get(c), where, c))
    n = len(human)
    gid, gnames = _labels(groups, gf is not None)
    sid, snames = _labels(systems, sf is not None)
    return MetaItems(np.asarray(human, np.float64), gid, sid, np.asarray(extra, np.float64).reshape(len(cols), n),
                     candidates=tuple(cands), references=tuple(refs) if rf else (), group_names=gnames,
                     system_names=snames, score_names=tuple(cols), source=name)


def score_items(items: MetaItems, *, model: Any, metrics: Sequence[str] = ("bertscore",), layer: int | None = None,
                progress: bool = False, dtype: Any = None) -> MetaItems:
    """``items`` with the scores of similarity ``metrics`` added (F1 of candidate against reference).

    Each metric is :func:`jaxmetrics.similarity.compute_similarity` with its default settings
    (``layer`` when given), centering batches restarting at every group; an item with several
    references gets its best F1 (bert_score's multi-reference rule). The encoder runs once per
    metric over the distinct texts.

    Args:
      items: from :func:`read_meta_items` (with candidates and references).
      model: an encoder (loaded, hub id or local directory).
      metrics: names among :data:`ITEM_METRICS`; a name already in ``items.score_names`` is refused.
      layer: ``hidden_states`` index (``None``: each metric's default).
      progress: progress bars on stderr.
      dtype: the model's compute dtype (``'float32'`` / ``'bfloat16'``).

    Returns:
      a :class:`MetaItems` whose ``scores`` and ``score_names`` end with the new metrics.
    """
    from jaxmetrics.models import resolve_model
    from jaxmetrics.similarity import compute_similarity

    if not isinstance(items, MetaItems):
        raise TypeError(f"items: expected MetaItems (read_meta_items), got {type(items).__name__}")
    names = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    for m in names:
        if m not in ITEM_METRICS:
            raise ValueError(f"metrics: {m!r} is not one of {', '.join(ITEM_METRICS)}")
        if m in items.score_names:
            raise ValueError(f"metrics: {m!r} is already a score column of {items.source or 'the items'}")
    if names and (not items.candidates or not items.references):
        raise ValueError(f"items: {items.source or 'the items'} has no candidate and reference texts to score")
    lm = resolve_model(model, purpose="similarity", dtype=dtype) if names else None
    owner = np.repeat(np.arange(len(items)), [len(r) for r in items.references])
    cands = [items.candidates[i] for i in owner]
    refs = [r for rs in items.references for r in rs]
    gids = np.asarray(items.groups)[owner] if items.group_names else None
    rows = []
    for m in names:
        res = compute_similarity(references=refs, candidates=cands, model=lm, metric=m, layer=layer, groups=gids,
                                 progress=progress)
        best = np.full(len(items), -np.inf)
        np.maximum.at(best, owner, np.asarray(res.f1, np.float64))
        rows.append(best)
    scores = np.concatenate([np.asarray(items.scores, np.float64).reshape(-1, len(items)),
                             np.asarray(rows, np.float64).reshape(-1, len(items))])
    return items.replace(scores=scores, score_names=tuple(items.score_names) + names)
