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


# ----------------------------------------------------------------------------- every metric result is signed
# A metric result is what a public function reports as scores: a pipeline's (text or a model in),
# an analysis's, and anything whose numbers depend on a key, a resampling scheme or its
# settings. It has a static ``signature`` field (jaxmetrics.results). The exported Result types
# that are not metric results are listed here, each with the reason; a new Result type must
# either carry a signature or be added with its reason.

PACKAGES = ("jaxmetrics", "jaxmetrics.confidence", "jaxmetrics.mauve", "jaxmetrics.lm", "jaxmetrics.similarity",
            "jaxmetrics.mark_evaluate", "jaxmetrics.diversity", "jaxmetrics.models", "jaxmetrics.evaluation",
            "jaxmetrics.demo", "jaxmetrics.sharding", "jaxmetrics.state", "jaxmetrics.training")

_PART = "part of a signed result (its signature covers it): "
_KERNEL = ("array kernel: deterministic in its arrays, every setting an argument of the call, no key; "
           "the pipelines that call it sign their results: ")
_DATA = "not a score: "
EXEMPT = {
    # parts of signed results
    "HistogramDetails": _PART + "the details of a MauveOutput / MauveSeedsOutput",
    "RatioDetails": _PART + "the details of a MauveOutput / MauveSeedsOutput",
    "MauveSweepRow": _PART + "a row of MauveSweepResult",
    "RankedSample": _PART + "an entry of MauveAttribution.ranked",
    "SignificantDifference": _PART + "an entry of SystemComparison.significant",
    "DiversityTestRow": _PART + "a row of DiversityTestReport",
    "SlidingWindowPPL": _PART + "the demo's human-text perplexity, in DemoResult",
    "CorrelationRow": _PART + "a row of CorrelationSweep",
    "PairAlignment": _PART + "one pair of TokenAlignments",
    "AlignedTokens": _PART + "one side of a pair of TokenAlignments",
    # array kernels
    "MauveResult": _KERNEL + "MAUVE of two histograms (mauve_from_histograms, mauve_scores)",
    "RankAgreement": _KERNEL + "rank correlations of a sweep's values",
    "PairedMauveDifference": _KERNEL + "a paired t-test of per-seed values",
    "LMScores": _KERNEL + "LM scores of given logits",
    "TokenScores": _KERNEL + "per-token scores of given logits",
    "PRF": _KERNEL + "per-pair precision / recall / F of given embeddings",
    "MarkEvaluateScores": _KERNEL + "Mark-Evaluate of given features",
    "SchnabelScores": _KERNEL + "Schnabel estimates of given features",
    "PetersenEstimate": _KERNEL + "a population estimate from counts",
    "SchnabelEstimate": _KERNEL + "a population estimate from counts",
    "CaptureEstimate": _KERNEL + "a population estimate from counts",
    "PrecisionRecall": _KERNEL + "improved precision / recall (k-NN) of given features",
    "PRDFBeta": _KERNEL + "the F-beta summaries of a PRD curve's arrays",
    "ZipfStats": _KERNEL + "Zipf's coefficient of given token counts",
    "Correlation": _KERNEL + "decTest's correlations of given values",
    "GroupedCorrelation": _KERNEL + "per-group correlations of given scores",
    "ContentTestScores": _KERNEL + "conTest's accuracy of given values",
    # intermediates, data, plans, files
    "LogRatios": _DATA + "an estimator's per-row log ratios, the input of estimate_mauve's frontier",
    "FittedKMeansQuantizer": _DATA + "a fitted codebook; the MAUVE computed with it is signed",
    "CentroidQuantizer": _DATA + "a codebook of soft MAUVE",
    "GenerationOutput": _DATA + "generated token ids (the texts to score)",
    "WindowLayout": _DATA + "the plan of perplexity's sliding windows",
    "WindowScores": _DATA + "one batch's per-window sums that perplexity() adds up (PerplexityResult is signed)",
    "CrossMembership": _DATA + "k-NN ball memberships, an intermediate of Mark-Evaluate",
    "Hyperspheres": _DATA + "k-NN balls, an intermediate of Mark-Evaluate",
    "Individuals": _DATA + "distinct rows, an intermediate of Mark-Evaluate",
    "FeaturePair": _DATA + "two checked feature sets",
    "MarkEvaluateStats": _DATA + "the counts Mark-Evaluate's estimators take",
    "EncodedSequences": _DATA + "token ids of texts",
    "EncodedSets": _DATA + "token ids of response sets",
    "McDivData": _DATA + "a McDiv file's contents",
    "NGramIds": _DATA + "n-gram ids",
    "NGramRows": _DATA + "n-gram ids per text",
    "NGramStats": _DATA + "n-gram counts",
    "SelfBLEUStats": _DATA + "BLEU's sufficient statistics",
    "SetEmbeddings": _DATA + "vectors of response sets",
    "SetMetric": _DATA + "a diversity metric's name and function",
    "Batch": _DATA + "a batch plan",
    "BatchArrays": _DATA + "a batch's arrays",
    "Encoding": _DATA + "vectors of texts (features, not scores)",
    "ModelOutput": _DATA + "a forward pass's hidden states and logits",
    "TokenEmbeddings": _DATA + "token vectors of texts",
    "Tokenized": _DATA + "token ids of texts",
    "CurveLegend": _DATA + "a plot's legend",
    "Decoding": _DATA + "a parsed decoding setting",
    "PromptDataset": _DATA + "prompts and references read from a file",
    "ScoredPairs": _DATA + "sentence pairs and human scores read from a file",
    "ReportFiles": _DATA + "the paths a report was written to",
    "TextPassages": _DATA + "texts cut into prompt / continuation token passages (the demo's held-out text)",
    "SavedCheckpoint": _DATA + "the files a checkpoint was written to",
    "PaddedRows": _DATA + "rows padded for a mesh",
}


def _exported_results() -> dict:
    import importlib
    import inspect

    out = {}
    for package in PACKAGES:
        mod = importlib.import_module(package)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) and issubclass(obj, Result) and obj is not Result:
                out[obj.__name__] = obj
    return out


def _signature_field(cls):
    import dataclasses

    return {f.name: f for f in dataclasses.fields(cls)}.get("signature")


def test_every_exported_metric_result_has_a_signature():
    """Every exported Result type is a metric result with a static ``signature`` field, or is
    listed in EXEMPT with its reason; EXEMPT names only exported types without one."""
    results = _exported_results()
    assert {"Interval", "SystemComparison", "MauveComparison", "MauveAttribution", "MauveOutput"} <= set(results)
    missing = sorted(n for n, cls in results.items() if n not in EXEMPT and _signature_field(cls) is None)
    assert not missing, f"metric results without a signature (add one, or exempt them with a reason): {missing}"
    for name, cls in results.items():
        field = _signature_field(cls)
        if field is not None:
            assert field.metadata.get("static") and not field.repr, name    # static, out of the repr
            assert name not in EXEMPT, f"{name} has a signature: drop it from EXEMPT"
    stale = sorted(set(EXEMPT) - set(results))
    assert not stale, f"EXEMPT lists types that are not exported Results: {stale}"
