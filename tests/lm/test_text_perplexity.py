"""Per-text perplexity: parity with Hugging Face ``evaluate``'s perplexity metric on a tiny random GPT-2.

The reference below is a transcription in PyTorch of ``evaluate``'s ``metrics/perplexity``
``_compute`` (same tokenizer call, pad-token choice, BOS concatenation, shifted masked
``CrossEntropyLoss(reduction="none")``, ``exp`` of the masked mean, batches of ``batch_size`` in
input order), run on the same checkpoint loaded by transformers.
"""
from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

from jaxmetrics.lm import text_ppl as T
from jaxmetrics.lm import text_perplexities
from jaxmetrics.models import load_model
from jaxmetrics.testing import tiny_checkpoint

CTX = 64

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "To be",
    "A journey of a thousand miles begins with a single step, or so they say; it was the best of times.",
    "Numbers like 12345",
    "Colorless green ideas sleep furiously in the night.",
    "All that glitters is not gold; all who wander are not lost.",
    "It was",
    "Symbols like $%& also appear here! The question, the question.",
    "ok",
    "It was the best of times, it was the worst of times, said nobody in particular.",
    "Happy Birthday!",
]


# peaked_gpt2 (a tiny GPT-2 with CTX positions, loaded by both libraries, and its directory for
# the transformers tokenizer): tests/lm/conftest.py


def evaluate_perplexity(predictions, model, tokenizer, batch_size=16, add_start_token=True, max_length=None):
    """Transcription of ``evaluate``'s ``Perplexity._compute`` (model and tokenizer passed in, CPU)."""
    from torch.nn import CrossEntropyLoss

    if tokenizer.pad_token is None and batch_size > 1:
        # evaluate reads `special_tokens_map_extended`; transformers 5 only has `special_tokens_map`
        specials = getattr(tokenizer, "special_tokens_map_extended", None) or tokenizer.special_tokens_map
        existing_special_tokens = list(specials.values())
        assert len(existing_special_tokens) > 0
        tokenizer.add_special_tokens({"pad_token": existing_special_tokens[0]})
    if add_start_token and max_length:
        assert tokenizer.bos_token is not None
        max_tokenized_len = max_length - 1
    else:
        max_tokenized_len = max_length
    encodings = tokenizer(predictions, add_special_tokens=False, padding=True,
                          truncation=True if max_tokenized_len else False, max_length=max_tokenized_len,
                          return_tensors="pt", return_attention_mask=True)
    encoded_texts = encodings["input_ids"]
    attn_masks = encodings["attention_mask"]
    if add_start_token:
        assert torch.all(torch.ge(attn_masks.sum(1), 1))
    else:
        assert torch.all(torch.ge(attn_masks.sum(1), 2))
    ppls = []
    loss_fct = CrossEntropyLoss(reduction="none")
    for start_index in range(0, len(encoded_texts), batch_size):
        end_index = min(start_index + batch_size, len(encoded_texts))
        encoded_batch = encoded_texts[start_index:end_index]
        attn_mask = attn_masks[start_index:end_index]
        if add_start_token and tokenizer.bos_token_id is not None:
            bos_tokens_tensor = torch.tensor([[tokenizer.bos_token_id]] * encoded_batch.size(dim=0))
            encoded_batch = torch.cat([bos_tokens_tensor, encoded_batch], dim=1)
            attn_mask = torch.cat([torch.ones(bos_tokens_tensor.size(), dtype=torch.int64), attn_mask], dim=1)
        labels = encoded_batch
        with torch.no_grad():
            out_logits = model(encoded_batch, attention_mask=attn_mask).logits
        shift_logits = out_logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        shift_attention_mask_batch = attn_mask[..., 1:].contiguous()
        perplexity_batch = torch.exp(
            (loss_fct(shift_logits.transpose(1, 2), shift_labels) * shift_attention_mask_batch).sum(1)
            / shift_attention_mask_batch.sum(1))
        ppls += perplexity_batch.tolist()
    return {"perplexities": ppls, "mean_perplexity": np.mean(ppls)}


def _hf_tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


@pytest.mark.parametrize("add_start_token", [True, False])
@pytest.mark.parametrize("max_length", [None, 9])
def test_parity_with_evaluate(peaked_gpt2, add_start_token, max_length):
    lm, ref, path = peaked_gpt2
    ref_out = evaluate_perplexity(TEXTS, ref, _hf_tokenizer(path), batch_size=4,
                                  add_start_token=add_start_token, max_length=max_length)
    res = text_perplexities(TEXTS, model=lm, batch_size=3, add_start_token=add_start_token, max_length=max_length)
    assert res.perplexities.dtype == np.float64 and res.perplexities.shape == (len(TEXTS),)
    np.testing.assert_allclose(res.perplexities, ref_out["perplexities"], rtol=1e-5)
    assert res.mean_perplexity == pytest.approx(ref_out["mean_perplexity"], rel=1e-5)
    assert res.mean_perplexity == pytest.approx(float(np.mean(res.perplexities)), rel=1e-12)
    # token counts: the text's tokens (truncated) + BOS - 1
    tok = _hf_tokenizer(path)
    n = np.array([len(x) for x in tok(TEXTS, add_special_tokens=False)["input_ids"]])
    if max_length is not None:
        n = np.minimum(n, max_length - int(add_start_token))
        assert n.min() < n.max() and np.any(n == max_length - int(add_start_token))  # the cut bites
    np.testing.assert_array_equal(res.num_tokens, n + int(add_start_token) - 1)


def test_parity_with_evaluate_default_batch(peaked_gpt2):
    """evaluate's default batch_size=16 pads all texts together; ours buckets them: same values."""
    lm, ref, path = peaked_gpt2
    ref_out = evaluate_perplexity(TEXTS, ref, _hf_tokenizer(path))
    res = text_perplexities(TEXTS, model=lm)
    np.testing.assert_allclose(res.perplexities, ref_out["perplexities"], rtol=1e-5)
    assert res.mean_perplexity == pytest.approx(ref_out["mean_perplexity"], rel=1e-5)


def test_definition_single_text(peaked_gpt2):
    """One text: exp of transformers' mean loss on [BOS] + tokens (labels = inputs)."""
    lm, ref, path = peaked_gpt2
    tok = _hf_tokenizer(path)
    ids = [tok.bos_token_id] + tok("Happy Birthday!", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        x = torch.tensor([ids])
        logits = ref(x).logits[0, :-1].double()
    nll = -torch.log_softmax(logits, -1)[torch.arange(len(ids) - 1), x[0, 1:]].numpy()
    res = text_perplexities(["Happy Birthday!"], model=lm)
    assert res.num_tokens.tolist() == [len(ids) - 1]
    assert res.nll[0] == pytest.approx(nll.sum(), rel=1e-5)
    assert res.perplexities[0] == pytest.approx(np.exp(nll.mean()), rel=1e-5)


def test_input_order_batch_size_invariance_and_no_retrace(peaked_gpt2):
    lm, _, _ = peaked_gpt2
    a = text_perplexities(TEXTS, model=lm, batch_size=1)
    b = text_perplexities(TEXTS, model=lm, batch_size=5)
    np.testing.assert_allclose(a.perplexities, b.perplexities, rtol=1e-5)
    perm = np.random.default_rng(0).permutation(len(TEXTS))
    c = text_perplexities([TEXTS[i] for i in perm], model=lm, batch_size=5)
    np.testing.assert_allclose(c.perplexities, b.perplexities[perm], rtol=1e-6)
    run, _ = T._scorer(lm)
    n = run._cache_size()
    text_perplexities(TEXTS[::-1], model=lm, batch_size=5)
    assert run._cache_size() == n


def test_errors(peaked_gpt2):
    lm, _, _ = peaked_gpt2
    with pytest.raises(ValueError, match="texts"):
        text_perplexities([], model=lm)
    with pytest.raises(ValueError, match="texts"):  # empty text: no token even with BOS
        text_perplexities(["hello world", ""], model=lm)
    with pytest.raises(ValueError, match="texts.*at least two"):  # one-token text without BOS
        text_perplexities(["hello world", "a"], model=lm, add_start_token=False)
    assert text_perplexities(["a"], model=lm).num_tokens.tolist() == [1]  # fine with BOS
    with pytest.raises(TypeError, match="texts"):
        text_perplexities("hello world", model=lm)
    with pytest.raises(TypeError, match="texts"):
        text_perplexities(["hello", 3], model=lm)
    with pytest.raises(ValueError, match="batch_size"):
        text_perplexities(["hello world"], model=lm, batch_size=0)
    with pytest.raises(TypeError, match="batch_size"):
        text_perplexities(["hello world"], model=lm, batch_size=2.5)
    with pytest.raises(ValueError, match="max_length"):
        text_perplexities(["hello world"], model=lm, max_length=1)
    with pytest.raises(ValueError, match="texts.*max_length"):  # longer than the model's context
        text_perplexities([" ".join(TEXTS)], model=lm)
    text_perplexities([" ".join(TEXTS)], model=lm, max_length=CTX)  # truncation makes it fit
    no_bos = copy.deepcopy(lm.tokenizer)
    no_bos.bos_token = None
    lm2 = dataclasses.replace(lm, tokenizer=no_bos, _reductions={})
    assert lm2.tokenizer.bos_token_id is None
    with pytest.raises(ValueError, match="add_start_token"):
        text_perplexities(["hello world"], model=lm2)
    assert np.isfinite(text_perplexities(["hello world"], model=lm2, add_start_token=False).mean_perplexity)


def test_non_causal_model_rejected(tmp_path):
    enc = load_model(tiny_checkpoint("bert", tmp_path))
    with pytest.raises(ValueError, match="model"):
        text_perplexities(["hello world"], model=enc)


def test_long_real_text_error_names_max_length_and_perplexity(demo_gpt2_dir):
    """A play speech longer than the demo GPT-2's 128 positions: ``text_perplexities`` (one window
    per text, evaluate's convention) refuses it and names both ways out -- ``max_length`` and the
    sliding-window ``perplexity`` -- and both ways then score it."""
    from jaxmetrics.data import load_shakespeare
    from jaxmetrics.lm import perplexity

    lm = load_model(demo_gpt2_dir)
    speeches = load_shakespeare("heldout", min_words=150)
    long = next(t for t in speeches if len(lm.tokenizer(t, verbose=False)["input_ids"]) > 200)
    with pytest.raises(ValueError, match=r"^texts: text 0 has \d+ tokens.*128 positions.*max_length <= 128"
                                         r".*jaxmetrics\.perplexity \(sliding windows"):
        text_perplexities([long], model=lm)
    assert np.isfinite(text_perplexities([long], model=lm, max_length=128).perplexities[0])
    assert np.isfinite(perplexity(lm.tokenizer(long)["input_ids"], model=lm).perplexity)
