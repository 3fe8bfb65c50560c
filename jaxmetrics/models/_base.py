"""Building blocks shared by the Flax NNX model implementations.

Written here (rather than taken from a library) because transformers 5 ships no Flax
models; these are small, exact re-implementations that load the published PyTorch
weights from safetensors files.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxmetrics._ops import PRECISION
from jaxmetrics.results import Result


class ModelOutput(Result):
    """Output of a model's forward pass and of :meth:`LoadedModel.forward` (a pytree, so it can
    leave ``jax.jit``).

    Attributes:
      last_hidden_state: ``[B, T, D]`` final hidden states (GPT-2: after ``ln_f``).
      hidden_states: tuple of ``num_layers + 1`` arrays ``[B, T, D]`` in the transformers
        convention (``[0]`` = embedding output, ``[-1]`` = final) or ``None``.
      logits: ``[B, T, V]`` float32 next-token logits for causal LMs, else ``None``.
    """

    last_hidden_state: jax.Array
    hidden_states: tuple | None = None
    logits: jax.Array | None = None


class Dense(nnx.Linear):
    """``nnx.Linear`` under the mixed-precision contract of every model layer: the operands are in
    the layer's ``dtype`` (bfloat16 for a ``dtype=bfloat16`` model), the product accumulates in
    float32 (``preferred_element_type``), the bias is added in float32, and the result is rounded
    once to the layer's ``dtype``, the dtype of the activations. A float32 layer computes exactly
    what ``nnx.Linear`` does. Built by :func:`dense`; the weights are ``kernel`` and ``bias`` as
    in ``nnx.Linear``."""

    def __call__(self, inputs, out_sharding=None):
        out = super().__call__(inputs, out_sharding)
        return out if self.dtype is None else out.astype(self.dtype)


def dense(din: int, dout: int, *, dtype, rngs, use_bias: bool = True) -> Dense:
    """A :class:`Dense` layer ``[..., din] -> [..., dout]`` with parameters and activations in
    ``dtype``, float32 accumulation and the library's stated precision."""
    return Dense(din, dout, use_bias=use_bias, dtype=dtype, param_dtype=dtype, precision=PRECISION,
                 preferred_element_type=jnp.float32, rngs=rngs)


def tied_lm_head(hidden, embedding):
    """Float32 logits ``hidden @ embedding.T`` of a tied LM head: ``[..., D] x [V, D] -> [..., V]``."""
    return jnp.einsum("...d,vd->...v", hidden, embedding, precision=PRECISION,
                      preferred_element_type=jnp.float32).astype(jnp.float32)


def write_cache(kv_cache, k, v, cache_index):
    """Write new keys/values ``[B, t, H, Dh]`` into a ``(k, v)`` cache ``[B, S, H, Dh]`` at slot
    ``cache_index``; returns the updated pair."""
    ck, cv = kv_cache
    ck = jax.lax.dynamic_update_slice(ck, k.astype(ck.dtype), (0, cache_index, 0, 0))
    cv = jax.lax.dynamic_update_slice(cv, v.astype(cv.dtype), (0, cache_index, 0, 0))
    return ck, cv


def cached_attention_mask(key_mask, cache_index, t: int):
    """``allowed [B, 1, t, S]`` for ``t`` queries at cache slots ``cache_index ..``: causal over the
    slots and limited to slots holding real tokens (``key_mask [B, S]``)."""
    s = key_mask.shape[1]
    q_slots = cache_index + jnp.arange(t)
    causal = q_slots[:, None] >= jnp.arange(s)[None, :]
    return causal[None, None] & key_mask[:, None, None, :].astype(bool)


def _gelu_exact(x):
    return jax.nn.gelu(x, approximate=False)


def _gelu_tanh(x):
    return jax.nn.gelu(x, approximate=True)


def _quick_gelu(x):
    return x * jax.nn.sigmoid(1.702 * x)


# transformers' ACT2FN names -> JAX functions with the same definition.
ACTIVATIONS: dict[str, Callable] = {
    "gelu": _gelu_exact,  # erf form
    "gelu_new": _gelu_tanh,  # tanh approximation (GPT-2)
    "gelu_pytorch_tanh": _gelu_tanh,
    "gelu_fast": _gelu_tanh,
    "quick_gelu": _quick_gelu,
    "relu": jax.nn.relu,
    "silu": jax.nn.silu,
    "swish": jax.nn.silu,
    "tanh": jnp.tanh,
}


def activation(name: str) -> Callable:
    """Return the activation called ``name`` in transformers' ``ACT2FN``."""
    try:
        return ACTIVATIONS[name]
    except KeyError:
        raise ValueError(
            f"config: activation {name!r} is not supported; known: {sorted(ACTIVATIONS)}"
        ) from None


# Query rows per block of causal self-attention (see ``attention(..., causal=True)``).
CAUSAL_CHUNK = 256


def _attend_one(q, k, v, allowed, scale):
    """One query per row (a cached decode step): the scores and the weighted sum as
    broadcast products reduced over ``Dh`` / the keys. XLA:CPU runs the equivalent batched
    ``einsum`` as ``B·H`` tiny matrix products after transposing the ``[B, S, H, Dh]`` cache, which
    made a decode step of a small GPT-2 ~4x slower than these fused elementwise loops."""
    scores = jnp.sum(q.astype(jnp.float32) * k.astype(jnp.float32), axis=-1) * scale  # [B, S, H]
    scores = jnp.where(jnp.swapaxes(jnp.broadcast_to(allowed, allowed.shape[:-2] + (1, k.shape[1]))[:, :, 0], 1, 2)
                       if allowed.ndim == 4 else allowed, scores, jnp.finfo(jnp.float32).min)
    probs = jax.nn.softmax(scores, axis=1).astype(v.dtype)  # over the keys
    acc = jnp.promote_types(v.dtype, jnp.float32)  # bfloat16 values: summed in float32
    out = jnp.sum(probs.astype(acc)[..., None] * v.astype(acc), axis=1)  # [B, H, Dh]
    return out.astype(v.dtype)[:, None]


def _attend(q, k, v, allowed, scale):
    if q.shape[1] == 1 and k.shape[1] > 1:
        return _attend_one(q, k, v, allowed, scale)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, precision=PRECISION, preferred_element_type=jnp.float32) * scale
    scores = jnp.where(allowed, scores, jnp.finfo(jnp.float32).min)
    probs = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
    out = jnp.einsum("bhqk,bkhd->bqhd", probs, v, precision=PRECISION, preferred_element_type=jnp.float32)
    return out.astype(v.dtype)


def attention(q, k, v, allowed, *, scale: float, causal: bool = False):
    """Multi-head scaled dot-product attention.

    ``q, k, v``: ``[B, T, H, Dh]``; ``allowed``: bool broadcastable to ``[B, H, T, T]``
    (query, key). Both products take their operands in ``q``'s / ``v``'s dtype and accumulate in
    float32; scores and softmax are float32 and the output is in ``v``'s dtype. A query with no
    allowed key gets a uniform (finite) distribution rather than NaN, as in transformers.

    ``causal=True`` promises that ``allowed`` already forbids every key after its query
    (self-attention over one sequence, ``Tq == Tk``). The queries are then taken in static
    blocks of ``CAUSAL_CHUNK`` rows, each against the keys up to its last row only: the
    same result (the skipped scores are masked anyway) with ~40% less work at T = 1024,
    where the ``[B, H, T, T]`` scores and their softmax dominate a CPU forward pass. Rows
    with no allowed key at all (left padding) are uniform over their block's keys instead
    of all keys; nothing reads them.
    """
    t = q.shape[1]
    if not causal or t <= CAUSAL_CHUNK or k.shape[1] != t:
        return _attend(q, k, v, allowed, scale)
    allowed = jnp.asarray(allowed)
    per_query = allowed.shape[-2] != 1
    outs = []
    for lo in range(0, t, CAUSAL_CHUNK):
        hi = min(t, lo + CAUSAL_CHUNK)
        a = allowed[..., lo:hi, :hi] if per_query else allowed[..., :hi]
        outs.append(_attend(q[:, lo:hi], k[:, :hi], v[:, :hi], a, scale))
    return jnp.concatenate(outs, axis=1)


def packed_layout(segment_ids):
    """Positions and attention rules of rows that hold several texts back to back.

    ``segment_ids [B, T]`` int: ``k >= 1`` on the tokens of the row's k-th text (each text one
    contiguous run), ``0`` on padding. Returns ``(positions [B, T], same [B, 1, T, T], mask [B, T])``:
    each token's position inside its own text (0, 1, ...), whether query and key tokens belong to
    the same text (so no text attends to another), and the real-token mask. A forward pass over
    packed rows with these equals separate forward passes over the texts (padding each text is
    wasted work the packing avoids).
    """
    seg = jnp.asarray(segment_ids, jnp.int32)
    t = seg.shape[1]
    idx = jnp.broadcast_to(jnp.arange(t, dtype=jnp.int32)[None, :], seg.shape)
    starts = jnp.concatenate([jnp.ones_like(seg[:, :1], bool), seg[:, 1:] != seg[:, :-1]], axis=1)
    first = jax.lax.cummax(jnp.where(starts, idx, 0), axis=1)
    mask = seg > 0
    same = (seg[:, :, None] == seg[:, None, :]) & mask[:, None, :]
    return idx - first, same[:, None], mask


def split_heads(x, num_heads: int):
    b, t, d = x.shape
    return x.reshape(b, t, num_heads, d // num_heads)


def merge_heads(x):
    b, t, h, dh = x.shape
    return x.reshape(b, t, h * dh)


def build_module(factory: Callable[[], nnx.Module], params: dict[tuple, Any], *, dtype=jnp.float32,
                 name: str = "checkpoint") -> nnx.Module:
    """Instantiate ``factory()`` abstractly and fill every variable from ``params``.

    ``params`` maps nnx variable paths (tuples such as ``('h', 0, 'attn', 'c_attn', 'kernel')``)
    to numpy arrays. No random initialisation is run (``nnx.eval_shape``), so building
    a large model costs only the weight copy. Missing, unexpected or mis-shaped
    weights raise ``ValueError`` naming them.
    """
    abstract = nnx.eval_shape(factory)
    graphdef, state = nnx.split(abstract)
    flat = list(nnx.to_flat_state(state))
    wanted = {p for p, _ in flat}
    missing = sorted(".".join(map(str, p)) for p in wanted if p not in params)
    unexpected = sorted(".".join(map(str, p)) for p in params if p not in wanted)
    if missing:
        raise ValueError(f"{name}: missing weights {missing[:8]}{' ...' if len(missing) > 8 else ''}")
    if unexpected:
        raise ValueError(f"{name}: unexpected weights {unexpected[:8]}{' ...' if len(unexpected) > 8 else ''}")
    new = []
    for path, var in flat:
        arr = params[path]
        if tuple(arr.shape) != tuple(var.shape):
            raise ValueError(
                f"{name}: weight {'.'.join(map(str, path))} has shape {tuple(arr.shape)}, "
                f"expected {tuple(var.shape)}"
            )
        new.append((path, var.replace(jnp.asarray(np.asarray(arr), dtype=dtype))))
    return nnx.merge(graphdef, nnx.from_flat_state(new))


def build_pretrained(cls, config, params: dict[tuple, Any], *, dtype=jnp.float32) -> nnx.Module:
    """``cls(config, dtype=dtype, rngs=...)`` built abstractly and filled from converted
    ``params`` (:func:`build_module`): how every architecture's ``from_pretrained`` ends."""
    return build_module(lambda: cls(config, dtype=dtype, rngs=nnx.Rngs(0)), params, dtype=dtype, name="checkpoint")


def strip_prefix(state_dict: dict[str, np.ndarray], prefixes: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Drop a task-head prefix (``'transformer.'``, ``'bert.'``...) when every backbone key has it."""
    for pre in prefixes:
        if any(k.startswith(pre) for k in state_dict):
            return {(k[len(pre):] if k.startswith(pre) else k): v for k, v in state_dict.items()}
    return dict(state_dict)


def take(state_dict: dict[str, np.ndarray], key: str, *, transpose: bool = False) -> np.ndarray:
    """``state_dict[key]`` (optionally transposed), or a ``ValueError`` naming the missing key."""
    try:
        arr = state_dict[key]
    except KeyError:
        raise ValueError(f"checkpoint: weight {key!r} is missing from the safetensors files") from None
    return arr.T if transpose else arr


def inv_sqrt(d: int) -> float:
    return 1.0 / math.sqrt(d)
