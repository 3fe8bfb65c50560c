"""``--confidence`` on ``jaxmetrics mauve`` and ``jaxmetrics similarity``: the intervals the Python API
gives (printed, and in ``--json``), every interval option checked before any work; and
``jaxmetrics similarity`` printing a summary by default, the per-pair rows behind ``--per-pair``."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from jaxmetrics.cli import main


def _sentences(n: int, skip: int = 0) -> list[str]:
    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare("train", limit=400):
        out += [s for s in re.split(r"(?<=[.!?])\s+", speech) if 8 <= len(s.split()) <= 30]
    assert len(out) >= skip + n
    return out[skip:skip + n]


def _looped(s: str) -> str:
    w = s.split()
    head = w[: max(3, len(w) // 3)]
    return " ".join((head * (len(w) // len(head) + 1))[: len(w)])


@pytest.fixture(scope="module")
def feature_files(tmp_path_factory, minilm):
    """MiniLM sentence features of real text: 120 sentences against 120 others, a third of them looping."""
    from jaxmetrics.models import sentence_embeddings

    d = tmp_path_factory.mktemp("mauve_ci")
    human, other = _sentences(120), _sentences(120, skip=120)
    other = [_looped(s) if i % 3 == 0 else s for i, s in enumerate(other)]
    p = np.asarray(sentence_embeddings(human, model=minilm, max_length=64, progress=False), np.float32)
    q = np.asarray(sentence_embeddings(other, model=minilm, max_length=64, progress=False), np.float32)
    np.save(d / "p.npy", p)
    np.save(d / "q.npy", q)
    return d, p, q


def test_mauve_confidence_is_compute_mauve_seeds_interval(feature_files, capsys):
    from jaxmetrics.mauve import compute_mauve_seeds

    d, p, q = feature_files
    out = d / "ci.json"
    assert main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"), "--num-buckets", "8",
                 "--seeds", "1", "2", "3", "--confidence", "0.9", "--num-resamples", "200", "--json", str(out),
                 "--quiet"]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    want = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2, 3), num_buckets=8, confidence=0.9,
                               num_resamples=200)
    for field in ("mauve_interval", "frontier_integral_interval"):
        got, ref = doc[field], getattr(want, field)
        assert (got["low"], got["high"]) == pytest.approx((float(ref.low), float(ref.high)), abs=1e-9), field
        assert got["confidence"] == 0.9 and got["num_resamples"] == 200 and got["method"] == "reflected"
    m = doc["mauve_interval"]
    assert m["low"] < doc["mauve"] < m["high"] and doc["mauve"] == pytest.approx(want.mauve_mean, abs=1e-12)
    assert doc["sampling_standard_error"] == pytest.approx(want.sampling_standard_error, abs=1e-12)
    assert doc["settings"]["confidence"] == 0.9 and "confidence:0.9" in doc["signature"]
    assert f"90% interval: MAUVE [{m['low']:.4f}, {m['high']:.4f}]" in printed
    assert "rows resampled 200 times, with the spread over 3 seeds" in printed


def test_mauve_confidence_with_one_seed_warns_and_keeps_the_score(feature_files, capsys):
    from jaxmetrics.mauve import compute_mauve

    d, p, q = feature_files
    out = d / "one.json"
    assert main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"), "--num-buckets", "8",
                 "--confidence", "0.95", "--num-resamples", "100", "--json", str(out), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "jaxmetrics: warning: --confidence with one seed" in captured.err
    doc = json.loads(out.read_text())
    assert doc["mauve"] == pytest.approx(compute_mauve(p_features=p, q_features=q, num_buckets=8, seed=25).mauve,
                                         abs=1e-12)
    assert doc["mauve_interval"]["low"] <= doc["mauve"] <= doc["mauve_interval"]["high"]
    assert "95% interval: MAUVE [" in captured.out


@pytest.mark.parametrize("extra,match", [
    (["--confidence", "1.5"], "--confidence: must "),
    (["--num-resamples", "50"], "--num-resamples: only applies with --confidence"),
    (["--confidence", "0.9", "--num-resamples", "1"], "--num-resamples: must be >= 2"),
    (["--confidence", "0.9", "--estimator", "knn"], "--confidence: intervals resample the k-means histograms"),
    (["--confidence", "0.9", "--divergence", "js"], "--confidence: intervals are for --divergence kl"),
])
def test_mauve_interval_options_refused_before_any_work(tmp_path, extra, match, no_model, monkeypatch, capsys):
    import jaxmetrics.mauve as M

    def forbid(*a, **k):
        raise AssertionError("MAUVE was computed before the options were checked")

    monkeypatch.setattr(M, "compute_mauve", forbid)
    monkeypatch.setattr(M, "compute_mauve_seeds", forbid)
    r, c = tmp_path / "r.txt", tmp_path / "c.txt"
    r.write_text("\n".join(_sentences(30)) + "\n")
    c.write_text("\n".join(_sentences(30, skip=30)) + "\n")
    rc = main(["mauve", "--references", str(r), "--candidates", str(c), "--model", str(tmp_path / "none")] + extra)
    err = capsys.readouterr().err
    assert rc == 2 and match in err, err


@pytest.fixture(scope="module")
def pair_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("similarity_ci")
    refs = _sentences(30)
    cands = [" ".join(s.split()[1:]) if i % 2 else _looped(s) for i, s in enumerate(refs)]
    (d / "r.txt").write_text("\n".join(refs) + "\n")
    (d / "c.txt").write_text("\n".join(cands) + "\n")
    return d


def test_similarity_prints_a_summary_with_bca_intervals(pair_files, minilm_dir, capsys):
    import jax
    import jax.numpy as jnp

    from jaxmetrics.confidence import confidence_interval

    d = pair_files
    out = d / "ci.json"
    argv = ["similarity", "--references", str(d / "r.txt"), "--candidates", str(d / "c.txt"), "--model", minilm_dir,
            "--metric", "bertscore", "--quiet"]
    assert main(argv + ["--confidence", "0.9", "--num-resamples", "300", "--seed", "3", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    lines = printed.strip().splitlines()
    assert len(lines) == 2 and "over 30 pairs: mean P=" in lines[0]      # the summary only, no per-pair rows
    doc = json.loads(out.read_text())
    assert len(doc["f1"]) == 30                                            # the per-pair rows are in --json
    for score, name in (("precision", "P"), ("recall", "R"), ("f1", "F1")):
        want = confidence_interval(jnp.mean, jnp.asarray(doc[score], jnp.float32), key=jax.random.key(3),
                                   confidence=0.9, num_resamples=300)
        got = doc["intervals"][score]
        assert (got["low"], got["high"]) == pytest.approx((float(want.low), float(want.high)), abs=1e-7), score
        assert got["low"] < doc["mean"][score] < got["high"] and got["method"] == "bca"
        assert f"{name} [{got['low']:.6f}, {got['high']:.6f}]" in lines[1]
    assert lines[1].startswith("90% BCa intervals of the means (pairs resampled 300 times, seed 3)")

    assert main(argv + ["--per-pair"]) == 0                              # the rows on request
    rows = capsys.readouterr().out.strip().splitlines()
    assert rows[0] == "index\tprecision\trecall\tf1" and len(rows) == 1 + 30 + 1
    assert [float(r.split("\t")[3]) for r in rows[1:31]] == pytest.approx(doc["f1"], abs=1e-6)
    assert "interval" not in rows[-1]


@pytest.mark.parametrize("extra,match", [
    (["--seed", "1"], "--seed: only applies with --confidence"),
    (["--num-resamples", "10"], "--num-resamples: only applies with --confidence"),
    (["--confidence", "0"], "--confidence: must "),
    (["--confidence", "0.9", "--num-resamples", "1"], "--num-resamples: must be >= 2"),
    (["--confidence", "0.9", "ONE"], "--confidence: needs at least 2 pairs to resample, got 1"),
])
def test_similarity_interval_options_refused_before_the_model_is_loaded(tmp_path, extra, match, no_model, capsys):
    one = tmp_path / "one.txt"
    one.write_text("To be, or not to be, that is the question.\n")
    r, c = tmp_path / "r.txt", tmp_path / "c.txt"
    r.write_text("\n".join(_sentences(4)) + "\n")
    c.write_text("\n".join(_sentences(4, skip=4)) + "\n")
    files = ["--references", str(r), "--candidates", str(c)]
    if "ONE" in extra:
        extra, files = [a for a in extra if a != "ONE"], ["--references", str(one), "--candidates", str(one)]
    rc = main(["similarity", *files, "--model", str(tmp_path / "none")] + extra)
    err = capsys.readouterr().err
    assert rc == 2 and match in err, err
