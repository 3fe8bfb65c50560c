"""Bootstrap confidence intervals (``jaxmetrics.confidence``).

* definition: the percentile and BCa intervals against ``scipy.stats.bootstrap`` on the same
  data (Monte-Carlo error only: many resamples on both sides);
* coverage, not by eye: on real data (all-MiniLM-L6-v2 BERTScore F1 of real sentence pairs; the
  bundled GPT-2's per-document NLL of held-out speeches), the 95 % interval from one subsample
  covers the pool's value in 90-99 % of draws, and its width shrinks as 1/sqrt(n);
* pytrees, several samples, jit / vmap, keys and bad input.
"""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics import confidence_interval
from jaxmetrics.confidence import Interval


def _skewed(n=40, seed=0):
    return np.random.default_rng(seed).lognormal(size=n)


@pytest.mark.parametrize("method,scipy_method", [("percentile", "percentile"), ("bca", "BCa")])
def test_interval_matches_scipy_bootstrap(method, scipy_method):
    from scipy.stats import bootstrap

    x = _skewed()
    ours = confidence_interval(jnp.mean, jnp.asarray(x, jnp.float32), key=jax.random.key(0),
                               num_resamples=20_000, method=method)
    ref = bootstrap((x,), np.mean, n_resamples=20_000, method=scipy_method, confidence_level=0.95,
                    random_state=np.random.default_rng(0)).confidence_interval
    width = ref.high - ref.low
    assert abs(float(ours.low) - ref.low) < 0.03 * width
    assert abs(float(ours.high) - ref.high) < 0.03 * width
    assert float(ours.value) == pytest.approx(x.mean(), rel=1e-6)


def test_bca_corrects_towards_the_skew_and_percentile_does_not():
    x = jnp.asarray(_skewed(seed=3), jnp.float32)
    bca = confidence_interval(jnp.mean, x, key=jax.random.key(1), num_resamples=4000)
    pct = confidence_interval(jnp.mean, x, key=jax.random.key(1), num_resamples=4000, method="percentile")
    # same resamples, so the same spread; a right-skewed mean moves BCa's interval to the right
    assert float(bca.standard_error) == float(pct.standard_error)
    assert float(bca.low) > float(pct.low) and float(bca.high) > float(pct.high)


def test_symmetric_data_give_a_symmetric_interval():
    x = jnp.concatenate([jnp.arange(-50.0, 0.0), -jnp.arange(-50.0, 0.0)])   # mean 0, symmetric
    ci = confidence_interval(jnp.mean, x, key=jax.random.key(2), num_resamples=8000)
    assert abs(float(ci.low + ci.high)) < 0.1 * float(ci.high - ci.low)


def test_pytree_samples_stay_paired_and_samples_resample_independently():
    nll = jnp.asarray([10.0, 20.0, 30.0, 40.0])
    count = jnp.asarray([5.0, 10.0, 15.0, 20.0])            # nll / count = 2 in every document
    ci = confidence_interval(lambda d: jnp.exp(d["nll"].sum() / d["count"].sum()), {"nll": nll, "count": count},
                             key=jax.random.key(0), num_resamples=200)
    # paired resampling keeps every ratio at 2: the interval is a point
    assert float(ci.low) == pytest.approx(np.exp(2.0), rel=1e-6) and float(ci.high) == pytest.approx(np.exp(2.0), rel=1e-6)
    a, b = jnp.zeros(30), jnp.arange(30.0)
    d = confidence_interval(lambda u, v: v.mean() - u.mean(), a, b, key=jax.random.key(0), num_resamples=500,
                            method="percentile")
    assert float(d.standard_error) > 0 and float(d.value) == pytest.approx(14.5)


def test_vector_statistics_get_elementwise_intervals():
    x = jnp.asarray(np.random.default_rng(0).normal(size=(60, 3)) + np.array([0.0, 5.0, -5.0]), jnp.float32)
    ci = confidence_interval(lambda v: v.mean(0), x, key=jax.random.key(0), num_resamples=500)
    assert ci.value.shape == ci.low.shape == ci.high.shape == (3,)
    assert bool(jnp.all(ci.low < ci.value)) and bool(jnp.all(ci.value < ci.high))
    assert float(ci.low[1]) > 4.0 and float(ci.high[2]) < -4.0


def test_reproducible_for_a_key_and_jittable_and_vmappable():
    x = jnp.asarray(_skewed(), jnp.float32)
    a = confidence_interval(jnp.mean, x, key=jax.random.key(5), num_resamples=300)
    b = jax.jit(lambda v, k: confidence_interval(jnp.mean, v, key=k, num_resamples=300))(x, jax.random.key(5))
    c = confidence_interval(jnp.mean, x, key=jax.random.key(6), num_resamples=300)
    np.testing.assert_allclose([a.low, a.high], [b.low, b.high], rtol=1e-5)
    assert float(a.low) != float(c.low)
    many = jax.vmap(lambda v, k: confidence_interval(jnp.mean, v, key=k, num_resamples=300))(
        jnp.stack([x, x * 2]), jax.random.split(jax.random.key(5), 2))
    assert isinstance(many, Interval) and many.low.shape == (2,)
    chunked = confidence_interval(jnp.mean, x, key=jax.random.key(5), num_resamples=300, batch_size=7)
    np.testing.assert_allclose([a.low, a.high], [chunked.low, chunked.high], rtol=1e-5)


@pytest.mark.parametrize("kwargs,args,match", [
    ({}, (), "samples: give at least one"),
    ({}, (jnp.float32(1.0),), "samples[0]: every array needs a leading axis"),
    ({}, (jnp.ones(1),), "samples[0]: needs at least 2 items"),
    ({}, ({"a": jnp.ones(3), "b": jnp.ones(4)},), "samples[0]: its arrays have different numbers of items"),
    ({}, (jnp.ones(3), {}), "samples[1]: has no arrays"),
    ({"num_resamples": 1}, (jnp.ones(3),), "num_resamples"),
    ({"confidence": 1.0}, (jnp.ones(3),), "confidence"),
    ({"method": "studentized"}, (jnp.ones(3),), "method"),
])
def test_bad_input_names_the_argument(kwargs, args, match):
    with pytest.raises(ValueError, match=re.escape(match)):
        confidence_interval(jnp.mean, *args, key=jax.random.key(0), **kwargs)


def test_a_statistic_that_is_nan_on_the_data_is_refused():
    with pytest.raises(ValueError, match="statistic: not finite"):
        confidence_interval(jnp.mean, jnp.asarray([1.0, jnp.nan]), key=jax.random.key(0))
    with pytest.raises(TypeError, match="statistic: expected a function"):
        confidence_interval(3.0, jnp.ones(3), key=jax.random.key(0))
    with pytest.raises(TypeError):
        confidence_interval(jnp.mean, jnp.ones(3))          # the key is required


# --------------------------------------------------------------------- coverage on real data
def _draws(pool: np.ndarray, n: int, partitions: int, seed: int = 0) -> np.ndarray:
    """Disjoint subsamples of ``n`` items (within each of ``partitions`` random partitions)."""
    rng = np.random.default_rng(seed)
    per = len(pool) // n
    return np.concatenate([pool[rng.permutation(len(pool))[: per * n]].reshape(per, n, *pool.shape[1:])
                           for _ in range(partitions)])


def _coverage(stat, draws, truth, seed):
    keys = jax.random.split(jax.random.key(seed), len(draws))
    ci = jax.vmap(lambda d, k: confidence_interval(stat, d, key=k, num_resamples=1000))(jnp.asarray(draws), keys)
    covered = np.asarray((ci.low <= truth) & (truth <= ci.high))
    return covered.mean(), float(np.mean(np.asarray(ci.high - ci.low)))


@pytest.fixture(scope="module")
def real_f1(minilm):
    from jaxmetrics import compute_similarity
    from jaxmetrics.data import load_shakespeare

    sents = []
    for speech in load_shakespeare("train"):
        sents += [s for s in re.split(r"(?<=[.!?])\s+", speech) if 8 <= len(s.split()) <= 30]
    sents = sents[:1001]
    res = compute_similarity(references=sents[:-1], candidates=sents[1:], model=minilm, metric="bertscore")
    return np.asarray(res.f1, np.float64)


def test_bertscore_mean_interval_covers_the_pool_mean_and_shrinks_as_one_over_sqrt_n(real_f1):
    truth = real_f1.mean()
    cov20, w20 = _coverage(jnp.mean, _draws(real_f1, 20, 5).astype(np.float32), truth, seed=0)
    cov80, w80 = _coverage(jnp.mean, _draws(real_f1, 80, 20).astype(np.float32), truth, seed=1)
    assert 0.90 <= cov20 <= 0.99, cov20
    assert 0.90 <= cov80 <= 0.99, cov80
    assert 1.7 <= w20 / w80 <= 2.3, w20 / w80          # sqrt(80 / 20) = 2


@pytest.mark.real_model
def test_corpus_perplexity_interval_over_documents_covers_the_pool_value():
    from jaxmetrics import text_perplexities
    from jaxmetrics.data import demo_model_dir, load_shakespeare

    docs = load_shakespeare("heldout", min_words=5, limit=1500)
    res = text_perplexities(docs, model=demo_model_dir(), max_length=128)
    pool = np.stack([res.nll, res.num_tokens], axis=1)   # per document: NLL sum, scored tokens
    truth = np.exp(pool[:, 0].sum() / pool[:, 1].sum())
    stat = lambda d: jnp.exp(d[:, 0].sum() / d[:, 1].sum())
    cov, _ = _coverage(stat, _draws(pool, 40, 10).astype(np.float32), truth, seed=2)
    assert 0.90 <= cov <= 0.99, cov
