"""The encoding engine (`jaxmetrics.models.encode`): one forward pass for any set of layers, the
named poolings against their definitions, ragged token vectors equal to the padded ones, packed
rows equal to padded batches, the feature cache, and bad input. Real text: sentences of the
bundled demo text through the real all-MiniLM-L6-v2 encoder; a tiny GPT-2 for the decoder side."""
import numpy as np
import pytest

from jaxmetrics.data import load_shakespeare
from jaxmetrics.models import (DEFAULT_MAX_LENGTH, POOLINGS, Encoding, batching, encode, featurize,
                               resolve_layers, resolve_pooling, sentence_embeddings, token_embeddings)


@pytest.fixture(scope="module")
def sentences():
    """40 real sentences of varied length (some longer than a packed row)."""
    speeches = load_shakespeare("heldout", limit=400, min_words=3)
    short = [s for s in speeches if len(s.split()) <= 12][:24]
    long = [s for s in speeches if 60 <= len(s.split()) <= 150][:8]
    return short[:12] + long[:4] + short[12:] + long[4:]


def test_many_layers_one_pass_equal_single_layer_calls(minilm, sentences):
    e = encode(sentences, model=minilm, layers=(0, 3, -1), pooling="mean", tokens=True, progress=False)
    assert isinstance(e, Encoding) and e.layers == (0, 3, 6) and e.pooling == "mean"
    assert e.token_vectors.shape == (3, int(e.offsets[-1]), 384) and e.pooled.shape == (3, len(sentences), 384)
    for k, layer in enumerate((0, 3, 6)):
        one = encode(sentences, model=minilm, layers=layer, pooling="mean", tokens=True, progress=False)
        np.testing.assert_allclose(e.token_vectors[k], one.token_vectors[0], atol=2e-5)
        np.testing.assert_allclose(e.pooled[k], one.pooled[0], atol=2e-5)
    assert not np.allclose(e.pooled[0], e.pooled[2], atol=1e-2)


def test_poolings_follow_their_definitions(minilm, gpt2, sentences):
    """mean = masked mean of all real token vectors (special ones included), last = the last real
    token's vector, cls = the first token's vector; the same for packed and padded texts."""
    for lm in (minilm, gpt2):
        e = encode(sentences, model=lm, layers=-1, tokens=True, pooling="mean", progress=False)
        if lm is minilm:   # both layouts in one call (the tiny GPT-2 has 64 positions: all packed)
            assert e.lengths.max() > batching.PACK_LENGTH >= e.lengths.min()
        for name in POOLINGS:
            p = encode(sentences, model=lm, layers=-1, pooling=name, progress=False).pooled[0]
            for i in range(len(sentences)):
                tok = e.token_vectors[0, e.offsets[i]:e.offsets[i + 1]]
                want = {"mean": tok.mean(0), "last": tok[-1], "cls": tok[0]}[name]
                np.testing.assert_allclose(p[i], want, atol=3e-5, err_msg=f"{name} {i}")
    assert resolve_pooling(minilm, "auto") == "mean" and resolve_pooling(gpt2, "auto") == "last"


def test_named_views_are_the_engine(minilm, sentences):
    """featurize / sentence_embeddings / token_embeddings are the engine's vectors (to float
    rounding: a program that also returns token vectors fuses its reductions differently)."""
    close = dict(atol=1e-6, rtol=1e-5)
    e = encode(sentences, model=minilm, layers=-1, pooling="mean", tokens=True, progress=False)
    np.testing.assert_allclose(sentence_embeddings(sentences, model=minilm, progress=False), e.pooled[0], **close)
    dense = token_embeddings(sentences, model=minilm, progress=False, max_length=256)
    np.testing.assert_allclose(dense.embeddings[dense.tokens_mask], e.token_vectors[0], **close)
    np.testing.assert_allclose(dense.embeddings, e.padded(), **close)
    np.testing.assert_array_equal(dense.tokens_mask, e.tokens_mask)
    np.testing.assert_array_equal(dense.special_mask, e.special_mask)
    np.testing.assert_array_equal(dense.input_ids, e.token_ids)
    np.testing.assert_array_equal(np.diff(e.offsets), dense.tokens_mask.sum(1))
    last = encode(sentences, model=minilm, layers=-1, pooling="last", progress=False)
    np.testing.assert_array_equal(featurize(sentences, model=minilm, progress=False), last.pooled[0])
    assert last.max_length == min(DEFAULT_MAX_LENGTH["last"], minilm.max_positions) == 512


def test_packed_rows_equal_padded_batches_for_several_layers(minilm, sentences, monkeypatch):
    kw = dict(model=minilm, layers=(2, -1), pooling="mean", tokens=True, batch_size=3, progress=False)
    packed = encode(sentences, **kw)
    monkeypatch.setattr(batching, "PACK_LENGTH", 0)
    padded = encode(sentences, **kw)
    np.testing.assert_allclose(packed.token_vectors, padded.token_vectors, atol=2e-5)
    np.testing.assert_allclose(packed.pooled, padded.pooled, atol=2e-5)


def test_token_ids_input_and_truncation_count(gpt2):
    ids = [[5, 6, 7, 8, 9, 10], [11, 12]]
    e = encode(token_ids=ids, model=gpt2, pooling="last", tokens=True, max_length=4, progress=False)
    assert e.lengths.tolist() == [4, 2] and not e.special_mask.any()
    np.testing.assert_array_equal(e.pooled[0, 0], e.token_vectors[0, 3])
    with pytest.warns(UserWarning, match="texts: 1 text"):
        t = encode(["one two three four five six seven eight", "hi"], model=gpt2, pooling="mean", max_length=4,
                   progress=False)
    assert t.num_truncated == 1 and t.max_length == 4


def test_cache_resumes_several_layers(minilm, sentences, tmp_path):
    kw = dict(model=minilm, layers=(1, -1), pooling="mean", progress=False, cache_dir=tmp_path)
    first = encode(sentences[:10], **kw)
    both = encode(sentences, **kw)                 # the first 10 from the cache, the rest computed
    fresh = encode(sentences, model=minilm, layers=(1, -1), pooling="mean", progress=False)
    np.testing.assert_array_equal(both.pooled[:, :10], first.pooled)
    np.testing.assert_allclose(both.pooled, fresh.pooled, atol=2e-5)


def test_bad_input_names_the_argument(minilm):
    with pytest.raises(ValueError, match="^pooling:"):
        encode(["a b"], model=minilm, pooling="max")
    with pytest.raises(ValueError, match="^pooling: give"):
        encode(["a b"], model=minilm)
    with pytest.raises(ValueError, match="^layers: repeated"):
        encode(["a b"], model=minilm, layers=(6, -1), tokens=True)
    with pytest.raises(ValueError, match="^layer: must be in"):
        encode(["a b"], model=minilm, layers=7, tokens=True)
    with pytest.raises(TypeError, match="^layers: expected an integer"):
        resolve_layers(minilm, ("a",))
    with pytest.raises(ValueError, match="^cache_dir:"):
        encode(["a b"], model=minilm, tokens=True, cache_dir="x")
    with pytest.raises(ValueError, match="^texts: give exactly one"):
        encode(["a b"], token_ids=[[1]], model=minilm, pooling="mean")
    with pytest.raises(ValueError, match="^texts:"):
        encode([], model=minilm, pooling="mean")


def test_cli_pooling_option_is_the_pooling_table():
    """--pooling offers 'auto' and exactly the engine's named poolings (read from the pooling table
    when first needed, so that building the parser imports no model code)."""
    from jaxmetrics.commands._util import POOLING_CHOICES

    assert POOLING_CHOICES == ("auto", *POOLINGS)


def test_a_short_last_pass_computes_no_full_batch_of_filler_rows(minilm, sentences):
    """The last padded (or packed) pass of a plan has the next power of two above its texts as
    rows (a multiple of the devices), not the whole batch size; every text is in one pass, and
    the vectors do not depend on the batch size."""
    lengths = np.arange(100) + 70
    jobs = batching.plan_batches(lengths, batch_size=32, max_length=256)
    assert [(j.num_rows, len(j.items)) for j in jobs] == [(32, 32)] * 3 + [(4, 4)]
    assert sorted(np.concatenate([j.items for j in jobs]).tolist()) == list(range(100))
    jobs = batching.plan_batches(lengths[:35], batch_size=32, max_length=256, devices=8)
    assert [(j.num_rows, len(j.items)) for j in jobs] == [(32, 32), (8, 3)]
    a = sentence_embeddings(sentences, model=minilm, batch_size=32, progress=False)   # 40 texts: 32 + 8
    b = sentence_embeddings(sentences, model=minilm, batch_size=7, progress=False)
    np.testing.assert_allclose(a, b, atol=2e-5)


def test_planner_keeps_packing_only_where_it_computes_fewer_positions():
    """Nearly equal lengths just under a packed row (one text per row) stay padded in length
    buckets; varied short lengths are packed. Every text is in exactly one pass either way."""
    from jaxmetrics.models.batching import PACK_LENGTH, plan_batches

    rng = np.random.default_rng(0)
    cost = lambda plan: sum(b.num_rows * b.length for b in plan)
    uniform = rng.integers(46, 53, size=300)             # 46-52 tokens: one per 64-position row
    varied = rng.integers(5, 40, size=300)               # real sentences' spread
    for lengths, kind in ((uniform, "padded"), (varied, "packed")):
        packable = lengths <= PACK_LENGTH
        plan = plan_batches(lengths, batch_size=64, max_length=128, packable=packable)
        assert {b.kind for b in plan} == {kind}
        assert sorted(np.concatenate([b.items for b in plan]).tolist()) == list(range(len(lengths)))
        padded_only = cost(plan_batches(lengths, batch_size=64, max_length=128))
        assert cost(plan) == padded_only if kind == "padded" else cost(plan) < 0.9 * padded_only
    assert cost(plan_batches(uniform, batch_size=64, max_length=128)) < 0.9 * 300 * PACK_LENGTH
