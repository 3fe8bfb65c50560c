"""NGramState: merge == the corpus-level functions on the whole corpus; capacity errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.diversity import NGramState, NGramStats, encode_sequences, ngram_count_stats
from jaxmetrics.state import merge_all
from state_helpers import random_splits, padded, corpus, pad_sequences


def test_ngram_state_merge_equals_area_functions(rng):
    from jaxmetrics.diversity import distinct_n, ngram_entropy, zipf_coefficient

    seqs = corpus(rng)
    ids, lengths = pad_sequences(seqs)
    for trial in range(2):
        parts = [padded(i, 21) for i in random_splits(rng, len(seqs), 4)]
        got = merge_all([NGramState.empty(max_n=4, capacity=256).update(ids[i], lengths[i] * m)
                         for i, m in parts])
        one = NGramState.empty(max_n=4, capacity=256).update(ids, lengths)
        np.testing.assert_array_equal(got.counts, one.counts)  # integer counts: exact
        np.testing.assert_array_equal(got.keys, one.keys)
        out = got.compute()
        assert isinstance(out, NGramStats)
        for n in range(1, 5):
            assert out.distinct[n - 1] == pytest.approx(distinct_n(seqs, n), abs=1e-12)
            assert out.entropy[n - 1] == pytest.approx(ngram_entropy(seqs, n), abs=1e-5)
        assert got.zipf() == pytest.approx(zipf_coefficient(seqs), abs=1e-5)
    # the state's compute equals the one-batch kernel on the whole corpus
    enc = encode_sequences(seqs, allow_empty=True)
    kernel = ngram_count_stats(enc.ids, enc.lengths, 4)
    np.testing.assert_array_equal(out.unique, kernel.unique)
    np.testing.assert_array_equal(out.total, kernel.total)
    np.testing.assert_allclose(out.distinct, kernel.distinct, rtol=1e-6)
    np.testing.assert_allclose(out.entropy, kernel.entropy, rtol=1e-5)
    # definition: "1 2 1 2" + "1 2 3" -> bigrams {12: 3, 21: 1, 23: 1}
    s = NGramState.empty(max_n=2, capacity=8).update(np.array([[1, 2, 1, 2], [1, 2, 3, 0]]), np.array([4, 3]))
    out = s.compute()
    assert out.unique.tolist() == [3, 3] and out.total.tolist() == [7, 5]
    assert out.distinct.tolist() == [3 / 7, 3 / 5]
    p = np.array([3, 1, 1]) / 5
    assert out.entropy[1] == pytest.approx(-(p * np.log(p)).sum(), rel=1e-12)
    assert set(out.to_dict()) == {"unique", "total", "distinct", "entropy"}


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
    with pytest.raises(ValueError, match="^max_num"):
        a.zipf(max_num=2)
    with pytest.raises(ValueError, match="^state:.*3 distinct"):
        a.zipf()
