"""GPT-2 in Flax NNX (``GPT2Model`` + the tied LM head of ``GPT2LMHeadModel``).

Matches transformers' PyTorch GPT-2: pre-LayerNorm blocks, fused ``c_attn`` projection
(``Conv1D`` weights are stored ``[in, out]``, i.e. already in ``nnx.Linear`` layout),
``gelu_new`` MLP, final ``ln_f``, logits = ``h @ wte.T``. Position ids are ``0..T-1``
(right padding), and padded keys are masked out of attention.

:class:`GPT2` implements the causal-LM protocol of :mod:`jaxmetrics.models.protocol`
(``__call__``, ``lm_head``, ``init_cache``, ``decode_step``); the cached path runs the same
blocks as the full forward pass, with the new keys and values written into the cache.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxmetrics.models._base import (
    ModelOutput, activation, attention, build_pretrained, cached_attention_mask, dense, inv_sqrt, merge_heads,
    packed_layout, split_heads, strip_prefix, take, tied_lm_head, write_cache,
)


def _ln(cfg, d, dtype, rngs):
    return nnx.LayerNorm(d, epsilon=cfg.layer_norm_epsilon, dtype=dtype, param_dtype=dtype, rngs=rngs)


class GPT2Attention(nnx.Module):
    def __init__(self, cfg, layer_idx: int, *, dtype, rngs):
        d = cfg.n_embd
        self.num_heads = cfg.n_head
        self.c_attn = dense(d, 3 * d, dtype=dtype, rngs=rngs)
        self.c_proj = dense(d, d, dtype=dtype, rngs=rngs)
        scale = inv_sqrt(d // cfg.n_head) if getattr(cfg, "scale_attn_weights", True) else 1.0
        if getattr(cfg, "scale_attn_by_inverse_layer_idx", False):
            scale /= float(layer_idx + 1)
        self.scale = scale

    def __call__(self, x, allowed, kv_cache=None, cache_index=None):
        """``allowed [B, 1, T, S]``. With ``kv_cache = (k, v)`` of ``[B, S, H, Dh]`` the new keys and
        values are written at ``cache_index`` and attention runs over the whole cache."""
        q, k, v = jnp.split(self.c_attn(x), 3, axis=-1)
        h = self.num_heads
        q, k, v = split_heads(q, h), split_heads(k, h), split_heads(v, h)
        new_cache = None
        if kv_cache is not None:
            k, v = new_cache = write_cache(kv_cache, k, v, cache_index)
        out = attention(q, k, v, allowed, scale=self.scale, causal=kv_cache is None)
        return self.c_proj(merge_heads(out)), new_cache


class GPT2MLP(nnx.Module):
    def __init__(self, cfg, *, dtype, rngs):
        d = cfg.n_embd
        inner = cfg.n_inner if getattr(cfg, "n_inner", None) else 4 * d
        self.c_fc = dense(d, inner, dtype=dtype, rngs=rngs)
        self.c_proj = dense(inner, d, dtype=dtype, rngs=rngs)
        self.act = activation(cfg.activation_function)

    def __call__(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class GPT2Block(nnx.Module):
    def __init__(self, cfg, layer_idx: int, *, dtype, rngs):
        d = cfg.n_embd
        self.ln_1 = _ln(cfg, d, dtype, rngs)
        self.attn = GPT2Attention(cfg, layer_idx, dtype=dtype, rngs=rngs)
        self.ln_2 = _ln(cfg, d, dtype, rngs)
        self.mlp = GPT2MLP(cfg, dtype=dtype, rngs=rngs)

    def __call__(self, x, allowed, kv_cache=None, cache_index=None):
        h, new_cache = self.attn(self.ln_1(x), allowed, kv_cache, cache_index)
        x = x + h
        return x + self.mlp(self.ln_2(x)), new_cache


class GPT2(nnx.Module):
    """GPT-2 decoder with the tied LM head.

    ``__call__(input_ids [B, T] int, attention_mask [B, T] bool/int)`` returns a
    :class:`ModelOutput`; ``hidden_states`` has ``n_layer + 1`` entries, the last one
    after ``ln_f`` (transformers' convention).
    """

    is_causal = True
    supports_packing = True

    def __init__(self, cfg, *, dtype=jnp.float32, rngs: nnx.Rngs):
        d = cfg.n_embd
        self.wte = nnx.Embed(cfg.vocab_size, d, dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.wpe = nnx.Embed(cfg.n_positions, d, dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.h = nnx.List([GPT2Block(cfg, i, dtype=dtype, rngs=rngs) for i in range(cfg.n_layer)])
        self.ln_f = _ln(cfg, d, dtype, rngs)

    def __call__(self, input_ids, attention_mask, *, output_hidden_states: bool = False,
                 return_logits: bool = True, segment_ids=None) -> ModelOutput:
        """``segment_ids [B, T]`` (optional, replaces ``attention_mask``): rows packed with several
        texts, see :func:`jaxmetrics.models._base.packed_layout`."""
        b, t = input_ids.shape
        causal = jnp.tril(jnp.ones((t, t), dtype=bool))
        if segment_ids is not None:
            pos, same, _ = packed_layout(segment_ids)
            allowed = causal[None, None] & same
        else:
            mask = attention_mask.astype(bool)
            allowed = causal[None, None] & mask[:, None, None, :]  # [B, 1, Tq, Tk]
            pos = jnp.arange(t)[None, :]
        x = self.wte(input_ids) + self.wpe(pos)
        hidden = [x] if output_hidden_states else None
        for block in self.h:
            x, _ = block(x, allowed)
            if output_hidden_states:
                hidden.append(x)
        x = self.ln_f(x)
        if output_hidden_states:
            hidden[-1] = x  # transformers replaces the last entry by the ln_f output
        logits = self.lm_head(x) if return_logits else None
        return ModelOutput(x, tuple(hidden) if output_hidden_states else None, logits)

    def lm_head(self, hidden):
        """Float32 logits ``[..., V]`` of final hidden states: the tied head ``h @ wte.T``."""
        return tied_lm_head(hidden, self.wte.embedding[...])

    def output_embeddings(self):
        """The ``[V, D]`` rows of the LM head (tied: the token embeddings ``wte``), one per token."""
        return self.wte.embedding[...]

    def init_cache(self, batch_size: int, max_len: int):
        """Zero key/value cache: one ``(k, v)`` pair of ``[B, S, H, Dh]`` per block."""
        d = self.wte.embedding.shape[1]
        dt = self.wte.embedding.dtype
        out = []
        for block in self.h:
            h = block.attn.num_heads
            shape = (batch_size, max_len, h, d // h)
            out.append((jnp.zeros(shape, dt), jnp.zeros(shape, dt)))
        return out

    def decode_step(self, input_ids, positions, key_mask, cache, cache_index):
        """Cached forward of ``input_ids [B, t]`` written at cache slots ``cache_index ..
        cache_index + t - 1`` (``positions [B, t]``: learned position ids; ``key_mask [B, S]``:
        cache slots holding real tokens, the new ones included). Returns
        ``(logits [B, t, V] float32, new_cache)``."""
        allowed = cached_attention_mask(key_mask, cache_index, input_ids.shape[1])
        x = self.wte(input_ids) + self.wpe(positions)
        new_cache = []
        for block, kv in zip(self.h, cache):
            x, c = block(x, allowed, kv, cache_index)
            new_cache.append(c)
        return self.lm_head(self.ln_f(x)), new_cache

    @classmethod
    def from_pretrained(cls, config, state_dict: dict[str, np.ndarray], *, dtype=jnp.float32) -> "GPT2":
        """Build from a transformers ``GPT2Config`` and a name -> numpy array state dict."""
        return build_pretrained(cls, config, convert_gpt2(config, state_dict), dtype=dtype)


def convert_gpt2(config, state_dict: dict[str, np.ndarray]) -> dict[tuple, np.ndarray]:
    """Map transformers GPT-2 weight names to :class:`GPT2` nnx paths (``Conv1D`` needs no transpose)."""
    sd = strip_prefix(state_dict, ("transformer.",))
    p: dict[tuple, np.ndarray] = {
        ("wte", "embedding"): take(sd, "wte.weight"),
        ("wpe", "embedding"): take(sd, "wpe.weight"),
        ("ln_f", "scale"): take(sd, "ln_f.weight"),
        ("ln_f", "bias"): take(sd, "ln_f.bias"),
    }
    for i in range(config.n_layer):
        pre = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            p[("h", i, ln, "scale")] = take(sd, pre + ln + ".weight")
            p[("h", i, ln, "bias")] = take(sd, pre + ln + ".bias")
        for mod, lin in (("attn", "c_attn"), ("attn", "c_proj"), ("mlp", "c_fc"), ("mlp", "c_proj")):
            p[("h", i, mod, lin, "kernel")] = take(sd, f"{pre}{mod}.{lin}.weight")
            p[("h", i, mod, lin, "bias")] = take(sd, f"{pre}{mod}.{lin}.bias")
    return p
