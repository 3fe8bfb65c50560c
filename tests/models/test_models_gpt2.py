"""GPT-2 in Flax NNX vs transformers' PyTorch GPT2LMHeadModel on a tiny random checkpoint."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jaxmetrics.models import ModelOutput  # noqa: E402


# gpt2 and gpt2_torch (the same checkpoint loaded by transformers): tests/conftest.py


def _batch(vocab, rng):
    ids = rng.integers(0, vocab, (3, 10)).astype(np.int32)
    mask = np.ones((3, 10), bool)
    mask[1, 6:] = False
    mask[2, 3:] = False  # right padding
    return ids, mask


def test_hidden_states_and_logits_match_torch(gpt2, gpt2_torch, rng):
    lm, tm = gpt2, gpt2_torch
    ids, mask = _batch(lm.config.vocab_size, rng)
    out = lm.forward(ids, mask, output_hidden_states=True)
    with torch.no_grad():
        ref = tm(input_ids=torch.tensor(ids, dtype=torch.long),
                 attention_mask=torch.tensor(mask.astype(np.int64)), output_hidden_states=True)
    assert isinstance(out, ModelOutput)
    assert len(out.hidden_states) == lm.config.n_layer + 1 == len(ref.hidden_states)
    for ours, theirs in zip(out.hidden_states, ref.hidden_states):
        np.testing.assert_allclose(np.asarray(ours)[mask], theirs.numpy()[mask], atol=1e-4, rtol=0)
    # hidden_states[-1] is after ln_f and equals last_hidden_state (transformers' convention)
    np.testing.assert_array_equal(np.asarray(out.hidden_states[-1]), np.asarray(out.last_hidden_state))
    assert out.logits.dtype == np.float32
    assert out.logits.shape == (3, 10, lm.config.vocab_size)
    np.testing.assert_allclose(np.asarray(out.logits)[mask], ref.logits.numpy()[mask], atol=1e-4, rtol=0)


def test_causal_attention_in_query_blocks_matches_torch(gpt2, gpt2_torch, rng, monkeypatch):
    # long inputs take causal attention in query blocks against the keys up to each block's
    # end; blocks of 4 on 11 tokens (padding inside a block) must still give transformers' values
    from jaxmetrics.models import _base

    monkeypatch.setattr(_base, "CAUSAL_CHUNK", 4)
    lm, tm = gpt2, gpt2_torch
    ids = rng.integers(0, lm.config.vocab_size, (2, 11)).astype(np.int32)
    mask = np.ones((2, 11), bool)
    mask[1, 6:] = False
    out = lm.forward(ids, mask, output_hidden_states=True)
    with torch.no_grad():
        ref = tm(input_ids=torch.tensor(ids, dtype=torch.long),
                 attention_mask=torch.tensor(mask.astype(np.int64)), output_hidden_states=True)
    for ours, theirs in zip(out.hidden_states, ref.hidden_states):
        np.testing.assert_allclose(np.asarray(ours)[mask], theirs.numpy()[mask], atol=1e-4, rtol=0)
    np.testing.assert_allclose(np.asarray(out.logits)[mask], ref.logits.numpy()[mask], atol=1e-4, rtol=0)


def test_padding_does_not_change_real_tokens(gpt2, rng):
    lm = gpt2
    ids, mask = _batch(lm.config.vocab_size, rng)
    short = lm.forward(ids[1:2, :6], mask[1:2, :6]).last_hidden_state
    padded = lm.forward(ids, mask).last_hidden_state
    np.testing.assert_allclose(np.asarray(padded)[1, :6], np.asarray(short)[0], atol=1e-5)


def test_jit_equals_eager_and_no_retrace(gpt2, rng):
    lm = gpt2
    ids, mask = _batch(lm.config.vocab_size, rng)
    jitted = lm.forward(ids, mask, return_logits=False)
    assert jitted.logits is None and jitted.hidden_states is None
    eager = lm.model(ids, mask, return_logits=False)
    np.testing.assert_allclose(np.asarray(jitted.last_hidden_state)[mask],
                               np.asarray(eager.last_hidden_state)[mask], atol=1e-5)
    fn, _ = lm._compiled()
    before = fn._cache_size()
    lm.forward(ids + 1, mask, return_logits=False)
    assert fn._cache_size() == before


def test_bad_forward_input(gpt2):
    lm = gpt2
    with pytest.raises(ValueError, match="^input_ids"):
        lm.forward(np.zeros(4, np.int32), np.ones(4, bool))
    with pytest.raises(ValueError, match="^attention_mask"):
        lm.forward(np.zeros((2, 4), np.int32), np.ones((2, 3), bool))
    with pytest.raises(TypeError, match="^input_ids"):
        lm.forward(np.zeros((2, 4), np.float32), np.ones((2, 4), bool))
