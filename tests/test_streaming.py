"""Streaming states: merge over shuffled batch splits == one shot (the areas' own functions on
the whole data), associativity, capacity errors, jit without retrace, bad input."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.streaming import (FIDState, IMPARState, LMScoreState, MarkEvaluateState, MauveState,
                                  NGramState, PerplexityState, PRDState, SimilarityState, merge_all,
                                  merge_stacked)


def _random_splits(rng, n, parts):
    """A random permutation of ``range(n)`` cut into ``parts`` non-empty pieces."""
    perm = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, n), size=parts - 1, replace=False))
    return np.split(perm, cuts)


def _padded(idx, size):
    """Indices padded with 0 to ``size`` and the mask of the real ones (one compiled shape)."""
    return np.concatenate([idx, np.zeros(size - idx.size, int)]), np.arange(size) < idx.size


# ----------------------------------------------------------------------------- log-prob states
@pytest.fixture
def lm_batch(rng):
    logits = rng.normal(size=(12, 5, 7)).astype(np.float32) * 2
    targets = rng.integers(0, 7, size=(12, 5))
    mask = rng.random((12, 5)) > 0.2
    return logits, targets, mask


def test_perplexity_state_merge_equals_one_shot(rng, lm_batch):
    from jaxmetrics.lm import perplexity_from_stats, perplexity_stats

    logits, targets, mask = lm_batch
    want = perplexity_stats(logits, targets, mask)
    for _ in range(3):
        parts = [_padded(i, 9) for i in _random_splits(rng, 12, 4)]
        states = [PerplexityState.empty().update(logits[i], targets[i], mask[i] & m[:, None])
                  for i, m in parts]
        got = merge_all(states)
        assert int(got.count) == int(want.count)  # integer counts: exact
        np.testing.assert_allclose(float(got.nll_sum), float(want.nll_sum), rtol=1e-5)
        np.testing.assert_allclose(float(got.compute()), float(perplexity_from_stats(want)), rtol=1e-5)
        # associativity: a+(b+(c+d)) == ((a+b)+c)+d
        right = states[0].merge(states[1].merge(states[2].merge(states[3])))
        np.testing.assert_allclose(float(right.nll_sum), float(got.nll_sum), rtol=1e-6)
    # definition: uniform logits over V=7 -> perplexity 7
    s = PerplexityState.empty().update(np.zeros((3, 7)), np.array([0, 3, 6]))
    assert float(s.compute()) == pytest.approx(7.0, rel=1e-6)


def test_perplexity_state_add_window_sums(lm_batch):
    """``add`` folds per-window sums (the output of score_windows), dropping padded windows."""
    from jaxmetrics.lm import token_nll

    logits, targets, mask = lm_batch
    nll = np.asarray(token_nll(logits, targets, mask)).sum(axis=1)
    cnt = mask.sum(axis=1)
    win_mask = np.arange(12) < 10
    s = PerplexityState.empty().add(nll, cnt, win_mask)
    assert int(s.count) == int(cnt[:10].sum())
    np.testing.assert_allclose(float(s.nll_sum), nll[:10].sum(), rtol=1e-5)


def test_lm_score_state_merge_equals_one_shot(rng, lm_batch):
    from jaxmetrics.lm import lm_scores

    logits, targets, mask = lm_batch
    kw = dict(epsilon=1e-3, temperature=0.9, top_k=5)
    want = lm_scores(logits, targets, mask, **kw)
    parts = [_padded(i, 10) for i in _random_splits(rng, 12, 3)]
    got = merge_all([LMScoreState.empty(**kw).update(logits[i], targets[i], mask[i] & m[:, None])
                     for i, m in parts])
    out = got.compute()
    for k, v in want.items():
        if np.isinf(v):
            assert np.isinf(out[k])
        else:
            assert out[k] == pytest.approx(v, rel=1e-5)
    with pytest.raises(ValueError, match="^other:.*settings"):
        got.merge(LMScoreState.empty(epsilon=0.0))
    with pytest.raises(ValueError, match="^top_p:"):
        LMScoreState.empty(top_p=1.5)
    with pytest.raises(ValueError, match="^stats:"):
        LMScoreState.empty().compute()


# ----------------------------------------------------------------------------- similarity
@pytest.mark.parametrize("metric", ["bertscore", "twmd"])
def test_similarity_state_merge_equals_one_shot(rng, metric):
    from jaxmetrics.similarity import batch_bertscore, batch_similarity

    cand = rng.normal(size=(10, 6, 8)).astype(np.float32)
    ref = rng.normal(size=(10, 5, 8)).astype(np.float32)
    cm = np.arange(6)[None] < rng.integers(2, 7, size=10)[:, None]
    rm = np.arange(5)[None] < rng.integers(2, 6, size=10)[:, None]
    if metric == "bertscore":
        prf = batch_bertscore(cand, ref, cm, rm)
    else:
        prf = batch_similarity(cand, ref, cm, rm, metric="twmd", temperature=0.1)
    want = {"precision": float(np.mean(prf.precision)), "recall": float(np.mean(prf.recall)),
            "f1": float(np.mean(prf.f1))}
    parts = [_padded(i, 8) for i in _random_splits(rng, 10, 3)]
    got = merge_all([SimilarityState.empty(metric, temperature=0.1).update(
        cand[i], ref[i], cm[i], rm[i], pair_mask=m) for i, m in parts]).compute()
    assert got == pytest.approx(want, rel=1e-5)
    # a padded pair is not counted
    pad = SimilarityState.empty(metric, temperature=0.1).update(
        cand[:8], ref[:8], cm[:8], rm[:8], pair_mask=np.arange(8) < 3)
    assert int(pad.count) == 3
    with pytest.raises(ValueError, match="^metric:"):
        SimilarityState.empty("bleu")
    with pytest.raises(ValueError, match="^state:"):
        SimilarityState.empty(metric).compute()


# ----------------------------------------------------------------------------- n-grams
def _corpus(rng, n=24, vocab=9):
    lens = rng.integers(0, 12, size=n)
    return [list(rng.integers(0, vocab, size=k) * 1000 + 7) for k in lens]  # large, sparse ids


def _pad(seqs, width=12):
    ids = np.zeros((len(seqs), width), np.int32)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = s
    return ids, np.array([len(s) for s in seqs], np.int32)


def test_ngram_state_merge_equals_area_functions(rng):
    from jaxmetrics.diversity import distinct_n, ngram_entropy, zipf_coefficient

    seqs = _corpus(rng)
    ids, lengths = _pad(seqs)
    for trial in range(2):
        parts = [_padded(i, 21) for i in _random_splits(rng, len(seqs), 4)]
        got = merge_all([NGramState.empty(max_n=4, capacity=256).update(ids[i], lengths[i] * m)
                         for i, m in parts])
        one = NGramState.empty(max_n=4, capacity=256).update(ids, lengths)
        np.testing.assert_array_equal(got.counts, one.counts)  # integer counts: exact
        np.testing.assert_array_equal(got.keys, one.keys)
        out = got.compute()
        for n in range(1, 5):
            assert out["distinct"][n - 1] == pytest.approx(distinct_n(seqs, n), abs=1e-12)
            assert out["entropy"][n - 1] == pytest.approx(ngram_entropy(seqs, n), abs=1e-5)
        assert got.zipf() == pytest.approx(zipf_coefficient(seqs), abs=1e-5)
    # definition: "1 2 1 2" + "1 2 3" -> bigrams {12: 3, 21: 1, 23: 1}
    s = NGramState.empty(max_n=2, capacity=8).update(np.array([[1, 2, 1, 2], [1, 2, 3, 0]]), np.array([4, 3]))
    out = s.compute()
    assert out["unique"].tolist() == [3, 3] and out["total"].tolist() == [7, 5]
    p = np.array([3, 1, 1]) / 5
    assert out["entropy"][1] == pytest.approx(-(p * np.log(p)).sum(), rel=1e-12)


def test_ngram_state_capacity_errors():
    s = NGramState.empty(max_n=1, capacity=3)
    with pytest.raises(ValueError, match="^ids:.*capacity 3"):
        s.update(np.array([[1, 2, 3, 4]]), np.array([4]))
    a = s.update(np.array([[1, 2]]), np.array([2]))
    b = s.update(np.array([[3, 4]]), np.array([2]))
    with pytest.raises(ValueError, match="^other:.*capacity"):
        a.merge(b)
    # inside jit the overflow is flagged and compute refuses
    over = jax.jit(lambda st, i, l: st.update(i, l))(s, jnp.array([[1, 2, 3, 4]]), jnp.array([4]))
    assert bool(over.overflow)
    with pytest.raises(ValueError, match="^state:.*overflow"):
        over.compute()
    with pytest.raises(ValueError, match="^ids:"):
        s.update(np.array([[-1, 2]]), np.array([2]))
    with pytest.raises(ValueError, match="^other:"):
        s.merge(NGramState.empty(max_n=2, capacity=3))


# ----------------------------------------------------------------------------- feature metrics
@pytest.fixture
def feats(rng):
    ref = rng.normal(size=(40, 4)).astype(np.float32)
    cand = (rng.normal(size=(40, 4)) * 1.3 + 0.4).astype(np.float32)
    return ref, cand


def test_impar_state_equals_improved_precision(rng, feats):
    from jaxmetrics.mark_evaluate import improved_precision_recall

    ref, cand = feats
    want, _ = improved_precision_recall(ref, cand, 3)
    parts = [_padded(i, 38) for i in _random_splits(rng, 40, 3)]
    empty = IMPARState.empty(ref, k=3)
    got = merge_all([empty.update(cand[i], mask=m) for i, m in parts])
    assert int(got.count) == 40
    assert float(got.compute()) == pytest.approx(float(want), abs=1e-12)
    masked = empty.update(cand[:38], mask=np.arange(38) < 10)
    assert int(masked.count) == 10
    assert int(masked.inside) == round(float(improved_precision_recall(ref, cand[:10], 3)[0]) * 10)
    with pytest.raises(ValueError, match="^other:"):
        got.merge(IMPARState.empty(cand, k=3))
    with pytest.raises(ValueError, match="^k:"):
        IMPARState.empty(ref[:3], k=3)
    with pytest.raises(ValueError, match="^candidates:"):
        empty.update(np.ones((2, 5)))


def test_buffer_states_equal_area_functions(feats):
    """Buffered features merged in stream order give the areas' one-shot values."""
    from jaxmetrics.mark_evaluate import improved_precision_recall, mark_evaluate_scores, prd
    from jaxmetrics.mauve import compute_mauve

    ref, cand = feats
    cuts = [0, 7, 25, 40]
    me = merge_all([MarkEvaluateState.empty(64, 4).update(references=ref[a:b], candidates=cand[a:b])
                    for a, b in zip(cuts, cuts[1:])])
    want = mark_evaluate_scores(ref, cand, 3)
    assert {k: float(v) for k, v in me.compute(3).items()} == {k: float(v) for k, v in want.items()}
    assert [float(v) for v in me.impar(3)] == [float(v) for v in improved_precision_recall(ref, cand, 3)]

    key = jax.random.key(1)
    pr = merge_all([PRDState.empty(40, 4).update(references=ref[a:b], candidates=cand[a:b])
                    for a, b in zip(cuts, cuts[1:])])
    kw = dict(num_clusters=4, num_runs=2, num_angles=11, num_iters=10)
    np.testing.assert_array_equal(pr.compute(key, **kw)[0], prd(ref, cand, key, **kw)[0])

    mv = merge_all([MauveState.empty(40, 4).update(p_features=cand[a:b], q_features=ref[a:b])
                    for a, b in zip(cuts, cuts[1:])])
    kw = dict(num_buckets=4, kmeans_num_redo=1, kmeans_max_iter=20)
    assert mv.compute(**kw).mauve == compute_mauve(p_features=cand, q_features=ref, **kw).mauve
    with pytest.raises(ValueError, match="capacity"):
        mv.merge(mv)
    with pytest.raises(ValueError, match="^q_features:"):
        MauveState.empty(4, 4).update(p_features=ref[:2]).compute()


def test_fid_state_equals_fid(rng, feats, x64):
    from jaxmetrics.mark_evaluate import fid

    ref, cand = (a.astype(np.float64) for a in feats)
    parts_r, parts_c = _random_splits(rng, 40, 3), _random_splits(rng, 40, 4)
    st = merge_all([FIDState.empty(4).update(references=ref[i]) for i in parts_r]
                   + [FIDState.empty(4).update(candidates=cand[i]) for i in parts_c])
    assert float(st.compute()) == pytest.approx(float(fid(ref, cand)), rel=1e-10)
    with pytest.raises(ValueError, match="^candidates:"):
        FIDState.empty(4).update(references=ref).compute()
    with pytest.raises(ValueError, match="^references:"):
        FIDState.empty(4).update(references=ref[:, :3])


# ----------------------------------------------------------------------------- jit
def test_states_pass_through_jit_without_retrace(rng, lm_batch, feats):
    """A jitted update step compiles once per state type and batch shape; jit == eager."""
    logits, targets, mask = lm_batch
    ref, cand = feats
    ids, lengths = _pad(_corpus(rng, n=8))
    emb = rng.normal(size=(8, 5, 8)).astype(np.float32)
    em = np.ones((8, 5), bool)
    cases = [
        (PerplexityState.empty(), lambda s, b: s.update(*b), (logits, targets, mask)),
        (LMScoreState.empty(epsilon=0.01), lambda s, b: s.update(*b), (logits, targets, mask)),
        (SimilarityState.empty("bertscore"), lambda s, b: s.update(*b), (emb, emb, em, em)),
        (NGramState.empty(3, 128), lambda s, b: s.update(*b), (ids, lengths)),
        (IMPARState.empty(ref, 3), lambda s, b: s.update(*b), (cand,)),
        (MarkEvaluateState.empty(16, 4), lambda s, b: s.update(*b), (ref, cand)),
        (FIDState.empty(4), lambda s, b: s.update(*b), (ref, cand)),
    ]
    for empty, step, data in cases:
        traces = []

        @jax.jit
        def jstep(state, batch):
            traces.append(1)
            return step(state, batch)

        b1 = tuple(a[:4] for a in data)
        b2 = tuple(a[4:8] for a in data)
        s = jstep(jstep(empty, b1), b2)
        eager = step(step(empty, b1), b2)
        assert len(traces) == 1, type(empty).__name__
        for a, b in zip(jax.tree.leaves(s), jax.tree.leaves(eager)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_merge_stacked_equals_merge_all(rng):
    """States stacked along a leading axis (as process_allgather returns them) merge like a list."""
    ids, lengths = _pad(_corpus(rng, n=12))
    parts = [NGramState.empty(2, 64).update(ids[i:i + 4], lengths[i:i + 4]) for i in (0, 4, 8)]
    stacked = jax.tree.map(lambda *v: np.stack([np.asarray(a) for a in v]), *parts)
    got = merge_stacked(stacked)
    np.testing.assert_array_equal(got.counts, merge_all(parts).counts)
    np.testing.assert_array_equal(got.counts, NGramState.empty(2, 64).update(ids, lengths).counts)
    with pytest.raises(ValueError, match="^stacked:"):
        merge_stacked(PerplexityState.empty())


def test_merge_all_and_type_errors():
    with pytest.raises(ValueError, match="^states:"):
        merge_all([])
    with pytest.raises(TypeError, match="^other:"):
        PerplexityState.empty().merge(SimilarityState.empty())
    with pytest.raises(ValueError, match="^stats:"):
        PerplexityState.empty().compute()
