"""One output contract for every result: ``to_dict()``, ``write_json(path)`` and, for tables,
``to_csv(path=None) -> str`` built from ``csv_rows()`` (jaxmetrics.results.Result)."""
from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest

from jaxmetrics.results import Result


class Table(Result):
    """Attributes: value: a number."""

    value: float

    def csv_rows(self):
        return [{"name": "a", "n": np.int64(3), "x": np.float32(0.25), "missing": None, "flag": True},
                {"name": "b", "n": 4, "x": 1 / 3, "missing": 2.0, "flag": False}]


def test_to_csv_returns_the_text_and_writes_it(tmp_path):
    t = Table(1.0)
    text = t.to_csv()
    assert text == t.to_csv(tmp_path / "t.csv") == (tmp_path / "t.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["name", "n", "x", "missing", "flag"]
    assert rows[1] == ["a", "3", "0.25", "", "True"]
    assert float(rows[2][2]) == 1 / 3   # floats written exactly


def test_a_result_that_is_not_a_table_says_so():
    class Point(Result):
        """Attributes: value: a number."""

        value: float

    with pytest.raises(TypeError, match="not a table"):
        Point(1.0).to_csv()


def test_write_json_is_to_dict(tmp_path):
    class Pair(Result):
        """Attributes: a, b: numbers."""

        a: float
        b: np.ndarray

    r = Pair(float("nan"), np.arange(3.0))
    r.write_json(tmp_path / "r.json")
    back = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert math.isnan(back["a"]) and back["b"] == [0.0, 1.0, 2.0]
    assert (tmp_path / "r.json").read_text(encoding="utf-8").endswith("}\n")


def test_the_library_tables_share_the_one_to_csv():
    from jaxmetrics.evaluation.report import GenerationReport
    from jaxmetrics.mauve.analysis.sweep_results import MauveSweepResult
    from jaxmetrics.similarity.sweep import CorrelationSweep

    for cls in (GenerationReport, MauveSweepResult, CorrelationSweep):
        assert cls.to_csv is Result.to_csv, cls          # the contract is not re-implemented
        assert cls.csv_rows is not Result.csv_rows, cls  # each says what its rows are
