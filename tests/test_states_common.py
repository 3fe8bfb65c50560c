"""Every state passes through jit without retrace; merge_stacked == merge_all; type errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.diversity.state import NGramState
from jaxmetrics.lm.state import LMScoreState, PerplexityState
from jaxmetrics.mark_evaluate.state import FIDState, IMPARState, MarkEvaluateState, PRDState
from jaxmetrics.mauve.pipeline.state import MauveState
from jaxmetrics.similarity.state import SimilarityState
from jaxmetrics.state import merge_all, merge_stacked
from state_helpers import corpus, pad_sequences


def test_states_pass_through_jit_without_retrace(rng, lm_batch, feats):
    """A jitted update step compiles once per state type and batch shape; jit == eager."""
    logits, targets, mask = lm_batch
    ref, cand = feats
    ids, lengths = pad_sequences(corpus(rng, n=8))
    emb = rng.normal(size=(8, 5, 8)).astype(np.float32)
    em = np.ones((8, 5), bool)
    cases = [
        (PerplexityState.empty(), lambda s, b: s.update(*b), (logits, targets, mask)),
        (LMScoreState.empty(epsilon=0.01), lambda s, b: s.update(*b), (logits, targets, mask)),
        (SimilarityState.empty("bertscore"),
         lambda s, b: s.update(candidates=b[0], references=b[1], candidates_mask=b[2], references_mask=b[3]),
         (emb, emb, em, em)),
        (NGramState.empty(3, 128), lambda s, b: s.update(*b), (ids, lengths)),
        (IMPARState.empty(references=ref, k=3), lambda s, b: s.update(candidates=b[0]), (cand,)),
        (MarkEvaluateState.empty(16, 4), lambda s, b: s.update(references=b[0], candidates=b[1]), (ref, cand)),
        (FIDState.empty(4), lambda s, b: s.update(references=b[0], candidates=b[1]), (ref, cand)),
        (MauveState.empty(16, 4), lambda s, b: s.update(references=b[0], candidates=b[1]), (ref, cand)),
        (PRDState.empty(16, 4), lambda s, b: s.update(references=b[0], candidates=b[1]), (ref, cand)),
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
    ids, lengths = pad_sequences(corpus(rng, n=12))
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
    with pytest.raises(ValueError, match="^state:"):
        PerplexityState.empty().compute()
