"""The similarity pipeline streams its pairs: ``compute_similarity`` / ``bertscore`` tokenize the
corpus once, then encode and score ``STREAM_PAIRS`` pairs at a time and keep only their scores, so
memory beyond the outputs does not grow with the number of pairs. The numbers are those of the
whole-corpus road (every distinct text encoded at once, then ``score_encoded``) for every metric
family, centering (batch centering's consecutive and hashed batches, corpus centering's first pass),
idf and bert_score compatibility, whatever the chunk boundaries. Real text: STS-style pairs of the
held-out Shakespeare sentences through the real all-MiniLM-L6-v2."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import jaxmetrics.models.encoding as engine
from jaxmetrics.similarity import SimilaritySettings, bertscore, compute_similarity, score_encoded
from jaxmetrics.similarity import pipeline

N, MAX_LEN = 26, 32


@pytest.fixture(scope="module")
def pairs():
    from jaxmetrics.data import synthetic_scored_pairs

    rows = synthetic_scored_pairs(N, seed=3)
    refs, cands, _, groups = (list(col) for col in zip(*rows))
    return refs, cands, groups


def _whole_corpus(refs, cands, model, settings, groups=None, idf_weights=None):
    """The road before streaming: all distinct texts in one Encoding, then score_encoded."""
    enc, ci, ri = pipeline._encode_pairs(references=refs, candidates=cands, model=model, settings=settings,
                                         progress=False)
    return score_encoded(enc, candidates=ci, references=ri, settings=settings, groups=groups,
                         idf_weights=idf_weights, vocab_size=model.model_vocab_size, model=model)


def _same(got, want):
    for name in ("precision", "recall", "f1"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=0, atol=2e-5, err_msg=name)
    assert got.signature == want.signature


def test_the_pipeline_holds_one_chunk_of_token_vectors_at_a_time(pairs, minilm, monkeypatch):
    """With 8 pairs a chunk, the encoder never sees more than their 16 texts, and a chunk's
    token vectors are released before the next chunk is encoded; the scores are unchanged."""
    refs, cands, _ = pairs
    settings = SimilaritySettings(metric="bertscore", layer=6, max_length=MAX_LEN)
    want = _whole_corpus(refs, cands, minilm, settings)
    monkeypatch.setattr(pipeline, "STREAM_PAIRS", 8)
    seen, live = [], []
    run_encoder, encode_packed = engine.run_encoder, engine.encode_packed

    def counting(ids, *args, **kwargs):
        seen.append(len(ids))
        return run_encoder(ids, *args, **kwargs)

    def tracking(*args, **kwargs):
        gc.collect()
        held = sum(ref() is not None for ref in live)
        assert held == 0, f"{held} earlier chunk(s) of token vectors still held"
        enc = encode_packed(*args, **kwargs)
        live.append(weakref.ref(enc.token_vectors))
        return enc

    monkeypatch.setattr(engine, "run_encoder", counting)
    monkeypatch.setattr(engine, "encode_packed", tracking)
    got = compute_similarity(references=refs, candidates=cands, model=minilm, settings=settings)
    assert len(live) == -(-N // 8) and len(seen) >= len(live)
    assert max(seen) <= 16, seen
    _same(got, want)


# (metric, keyword settings, groups?, pairs per chunk): every centering, both batchings, idf, the
# special-token policies; chunk sizes that cut the corpus (and its batches) in different places
CASES = [
    ("bertscore", dict(centering="none", idf=True), False, 5),
    ("bertscore", dict(centering="batch", center_batch_size=4), True, 11),
    ("twmd", dict(centering="batch", center_batch_size=4, centering_batches="hashed"), False, 7),
    ("twmd", dict(centering="batch", center_batch_size=8), False, 5),        # batches wider than a chunk
    ("cosine", dict(centering="sentence", special_tokens="cls"), False, 11),
    ("rwmd", dict(centering="corpus"), True, 7),                              # a first pass for the means
    ("cka", dict(centering="dimension", special_tokens="keep"), False, 5),
]


@pytest.mark.parametrize("metric, kw, grouped, chunk", CASES, ids=[f"{c[0]}-{c[1]['centering']}-{c[3]}" for c in CASES])
def test_streamed_scores_equal_the_whole_corpus_ones(pairs, minilm, monkeypatch, metric, kw, grouped, chunk):
    refs, cands, groups = pairs
    settings = SimilaritySettings(metric=metric, layer=6, max_length=MAX_LEN, **kw)
    g = groups if grouped else None
    want = _whole_corpus(refs, cands, minilm, settings, groups=g)
    monkeypatch.setattr(pipeline, "STREAM_PAIRS", chunk)
    got = compute_similarity(references=refs, candidates=cands, model=minilm, settings=settings, groups=g)
    _same(got, want)


def test_bertscore_compat_streams_to_the_same_scores(pairs, minilm, monkeypatch):
    """bert_score's padding flags and idf come from the whole corpus, not from the chunk; an
    empty candidate still scores 0."""
    refs, cands, _ = pairs
    cands = cands[:5] + ["  "] + cands[6:]
    settings = SimilaritySettings(metric="bertscore", layer=6, bert_score_compat=True, compat_batch_size=6,
                                  batch_size=6, max_length=MAX_LEN, idf=True)
    keep = [i for i, c in enumerate(cands) if c.strip()]
    want = _whole_corpus([refs[i] for i in keep], [cands[i] for i in keep], minilm, settings)
    monkeypatch.setattr(pipeline, "STREAM_PAIRS", 4)
    with pytest.warns(UserWarning, match="empty"):
        P, R, F = bertscore(cands, refs, model=minilm, num_layers=6, batch_size=6, idf=True, max_length=MAX_LEN)
    assert F[5] == 0.0
    np.testing.assert_allclose(np.delete(F, 5), want.f1, rtol=0, atol=2e-5)
    np.testing.assert_allclose(np.delete(P, 5), want.precision, rtol=0, atol=2e-5)


def test_errors_on_the_token_ids_come_before_any_forward_pass(minilm, monkeypatch):
    """A text with zero idf weight is refused from its token ids alone, before the encoder runs
    (it used to be found after encoding the whole corpus)."""
    def no_forward(*args, **kwargs):
        raise AssertionError("the encoder ran before the inputs were checked")

    monkeypatch.setattr(engine, "run_encoder", no_forward)
    same = ["the the the"] * 3
    with pytest.raises(ValueError, match="candidates: text 0 has zero total idf weight"):
        compute_similarity(references=same, candidates=same, model=minilm, metric="bertscore", layer=6, idf=True,
                           max_length=MAX_LEN)
