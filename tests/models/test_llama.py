"""Llama-style decoder: parity with transformers PyTorch Llama / Mistral / Qwen2 on tiny random configs."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import transformers as tf
from flax import nnx

from jaxmetrics.models.llama import Llama, rope_inv_freq

COMMON = dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64, initializer_range=0.2)


def make_torch(kind, **over):
    torch.manual_seed(0)
    kw = {**COMMON, **over}
    if kind == "llama":
        cfg = tf.LlamaConfig(**kw)
        model = tf.LlamaForCausalLM(cfg)
    elif kind == "mistral":
        cfg = tf.MistralConfig(**kw)
        model = tf.MistralForCausalLM(cfg)
    elif kind == "qwen2":
        cfg = tf.Qwen2Config(**kw)
        model = tf.Qwen2ForCausalLM(cfg)
    else:  # pragma: no cover
        raise ValueError(kind)
    return cfg, model.eval()


def _state_dict(model):
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def _compare(cfg, model, ids, mask, atol=1e-4):
    jm = Llama.from_pretrained(cfg, _state_dict(model))
    with torch.no_grad():
        ref = model(torch.tensor(ids), attention_mask=torch.tensor(mask), output_hidden_states=True)
    out = jm(jnp.asarray(ids), jnp.asarray(mask), output_hidden_states=True)
    assert len(out.hidden_states) == len(ref.hidden_states) == cfg.num_hidden_layers + 1
    m = mask[..., None].astype(bool)
    for a, b in zip(ref.hidden_states, out.hidden_states):
        np.testing.assert_allclose(np.where(m, np.asarray(b), 0), np.where(m, a.numpy(), 0), atol=atol, rtol=1e-4)
    np.testing.assert_allclose(np.where(m, np.asarray(out.logits), 0), np.where(m, ref.logits.numpy(), 0),
                               atol=atol, rtol=1e-4)
    return jm, out


def _inputs(t=12):
    rng = np.random.default_rng(1)
    ids = rng.integers(0, COMMON["vocab_size"], size=(3, t))
    mask = np.ones((3, t), dtype=np.int64)
    mask[1, 7:] = 0  # right padding
    mask[2, 3:] = 0
    return ids, mask


@pytest.mark.parametrize(
    "kind,over",
    [
        ("llama", {}),
        ("llama", {"tie_word_embeddings": True, "num_key_value_heads": 1,
                   "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 16}}),
        ("llama", {"attention_bias": True, "mlp_bias": True, "num_key_value_heads": 4}),
        ("mistral", {"sliding_window": 4}),
        ("qwen2", {"tie_word_embeddings": True}),
    ],
)
def test_parity_with_transformers(kind, over):
    cfg, model = make_torch(kind, **over)
    ids, mask = _inputs()
    _compare(cfg, model, ids, mask)


@pytest.mark.parametrize("kind,over", [("llama", {}), ("mistral", {"sliding_window": 4})])
def test_causal_attention_in_query_blocks(kind, over, monkeypatch):
    # query blocks of 5 on 12 tokens: each block sees the keys up to its end only
    from jaxmetrics.models import _base

    monkeypatch.setattr(_base, "CAUSAL_CHUNK", 5)
    cfg, model = make_torch(kind, **over)
    ids, mask = _inputs()
    _compare(cfg, model, ids, mask)


def test_sliding_window_is_exercised():
    cfg, model = make_torch("mistral", sliding_window=3)
    ids, mask = _inputs()
    _, out_sw = _compare(cfg, model, ids, mask)
    cfg_full, _ = make_torch("mistral", sliding_window=None)
    full = Llama.from_pretrained(cfg_full, _state_dict(model))(jnp.asarray(ids), jnp.asarray(mask))
    # beyond the window the outputs must differ, inside it they agree
    assert not np.allclose(np.asarray(full.logits[0, 6:]), np.asarray(out_sw.logits[0, 6:]), atol=1e-4)
    np.testing.assert_allclose(np.asarray(full.logits[0, :3]), np.asarray(out_sw.logits[0, :3]), atol=1e-5)


def test_rope_inv_freq_matches_transformers():
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    cfg, _ = make_torch("llama", rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                                  "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                  "original_max_position_embeddings": 16})
    ref, _ = ROPE_INIT_FUNCTIONS["llama3"](cfg)
    np.testing.assert_allclose(rope_inv_freq(cfg), ref.numpy(), rtol=1e-6)


def test_kv_cache_decode_equals_full_forward():
    cfg, model = make_torch("mistral", sliding_window=5)
    jm = Llama.from_pretrained(cfg, _state_dict(model))
    graphdef, state = nnx.split(jm)

    @jax.jit
    def decode(state, *args):
        return nnx.merge(graphdef, state).decode_step(*args)

    ids = jnp.asarray(np.random.default_rng(2).integers(0, 97, size=(2, 10)))
    full = jm(ids, jnp.ones_like(ids)).logits
    cache = jm.init_cache(2, 10)
    key_mask = jnp.ones((2, 10), bool)
    pos = jnp.broadcast_to(jnp.arange(10), (2, 10))
    lp, cache = decode(state, ids[:, :6], pos[:, :6], key_mask, cache, 0)  # prefill
    np.testing.assert_allclose(np.asarray(lp), np.asarray(full[:, :6]), atol=1e-5)
    for i in range(6, 10):
        li, cache = decode(state, ids[:, i:i + 1], pos[:, i:i + 1], key_mask, cache, i)
        np.testing.assert_allclose(np.asarray(li[:, 0]), np.asarray(full[:, i]), atol=1e-5)


def test_bad_config():
    cfg, model = make_torch("llama")
    cfg.num_key_value_heads = 3
    with pytest.raises(ValueError, match="^config"):
        Llama.from_pretrained(cfg, _state_dict(model))
    cfg, model = make_torch("llama", rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2.0})
    with pytest.raises(ValueError, match="^config"):
        Llama.from_pretrained(cfg, _state_dict(model))
    cfg, model = make_torch("llama")
    sd = _state_dict(model)
    del sd["model.layers.1.mlp.up_proj.weight"]
    with pytest.raises(ValueError, match="up_proj"):
        Llama.from_pretrained(cfg, sd)


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_load_model_from_save_pretrained_and_score(kind, tmp_path):
    """Registry entry + safetensors loader: a saved checkpoint loads as a causal LM and its
    sliding-window perplexity matches transformers' loss."""
    from jaxmetrics.lm import perplexity
    from jaxmetrics.models import load_model
    from jaxmetrics.testing import _bpe_tokenizer

    cfg, model = make_torch(kind, tie_word_embeddings=(kind == "qwen2"))
    model.save_pretrained(str(tmp_path))
    _bpe_tokenizer("gpt2", 90).save_pretrained(str(tmp_path))
    lm = load_model(str(tmp_path))
    assert lm.kind == kind and lm.is_causal
    ids = np.random.default_rng(4).integers(0, COMMON["vocab_size"], size=20)
    with torch.no_grad():
        loss = float(model(torch.tensor(ids)[None], labels=torch.tensor(ids)[None]).loss)
    res = perplexity(ids, model=lm, max_length=32, stride=8, batch_size=2)
    assert res.num_tokens == 19
    assert res.perplexity == pytest.approx(np.exp(loss), rel=1e-5)
