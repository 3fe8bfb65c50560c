"""Llama-style decoder in Flax NNX (Llama, Mistral, Qwen2 checkpoints).

Matches transformers' PyTorch ``LlamaForCausalLM`` / ``MistralForCausalLM`` /
``Qwen2ForCausalLM``: pre-RMSNorm blocks, rotary position embeddings (``rotate_half``
convention, ``default``/``linear``/``llama3`` rope types), grouped-query attention (key/value
head ``j`` serves query heads ``j*G .. j*G+G-1``, like ``repeat_kv``), SwiGLU MLP
(``down(silu(gate(x)) * up(x))``), final RMSNorm and an LM head (tied or not).
Qwen2 adds biases to the q/k/v projections; Mistral / Qwen2 sliding-window layers restrict
each query to the last ``sliding_window`` keys.

Position ids are ``0..T-1`` with right padding; padded keys are masked out of attention.
:class:`Llama` implements the causal-LM protocol of :mod:`jaxmetrics.models.protocol`
(``__call__``, ``lm_head``, ``init_cache``, ``decode_step``).

Written here rather than taken from a library because transformers 5 ships no Flax models.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxmetrics._ops import PRECISION
from jaxmetrics.models._base import (
    ModelOutput, activation, attention, build_pretrained, cached_attention_mask, dense, strip_prefix, take,
    tied_lm_head, write_cache,
)


def _rope_parameters(cfg) -> dict:
    rp = getattr(cfg, "rope_parameters", None)
    if isinstance(rp, dict) and "rope_theta" in rp:
        return dict(rp)
    # older configs: rope_theta / rope_scaling attributes
    out = {"rope_type": "default", "rope_theta": float(getattr(cfg, "rope_theta", 10000.0))}
    scaling = getattr(cfg, "rope_scaling", None)
    if isinstance(scaling, dict):
        out.update(scaling)
        out["rope_type"] = scaling.get("rope_type", scaling.get("type", "default"))
    return out


def head_dim_of(cfg) -> int:
    """Per-head width (``config.head_dim`` or ``hidden_size // num_attention_heads``).

    Examples:
      >>> from types import SimpleNamespace
      >>> head_dim_of(SimpleNamespace(hidden_size=64, num_attention_heads=4))
      16
    """
    return int(getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads)


def rope_inv_freq(cfg) -> np.ndarray:
    """Inverse frequencies ``θ^{-2i/d}``, ``i = 0 .. d/2 - 1`` (float32), adjusted for the
    ``linear`` and ``llama3`` rope types; other types raise ``ValueError``.

    Examples:
      >>> from types import SimpleNamespace
      >>> cfg = SimpleNamespace(hidden_size=8, num_attention_heads=2, rope_theta=10000.0)
      >>> rope_inv_freq(cfg).tolist()
      [1.0, 0.009999999776482582]
    """
    rp = _rope_parameters(cfg)
    rtype = rp.get("rope_type", "default") or "default"
    dim = int(head_dim_of(cfg) * float(rp.get("partial_rotary_factor", 1.0)))
    base = float(rp["rope_theta"])
    inv = (1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)))).astype(np.float32)
    if rtype == "default":
        return inv
    if rtype == "linear":
        return (inv / np.float32(rp["factor"])).astype(np.float32)
    if rtype == "llama3":
        factor, lo, hi = float(rp["factor"]), float(rp["low_freq_factor"]), float(rp["high_freq_factor"])
        old = float(rp["original_max_position_embeddings"])
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
        return np.where(medium, smoothed, scaled).astype(np.float32)
    raise ValueError(f"config: rope_type {rtype!r} is not supported (supported: default, linear, llama3)")


def rope_cos_sin(positions, inv_freq, dtype):
    """``cos``/``sin`` tables ``[B, T, Dh]`` for integer ``positions [B, T]``:
    ``cos(p · [f, f])`` and ``sin(p · [f, f])`` with ``f`` the inverse frequencies ``[Dh/2]``.

    Examples:
      >>> import jax.numpy as jnp
      >>> cos, sin = rope_cos_sin(jnp.array([[0, 1]]), (1.0, 0.5), jnp.float32)
      >>> cos.shape, float(sin[0, 1, 1])
      ((1, 2, 4), 0.4794255495071411)
    """
    freqs = positions.astype(jnp.float32)[..., None] * jnp.asarray(inv_freq, dtype=jnp.float32)
    emb = jnp.concatenate([freqs, freqs], axis=-1)
    return jnp.cos(emb).astype(dtype), jnp.sin(emb).astype(dtype)


def _rotate_half(x):
    h = x.shape[-1] // 2
    return jnp.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def apply_rope(x, cos, sin):
    """Rotate ``x [B, T, H, Dh]`` by the tables ``[B, T, Dh]``:
    ``x·cos + rotate_half(x)·sin`` with ``rotate_half([a, b]) = [-b, a]`` (transformers' form).

    Examples:
      >>> import jax.numpy as jnp
      >>> x = jnp.ones((1, 1, 1, 2))
      >>> cos, sin = rope_cos_sin(jnp.array([[0]]), (1.0,), jnp.float32)
      >>> bool(jnp.allclose(apply_rope(x, cos, sin), x))  # position 0 is the identity
      True
    """
    return x * cos[:, :, None, :] + _rotate_half(x) * sin[:, :, None, :]


class RMSNorm(nnx.Module):
    """``w * x / sqrt(mean(x²) + eps)``, computed in float32 and returned in ``x``'s dtype."""

    def __init__(self, d: int, eps: float, *, dtype):
        self.weight = nnx.Param(jnp.ones((d,), dtype=dtype))
        self.eps = eps

    def __call__(self, x):
        xf = x.astype(jnp.float32)
        xf = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + self.eps)
        return (self.weight[...].astype(jnp.float32) * xf).astype(x.dtype)


def _linear(din, dout, bias, dtype, rngs):
    return dense(din, dout, use_bias=bias, dtype=dtype, rngs=rngs)


def _sliding_window(cfg, layer_idx: int):
    sw = getattr(cfg, "sliding_window", None)
    if sw is None:
        return None
    types = getattr(cfg, "layer_types", None)
    if types is not None:
        return int(sw) if types[layer_idx] == "sliding_attention" else None
    if getattr(cfg, "model_type", "") == "qwen2":  # qwen2 without layer_types: only if enabled
        return int(sw) if getattr(cfg, "use_sliding_window", False) else None
    return int(sw)


class LlamaAttention(nnx.Module):
    def __init__(self, cfg, layer_idx: int, *, dtype, rngs):
        d = cfg.hidden_size
        self.num_heads = int(cfg.num_attention_heads)
        self.num_kv_heads = int(getattr(cfg, "num_key_value_heads", None) or self.num_heads)
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"config: num_attention_heads {self.num_heads} is not a multiple of "
                f"num_key_value_heads {self.num_kv_heads}")
        self.head_dim = head_dim_of(cfg)
        qwen = getattr(cfg, "model_type", "") == "qwen2"
        ab = bool(getattr(cfg, "attention_bias", False))
        qkv_bias, o_bias = (True, False) if qwen else (ab, ab)
        hd = self.head_dim
        self.q_proj = _linear(d, self.num_heads * hd, qkv_bias, dtype, rngs)
        self.k_proj = _linear(d, self.num_kv_heads * hd, qkv_bias, dtype, rngs)
        self.v_proj = _linear(d, self.num_kv_heads * hd, qkv_bias, dtype, rngs)
        self.o_proj = _linear(self.num_heads * hd, d, o_bias, dtype, rngs)
        self.scale = hd ** -0.5
        self.sliding_window = _sliding_window(cfg, layer_idx)

    def __call__(self, x, cos, sin, allowed, q_slots, kv_cache=None, cache_index=None):
        """``allowed [B, 1, T, S]``: padding/causal mask over keys; ``q_slots [T]``: the key slot of
        each query (for the sliding window). With ``kv_cache = (k, v)`` of ``[B, S, Hkv, Dh]``, the
        new keys/values are written at ``cache_index`` and attention runs over the whole cache."""
        b, t, _ = x.shape
        hd = self.head_dim
        q = self.q_proj(x).reshape(b, t, self.num_heads, hd)
        k = self.k_proj(x).reshape(b, t, self.num_kv_heads, hd)
        v = self.v_proj(x).reshape(b, t, self.num_kv_heads, hd)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        new_cache = None
        if kv_cache is not None:
            k, v = new_cache = write_cache(kv_cache, k, v, cache_index)
        if self.sliding_window is not None:
            k_slots = jnp.arange(k.shape[1])
            allowed = allowed & ((q_slots[:, None] - k_slots[None, :]) < self.sliding_window)[None, None]
        g = self.num_heads // self.num_kv_heads
        if g > 1:  # grouped-query attention: kv head j serves query heads j*g .. j*g+g-1
            k, v = jnp.repeat(k, g, axis=2), jnp.repeat(v, g, axis=2)
        # without a cache, keys are the queries' own sequence and ``allowed`` is causal
        out = attention(q, k, v, allowed, scale=self.scale, causal=kv_cache is None)
        return self.o_proj(out.reshape(b, t, self.num_heads * hd)), new_cache


class LlamaMLP(nnx.Module):
    def __init__(self, cfg, *, dtype, rngs):
        d, inner = cfg.hidden_size, cfg.intermediate_size
        bias = bool(getattr(cfg, "mlp_bias", False))
        self.gate_proj = _linear(d, inner, bias, dtype, rngs)
        self.up_proj = _linear(d, inner, bias, dtype, rngs)
        self.down_proj = _linear(inner, d, bias, dtype, rngs)
        self.act = activation(getattr(cfg, "hidden_act", "silu"))

    def __call__(self, x):
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nnx.Module):
    def __init__(self, cfg, layer_idx: int, *, dtype, rngs):
        eps = float(cfg.rms_norm_eps)
        self.input_layernorm = RMSNorm(cfg.hidden_size, eps, dtype=dtype)
        self.self_attn = LlamaAttention(cfg, layer_idx, dtype=dtype, rngs=rngs)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, eps, dtype=dtype)
        self.mlp = LlamaMLP(cfg, dtype=dtype, rngs=rngs)

    def __call__(self, x, cos, sin, allowed, q_slots, kv_cache=None, cache_index=None):
        h, new_cache = self.self_attn(self.input_layernorm(x), cos, sin, allowed, q_slots, kv_cache, cache_index)
        x = x + h
        return x + self.mlp(self.post_attention_layernorm(x)), new_cache


class Llama(nnx.Module):
    """Llama-style decoder with its LM head (Llama, Mistral, Qwen2).

    ``__call__(input_ids [B, T] int, attention_mask [B, T] bool/int)`` returns a
    :class:`~jaxmetrics.models.ModelOutput`; ``hidden_states`` has ``num_hidden_layers + 1``
    entries (embeddings, then each block's output; the last entry is after the final norm,
    transformers' convention). Logits are float32 ``[B, T, V]``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> from transformers import LlamaConfig
      >>> cfg = LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
      ...                   num_attention_heads=4, num_key_value_heads=2)
      >>> m = Llama(cfg, rngs=nnx.Rngs(0))
      >>> m(jnp.array([[1, 2, 3]]), jnp.ones((1, 3), bool)).logits.shape
      (1, 3, 50)
    """

    is_causal = True

    def __init__(self, cfg, *, dtype=jnp.float32, rngs: nnx.Rngs):
        d = cfg.hidden_size
        self.embed_tokens = nnx.Embed(cfg.vocab_size, d, dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.layers = nnx.List([LlamaBlock(cfg, i, dtype=dtype, rngs=rngs) for i in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(d, float(cfg.rms_norm_eps), dtype=dtype)
        self.tie_word_embeddings = bool(getattr(cfg, "tie_word_embeddings", False))
        if not self.tie_word_embeddings:  # the untied output projection (``lm_head.weight``): float32 logits
            self.unembed = nnx.Linear(d, cfg.vocab_size, use_bias=False, dtype=dtype, param_dtype=dtype,
                                      precision=PRECISION, preferred_element_type=jnp.float32, rngs=rngs)
        # static constant (a tuple, so nnx does not treat it as state), not a parameter
        self.inv_freq = tuple(float(f) for f in rope_inv_freq(cfg))
        self.num_kv_heads = int(getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads)
        self.head_dim = head_dim_of(cfg)
        self.dtype = dtype

    def lm_head(self, hidden):
        """Float32 logits ``[..., V]`` of final hidden states (tied or untied head)."""
        if self.tie_word_embeddings:
            return tied_lm_head(hidden, self.embed_tokens.embedding[...])
        return self.unembed(hidden).astype(jnp.float32)

    def _run(self, input_ids, positions, allowed, q_slots, cache=None, cache_index=None,
             output_hidden_states=False):
        x = self.embed_tokens(input_ids)
        cos, sin = rope_cos_sin(positions, self.inv_freq, x.dtype)
        hidden = [x] if output_hidden_states else None
        new_cache = []
        for i, layer in enumerate(self.layers):
            kv = None if cache is None else cache[i]
            x, c = layer(x, cos, sin, allowed, q_slots, kv, cache_index)
            new_cache.append(c)
            if output_hidden_states:
                hidden.append(x)
        x = self.norm(x)
        if output_hidden_states:
            hidden[-1] = x
        return x, hidden, new_cache

    def __call__(self, input_ids, attention_mask, *, output_hidden_states: bool = False,
                 return_logits: bool = True) -> ModelOutput:
        b, t = input_ids.shape
        mask = attention_mask.astype(bool)
        causal = jnp.tril(jnp.ones((t, t), dtype=bool))
        allowed = causal[None, None] & mask[:, None, None, :]
        positions = jnp.broadcast_to(jnp.arange(t)[None, :], (b, t))
        x, hidden, _ = self._run(input_ids, positions, allowed, jnp.arange(t),
                                 output_hidden_states=output_hidden_states)
        logits = self.lm_head(x) if return_logits else None
        return ModelOutput(x, tuple(hidden) if output_hidden_states else None, logits)

    def init_cache(self, batch_size: int, max_len: int):
        """Zero KV cache: one ``(k, v)`` pair of ``[B, S, H_kv, Dh]`` per layer."""
        shape = (batch_size, max_len, self.num_kv_heads, self.head_dim)
        return [(jnp.zeros(shape, self.dtype), jnp.zeros(shape, self.dtype)) for _ in self.layers]

    def decode_step(self, input_ids, positions, key_mask, cache, cache_index):
        """KV-cache forward of ``input_ids [B, t]`` written at cache slots ``cache_index ..
        cache_index + t - 1``.

        Args:
          input_ids: ``[B, t]`` int; positions: ``[B, t]`` rotary positions;
          key_mask: ``[B, S]`` bool, true on cache slots holding real tokens (including the new ones);
          cache: from :meth:`init_cache`; cache_index: traced int scalar.

        Returns:
          ``(logits [B, t, V] float32, new_cache)``.
        """
        t = input_ids.shape[1]
        q_slots = cache_index + jnp.arange(t)
        allowed = cached_attention_mask(key_mask, cache_index, t)
        x, _, new_cache = self._run(input_ids, positions, allowed, q_slots, cache, cache_index)
        return self.lm_head(x), new_cache

    @classmethod
    def from_pretrained(cls, config, state_dict: dict[str, np.ndarray], *, dtype=jnp.float32) -> "Llama":
        """Build from a transformers Llama/Mistral/Qwen2 config and a name -> numpy array state dict."""
        return build_pretrained(cls, config, convert_llama(config, state_dict), dtype=dtype)


def convert_llama(config, state_dict: dict[str, np.ndarray]) -> dict[tuple, np.ndarray]:
    """Map transformers Llama/Mistral/Qwen2 weight names to :class:`Llama` nnx paths.

    ``nn.Linear`` weights are ``[out, in]`` and are transposed to ``nnx.Linear`` kernels ``[in, out]``.
    A tied checkpoint (``tie_word_embeddings``) may omit ``lm_head.weight``; it is then not loaded.

    Examples:
      >>> import numpy as np
      >>> from types import SimpleNamespace
      >>> cfg = SimpleNamespace(num_hidden_layers=0, tie_word_embeddings=True)
      >>> sd = {"model.embed_tokens.weight": np.zeros((5, 4)), "model.norm.weight": np.ones(4)}
      >>> sorted(convert_llama(cfg, sd))
      [('embed_tokens', 'embedding'), ('norm', 'weight')]
    """
    head = state_dict.get("lm_head.weight")
    sd = strip_prefix(state_dict, ("model.",))
    p: dict[tuple, np.ndarray] = {
        ("embed_tokens", "embedding"): take(sd, "embed_tokens.weight"),
        ("norm", "weight"): take(sd, "norm.weight"),
    }
    if not getattr(config, "tie_word_embeddings", False):
        if head is None:
            raise ValueError("checkpoint: weight 'lm_head.weight' is missing from the safetensors files")
        p[("unembed", "kernel")] = head.T
    for i in range(config.num_hidden_layers):
        pre = f"layers.{i}."
        for ln in ("input_layernorm", "post_attention_layernorm"):
            p[("layers", i, ln, "weight")] = take(sd, f"{pre}{ln}.weight")
        for mod, names in (("self_attn", ("q_proj", "k_proj", "v_proj", "o_proj")),
                           ("mlp", ("gate_proj", "up_proj", "down_proj"))):
            for lin in names:
                p[("layers", i, mod, lin, "kernel")] = take(sd, f"{pre}{mod}.{lin}.weight", transpose=True)
                bias = sd.get(f"{pre}{mod}.{lin}.bias")
                if bias is not None:
                    p[("layers", i, mod, lin, "bias")] = bias
    return p
