"""The encoding engine streams: texts are tokenized ``ENCODE_CHUNK`` at a time into packed ids, and
the forward passes are planned once over all of them and read each batch's ids from the packed
table when it runs, so featurization holds the features plus the packed ids, and a large corpus has
one short last pass per kind of batch (not one per tokenizer chunk: each new short pass is one more
compiled program). Same vectors whatever the chunking; the feature cache still resumes. Real text:
held-out Shakespeare speeches through the real all-MiniLM-L6-v2."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jaxmetrics.models.encoding as engine
import jaxmetrics.models.tokens as tokens
from jaxmetrics.models import encode, featurize, sentence_embeddings, tokenize

MAX_LEN = 32


@pytest.fixture(scope="module")
def texts():
    from jaxmetrics.data import load_shakespeare

    return load_shakespeare("heldout", limit=20, min_words=4)


@pytest.fixture
def counted(monkeypatch):
    """The number of texts of every run of the encoder."""
    seen = []
    run_encoder = engine.run_encoder

    def counting(ids, *args, **kwargs):
        seen.append(len(ids))
        return run_encoder(ids, *args, **kwargs)

    monkeypatch.setattr(engine, "run_encoder", counting)
    return seen


def test_one_plan_over_every_text_whatever_the_tokenizer_chunks(texts, minilm, monkeypatch, counted):
    from jaxmetrics.models import batching

    want = featurize(texts, model=minilm, max_length=MAX_LEN, progress=False)
    want_mean = sentence_embeddings(texts, model=minilm, max_length=MAX_LEN, progress=False)
    want_tokens = encode(texts, model=minilm, tokens=True, max_length=MAX_LEN, progress=False)
    assert counted == [len(texts)] * 3
    counted.clear()
    plans = []
    plan_batches = batching.plan_batches
    monkeypatch.setattr(batching, "plan_batches", lambda *a, **k: plans.append(plan_batches(*a, **k)) or plans[-1])
    monkeypatch.setattr(tokens, "ENCODE_CHUNK", 6)
    got = featurize(texts, model=minilm, max_length=MAX_LEN, batch_size=4, progress=False)
    got_mean = sentence_embeddings(texts, model=minilm, max_length=MAX_LEN, batch_size=4, progress=False)
    got_tokens = encode(texts, model=minilm, tokens=True, max_length=MAX_LEN, batch_size=4, progress=False)
    assert counted == [len(texts)] * 3 and len(plans) == 3
    for plan in plans:       # at most one short pass per kind of batch in the whole run
        for kind in {b.kind for b in plan}:
            rows = [b.num_rows for b in plan if b.kind == kind]
            assert sum(r < max(rows) for r in rows) <= 1, (kind, rows)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)
    np.testing.assert_allclose(got_mean, want_mean, rtol=0, atol=2e-5)
    np.testing.assert_allclose(got_tokens.token_vectors, want_tokens.token_vectors, rtol=0, atol=2e-5)
    for name in ("offsets", "tokens_mask", "special_mask", "token_ids"):
        np.testing.assert_array_equal(getattr(got_tokens, name), getattr(want_tokens, name))


def test_the_feature_cache_resumes_with_the_missing_texts_only(texts, minilm, monkeypatch, counted, tmp_path):
    """A first run stores 9 texts; the full run tokenizes (in chunks of 4) and encodes only the
    other 11."""
    want = featurize(texts, model=minilm, max_length=MAX_LEN, progress=False)
    featurize(texts[:9], model=minilm, max_length=MAX_LEN, cache_dir=tmp_path, progress=False)
    counted.clear()
    monkeypatch.setattr(tokens, "ENCODE_CHUNK", 4)
    got = featurize(texts, model=minilm, max_length=MAX_LEN, cache_dir=tmp_path, progress=False)
    assert counted == [11]
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)


def test_tokenize_in_chunks_equals_one_call_and_warns_once(texts, minilm, monkeypatch):
    with warnings.catch_warnings(record=True) as one:
        warnings.simplefilter("always")
        want = tokenize(texts, minilm, max_length=8)
    monkeypatch.setattr(tokens, "ENCODE_CHUNK", 3)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = tokenize(texts, minilm, max_length=8)
    assert want.num_truncated > 3 and got.num_truncated == want.num_truncated
    assert len(rec) == len(one) == 1 and str(rec[0].message) == str(one[0].message)
    for a, b in zip(got.ids + got.special, want.ids + want.special):
        np.testing.assert_array_equal(a, b)
    with pytest.warns(UserWarning, match="truncated"):
        packed = tokens.tokenize_packed(texts, minilm, max_length=8)
    assert packed.offsets[-1] == sum(len(x) for x in want.ids)
    np.testing.assert_array_equal(packed.ids, np.concatenate(want.ids))
