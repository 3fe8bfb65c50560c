"""The neural diversity metrics get their vectors from jaxmetrics.models only, and the metric
registry resolves names to what compute_set_metrics computes."""
from __future__ import annotations

import numpy as np
import pytest

import jaxmetrics.models as models
from jaxmetrics.data import load_shakespeare
from jaxmetrics.diversity import (
    SetEmbeddings,
    compute_set_metrics,
    distinct_n_sets,
    embed_response_sets,
    embedding_cosine_diversity,
    ngram_entropy_sets,
    resolve_set_metric,
    self_bleu_sets,
    set_metric_names,
    token_set_diversity,
)


@pytest.fixture(scope="module")
def demo_sets():
    """Real sentences of the bundled demo text, in sets of unequal size (3, 2, 4)."""
    s = [t[:200] for t in load_shakespeare("heldout", limit=9, min_words=8)]
    return [s[0:3], s[3:5], s[5:9]]


def _layout(sets):
    flat = [t for s in sets for t in s]
    index = np.zeros((len(sets), max(map(len, sets))), np.int64)
    mask = np.zeros(index.shape, bool)
    k = 0
    for i, s in enumerate(sets):
        index[i, :len(s)] = np.arange(k, k + len(s))
        mask[i, :len(s)] = True
        k += len(s)
    return flat, index, mask


def test_set_embeddings_are_the_models_sentence_embeddings(demo_sets, minilm):
    flat, index, mask = _layout(demo_sets)
    want = models.sentence_embeddings(flat, model=minilm, progress=False)
    e = embed_response_sets(demo_sets, model=minilm)
    assert isinstance(e, SetEmbeddings) and not e.tokens and e.tokens_mask is None
    np.testing.assert_array_equal(e.embeddings_mask, mask)
    np.testing.assert_array_equal(e.embeddings[mask], np.asarray(want))
    np.testing.assert_array_equal(e.embeddings, np.asarray(want)[index])


def test_token_set_embeddings_are_the_models_token_embeddings(demo_sets, minilm):
    flat, index, mask = _layout(demo_sets)
    te = models.token_embeddings(flat, model=minilm, progress=False)
    e = embed_response_sets(demo_sets, model=minilm, tokens=True)
    assert e.tokens
    np.testing.assert_array_equal(e.embeddings, np.asarray(te.embeddings)[index])
    keep = np.asarray(te.tokens_mask) & ~np.asarray(te.special_mask)
    np.testing.assert_array_equal(e.tokens_mask, keep[index])


def test_sent_bert_uses_exactly_the_models_sentence_embeddings(demo_sets, minilm, monkeypatch):
    flat, index, mask = _layout(demo_sets)
    want = np.asarray(models.sentence_embeddings(flat, model=minilm, progress=False))
    expect = embedding_cosine_diversity(want[index], mask)
    seen = []
    real = models.sentence_embeddings

    def recording(texts, **kw):
        out = real(texts, **kw)
        seen.append((list(texts), np.asarray(out)))
        return out

    monkeypatch.setattr(models, "sentence_embeddings", recording)
    got = compute_set_metrics(demo_sets, ["sent-bert"], model=minilm)["sent-bert"]
    assert len(seen) == 1 and seen[0][0] == flat          # one call, every response in order
    np.testing.assert_array_equal(seen[0][1], want)
    np.testing.assert_array_equal(got, np.asarray(expect, np.float64))


def test_token_metrics_use_the_token_vectors(demo_sets, minilm):
    e = embed_response_sets(demo_sets, model=minilm, tokens=True)
    vals = compute_set_metrics(demo_sets, ["bertscore", "twmd"], model=minilm)
    np.testing.assert_array_equal(vals["bertscore"], token_set_diversity(e, similarity="bertscore"))
    np.testing.assert_array_equal(vals["twmd"], token_set_diversity(e, similarity="twmd"))
    with pytest.raises(TypeError, match="^embeddings"):
        token_set_diversity(embed_response_sets(demo_sets, model=minilm))
    with pytest.raises(ValueError, match="^similarity"):
        token_set_diversity(e, similarity="cosine")


def test_registry_resolves_names():
    m = resolve_set_metric("self-bleu-3")
    assert (m.kind, m.order, m.embeddings, m.needs_model) == ("self-bleu", 3, None, False)
    assert resolve_set_metric("twmd").embeddings == "tokens"
    assert resolve_set_metric("sent-bert").embeddings == "sentence"
    assert resolve_set_metric("distinct").order is None
    assert resolve_set_metric("entropy").to_dict()["order"] == 2
    for bad in ("distinct-0", "zipf", "cosine-x"):
        with pytest.raises(ValueError, match="^metrics"):
            resolve_set_metric(bad)
    assert set_metric_names(" distinct ,, cosine-2") == ["distinct", "cosine-2"]
    with pytest.raises(ValueError, match="^metrics"):
        set_metric_names(" , ")


def test_named_metrics_are_their_functions():
    sets = [["a b c d", "a b c e", "x y"], ["a a a", "a a b"], ["p q r", "s t u", "v w x"]]
    vals = compute_set_metrics(sets, "distinct,distinct-2,entropy-1,self-bleu", progress=True)
    np.testing.assert_array_equal(vals["distinct"], distinct_n_sets(sets, 1, 5))
    np.testing.assert_array_equal(vals["distinct-2"], distinct_n_sets(sets, 2, 2))
    np.testing.assert_array_equal(vals["entropy-1"], ngram_entropy_sets(sets, 1))
    np.testing.assert_array_equal(vals["self-bleu"], -self_bleu_sets(sets, 4))
    np.testing.assert_array_equal(vals.values, compute_set_metrics(
        sets, ["distinct", "distinct-2", "entropy-1", "self-bleu"]).values)
