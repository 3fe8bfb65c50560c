"""Batched sampling from causal decoders with a KV cache (greedy, pure, temperature, top-k,
top-p), for decoding-parameter studies.

The whole generation — prompt prefill, then one cached decode step per new token inside a
``lax.while_loop`` that stops early once every row has emitted EOS — is one jit-compiled
function of the model state, the prompts and an explicit ``jax.random`` key. The step key is
``fold_in(key, step)``, so results are reproducible for a given key. Prompts are left-padded;
rotary / learned positions come from the prompt mask (``cumsum(mask) - 1``), so padding does
not shift positions.

The model is driven only through the causal-LM protocol of :mod:`jaxmetrics.models.protocol`
(``init_cache`` and ``decode_step``), so every decoder of :mod:`jaxmetrics.models` (GPT-2,
Llama, Mistral, Qwen2) samples the same way.
"""
from __future__ import annotations

import weakref
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxmetrics._validation import check_int, check_key, check_positive, check_probability
from jaxmetrics.lm.kernels import decoding_log_probs
from jaxmetrics.models.protocol import resolve_model
from jaxmetrics.results import Result

__all__ = ["GenerationOutput", "generate"]


class GenerationOutput(Result):
    """Result of :func:`generate`.

    Attributes:
      tokens: ``[B, M]`` generated ids (``pad_token_id`` after EOS / after the loop stopped).
      tokens_mask: ``[B, M]`` true on generated tokens (the EOS token included).
      finished: ``[B]`` whether the row emitted EOS.
      prompt_ids: ``[B, P]`` the left-padded prompts.
      prompt_ids_mask: ``[B, P]`` true on real prompt tokens.
      logits: ``[B, M, V]`` raw next-token logits of each step (only with ``return_logits``), else
        ``None``.

    Read the generations with :meth:`sequences` (one 1-D id array per row, padding removed) and
    decode them with the model's tokenizer, e.g.
    ``[lm.tokenizer.decode(s) for s in out.sequences(include_prompt=False)]``.
    """

    tokens: np.ndarray
    tokens_mask: np.ndarray
    finished: np.ndarray
    prompt_ids: np.ndarray
    prompt_ids_mask: np.ndarray
    logits: np.ndarray | None = None

    def sequences(self, include_prompt: bool = True) -> list[np.ndarray]:
        """Per-row 1-D id arrays without padding (prompt + generation by default)."""
        out = []
        for i in range(self.tokens.shape[0]):
            gen = self.tokens[i][self.tokens_mask[i]]
            if include_prompt:
                gen = np.concatenate([self.prompt_ids[i][self.prompt_ids_mask[i]], gen])
            out.append(gen)
        return out


def _left_pad(prompts, pad_id: int):
    if isinstance(prompts, np.ndarray) or (hasattr(prompts, "shape") and not isinstance(prompts, (list, tuple))):
        arr = np.asarray(prompts)
        if arr.ndim == 1:
            arr = arr[None]
        if arr.ndim != 2:
            raise ValueError(f"prompts: expected [B, P] token ids, got shape {arr.shape}")
        rows = list(arr)
    else:
        rows = [np.asarray(r).reshape(-1) for r in prompts]
    if not rows:
        raise ValueError("prompts: no prompts (the batch is empty)")
    for i, r in enumerate(rows):
        if r.size == 0:
            raise ValueError(f"prompts: prompt {i} is empty; at least one token is needed")
        if not np.issubdtype(r.dtype, np.integer):
            raise TypeError(f"prompts: prompt {i} has dtype {r.dtype}; expected integer token ids")
    P = max(r.size for r in rows)
    ids = np.full((len(rows), P), pad_id, np.int32)
    mask = np.zeros((len(rows), P), bool)
    for i, r in enumerate(rows):
        ids[i, P - r.size:] = r
        mask[i, P - r.size:] = True
    return ids, mask


_JITS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _compiled(module):
    entry = _JITS.get(module)
    if entry is None:
        graphdef, _ = nnx.split(module)

        @partial(jax.jit, static_argnames=("max_new", "top_k", "greedy", "use_top_p", "return_logits"))
        def run(state, prompt, pmask, key, temperature, top_p, eos, pad, *, max_new, top_k, greedy, use_top_p,
                return_logits):
            # eos / pad are traced (eos = -1: never stop), so changing them does not recompile
            m = nnx.merge(graphdef, state)
            b, p = prompt.shape
            s = p + max_new
            cache = m.init_cache(b, s)
            key_mask = jnp.concatenate([pmask, jnp.zeros((b, max_new), bool)], axis=1)
            pos = jnp.maximum(jnp.cumsum(pmask.astype(jnp.int32), axis=1) - 1, 0)
            logits, cache = m.decode_step(prompt, pos, key_mask, cache, 0)
            last_pos = pos[:, -1]
            v = logits.shape[-1]
            init = dict(i=jnp.asarray(0), logits=logits[:, -1], cache=cache, key_mask=key_mask, pos=last_pos,
                        done=jnp.zeros((b,), bool), toks=jnp.full((b, max_new), 0, jnp.int32) + pad,
                        gmask=jnp.zeros((b, max_new), bool),
                        step_logits=jnp.zeros((b, max_new if return_logits else 0, v), jnp.float32))

            def cond(c):
                return (c["i"] < max_new) & ~jnp.all(c["done"])

            def body(c):
                i, z = c["i"], c["logits"]
                if greedy:
                    tok = jnp.argmax(z, axis=-1)
                else:
                    lp = decoding_log_probs(z, temperature=temperature, top_k=top_k,
                                            top_p=top_p if use_top_p else None)
                    tok = jax.random.categorical(jax.random.fold_in(key, i), lp, axis=-1)
                tok = tok.astype(jnp.int32)
                live = ~c["done"]
                tok = jnp.where(live, tok, pad)
                done = c["done"] | (live & (tok == eos))
                toks = c["toks"].at[:, i].set(tok)
                gmask = c["gmask"].at[:, i].set(live)
                km = jax.lax.dynamic_update_slice(c["key_mask"], live[:, None], (0, p + i))
                pos = c["pos"] + 1
                step_logits = c["step_logits"]
                if return_logits:
                    step_logits = step_logits.at[:, i].set(z)
                nz, cache = m.decode_step(tok[:, None], pos[:, None], km, c["cache"], p + i)
                return dict(i=i + 1, logits=nz[:, 0], cache=cache, key_mask=km, pos=pos, done=done, toks=toks,
                            gmask=gmask, step_logits=step_logits)

            out = jax.lax.while_loop(cond, body, init)
            return out["toks"], out["gmask"], out["done"], out["step_logits"]

        entry = run
        _JITS[module] = entry
    return entry


def generate(prompts, *, model, key, max_new_tokens: int, greedy: bool = False, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, eos_token_id: int | None | str = "default",
             pad_token_id: int | None = None, return_logits: bool = False) -> GenerationOutput:
    """Sample continuations of a batch of prompts with a KV cache (one jit-compiled loop).

    At each step the next token is ``argmax_v z_v`` (``greedy=True``) or a draw from the
    decoding distribution ``softmax(filter(z / temperature))`` with top-k then top-p filtering
    (:func:`~jaxmetrics.lm.kernels.decoding_log_probs`); pure sampling is the default
    ``temperature=1, top_k=None, top_p=None``. A row stops after it emits ``eos_token_id``
    (later positions are padding, ``tokens_mask`` False); the loop ends when every row has
    stopped or after ``max_new_tokens`` steps.

    Args:
      prompts: ``[B, P]`` int array or a list of 1-D id arrays (left-padded here), each non-empty;
        ``P + max_new_tokens`` must fit the model's context for learned positions (GPT-2).
      model: a causal :class:`~jaxmetrics.models.LoadedModel`, or a hub id / local directory.
      key: a ``jax.random`` key (required, also for greedy decoding, for a uniform signature).
      max_new_tokens: number of decode steps ``M``.
      greedy, temperature, top_k, top_p: decoding method (temperature, top_p, EOS and pad ids are
        traced: changing them does not recompile; top_k, greedy and ``max_new_tokens`` are static).
      eos_token_id: stop token; ``'default'`` = the model config's ``eos_token_id``; ``None``
        never stops early.
      pad_token_id: id written after a row stops (default: tokenizer pad, else EOS, else 0).
      return_logits: also return the raw logits of every step ``[B, M, V]``.

    Returns:
      :class:`GenerationOutput`; ``out.sequences(include_prompt=False)`` gives the new tokens of
      each row, ready for ``lm.tokenizer.decode``.

    Examples:
      >>> import tempfile, jax, numpy as np
      >>> from jaxmetrics.models import load_model
      >>> from jaxmetrics.testing import tiny_checkpoint
      >>> lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
      >>> out = generate([np.array([5, 6, 7]), np.array([8])], model=lm, key=jax.random.key(0),
      ...                max_new_tokens=4, top_k=10, eos_token_id=None)
      >>> out
      GenerationOutput(tokens=i32[2,4], tokens_mask=bool[2,4], finished=bool[2], prompt_ids=i32[2,3], prompt_ids_mask=bool[2,3], logits=None)
      >>> [s.size for s in out.sequences(include_prompt=False)]
      [4, 4]
    """
    lm = resolve_model(model, causal=True, purpose="generate")
    check_key(key)
    module, config = lm.model, lm.config
    tok_pad = getattr(lm.tokenizer, "pad_token_id", None)
    M = check_int(max_new_tokens, "max_new_tokens", minimum=1)
    if eos_token_id == "default":
        eos_token_id = getattr(config, "eos_token_id", None) if config is not None else None
        if isinstance(eos_token_id, (list, tuple)):
            eos_token_id = eos_token_id[0] if eos_token_id else None
    if eos_token_id is not None:
        eos_token_id = check_int(eos_token_id, "eos_token_id", minimum=0)
    if pad_token_id is None:
        pad_token_id = tok_pad if tok_pad is not None else (eos_token_id if eos_token_id is not None else 0)
    pad_token_id = check_int(pad_token_id, "pad_token_id", minimum=0)
    if not greedy:
        check_positive(temperature, "temperature")
        if top_k is not None:
            check_int(top_k, "top_k", minimum=1)
        if top_p is not None:
            check_probability(top_p, "top_p")
    ids, pmask = _left_pad(prompts, pad_token_id)
    n_pos = getattr(config, "n_positions", None)
    if n_pos is not None and ids.shape[1] + M > n_pos:
        raise ValueError(f"max_new_tokens: prompt length {ids.shape[1]} + {M} exceeds the model's "
                         f"{n_pos} positions")
    vocab = getattr(config, "vocab_size", None)
    if vocab and (ids[pmask].max() >= vocab or ids[pmask].min() < 0):
        raise ValueError(f"prompts: token ids must lie in [0, {vocab})")
    run = _compiled(module)
    _, state = nnx.split(module)
    toks, gmask, done, logits = run(
        state, jnp.asarray(ids), jnp.asarray(pmask), key, jnp.float32(temperature),
        jnp.float32(1.0 if top_p is None else top_p), jnp.int32(-1 if eos_token_id is None else eos_token_id),
        jnp.int32(pad_token_id), max_new=M, top_k=None if greedy else top_k, greedy=bool(greedy),
        use_top_p=(top_p is not None and not greedy), return_logits=bool(return_logits))
    return GenerationOutput(tokens=np.asarray(toks), tokens_mask=np.asarray(gmask), finished=np.asarray(done),
                            prompt_ids=ids, prompt_ids_mask=pmask,
                            logits=np.asarray(logits) if return_logits else None)
