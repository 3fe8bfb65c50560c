"""States of the log-prob metrics: merge over shuffled batch splits == one shot."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.lm.state import LMScoreState, PerplexityState
from jaxmetrics.state import merge_all
from state_helpers import random_splits, padded


def test_perplexity_state_merge_equals_one_shot(rng, lm_batch):
    from jaxmetrics.lm import perplexity_stats

    logits, targets, mask = lm_batch
    want = perplexity_stats(logits, targets, mask)
    for _ in range(3):
        parts = [padded(i, 9) for i in random_splits(rng, 12, 4)]
        states = [PerplexityState.empty().update(logits[i], targets[i], mask[i] & m[:, None])
                  for i, m in parts]
        got = merge_all(states)
        assert int(got.count) == int(want.count)  # integer counts: exact
        np.testing.assert_allclose(float(got.nll_sum), float(want.nll_sum), rtol=1e-5)
        np.testing.assert_allclose(float(got.compute()), float(want.compute()), rtol=1e-5)
        # associativity: a+(b+(c+d)) == ((a+b)+c)+d
        right = states[0].merge(states[1].merge(states[2].merge(states[3])))
        np.testing.assert_allclose(float(right.nll_sum), float(got.nll_sum), rtol=1e-6)
    # definition: uniform logits over V=7 -> perplexity 7
    s = PerplexityState.empty().update(np.zeros((3, 7)), np.array([0, 3, 6]))
    assert float(s.compute()) == pytest.approx(7.0, rel=1e-6)

def test_perplexity_state_add_window_sums(lm_batch):
    """``add`` folds per-window sums (the output of score_windows), dropping padded windows."""
    from jaxmetrics.lm import WindowScores, token_nll

    logits, targets, mask = lm_batch
    nll = np.asarray(token_nll(logits, targets, mask)).sum(axis=1)
    cnt = mask.sum(axis=1)
    win_mask = np.arange(12) < 10
    s = PerplexityState.empty().add(WindowScores(nll, cnt), win_mask)
    assert int(s.count) == int(cnt[:10].sum())
    np.testing.assert_allclose(float(s.nll_sum), nll[:10].sum(), rtol=1e-5)

def test_lm_score_state_merge_equals_one_shot(rng, lm_batch):
    from jaxmetrics.lm import lm_scores

    logits, targets, mask = lm_batch
    kw = dict(epsilon=1e-3, temperature=0.9, top_k=5)
    want = lm_scores(logits, targets, mask, **kw)
    parts = [padded(i, 10) for i in random_splits(rng, 12, 3)]
    got = merge_all([LMScoreState.empty(**kw).update(logits[i], targets[i], mask[i] & m[:, None])
                     for i, m in parts])
    out = got.compute().to_dict()
    assert out["num_tokens"] == want.num_tokens == int(mask.sum())
    for k, v in want.to_dict().items():
        if np.isinf(v):
            assert np.isinf(out[k])
        else:
            assert out[k] == pytest.approx(v, rel=1e-5)
    with pytest.raises(ValueError, match="^other:.*transform"):
        got.merge(LMScoreState.empty(epsilon=0.0))
    with pytest.raises(ValueError, match="^other:.*transform"):
        got.merge(LMScoreState.empty(epsilon=1e-3, temperature=0.9))
    with pytest.raises(ValueError, match="^top_p:"):
        LMScoreState.empty(top_p=1.5)
    with pytest.raises(ValueError, match="^state:"):
        LMScoreState.empty().compute()
