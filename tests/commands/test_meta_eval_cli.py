"""``jaxmetrics meta-eval``: the table, JSON and CSV from precomputed columns and from metrics
scored with the real MiniLM encoder on real play pairs; bad input refused before any work."""
import csv
import json

import numpy as np
import pytest

from jaxmetrics.cli import main
from jaxmetrics.data import synthetic_scored_pairs


@pytest.fixture(scope="module")
def items(tmp_path_factory):
    d = tmp_path_factory.mktemp("meta")
    rows = synthetic_scored_pairs(48)
    rng = np.random.default_rng(0)
    path = d / "items.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["reference", "candidate", "human", "group", "system", "overlap", "noise"])
        for i, (ref, cand, score, group) in enumerate(rows):
            overlap = len(set(ref.split()) & set(cand.split())) / len(ref.split())
            w.writerow([ref, cand, score, group, f"sys{i % 3}", overlap, rng.normal()])
    return d, str(path)


def test_columns_table_json_csv(items, capsys):
    d, path = items
    out_json, out_csv = d / "m.json", d / "m.csv"
    assert main(["meta-eval", path, "--columns", "overlap,noise", "--num-resamples", "100",
                 "--correlations", "pearson,kendall", "--json", str(out_json), "--csv", str(out_csv)]) == 0
    text = capsys.readouterr().out
    assert "level: pooled" in text and "level: averaged" in text and "level: system" in text
    assert "best by pearson" in text and "overlap" in text.split("best by pearson")[1].splitlines()[0]
    doc = json.loads(out_json.read_text())
    assert doc["metrics"] == ["overlap", "noise"] and doc["levels"] == ["pooled", "averaged", "system"]
    assert np.asarray(doc["value"]).shape == (3, 2, 2) and doc["tests"] == ["permutation", "paired-bootstrap"]
    rows = list(csv.DictReader(open(out_csv)))
    assert {r["level"] for r in rows} == {"pooled", "averaged", "system", "group"}


def test_bertscore_scored_with_minilm(items, minilm_dir, capsys):
    _, path = items
    assert main(["meta-eval", path, "--metrics", "bertscore", "--columns", "noise", "--model", minilm_dir,
                 "--num-resamples", "50", "--correlations", "pearson", "--level", "pooled", "--quiet"]) == 0
    text = capsys.readouterr().out
    table = text.split("level: pooled")[1]
    assert "bertscore" in table and "noise" in table
    assert "bertscore" in table.split("best by pearson")[1].splitlines()[0]


@pytest.mark.parametrize("argv, message", [
    (["--columns", "nope"], "columns: "),
    (["--metrics", "bertscore"], "--model: required"),
    (["--metrics", "bleu", "--model", "x"], "--metrics: 'bleu'"),
    (["--columns", "noise", "--correlations", "pearsn"], "--correlations: 'pearsn'"),
    (["--columns", "noise", "--num-resamples", "1"], "--num-resamples"),
])
def test_bad_input_is_refused_first(items, argv, message, capsys):
    _, path = items
    assert main(["meta-eval", path] + argv) == 2
    assert message in capsys.readouterr().err
