"""SimilarityState: merge over shuffled batch splits == one shot; PRF results; bad input."""
import jax
import numpy as np
import pytest

from jaxmetrics.similarity import PRF
from jaxmetrics.similarity.state import SimilarityState
from jaxmetrics.state import merge_all
from state_helpers import random_splits, padded


def _batch(cand, ref, cm, rm):
    return dict(candidates=cand, references=ref, candidates_mask=cm, references_mask=rm)


@pytest.mark.parametrize("metric", ["bertscore", "twmd"])
def test_similarity_state_merge_equals_one_shot(rng, metric):
    from jaxmetrics.similarity import batch_bertscore, batch_similarity

    cand = rng.normal(size=(10, 6, 8)).astype(np.float32)
    ref = rng.normal(size=(10, 5, 8)).astype(np.float32)
    cm = np.arange(6)[None] < rng.integers(2, 7, size=10)[:, None]
    rm = np.arange(5)[None] < rng.integers(2, 6, size=10)[:, None]
    if metric == "bertscore":
        prf = batch_bertscore(**_batch(cand, ref, cm, rm))
    else:
        prf = batch_similarity(**_batch(cand, ref, cm, rm), metric="twmd", temperature=0.1)
    want = [float(np.mean(v)) for v in prf]
    parts = [padded(i, 8) for i in random_splits(rng, 10, 3)]
    got = merge_all([SimilarityState.empty(metric, temperature=0.1).update(
        **_batch(cand[i], ref[i], cm[i], rm[i]), pair_mask=m) for i, m in parts]).compute()
    assert isinstance(got, PRF)
    assert [float(v) for v in got] == pytest.approx(want, rel=1e-5)
    # a padded pair is not counted
    pad = SimilarityState.empty(metric, temperature=0.1).update(
        **_batch(cand[:8], ref[:8], cm[:8], rm[:8]), pair_mask=np.arange(8) < 3)
    assert int(pad.count) == 3
    # add() folds in scores computed elsewhere; compute() also runs inside jit
    added = SimilarityState.empty(metric, temperature=0.1).add(prf)
    assert [float(v) for v in jax.jit(lambda s: s.compute())(added)] == pytest.approx(want, rel=1e-5)
    with pytest.raises(ValueError, match="^metric:"):
        SimilarityState.empty("bleu")
    with pytest.raises(ValueError, match="^temperature:"):
        SimilarityState.empty(metric, temperature=0.0)
    with pytest.raises(ValueError, match="^state:"):
        SimilarityState.empty(metric).compute()
    with pytest.raises(TypeError, match="^scores:"):
        SimilarityState.empty(metric).add((prf.precision, prf.recall, prf.f1))
    with pytest.raises(ValueError, match="^other:"):
        SimilarityState.empty(metric, temperature=0.1).merge(SimilarityState.empty(metric, temperature=0.2))
