"""McDiv-format files of response sets (Tevet & Berant's data format).

A McDiv CSV has one response set per row: ``sample_id, context, resp_0..resp_{n-1},
label_value, label_name``; :func:`read_mcdiv_csv` reads it into a :class:`McDivData` whose
``response_sets`` and ``label_values`` feed :func:`~jaxmetrics.diversity.run_diversity_test`.
"""
from __future__ import annotations

import csv
import re

import numpy as np

from jaxmetrics.results import Result, static_field

__all__ = ["McDivData", "read_mcdiv_csv"]


class McDivData(Result):
    """One McDiv-format file (:func:`read_mcdiv_csv`): ``S`` response sets and their parameter.

    The texts are static fields (tuples), so the pytree's only leaf is ``label_values``.

    Attributes:
      label_values: float64 ``[S]`` the diversity parameter of every set.
      sample_ids: ``S`` sample ids (strings).
      contexts: ``S`` contexts.
      response_sets: ``S`` tuples of responses.
      label_name: the parameter's name (``label_name`` of the first row).

    Examples:
      >>> import numpy as np
      >>> McDivData(np.array([0.5]), ("0",), ("hi",), (("a b", "a c"),), "temp")
      McDivData(label_values=f64[1], sample_ids=('0',), contexts=('hi',), response_sets=tuple[1], label_name='temp')
    """

    label_values: np.ndarray
    sample_ids: tuple = static_field()
    contexts: tuple = static_field()
    response_sets: tuple = static_field()
    label_name: str = static_field()


def read_mcdiv_csv(path: str) -> McDivData:
    """Read a McDiv-format CSV: ``sample_id, context, resp_0..resp_{n-1}, label_value, label_name``.

    ``resp_*`` columns must be contiguous from 0; extra columns (e.g. ``metric_*``) are
    ignored. Every response must be a non-empty string and every ``label_value`` a finite
    number (rows are counted from 0 after the header in error messages).

    Args:
      path: the CSV file.

    Returns:
      :class:`McDivData`.

    Examples:
      >>> import tempfile, os
      >>> p = os.path.join(tempfile.mkdtemp(), "d.csv")
      >>> _ = open(p, "w").write("sample_id,context,resp_0,resp_1,label_value,label_name\\n"
      ...                        "0,hi,a b,a c,0.5,temp\\n")
      >>> d = read_mcdiv_csv(p)
      >>> d.response_sets, d.label_values.tolist(), d.label_name
      ((('a b', 'a c'),), [0.5], 'temp')
    """
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        rows = list(reader)
    resp = sorted((int(m.group(1)), c) for c in cols if (m := re.fullmatch(r"resp_(\d+)", c)))
    missing = [c for c in ("sample_id", "context", "label_value", "label_name") if c not in cols]
    if missing:
        raise ValueError(f"path: {path} lacks column(s) {missing}")
    if len(resp) < 2 or [i for i, _ in resp] != list(range(len(resp))):
        raise ValueError(f"path: {path} needs contiguous columns resp_0..resp_(n-1), n >= 2; "
                         f"got {[c for _, c in resp]}")
    if not rows:
        raise ValueError(f"path: {path} has no rows")
    sets, labels = [], []
    for k, r in enumerate(rows):
        s = [r[c] if r[c] is not None else "" for _, c in resp]
        for j, t in enumerate(s):
            if not t.strip():
                raise ValueError(f"path: row {k} (sample_id {r['sample_id']}) has an empty resp_{j}")
        sets.append(tuple(s))
        try:
            label = float(r["label_value"])
        except (TypeError, ValueError):
            raise ValueError(f"path: row {k} has a non-numeric label_value {r['label_value']!r}") from None
        if not np.isfinite(label):
            raise ValueError(f"path: {path}: row {k} (sample_id {r['sample_id']}), column label_value: "
                             f"{r['label_value']!r} is not a finite number")
        labels.append(label)
    return McDivData(label_values=np.asarray(labels, np.float64),
                     sample_ids=tuple(r["sample_id"] for r in rows),
                     contexts=tuple(r["context"] for r in rows), response_sets=tuple(sets),
                     label_name=rows[0]["label_name"])
