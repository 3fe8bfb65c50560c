"""A density-ratio estimator that cannot tell two samples apart says so ("indistinguishable at this
n"): a field and a note on the result, an ``IndistinguishableWarning`` in Python, a line from
``jaxmetrics mauve`` (jaxmetrics/mauve/frontier/estimate.py, ``separation_test``)."""
from __future__ import annotations

import json
import re
import warnings

import jax
import numpy as np
import pytest

from jaxmetrics.cli import main
from jaxmetrics.mauve import compute_mauve, compute_mauve_seeds, estimate_mauve
from jaxmetrics.mauve.frontier.estimate import IndistinguishableWarning, separation_test

ESTIMATORS = ("knn", "classifier", "gaussian")


def test_the_separation_test_holds_its_level_and_detects_a_shift():
    """Under P = Q (exchangeable scores) the samples are flagged in about 95 % of draws; a shift of
    half a standard deviation at n = 100 per side is found in most draws; flat ratios (what the
    calibration returns when it finds nothing) are flagged with z = 0."""
    rng = np.random.default_rng(0)
    null = np.mean([separation_test(rng.normal(size=100), rng.normal(size=100)).indistinguishable
                    for _ in range(400)])
    assert 0.92 <= null <= 0.98, null
    shifted = np.mean([separation_test(rng.normal(size=100) + 0.5, rng.normal(size=100)).indistinguishable
                       for _ in range(200)])
    assert shifted < 0.2, shifted
    flat = separation_test(np.zeros(30), np.zeros(40))
    assert flat.indistinguishable and flat.z == 0.0 and flat.auc == 0.5 and flat.rows_needed is None
    # the sample size it quotes: at that size the observed effect is significant
    weak = separation_test(np.r_[rng.normal(size=60) + 0.15], rng.normal(size=60))
    if weak.rows_needed is not None:
        auc = weak.auc
        n = weak.rows_needed
        assert (auc - 0.5) / np.sqrt((2 * n + 1) / (12 * n * n)) > 1.645


def _sentences():
    from jaxmetrics.data import load_shakespeare

    return [s for sp in load_shakespeare("heldout") for s in re.split(r"(?<=[.!?])\s+", sp)
            if 8 <= len(s.split()) <= 30]


def _loop(s):
    w = s.split()
    head = w[: max(3, len(w) // 3)]
    return " ".join((head * (len(w) // len(head) + 1))[: len(w)])


@pytest.fixture(scope="module")
def plays(minilm):
    """MiniLM features of two disjoint random samples of held-out Shakespeare sentences (60 each) and
    of a third sample degraded (each sentence looping over its first third). Random draws: 60
    consecutive sentences against the next 60 are different scenes, which every estimator tells
    apart (AUC 0.67-0.72)."""
    from jaxmetrics.models import sentence_embeddings

    pool = _sentences()
    s = [pool[i] for i in np.random.default_rng(0).permutation(len(pool))[:180]]
    emb = np.asarray(sentence_embeddings(s[:120] + [_loop(t) for t in s[120:]], model=minilm))
    return emb[:60], emb[60:120], emb[120:]


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_similar_samples_are_flagged_and_different_text_is_not(plays, estimator):
    a, b, degraded = plays
    with pytest.warns(IndistinguishableWarning, match="^indistinguishable at this n: "):
        same = compute_mauve(p_features=a, q_features=b, estimator=estimator)
    assert same.indistinguishable and same.details.indistinguishable
    assert same.mauve > 0.9 and f"the {estimator} estimator" in same.note and "60 references" in same.note
    assert same.to_dict()["indistinguishable"] is True
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndistinguishableWarning)
        diff = compute_mauve(p_features=a, q_features=degraded, estimator=estimator)
    assert not diff.indistinguishable and diff.note == "" and diff.mauve < 0.9


def test_several_seeds_and_estimate_mauve_carry_the_flag(plays):
    a, b, degraded = plays
    # the classifier's folds depend on the seed: the flag holds when one seed at least is flagged
    with pytest.warns(IndistinguishableWarning, match=r"\(at [12] of 2 seeds\)$"):
        out = compute_mauve_seeds(references=a, candidates=b, estimator="classifier", seeds=(1, 2))
    assert out.indistinguishable and re.search(r"\(at [12] of 2 seeds\)$", out.note)
    assert out.to_dict()["indistinguishable"] is True
    with pytest.warns(IndistinguishableWarning):
        assert estimate_mauve(references=a, candidates=b, key=jax.random.key(0)).indistinguishable
    # the histogram pipeline and the quantized estimator (in-sample bin ratios) are not tested
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndistinguishableWarning)
        assert not compute_mauve(p_features=a, q_features=b, num_buckets=4).indistinguishable
        assert not estimate_mauve(references=a, candidates=b, key=jax.random.key(0), estimator="quantized").indistinguishable


def test_the_command_prints_the_line_and_writes_the_flag(plays, tmp_path, capsys):
    a, b, degraded = plays
    for name, arr in (("a", a), ("b", b), ("d", degraded)):
        np.save(tmp_path / f"{name}.npy", arr)

    def run(cand, estimator):
        out = tmp_path / f"{cand}-{estimator}.json"
        assert main(["mauve", "--references", str(tmp_path / "a.npy"), "--candidates", str(tmp_path / f"{cand}.npy"),
                     "--estimator", estimator, "--json", str(out), "--quiet"]) == 0
        return capsys.readouterr(), json.loads(out.read_text())

    (stdout, stderr), rec = run("b", "knn")
    lines = stdout.strip().splitlines()
    assert lines[0].startswith("MAUVE ") and lines[1].startswith("indistinguishable at this n: the knn estimator")
    assert "IndistinguishableWarning" not in stderr and "indistinguishable" not in stderr   # said once, on stdout
    assert rec["indistinguishable"] is True and rec["note"] == lines[1]
    (stdout, _), rec = run("d", "knn")
    assert "indistinguishable" not in stdout and rec["indistinguishable"] is False and rec["note"] is None
