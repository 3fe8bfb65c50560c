"""MAUVE with confidence intervals (``compute_mauve_seeds(references=..., confidence=0.95)``).

* definition: the seeds' values and mean are those without ``confidence``, the interval holds
  the mean, stays in [0, 1] and contains both spreads;
* coverage on real text (slow): all-MiniLM-L6-v2 features of Shakespeare sentences against a
  half-degraded set; the 95 % interval from one draw of 200 rows per side covers the
  estimator's value at that size (the mean over all draws) in 90-99 % of 45 disjoint draws.
"""

import numpy as np
import pytest

from jaxmetrics.mauve import compute_mauve_seeds


PQ = dict(n=300, d=16, shift=0.3)  # the pq fixture: tests/conftest.py


def test_intervals_hold_the_seed_means_and_both_spreads(pq):
    p, q = pq
    out = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2, 3), confidence=0.95, num_resamples=300)
    plain = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2, 3))
    assert plain.mauve_interval is None and plain.sampling_standard_error is None
    np.testing.assert_array_equal(out.mauve, plain.mauve)
    for ci, mean in ((out.mauve_interval, plain.mauve_mean),
                     (out.frontier_integral_interval, plain.frontier_integral_mean)):
        assert ci.value == pytest.approx(mean, abs=1e-12)
        assert 0.0 <= ci.low < ci.value < ci.high <= 1.0
        assert ci.method == "reflected" and ci.num_resamples == 300 and ci.confidence == 0.95
    # both spreads are in the interval: its standard error exceeds each part
    assert out.mauve_interval.standard_error > out.sampling_standard_error > 0
    assert out.mauve_interval.standard_error > out.mauve_std / np.sqrt(3)
    assert "bootstrap:reflected" in out.signature and "bootstrap" not in plain.signature
    wider = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2, 3), confidence=0.99, num_resamples=300).mauve_interval
    assert wider.low < out.mauve_interval.low and wider.high > out.mauve_interval.high


def test_one_seed_has_no_quantization_part_and_identical_sides_stay_below_one(pq):
    p, _ = pq
    out = compute_mauve_seeds(references=p, candidates=p, seeds=(4,), confidence=0.95, num_resamples=300)
    assert out.mauve_std == 0.0
    assert out.mauve_interval.standard_error == pytest.approx(out.sampling_standard_error)
    ci = out.mauve_interval
    assert ci.value == pytest.approx(1.0) and ci.high <= 1.0 and ci.low < 1.0
    assert out.frontier_integral_interval.low >= 0.0


@pytest.mark.parametrize("kw,match", [
    ({"num_resamples": 1}, "num_resamples"),
    ({"confidence": 1.5}, "confidence"),
])
def test_bad_arguments_are_named(pq, kw, match):
    p, q = pq
    with pytest.raises(ValueError, match=match):
        compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2), **{"confidence": 0.95, **kw})


@pytest.mark.parametrize("estimator", ["knn", "classifier", "gaussian"])
def test_density_ratio_estimators_are_refused_by_name_before_featurizing(monkeypatch, estimator):
    """The intervals resample one quantizer's bins: a density-ratio estimator is refused, naming it,
    before any text is featurized (texts and a model given: nothing is loaded or encoded)."""
    import jaxmetrics.mauve.pipeline.compute as compute
    from jaxmetrics.mauve import FrontierSettings

    def no_work(*args, **kwargs):
        raise AssertionError("features were prepared before the estimator was refused")

    monkeypatch.setattr(compute, "_prepare", no_work)
    with pytest.raises(ValueError, match=f"^confidence: intervals need estimator='quantized', not '{estimator}'"):
        compute_mauve_seeds(references=["a human text"] * 4, candidates=["a model text"] * 4, model="no/such/model",
                            seeds=(1, 2), estimator=estimator, confidence=0.95)
    with pytest.raises(ValueError, match="^confidence: intervals are for divergence='kl'"):
        compute_mauve_seeds(references=["a human text"] * 4, candidates=["a model text"] * 4, model="no/such/model",
                            seeds=(1, 2), frontier=FrontierSettings(divergence="tv"), confidence=0.95)


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
            ci = compute_mauve_seeds(references=fp[ip[j * n:(j + 1) * n]], candidates=fq[iq[j * n:(j + 1) * n]], confidence=0.95,
                                     seeds=tuple(part * 1000 + j * 10 + t for t in range(3)),
                                     num_resamples=500).mauve_interval
            rows.append((ci.value, ci.low, ci.high))
    rows = np.array(rows)
    target = rows[:, 0].mean()                     # the estimator's value at n = 200, k = 20
    assert 0.3 < target < 0.9                       # away from the bounds, where coverage means something
    coverage = np.mean((rows[:, 1] <= target) & (target <= rows[:, 2]))
    assert 0.90 <= coverage <= 0.99, coverage
