"""n-gram diversity metrics, Self-BLEU and the MAUVE-paper text statistics.

References: nltk ``sentence_bleu`` (method1), plain-Python transcriptions of the
definitions (Tevet & Berant's ``utils.lines_to_ngrams`` / ``DistinctNgrams`` /
``CosineSimilarity``; the MAUVE experiments' Zipf and repetition code), scipy.stats.
"""
from __future__ import annotations

import math
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.diversity import (
    averaged_distinct_n,
    bleu_from_stats,
    distinct_n,
    encode_sequences,
    encode_sets,
    ngram_cosine_diversity,
    ngram_cosine_matrix,
    ngram_count_stats,
    ngram_entropy,
    repetition_flags,
    repetition_fraction,
    self_bleu,
    self_bleu_scores,
    self_bleu_stats,
    tevet_tokenize,
    termination_ratio,
    zipf_coefficient,
)
from jaxmetrics.diversity import ngram_ids


# ---------------------------------------------------------------------------------------
# plain-Python transcriptions of the definitions
# ---------------------------------------------------------------------------------------

def py_ngrams(tokens, n):
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def py_distinct(seqs, n):
    allg = [g for s in seqs for g in py_ngrams(s, n)]
    return len(set(allg)) / len(allg) if allg else 0.0


def py_cosine(a, b, n):
    ca, cb = Counter(py_ngrams(a, n)), Counter(py_ngrams(b, n))
    if not (set(ca) & set(cb)):
        return 0.0
    dot = sum(ca[g] * cb[g] for g in ca)
    return dot / math.sqrt(sum(v * v for v in ca.values()) * sum(v * v for v in cb.values()))


def py_entropy(seqs, n):
    c = Counter(g for s in seqs for g in py_ngrams(s, n))
    tot = sum(c.values())
    return -sum(v / tot * math.log(v / tot) for v in c.values()) if tot else 0.0


def py_rep(gen, max_n=500):
    rev = list(reversed(gen))
    copies = []
    for n in range(1, max_n + 1):
        k = 1
        while rev[n * k:n * (k + 1)] == rev[:n] and len(rev[n * k:n * (k + 1)]) == n:
            k += 1
        copies.append(k)
    best = max(range(max_n), key=lambda i: copies[i])
    return copies[best] > 1 and (best + 1 >= 3 or copies[best] > 50)


def random_token_seqs(rng, count, vocab=12, max_len=30, min_len=0):
    out = [list(rng.integers(0, vocab, size=int(rng.integers(min_len, max_len + 1))))
           for _ in range(count)]
    return [[int(t) for t in s] for s in out]


# ---------------------------------------------------------------------------------------
# tokenisation and ids
# ---------------------------------------------------------------------------------------

def test_tevet_tokenize_rule():
    assert tevet_tokenize("I like it. You?\nYes  ok") == ["I", "like", "it", "You?Yes", "ok"]
    assert tevet_tokenize("...") == []


def test_ngram_ids_are_exact(rng):
    seqs = random_token_seqs(rng, 20, vocab=4, max_len=12)
    enc = encode_sequences(seqs, allow_empty=True)
    ids, lengths = enc.ids, enc.lengths
    g = ngram_ids(ids, lengths, max_n=4)
    gid, valid = g.ids, g.valid
    gid, valid = np.asarray(gid), np.asarray(valid)
    for n in range(1, 5):
        seen = {}
        for b, s in enumerate(seqs):
            for t in range(ids.shape[1]):
                assert valid[n - 1, b, t] == (t + n <= len(s))
                if valid[n - 1, b, t]:
                    g = tuple(s[t:t + n])
                    assert seen.setdefault(g, gid[n - 1, b, t]) == gid[n - 1, b, t]
        assert len(set(seen.values())) == len(seen)  # no collisions


# ---------------------------------------------------------------------------------------
# distinct-n, entropy, cosine
# ---------------------------------------------------------------------------------------

def test_distinct_and_entropy_match_definition(rng):
    seqs = random_token_seqs(rng, 15, vocab=6, max_len=10)
    for n in (1, 3):
        assert distinct_n(seqs, n) == pytest.approx(py_distinct(seqs, n), abs=1e-12)
        assert ngram_entropy(seqs, n) == pytest.approx(py_entropy(seqs, n), abs=1e-5)
    avg = np.mean([py_distinct(seqs, n) for n in range(1, 6)])
    assert averaged_distinct_n(seqs) == pytest.approx(avg, abs=1e-12)


def test_distinct_on_text_uses_tevet_words():
    texts = ["The cat sat.", "The cat ran.\n"]
    words = [tevet_tokenize(t) for t in texts]
    assert distinct_n(texts, 2) == py_distinct(words, 2) == 0.75
    assert distinct_n(["a b", "c"], 3) == 0.0  # no trigrams → 0 (Tevet & Berant)


def test_ngram_cosine_matches_definition(rng, x64):
    seqs = random_token_seqs(rng, 6, vocab=5, max_len=9)
    seqs[2] = []  # an empty response has no n-grams → similarity 0
    enc = encode_sequences(seqs, allow_empty=True)
    for n in (1, 2, 3):
        m = np.asarray(ngram_cosine_matrix(enc.ids, enc.lengths, n))
        ref = np.array([[py_cosine(a, b, n) for b in seqs] for a in seqs])
        np.testing.assert_allclose(m, ref, atol=1e-12)


def test_cosine_diversity_is_negated_mean_over_pairs(rng, x64):
    sets = [[" ".join(f"w{t}" for t in s) for s in random_token_seqs(rng, 4, 4, 8, 1)]
            for _ in range(3)]
    got = ngram_cosine_diversity(sets, 1, 3)
    for s, g in zip(sets, got):
        w = [tevet_tokenize(t) for t in s]
        per_n = [-np.mean([py_cosine(w[i], w[j], n) for i in range(4) for j in range(i)])
                 for n in range(1, 4)]
        assert g == pytest.approx(np.mean(per_n), abs=1e-12)


def test_count_stats_jit_equals_eager_and_no_retrace(rng):
    seqs = random_token_seqs(rng, 4, vocab=5, max_len=8)
    enc = encode_sequences(seqs, allow_empty=True)
    ids, lengths = enc.ids, enc.lengths
    out = ngram_count_stats(ids, lengths, 3)
    with jax.disable_jit():
        eager = ngram_count_stats(ids, lengths, 3)
    for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(eager), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    for n in (1, 2, 3):
        assert float(out.distinct[n - 1]) == pytest.approx(py_distinct(seqs, n), rel=1e-6)
    before = ngram_count_stats._cache_size()
    ngram_count_stats(ids + 1, lengths, 3)
    assert ngram_count_stats._cache_size() == before


def test_count_stats_vmap_over_sets(rng):
    sets = [[" ".join(f"w{t}" for t in s) for s in random_token_seqs(rng, 3, 5, 10, 1)]
            for _ in range(4)]
    enc = encode_sets(sets)
    st = jax.vmap(lambda i, l: ngram_count_stats(i, l, 2))(enc.ids, enc.lengths)
    u, t = st.unique, st.total
    for k, s in enumerate(sets):
        w = [tevet_tokenize(x) for x in s]
        assert int(u[k, 1]) == len(set(g for x in w for g in py_ngrams(x, 2)))
        assert int(t[k, 1]) == sum(len(py_ngrams(x, 2)) for x in w)


# ---------------------------------------------------------------------------------------
# Self-BLEU
# ---------------------------------------------------------------------------------------

def nltk_self_bleu(gens, weights):
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    sm = SmoothingFunction().method1
    return np.array([sentence_bleu(gens[:i] + gens[i + 1:], gens[i], weights, smoothing_function=sm)
                     for i in range(len(gens))])


def test_self_bleu_matches_nltk_200_generations(x64):
    pytest.importorskip("nltk")
    rng = np.random.default_rng(1)
    gens = [[f"t{t}" for t in s] for s in random_token_seqs(rng, 200, vocab=25, max_len=30)]
    gens[10] = list(gens[3])        # exact duplicate: clipping uses the second-largest count
    gens[11] = gens[3][:4]          # prefix
    gens[12] = []                   # empty hypothesis / reference of length 0
    gens[13] = gens[3][:1]          # single token
    ours = self_bleu_scores(gens, 4)
    ref = nltk_self_bleu(gens, (0.25,) * 4)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_self_bleu_orders_match_nltk(n, x64):
    rng = np.random.default_rng(n)
    gens = [[f"t{t}" for t in s] for s in random_token_seqs(rng, 30, vocab=6, max_len=14)]
    np.testing.assert_allclose(self_bleu_scores(gens, n), nltk_self_bleu(gens, (1.0 / n,) * n),
                               atol=1e-9, rtol=0)


def test_self_bleu_texts_and_sampling():
    texts = ["the cat sat on the mat.", "the cat sat on a mat", "a dog ran in the park",
             "the dog sat on the mat", "birds fly south in winter"]
    words = [tevet_tokenize(t) for t in texts]
    ref = nltk_self_bleu(words, (0.25,) * 4)
    np.testing.assert_allclose(self_bleu_scores(texts, 4), ref, atol=1e-9)
    # the documented sample: distinct indices drawn from jax.random.key(seed)
    idx = np.asarray(jax.random.choice(jax.random.key(7), 5, shape=(3,), replace=False))
    assert len(set(idx.tolist())) == 3
    assert self_bleu(texts, 4, num_samples=3, seed=7) == pytest.approx(ref[idx].mean(), abs=1e-9)
    assert self_bleu(texts, 4, num_samples=5, seed=7) == pytest.approx(ref.mean(), abs=1e-9)
    assert self_bleu(texts, 4) == pytest.approx(ref.mean(), abs=1e-9)


def test_self_bleu_hand_computed():
    # hyp "a b c" vs refs {"a b d", "a b c"}: p1 = 3/3, p2 = 2/2 → BLEU = 1 for rows 0 and 2;
    # row 1 "a b d": p1 = 2/3, p2 = 1/2 → sqrt(1/3)
    enc = encode_sequences(["a b c", "a b d", "a b c"])
    s = self_bleu_stats(enc.ids, enc.lengths, max_n=2)
    b = np.asarray(bleu_from_stats(s.numerators, s.denominators, s.hyp_len, s.ref_len,
                                   jnp.array([0.5, 0.5])))
    np.testing.assert_allclose(b, [1.0, math.sqrt(1 / 3), 1.0], rtol=1e-6)


def test_self_bleu_brevity_penalty_closest_length():
    # lengths 2, 5, 7: for the length-2 hypothesis the closest other length is 5 → BP = e^(1-5/2)
    gens = [["a", "b"], ["a", "b", "x", "y", "z"], ["a", "b", "q", "r", "s", "t", "u"]]
    enc = encode_sequences(gens)
    r = self_bleu_stats(enc.ids, enc.lengths, max_n=1).ref_len
    # row 1 (length 5): |2-5| = 3 > |7-5| = 2 → 7; row 2 (length 7): only 5 is closer
    assert r.tolist() == [5, 7, 5]
    assert self_bleu_scores(gens, 1)[0] == pytest.approx(math.exp(1 - 5 / 2))


def test_self_bleu_stats_jit_equals_eager_and_no_retrace(rng):
    seqs = random_token_seqs(rng, 4, vocab=4, max_len=8)
    enc = encode_sequences(seqs, allow_empty=True)
    ids, lengths = enc.ids, enc.lengths
    out = self_bleu_stats(ids, lengths, 2)
    with jax.disable_jit():
        eager = self_bleu_stats(ids, lengths, 2)
    for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(eager), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    before = self_bleu_stats._cache_size()
    self_bleu_stats(ids[::-1], lengths[::-1], 2)
    assert self_bleu_stats._cache_size() == before


def test_self_bleu_mask_equals_unpadded(rng):
    seqs = random_token_seqs(rng, 5, vocab=4, max_len=10, min_len=1)
    enc = encode_sequences(seqs)
    ids, lengths = enc.ids, enc.lengths
    pad_ids = np.concatenate([ids, ids[:2]])
    pad_len = np.concatenate([lengths, lengths[:2]])
    mask = np.array([True] * 5 + [False] * 2)
    a = self_bleu_stats(ids, lengths, 2)
    b = self_bleu_stats(pad_ids, pad_len, 2, ids_mask=jnp.asarray(mask))
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y)[:5])


# ---------------------------------------------------------------------------------------
# Zipf, REP, termination
# ---------------------------------------------------------------------------------------

def test_zipf_matches_definition_with_linregress(x64):
    from scipy.stats import linregress
    rng = np.random.default_rng(3)
    seqs = [list(rng.zipf(1.3, size=200) % 400) for _ in range(10)]
    seqs = [[int(t) for t in s] for s in seqs]
    freqs = np.array(sorted(Counter(t for s in seqs for t in s).values(), reverse=True))
    for max_num in (5000, 50):
        ranks = np.arange(1, min(len(freqs), max_num))
        xs, first = np.unique(np.round(15 * np.log(ranks)) / 15, return_index=True)
        ref = -linregress(xs, np.log(freqs[first])).slope
        assert zipf_coefficient(seqs, max_num=max_num) == pytest.approx(ref, abs=1e-9)


def test_zipf_needs_three_distinct_tokens():
    with pytest.raises(ValueError, match="^sequences"):
        zipf_coefficient(["a b a b"])


def test_repetition_matches_definition(rng):
    seqs = random_token_seqs(rng, 12, vocab=3, max_len=25, min_len=1)
    seqs += [[1, 2, 3] * 5, [7, 8] + [4] * 60, [4] * 30, [1, 2] * 10, [9, 1, 2, 3, 4, 1, 2, 3, 4]]
    enc = encode_sequences(seqs)
    got = np.asarray(repetition_flags(enc.ids, enc.lengths, max_n=500)).tolist()
    assert got == [py_rep(s) for s in seqs]
    assert repetition_fraction(seqs) == pytest.approx(np.mean([py_rep(s) for s in seqs]))


def test_termination_ratio():
    assert termination_ratio(np.array([True, False, False, True])) == 0.5
    assert termination_ratio(sequences=[[1, 50256], [1, 2], [50256]], eos_id=50256) == pytest.approx(2 / 3)
    with pytest.raises(TypeError, match="^is_completed"):
        termination_ratio([1, 0])
    with pytest.raises(ValueError, match="^is_completed"):
        termination_ratio()


# ---------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------

def test_bad_input_messages():
    with pytest.raises(TypeError, match="^sequences"):
        distinct_n("a b c")
    with pytest.raises(TypeError, match="^sequences"):
        distinct_n(["a b", 3])
    with pytest.raises(TypeError, match="^sequences"):
        distinct_n([["a", 1.5]])
    with pytest.raises(ValueError, match="^sequences"):
        distinct_n([])
    with pytest.raises(ValueError, match="^n"):
        distinct_n(["a b"], 0)
    with pytest.raises(ValueError, match="^n_max"):
        averaged_distinct_n(["a b"], 3, 2)
    with pytest.raises(ValueError, match="^generations"):
        self_bleu_scores(["only one"])
    with pytest.raises(ValueError, match="^num_samples"):
        self_bleu(["a b", "b c"], num_samples=3)
    with pytest.raises(TypeError, match="^seed"):
        self_bleu(["a b", "b c", "c d"], num_samples=2, seed=1.5)
    with pytest.raises(ValueError, match="^weights"):
        self_bleu_scores(["a b", "b c"], weights=[0.5, -1])
    with pytest.raises(ValueError, match="^response_sets"):
        ngram_cosine_diversity([["one response"]])
    with pytest.raises(ValueError, match=r"^response_sets\[0\]"):
        ngram_cosine_diversity([["a b", "  "]])
    with pytest.raises(TypeError, match=r"^response_sets\[0\]"):
        ngram_cosine_diversity([["a b", None]])
