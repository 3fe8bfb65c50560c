"""featurize / token_embeddings / sentence_embeddings vs the reference conventions
(mauve-text's featurize_tokens_from_model, transformers, sentence-transformers)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jaxmetrics.models import (  # noqa: E402
    bucket_length, featurize, featurize_tokens, load_model, sentence_embeddings, token_embeddings,
)

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Hi",
    "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer "
    "the slings and arrows of outrageous fortune, or to take arms against a sea of troubles.",
    "Colorless green ideas sleep furiously.",
    "A journey of a thousand miles begins with a single step, they say, and then many more.",
    "Numbers 12345!",
    "It was the best of times, it was the worst of times.",
]


def _mauve_reference(model_dir, texts, max_length, batch_size=3):
    """mauve-text's own featurization code path (tokenizer.encode + featurize_tokens_from_model)."""
    from mauve.utils import featurize_tokens_from_model
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, pad_token_id=tok.eos_token_id).eval()
    toks = [tok.encode(t, return_tensors="pt", truncation=True, max_length=max_length) for t in texts]
    with torch.no_grad():
        return featurize_tokens_from_model(model, toks, batch_size).numpy(), toks


def test_gpt2_featurize_matches_mauve_text(gpt2, gpt2_dir):
    max_length = 24
    ref, toks = _mauve_reference(gpt2_dir, TEXTS, max_length)
    n_long = sum(len(gpt2.tokenizer.encode(t)) > max_length for t in TEXTS)
    assert n_long >= 1
    with pytest.warns(UserWarning, match=rf"^texts: {n_long} text\(s\) longer than max_length=24"):
        ours = featurize(TEXTS, model=gpt2, max_length=max_length, batch_size=4, progress=False)
    assert ours.shape == (len(TEXTS), gpt2.hidden_size) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, ref, atol=1e-4, rtol=0)
    # no BOS/EOS were added: the pretokenized path gives the same features
    again = featurize_tokens([t[0].numpy() for t in toks], model=gpt2, max_length=max_length, batch_size=2,
                             progress=False)
    np.testing.assert_allclose(again, ours, atol=1e-5)


def test_minilm_featurize_matches_mauve_text(minilm, minilm_dir):
    ref, _ = _mauve_reference(minilm_dir, TEXTS, 16)
    with pytest.warns(UserWarning, match="truncated"):
        ours = featurize(TEXTS, model=minilm, max_length=16, batch_size=4, progress=False)
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.9999
    np.testing.assert_allclose(ours, ref, atol=1e-4)


def test_featurize_definition_last_real_token(gpt2):
    """Hand check of the definition: the final hidden state at position len - 1 of each text alone."""
    with pytest.warns(UserWarning, match="truncated"):
        feats = featurize(TEXTS[:3], model=gpt2, max_length=40, batch_size=3, progress=False)
    for i, t in enumerate(TEXTS[:3]):
        ids = np.asarray(gpt2.tokenizer.encode(t)[:40], np.int32)[None]
        out = gpt2.forward(ids, np.ones_like(ids, bool), output_hidden_states=True)
        np.testing.assert_allclose(feats[i], np.asarray(out.hidden_states[-1])[0, -1], atol=1e-5)


def test_sentence_embeddings_match_sentence_transformers(minilm, minilm_dir):
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(minilm_dir, device="cpu")
    ref = model.encode(TEXTS, convert_to_numpy=True, batch_size=4)  # includes the Normalize module
    ours = sentence_embeddings(TEXTS, model=minilm, normalize=True, batch_size=4, progress=False)
    cos = (ours * ref).sum(1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.9999
    np.testing.assert_allclose(ours, ref, atol=1e-4)


def test_token_embeddings_layer_and_masks(minilm):
    from transformers import AutoModel

    layer = 2
    out = token_embeddings(TEXTS, model=minilm, layer=layer, max_length=32, batch_size=3, progress=False)
    emb, mask, special, ids = out.embeddings, out.tokens_mask, out.special_mask, out.input_ids
    enc = minilm.tokenizer(TEXTS, truncation=True, max_length=32, padding=True, return_tensors="np")
    assert emb.shape == (len(TEXTS), enc["input_ids"].shape[1], 384)
    np.testing.assert_array_equal(mask, enc["attention_mask"].astype(bool))
    np.testing.assert_array_equal(ids[mask], enc["input_ids"][mask])
    cls_sep = np.isin(ids, [minilm.tokenizer.cls_token_id, minilm.tokenizer.sep_token_id]) & mask
    np.testing.assert_array_equal(special, cls_sep)
    assert np.all(emb[~mask] == 0)
    tm = AutoModel.from_pretrained(minilm.path).eval()
    with torch.no_grad():
        ref = tm(input_ids=torch.tensor(enc["input_ids"]), attention_mask=torch.tensor(enc["attention_mask"]),
                 output_hidden_states=True).hidden_states[layer].numpy()
    a, b = emb[mask], ref[mask]
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    assert cos.min() >= 0.9999
    # layer numbering like transformers: 0 = embeddings, -1 = last
    e0 = token_embeddings(TEXTS[:2], model=minilm, layer=0, progress=False).embeddings
    e_last = token_embeddings(TEXTS[:2], model=minilm, layer=-1, progress=False).embeddings
    e6 = token_embeddings(TEXTS[:2], model=minilm, layer=6, progress=False).embeddings
    np.testing.assert_array_equal(e_last, e6)
    assert not np.allclose(e0, e6)


def test_length_buckets_few_shapes_and_input_order(gpt2_dir, rng, monkeypatch):
    from jaxmetrics.models import batching

    monkeypatch.setattr(batching, "PACK_LENGTH", 0)  # every text through the padded batches
    gpt2 = load_model(gpt2_dir)  # fresh compile caches: count only this corpus's shapes
    words = "the quick brown fox jumps over a lazy dog".split()
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(1, 12, size=23)]
    lengths = [min(len(gpt2.tokenizer.encode(t)), 64) for t in texts]
    feats = featurize(texts, model=gpt2, max_length=64, batch_size=2, progress=False)
    fn, _ = gpt2._reductions[("encode", (gpt2.num_layers,), "last", False)]
    buckets = {bucket_length(n, 64) for n in lengths}
    # a handful of shapes, not one per batch (12): one per length bucket, and the short last pass
    # (one text) its own row count
    assert fn._cache_size() <= len(buckets) + 1 <= 6 < 12
    # input order: each row equals the text featurized alone
    for i in (0, 7, 22):
        alone = featurize([texts[i]], model=gpt2, max_length=64, progress=False)[0]
        np.testing.assert_allclose(feats[i], alone, atol=1e-5)
    before = fn._cache_size()
    featurize(texts[::-1], model=gpt2, max_length=64, batch_size=2, progress=False)
    assert fn._cache_size() == before  # no retrace for the same shapes


def test_pack_rows_best_fit_decreasing_definition():
    from jaxmetrics.models import pack_rows

    lengths = np.array([5, 4, 3, 3, 2, 1])
    # 5 -> new row (room 3); 4 -> new row (room 4); 3 -> the row with room 3; 3 -> room 4;
    # 2 -> no room left anywhere >= 2: new row; 1 -> the fullest row that fits (room 1)
    assert pack_rows(lengths, np.arange(6), 8) == [[0, 2], [1, 3, 5], [4]]


@pytest.fixture(scope="module")
def roberta(tiny_checkpoint_dir):
    return load_model(tiny_checkpoint_dir("roberta"))


@pytest.mark.parametrize("which", ["gpt2", "minilm", "roberta"])
def test_packed_rows_equal_padded_batches(which, gpt2, minilm, roberta, rng, monkeypatch):
    """Short texts run several to a row (each attends only to itself, positions restart per text):
    the features, sentence embeddings and token vectors equal those of padded batches."""
    from jaxmetrics.models import batching

    lm = {"gpt2": gpt2, "minilm": minilm, "roberta": roberta}[which]
    words = "the quick brown fox jumps over a lazy dog".split()
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(1, 14, size=19)]
    # rows of 12 positions, 2 rows per batch: several rows and batches, a part-filled last batch,
    # and texts longer than 12 tokens through the padded batches in the same call
    monkeypatch.setattr(batching, "PACK_LENGTH", 12)
    monkeypatch.setattr(batching, "PACK_ROWS", 2)
    lengths = [len(x) for x in lm.tokenizer(texts)["input_ids"]]
    assert min(lengths) < 6 and max(lengths) > 12
    calls = [featurize, token_embeddings] + ([] if lm.is_causal else [sentence_embeddings])
    packed = [f(texts, model=lm, max_length=64, batch_size=3, progress=False) for f in calls]
    monkeypatch.setattr(batching, "PACK_LENGTH", 0)
    padded = [f(texts, model=lm, max_length=64, batch_size=3, progress=False) for f in calls]
    np.testing.assert_allclose(packed[0], padded[0], atol=2e-5)
    np.testing.assert_array_equal(packed[1].tokens_mask, padded[1].tokens_mask)
    np.testing.assert_allclose(packed[1].embeddings, padded[1].embeddings, atol=2e-5)
    if not lm.is_causal:
        np.testing.assert_allclose(packed[2], padded[2], atol=2e-5)


def test_bucket_length_definition():
    assert [bucket_length(n, 100) for n in (1, 8, 9, 16, 17, 64, 65, 100)] == [8, 8, 16, 16, 24, 64, 80, 100]


def test_bad_input(gpt2):
    with pytest.raises(ValueError, match="^texts: no texts"):
        featurize([], model=gpt2)
    with pytest.raises(ValueError, match=r"^texts: 2 empty or whitespace-only"):
        featurize(["ok", "", "  \n"], model=gpt2)
    with pytest.raises(TypeError, match="^texts"):
        featurize("a single string", model=gpt2)
    with pytest.raises(TypeError, match="^texts: item 1"):
        featurize(["ok", 3], model=gpt2)
    with pytest.raises(ValueError, match="^batch_size"):
        featurize(["ok"], model=gpt2, batch_size=0)
    with pytest.raises(ValueError, match="^max_length"):
        featurize(["ok"], model=gpt2, max_length=0)
    with pytest.raises(ValueError, match="^layer"):
        token_embeddings(["ok"], model=gpt2, layer=gpt2.num_layers + 1)
    with pytest.raises(TypeError, match="^model"):
        featurize(["ok"], model=3.0)
    with pytest.raises(ValueError, match="^token_ids: sequence 0 is empty"):
        featurize_tokens([[]], model=gpt2)
    with pytest.warns(UserWarning, match="^max_length: 5000 exceeds the 64 positions"):
        featurize(["ok"], model=gpt2, max_length=5000, progress=False)


def test_token_embeddings_name_their_mask_as_the_encoding_does(minilm):
    """``TokenEmbeddings`` calls the mask of its real tokens ``tokens_mask``, the name ``Encoding``
    (which it is built from), ``GenerationOutput`` and ``SetEmbeddings`` give it; the former
    ``embeddings_mask`` is gone (no alias: docs/conventions.md, one name per concept)."""
    from jaxmetrics.data import load_shakespeare
    from jaxmetrics.models import TokenEmbeddings, encode

    texts = load_shakespeare("heldout", limit=3, min_words=5)
    out = token_embeddings(texts, model=minilm, max_length=32, progress=False)
    enc = encode(texts, model=minilm, layers=-1, tokens=True, max_length=32, progress=False)
    fields = [f.name for f in __import__("dataclasses").fields(TokenEmbeddings)]
    assert fields == ["embeddings", "tokens_mask", "special_mask", "input_ids"]
    np.testing.assert_array_equal(out.tokens_mask, enc.tokens_mask)
    assert out.tokens_mask.sum() == sum(len(minilm.tokenizer(t, truncation=True, max_length=32)["input_ids"])
                                        for t in texts)
    assert not hasattr(out, "embeddings_mask")
