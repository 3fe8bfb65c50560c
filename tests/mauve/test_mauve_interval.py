"""MAUVE with confidence intervals (``jaxmetrics.mauve.compute_mauve_interval``).

* definition: every seed's value is ``compute_mauve(seed=s)``'s, the value is
  ``compute_mauve_seeds``' mean, the interval holds it and stays in [0, 1];
* coverage on real text (slow): all-MiniLM-L6-v2 features of Shakespeare sentences against a
  half-degraded set; the 95 % interval from one draw of 200 rows per side covers the
  estimator's value at that size (the mean over all draws) in 90-99 % of 45 disjoint draws.
"""

import numpy as np
import pytest

from jaxmetrics.mauve import compute_mauve, compute_mauve_interval, compute_mauve_seeds


@pytest.fixture(scope="module")
def pq():
    rng = np.random.default_rng(0)
    p = rng.normal(size=(300, 16)).astype(np.float32)
    q = (rng.normal(size=(300, 16)) + 0.3).astype(np.float32)
    return p, q


def test_seed_values_and_mean_are_the_pipelines(pq):
    p, q = pq
    out = compute_mauve_interval(p, q, seeds=(1, 2, 3), num_resamples=300)
    for s, v, fi in zip((1, 2, 3), out.seed_mauve, out.seed_frontier_integral):
        ref = compute_mauve(p_features=p, q_features=q, seed=s)
        assert v == pytest.approx(ref.mauve, abs=1e-12) and fi == pytest.approx(ref.frontier_integral, abs=1e-12)
    seeds = compute_mauve_seeds(p, q, seeds=(1, 2, 3))
    assert out.mauve.value == pytest.approx(seeds.mauve_mean, abs=1e-12)
    assert out.seed_std == pytest.approx(seeds.mauve_std, abs=1e-12)
    for ci in (out.mauve, out.frontier_integral):
        assert 0.0 <= ci.low < ci.value < ci.high <= 1.0
        assert ci.method == "reflected" and ci.num_resamples == 300
    # both spreads are in the interval: its standard error exceeds each part
    assert out.mauve.standard_error > out.sampling_standard_error
    assert out.mauve.standard_error > out.seed_std / np.sqrt(3)
    assert "bootstrap:reflected" in out.signature and "seeds:1,2,3" in out.signature


def test_one_seed_has_no_quantization_part_and_identical_sides_stay_below_one(pq):
    p, _ = pq
    out = compute_mauve_interval(p, p, seeds=(4,), num_resamples=300)
    assert out.seed_std == 0.0
    assert out.mauve.standard_error == pytest.approx(out.sampling_standard_error)
    assert out.mauve.value == pytest.approx(1.0) and out.mauve.high <= 1.0 and out.mauve.low < 1.0
    assert out.frontier_integral.low >= 0.0


@pytest.mark.parametrize("kw,match", [
    ({"seeds": ()}, "seeds: at least one"),
    ({"num_resamples": 1}, "num_resamples"),
    ({"confidence": 1.5}, "confidence"),
])
def test_bad_arguments_are_named(pq, kw, match):
    p, q = pq
    with pytest.raises(ValueError, match=match):
        compute_mauve_interval(p, q, **kw)


@pytest.mark.slow
def test_interval_covers_the_estimators_value_on_real_text(minilm):
    from realtext_family import _repeat, shakespeare_sentences

    from jaxmetrics.models import sentence_embeddings

    sents = list(shakespeare_sentences())
    idx = np.random.default_rng(0).permutation(len(sents))
    n, pool = 200, 3000
    P = [sents[i] for i in idx[:pool]]
    Q = [_repeat(s) if j % 2 else s for j, s in enumerate(sents[i] for i in idx[pool:2 * pool])]
    fp = sentence_embeddings(P, model=minilm, progress=False)
    fq = sentence_embeddings(Q, model=minilm, progress=False)
    rng = np.random.default_rng(1)
    rows = []
    for part in range(3):
        ip, iq = rng.permutation(pool), rng.permutation(pool)
        for j in range(pool // n):
            out = compute_mauve_interval(fp[ip[j * n:(j + 1) * n]], fq[iq[j * n:(j + 1) * n]],
                                         seeds=tuple(part * 1000 + j * 10 + t for t in range(3)), num_resamples=500)
            rows.append((out.mauve.value, out.mauve.low, out.mauve.high))
    rows = np.array(rows)
    target = rows[:, 0].mean()                     # the estimator's value at n = 200, k = 20
    assert 0.3 < target < 0.9                       # away from the bounds, where coverage means something
    coverage = np.mean((rows[:, 1] <= target) & (target <= rows[:, 2]))
    assert 0.90 <= coverage <= 0.99, coverage
