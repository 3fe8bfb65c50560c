"""Batch centering and the order of the pairs: the default (the paper's consecutive batches) makes
each pair's score depend on its neighbours in the file, as documented; ``centering_batches="hashed"``
(batches of pairs sorted by a stable hash of their tokens) gives per-pair scores that do not depend
on input order; the batching is in the settings, the result, its signature and the command line.
Real text: the STS-style pairs built from the held-out Shakespeare sentences
(``jaxmetrics.data.synthetic_scored_pairs``) through the real all-MiniLM-L6-v2."""
from __future__ import annotations

import json

import numpy as np
import pytest

from jaxmetrics.results import parse_signature
from jaxmetrics.similarity import SimilaritySettings, compute_similarity, correlation_sweep
from jaxmetrics.similarity.chunks import CENTERING_BATCHES, centering_batches, pair_keys

N, BATCH, MAX_LEN = 40, 8, 32


@pytest.fixture(scope="module")
def pairs():
    from jaxmetrics.data import synthetic_scored_pairs

    rows = synthetic_scored_pairs(N, seed=1)
    assert len(rows) == N
    refs, cands, human, groups = (list(col) for col in zip(*rows))
    return refs, cands, np.asarray(human), groups


@pytest.fixture(scope="module")
def perm():
    return np.random.default_rng(7).permutation(N)


def _score(pairs, order, batching, minilm):
    refs, cands, _, groups = pairs
    s = SimilaritySettings(metric="twmd", center_batch_size=BATCH, centering_batches=batching, max_length=MAX_LEN)
    return compute_similarity(references=[refs[i] for i in order], candidates=[cands[i] for i in order],
                              groups=[groups[i] for i in order], model=minilm, settings=s)


def test_shuffling_moves_consecutive_scores_but_not_hashed_ones(pairs, perm, minilm):
    ident = np.arange(N)
    base, shuffled = _score(pairs, ident, "consecutive", minilm), _score(pairs, perm, "consecutive", minilm)
    # the default: the same pair scores differently once its neighbours change (documented)
    moved = np.abs(shuffled.f1 - base.f1[perm])
    assert moved.max() > 1e-3, moved.max()
    hashed, hashed_shuffled = _score(pairs, ident, "hashed", minilm), _score(pairs, perm, "hashed", minilm)
    np.testing.assert_allclose(hashed_shuffled.f1, hashed.f1[perm], atol=2e-6)
    np.testing.assert_allclose(hashed_shuffled.precision, hashed.precision[perm], atol=2e-6)
    np.testing.assert_allclose(hashed_shuffled.recall, hashed.recall[perm], atol=2e-6)
    assert hashed.mean().f1 == pytest.approx(hashed_shuffled.mean().f1, abs=1e-6)
    # hashed batches are still batch centering: not the consecutive scores, not uncentred ones
    assert np.abs(hashed.f1 - base.f1).max() > 1e-3
    # the batching is in the result and its signature
    assert base.centering_batches == "consecutive" and hashed.centering_batches == "hashed"
    assert "centering_batches='hashed'" in repr(hashed)
    assert parse_signature(base.signature)["centering_batches"] == "consecutive"
    assert parse_signature(hashed.signature)["centering_batches"] == "hashed"
    assert base.signature == shuffled.signature != hashed.signature == hashed_shuffled.signature


def test_sweep_scores_the_hashed_batches_of_compute_similarity(pairs, perm, minilm):
    refs, cands, human, groups = pairs
    kw = dict(model=minilm, metric="twmd", temperatures=[0.1], layers=[6])
    settings = SimilaritySettings(center_batch_size=BATCH, centering_batches="hashed", max_length=MAX_LEN)
    res = correlation_sweep(references=refs, candidates=cands, human=human, groups=groups, settings=settings, **kw)
    shuffled = correlation_sweep(references=[refs[i] for i in perm], candidates=[cands[i] for i in perm],
                                 human=human[perm], groups=[groups[i] for i in perm], settings=settings, **kw)
    want = _score(pairs, np.arange(N), "hashed", minilm)
    np.testing.assert_allclose(res.scores[0], want.f1, atol=2e-6)
    np.testing.assert_allclose(shuffled.scores[0], res.scores[0][perm], atol=2e-6)
    assert res.weighted_pearson[0] == pytest.approx(shuffled.weighted_pearson[0], abs=1e-5)
    assert parse_signature(res.signature)["centering_batches"] == "hashed"


def test_hashed_batches_are_a_function_of_the_set_of_pairs():
    rng = np.random.default_rng(0)
    n = 50
    keys = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    groups = rng.integers(0, 3, size=n)
    keys[7], groups[7] = keys[31], groups[31]          # the same pair twice
    batches = centering_batches(n, 4, groups, keys)

    def partition(b, idx):
        return sorted(sorted(idx[b == v].tolist()) for v in np.unique(b))

    ident = np.arange(n)
    for seed in range(3):
        p = np.random.default_rng(seed).permutation(n)
        assert partition(centering_batches(n, 4, groups[p], keys[p]), p) == partition(batches, ident)
        # consecutive batches are not
        assert partition(centering_batches(n, 4, groups[p]), p) != partition(centering_batches(n, 4, groups), ident)
    assert batches[7] == batches[31]
    for b in np.unique(batches):           # batches never cross a group, and hold <= 4 distinct pairs
        assert len(set(groups[batches == b])) == 1 and len(set(keys[batches == b].tolist())) <= 4
    with pytest.raises(ValueError, match="^keys"):
        centering_batches(n, 4, groups, keys[:-1])


def test_pair_keys_are_stable_and_tell_the_sides_apart():
    ids = np.array([[101, 7, 8, 102, 0], [101, 9, 102, 0, 0], [101, 7, 8, 102, 5]])
    real = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], bool)   # text 2 = text 0 + padding
    keys = pair_keys(ids, real, np.array([0, 1, 2]), np.array([1, 0, 1]))
    assert keys[0] == keys[2] and keys[0] != keys[1]
    # a fixed value: the same on every process and platform (BLAKE2b, not Python's salted hash)
    assert int(keys[0]) == int(pair_keys(ids, real, np.array([0]), np.array([1]))[0])
    import hashlib

    a = hashlib.blake2b(np.asarray([101, 7, 8, 102], "<i8").tobytes(), digest_size=16).digest()
    b = hashlib.blake2b(np.asarray([101, 9, 102], "<i8").tobytes(), digest_size=16).digest()
    assert int(keys[0]) == int.from_bytes(hashlib.blake2b(a + b, digest_size=8).digest(), "little")


def test_settings_check_and_record_the_batching():
    assert CENTERING_BATCHES == ("consecutive", "hashed")
    default = SimilaritySettings(metric="twmd")
    assert default.centering_batches == "consecutive"
    assert default.signature_fields()["centering_batches"] == "consecutive"
    hashed = default.replace(centering_batches="hashed")
    assert hashed.signature_fields()["centering_batches"] == "hashed" and hashed != default
    assert hashed.fingerprint() != default.fingerprint()
    assert "centering_batches" not in SimilaritySettings(metric="twmd", centering="corpus").signature_fields()
    with pytest.raises(ValueError, match="^centering_batches: expected one of"):
        SimilaritySettings(centering_batches="random")
    with pytest.raises(ValueError, match="^centering_batches: 'hashed' forms the batches of centering='batch'"):
        SimilaritySettings(metric="bertscore", centering_batches="hashed")    # uncentred by default
    with pytest.raises(ValueError, match="^centering_batches"):
        hashed.replace(centering="sentence")


def test_cli_offers_reports_and_records_the_batching(pairs, perm, minilm_dir, tmp_path, capsys):
    from jaxmetrics.cli import main

    refs, cands, human, groups = pairs
    files = {}
    for name, order in (("a", np.arange(N)), ("b", perm)):
        r, c = tmp_path / f"refs_{name}.txt", tmp_path / f"cands_{name}.txt"
        r.write_text("".join(refs[i] + "\n" for i in order), encoding="utf-8")
        c.write_text("".join(cands[i] + "\n" for i in order), encoding="utf-8")
        files[name] = (str(r), str(c))
    common = ["--model", minilm_dir, "--center-batch-size", str(BATCH), "--max-length", str(MAX_LEN), "--quiet"]
    out = {}
    for name in ("a", "b"):
        js = tmp_path / f"{name}.json"
        assert main(["similarity", "--references", files[name][0], "--candidates", files[name][1], *common,
                     "--centering-batches", "hashed", "--json", str(js)]) == 0
        printed = capsys.readouterr().out
        assert "batches of 8 pairs by hash (independent of the pairs' order)" in printed
        out[name] = json.loads(js.read_text())
    assert out["a"]["centering_batches"] == "hashed" and "centering_batches:hashed" in out["a"]["signature"]
    np.testing.assert_allclose(np.asarray(out["b"]["f1"]), np.asarray(out["a"]["f1"])[perm], atol=2e-6)
    assert main(["similarity", "--references", files["a"][0], "--candidates", files["a"][1], *common]) == 0
    printed = capsys.readouterr().out
    assert "batches of 8 consecutive pairs (scores depend on the pairs' order" in printed
    # bert_score has no such setting; an option that would be ignored is an error, before any work
    assert main(["similarity", "--references", files["a"][0], "--candidates", files["a"][1], "--model", "no-model",
                 "--bert-score-compat", "--centering-batches", "hashed", "--quiet"]) == 2
    assert "--centering-batches: not a bert_score setting" in capsys.readouterr().err
    for cmd in ("similarity", "similarity-eval"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--centering-batches HOW" in text and "consecutive, hashed" in text
        assert "shuffling the file changes the scores" in text
