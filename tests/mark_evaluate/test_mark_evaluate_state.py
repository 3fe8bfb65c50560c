"""IMPAR / Mark-Evaluate / PRD / FID (and MAUVE) buffer states equal the one-shot functions."""
import jax
import numpy as np
import pytest

from jaxmetrics.mark_evaluate import (
    MarkEvaluateScores,
    PRDCurve,
    PrecisionRecall,
    fid,
    improved_precision_recall,
    mark_evaluate_scores,
    prd,
)
from jaxmetrics.mark_evaluate.state import FIDState, IMPARState, MarkEvaluateState, PRDState
from jaxmetrics.mauve.pipeline.state import MauveState
from jaxmetrics.state import merge_all
from state_helpers import padded, random_splits


def test_impar_state_equals_improved_precision(rng, feats):
    ref, cand = feats
    want = improved_precision_recall(references=ref, candidates=cand, k=3).precision
    parts = [padded(i, 38) for i in random_splits(rng, 40, 3)]
    empty = IMPARState.empty(references=ref, k=3)
    got = merge_all([empty.update(candidates=cand[i], candidates_mask=m) for i, m in parts])
    assert int(got.count) == 40
    assert float(got.compute()) == pytest.approx(float(want), abs=1e-12)
    masked = empty.update(candidates=cand[:38], candidates_mask=np.arange(38) < 10)
    assert int(masked.count) == 10
    want10 = improved_precision_recall(references=ref, candidates=cand[:10], k=3).precision
    assert int(masked.inside) == round(float(want10) * 10)
    with pytest.raises(ValueError, match="^other:"):
        got.merge(IMPARState.empty(references=cand, k=3))
    with pytest.raises(ValueError, match="^k:"):
        IMPARState.empty(references=ref[:3], k=3)
    with pytest.raises(ValueError, match="^candidates:"):
        empty.update(candidates=np.ones((2, 5)))
    with pytest.raises(ValueError, match="^candidates_mask:"):
        empty.update(candidates=cand[:4], candidates_mask=np.ones(3, bool))
    with pytest.raises(ValueError, match="^state:"):
        empty.compute()


def test_impar_state_update_under_jit(feats):
    ref, cand = feats
    empty = IMPARState.empty(references=ref, k=3)
    traces = []

    @jax.jit
    def step(s, c, m):
        traces.append(1)
        return s.update(candidates=c, candidates_mask=m)

    m = np.ones(20, bool)
    s = step(step(empty, cand[:20], m), cand[20:], m)
    assert len(traces) == 1
    assert int(s.inside) == int(empty.update(candidates=cand).inside)


def test_buffer_states_equal_area_functions(feats):
    """Buffered features merged in stream order give the areas' one-shot values."""
    from jaxmetrics.mauve import compute_mauve

    ref, cand = feats
    cuts = [0, 7, 25, 40]
    me = merge_all([MarkEvaluateState.empty(64, 4).update(references=ref[a:b], candidates=cand[a:b])
                    for a, b in zip(cuts, cuts[1:])])
    want = mark_evaluate_scores(references=ref, candidates=cand, k=3)
    got = me.compute(k=3)
    assert isinstance(got, MarkEvaluateScores) and got.to_dict() == want.to_dict()
    impar = me.impar(k=3)
    assert isinstance(impar, PrecisionRecall)
    assert impar.to_dict() == improved_precision_recall(references=ref, candidates=cand, k=3).to_dict()
    with pytest.raises(ValueError, match="^candidates:"):
        MarkEvaluateState.empty(8, 4).update(references=ref[:5]).compute()

    key = jax.random.key(1)
    pr = merge_all([PRDState.empty(40, 4).update(references=ref[a:b], candidates=cand[a:b])
                    for a, b in zip(cuts, cuts[1:])])
    kw = dict(num_buckets=4, num_runs=2, num_angles=11, max_iter=10)
    curve = pr.compute(key=key, **kw)
    assert isinstance(curve, PRDCurve)
    np.testing.assert_array_equal(curve.precision, prd(references=ref, candidates=cand, key=key, **kw).precision)
    with pytest.raises(TypeError):
        pr.compute(**kw)  # key is required

    mv = merge_all([MauveState.empty(40, 4).update(references=cand[a:b], candidates=ref[a:b])
                    for a, b in zip(cuts, cuts[1:])])
    kw = dict(num_buckets=4, kmeans_num_redo=1, kmeans_max_iter=20)
    assert mv.compute(**kw).mauve == compute_mauve(p_features=cand, q_features=ref, **kw).mauve
    with pytest.raises(ValueError, match="capacity"):
        mv.merge(mv)
    with pytest.raises(ValueError, match="^candidates:"):
        MauveState.empty(4, 4).update(references=ref[:2]).compute()


def test_fid_state_equals_fid(rng, feats, x64):
    ref, cand = (a.astype(np.float64) for a in feats)
    parts_r, parts_c = random_splits(rng, 40, 3), random_splits(rng, 40, 4)
    st = merge_all([FIDState.empty(4).update(references=ref[i]) for i in parts_r]
                   + [FIDState.empty(4).update(candidates=cand[i]) for i in parts_c])
    assert float(st.compute()) == pytest.approx(float(fid(references=ref, candidates=cand)), rel=1e-10)
    with pytest.raises(ValueError, match="^candidates:"):
        FIDState.empty(4).update(references=ref).compute()
    with pytest.raises(ValueError, match="^references:"):
        FIDState.empty(4).update(references=ref[:, :3])
