"""Confidence intervals of the Mark-Evaluate scores (``mark_evaluate_interval``).

* definition: the value is ``mark_evaluate_scores`` on the data as given; a subsample holds no
  repeated row; reproducible for a key; bad input named;
* coverage, not by eye, on real features: bundled Shakespeare sentences embedded with the real
  all-MiniLM-L6-v2 (mean pooled). Two pools (references, candidates) of different sentences;
  many disjoint draws of ``n`` rows per side; an interval from each; how often it covers the
  score's expected value at ``n`` (its mean over many random pairs of ``n``-row sets from the
  pools). Subsampling covers; the bootstrap, whose copies put zero-distance points into the
  k-NN balls (or, with distinct rows as individuals, shrink the population), does not. The fast
  version is small; ``-m slow`` runs the figures quoted in docs/mark_evaluate.md.
"""
from __future__ import annotations

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.confidence import Interval
from jaxmetrics.mark_evaluate import mark_evaluate_interval, mark_evaluate_scores
from jaxmetrics.mark_evaluate.intervals import ESTIMATORS, _statistic


def _sentences(limit: int, seed: int = 0) -> list[str]:
    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare("train"):
        out += [s for s in re.split(r"(?<=[.!?])\s+", speech) if 8 <= len(s.split()) <= 30]
    idx = np.random.default_rng(seed).permutation(len(out))[:limit]
    return [out[i] for i in idx]


def _embed(texts, model) -> np.ndarray:
    from jaxmetrics.models import sentence_embeddings

    return np.asarray(sentence_embeddings(texts, model=model, max_length=64, batch_size=128, progress=False))


@pytest.fixture(scope="module")
def small_pools(minilm):
    """600 reference and 600 candidate embeddings of different real sentences."""
    e = _embed(_sentences(1200), minilm)
    return e[:600], e[600:]


# ------------------------------------------------------------------------------ definitions
def test_value_is_the_score_on_the_data_and_all_gives_the_four(small_pools):
    ref, cand = small_pools[0][:80], small_pools[1][:70]
    scores = mark_evaluate_scores(references=ref, candidates=cand, k=3)
    ci = mark_evaluate_interval(references=ref, candidates=cand, key=jax.random.key(0), num_resamples=50)
    assert isinstance(ci, Interval) and ci.method == "subsample" and ci.value.shape == ()
    assert float(ci.value) == float(scores.petersen) and float(ci.low) <= float(ci.high)
    both = mark_evaluate_interval(references=ref, candidates=cand, key=jax.random.key(0), estimator="all",
                                  num_resamples=50)
    assert both.value.shape == both.low.shape == (4,)
    np.testing.assert_array_equal(np.asarray(both.value), [float(getattr(scores, n)) for n in ESTIMATORS])
    lit = mark_evaluate_interval(references=ref, candidates=cand, key=jax.random.key(0), estimator="schnabel_quality",
                                 literal=True, num_resamples=40)
    want = mark_evaluate_scores(references=ref, candidates=cand, k=3, literal=True).schnabel_quality
    assert float(lit.value) == float(want)


def test_subsamples_hold_no_copy_and_the_bootstrap_does(small_pools):
    """The statistic sees the rows a resample gives it: the number of distinct rows of a subsample is
    its size; a bootstrap resample repeats about 37 % of its rows."""
    from jaxmetrics.confidence import confidence_interval, subsample_interval

    ref = jnp.asarray(small_pools[0][:100])
    distinct = lambda x: jnp.sum(jnp.any(x[:, None, :] != x[None, :, :], axis=-1).sum(1) == x.shape[0] - 1) * 1.0
    # rows equal to no other row of the resample
    sub = subsample_interval(distinct, ref, key=jax.random.key(0), num_resamples=50)
    assert float(sub.bias) + 100 == 75.0 and float(sub.standard_error) == 0.0
    boot = confidence_interval(distinct, ref, key=jax.random.key(0), num_resamples=50, method="percentile")
    assert float(boot.bias) + 100 < 50      # unique rows of a bootstrap resample: about 100 e^-1 = 37


def test_reproducible_and_the_statistic_is_mark_evaluate_scores(small_pools):
    ref, cand = small_pools[0][:60], small_pools[1][:60]
    a = mark_evaluate_interval(references=ref, candidates=cand, key=jax.random.key(3), num_resamples=60)
    b = mark_evaluate_interval(references=ref, candidates=cand, key=jax.random.key(3), num_resamples=60)
    c = mark_evaluate_interval(references=ref, candidates=cand, key=jax.random.key(4), num_resamples=60)
    assert (float(a.low), float(a.high)) == (float(b.low), float(b.high))
    assert (float(a.low), float(a.high)) != (float(c.low), float(c.high))
    # on subsets the statistic is the public score of those rows
    stat = _statistic("all", 3, False, "samples", None)
    got = np.asarray(stat(jnp.asarray(ref[:45]), jnp.asarray(cand[10:55])))
    s = mark_evaluate_scores(references=ref[:45], candidates=cand[10:55], k=3)
    np.testing.assert_array_equal(got, [float(getattr(s, n)) for n in ESTIMATORS])


@pytest.mark.parametrize("kwargs,err,match", [
    ({"estimator": "recall"}, ValueError, "estimator"),
    ({"k": 0}, ValueError, "k: must be >= 1"),
    ({"fraction": 0.05}, ValueError, "fraction: 0.05 of the 40 references gives subsets of 2 rows"),
    ({"fraction": 0.99}, ValueError, "fraction: 0.99 of the 40 references"),
    ({"num_resamples": 1}, ValueError, "num_resamples"),
    ({"confidence": 2.0}, ValueError, "confidence"),
    ({"method": "jackknife"}, ValueError, "method"),
    ({"occasions": "days"}, ValueError, "occasions"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"key": 1}, TypeError, "key: expected a jax.random key"),
    ({"candidates": np.ones((40, 3))}, ValueError, "candidates"),
    ({"references": np.full((40, 4), np.nan)}, ValueError, "references"),
])
def test_bad_input_names_the_argument(kwargs, err, match):
    rng = np.random.default_rng(0)
    args = dict(references=rng.normal(size=(40, 4)), candidates=rng.normal(size=(40, 4)), key=jax.random.key(0))
    args.update(kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(err, match=re.escape(match)):
            mark_evaluate_interval(**args)


# --------------------------------------------------------------------------------- coverage
def _disjoint_draws(pool_size: int, n: int, count: int, rng) -> np.ndarray:
    per = pool_size // n
    parts = [rng.permutation(pool_size)[: per * n].reshape(per, n) for _ in range(-(-count // per))]
    return np.concatenate(parts)[:count]


def coverage(ref_pool, cand_pool, n: int, num_draws: int, num_resamples: int, method: str = "subsample",
             occasions: str = "visits", num_sets: int = 400, seed: int = 0):
    """Per-estimator coverage (``[4]``, :data:`ESTIMATORS` order) of the expected score at ``n`` rows
    per side, the expected value itself, and the sd of the score over random sets (its true spread).
    ``occasions='visits'``: ME-CAPTURE over the two Petersen visits (with one occasion per sample it
    is 1 on every subset of these pools, a point that any interval covers)."""
    rng = np.random.default_rng(seed)
    ref_pool, cand_pool = jnp.asarray(ref_pool), jnp.asarray(cand_pool)
    stat = _statistic("all", 3, False, occasions, None)
    sets = [jnp.asarray(np.stack([rng.choice(p.shape[0], n, replace=False) for _ in range(num_sets)]))
            for p in (ref_pool, cand_pool)]
    vals = np.asarray(jax.lax.map(lambda ij: stat(ref_pool[ij[0]], cand_pool[ij[1]]), tuple(sets), batch_size=20))
    truth, spread = vals.mean(axis=0), vals.std(axis=0)
    hits = []
    draws = zip(_disjoint_draws(ref_pool.shape[0], n, num_draws, rng), _disjoint_draws(cand_pool.shape[0], n,
                                                                                         num_draws, rng))
    for i, (a, b) in enumerate(draws):
        ci = mark_evaluate_interval(references=ref_pool[a], candidates=cand_pool[b], key=jax.random.key(i),
                                    estimator="all", occasions=occasions, num_resamples=num_resamples, method=method)
        hits.append((np.asarray(ci.low) <= truth) & (truth <= np.asarray(ci.high)))
    return np.mean(hits, axis=0), truth, spread


def test_interval_covers_the_expected_score_at_n_on_real_features(small_pools):
    cov, truth, spread = coverage(*small_pools, n=50, num_draws=36, num_resamples=200, num_sets=200)
    print(f"coverage {cov} expected {truth} sd {spread}")
    assert np.all(spread > 0.01), spread           # none of the four is degenerate here
    assert np.all(cov >= 0.8), (cov, truth)
    assert np.mean(cov) >= 0.88, (cov, truth)


def test_capture_with_one_occasion_per_sample_is_one_on_these_pools(small_pools):
    ref, cand = small_pools[0][:50], small_pools[1][:50]
    ci = mark_evaluate_interval(references=ref, candidates=cand, key=jax.random.key(0), estimator="capture",
                                num_resamples=50)
    assert float(ci.value) == float(ci.low) == float(ci.high) == 1.0


@pytest.fixture(scope="module")
def large_pools(minilm):
    """4,000 reference and 4,000 candidate embeddings of different real sentences (one population)."""
    e = _embed(_sentences(8000, seed=1), minilm)
    return e[:4000], e[4000:]


def _encoder_words(minilm_dir: str) -> list[str]:
    import os

    with open(os.path.join(minilm_dir, "vocab.txt"), encoding="utf-8") as fh:
        return sorted(w for w in (line.strip() for line in fh) if w.isascii() and w.isalpha() and len(w) >= 3)


@pytest.fixture(scope="module")
def degraded_pools(minilm, minilm_dir):
    """The same 4,000 references; as candidates the other 4,000 sentences with each word swapped, with
    probability 0.3, for a random whole word of the encoder's vocabulary (a quality detriment)."""
    texts = _sentences(8000, seed=1)
    words, rng = _encoder_words(minilm_dir), np.random.default_rng(2)

    def swap(sentence):
        return " ".join(str(rng.choice(words)) if rng.random() < 0.3 else w for w in sentence.split())
    e = _embed(texts[:4000] + [swap(t) for t in texts[4000:]], minilm)
    return e[:4000], e[4000:]


@pytest.mark.slow
@pytest.mark.parametrize("pools,n,draws", [("large_pools", 100, 160), ("large_pools", 200, 100),
                                           ("degraded_pools", 100, 160)])
def test_coverage_full(request, pools, n, draws):
    ref_pool, cand_pool = request.getfixturevalue(pools)
    cov, truth, spread = coverage(ref_pool, cand_pool, n=n, num_draws=draws, num_resamples=1000)
    names = ("petersen", "schnabel_quality", "schnabel_diversity", "capture(visits)")
    print(f"\n{pools}, n={n}, {draws} draws, subsampling (fraction 0.75):")
    for name, c, t, sd in zip(names, cov, truth, spread):
        print(f"  {name}: coverage {c:.3f}, expected value {t:.4f} (sd {sd:.4f})")
    assert np.all(cov >= 0.88) and np.mean(cov) >= 0.92, cov
    boot, _, _ = coverage(ref_pool, cand_pool, n=n, num_draws=40, num_resamples=1000, method="bca")
    print(f"  bootstrap BCa, 40 draws: {dict(zip(names, np.round(boot, 3)))}")
    assert np.mean(boot) < 0.7, boot
