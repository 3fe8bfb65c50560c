"""Decoding-transform scores of reference text under a causal LM (MAUVE paper comparison).

As in ``krishnap25/mauve-experiments`` (after Martins et al. 2020): each reference text is
truncated to ``max_length`` tokens and read once with teacher forcing (targets ``x_1 ..
x_{n-1}``); at every position the model's next-token distribution is passed through the
decoding transform (temperature, then top-k, then top-p; filtered tokens get probability 0)
and scored against the true next token. Corpus values are ``Σ per-token value / Σ count``
over all documents:

* ε-perplexity ``exp(-(1/N) Σ ln((p_y + ε)/(1 + ε|V|)))`` (one value per ε of a grid),
* sparsemax score ``mean(p_y + ½(1 - ‖p‖²))``,
* Jensen–Shannon divergence to the one-hot target ``mean JS(p, δ_y)`` (nats),
* the perplexity of the transformed distribution (``inf`` when a target was filtered out).

Definitions of the per-token kernels: :mod:`jaxmetrics.lm.kernels`.
"""
from __future__ import annotations

import weakref
from functools import partial
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_int, check_positive, check_probability
from jaxmetrics.lm.kernels import token_scores
from jaxmetrics.lm.windows import _as_documents, _causal, _context_length
from jaxmetrics.models.batching import layout_batch, plan_batches
from jaxmetrics.results import Result, make_signature, static_field

__all__ = ["DecodingScores", "decoding_scores"]


class DecodingScores(Result):
    """Result of :func:`decoding_scores`: corpus averages over every scored token.

    Attributes:
      epsilon_perplexity: ``[E]`` ε-perplexity for each ε of ``epsilon`` (a grid of one for a scalar).
      sparsemax_score: mean sparsemax score (higher is better, 1 = one-hot correct).
      js: mean Jensen–Shannon divergence to the one-hot target (nats).
      perplexity: perplexity of the transformed distribution. It is ``inf`` when top-k / top-p
        filtered out at least one reference token (that token has probability 0); the ε-perplexity
        is the finite measure for truncated distributions.
      num_filtered: number of reference tokens that the transform gave probability 0.
      num_tokens: number of scored tokens.
      epsilon: the ε values (static tuple); temperature, top_k, top_p: the transform (static).
      signature: what the numbers depend on (static, not in the repr; :mod:`jaxmetrics.results`):
        ``metric:decoding-scores``, the model with its weights' hash, ``epsilon``, ``temperature``,
        ``top_k``, ``top_p``, ``max_length`` (after the cap at the model's positions) and ``dtype``.
    """

    epsilon_perplexity: np.ndarray
    sparsemax_score: float
    js: float
    perplexity: float
    num_filtered: int
    num_tokens: int
    epsilon: tuple = static_field()
    temperature: float = static_field()
    top_k: int | None = static_field()
    top_p: float | None = static_field()
    signature: str = static_field(default="", repr=False)


_JITS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _compiled(lm):
    entry = _JITS.get(lm)
    if entry is None:
        from flax import nnx

        graphdef, state = nnx.split(lm.model)

        @partial(jax.jit, static_argnames=("top_k", "use_top_p"))
        def run(state, ids, mask, eps, temperature, top_p, *, top_k, use_top_p):
            model = nnx.merge(graphdef, state)
            logits = model(ids, mask).logits[:, :-1]
            tgt = ids[:, 1:]
            tm = mask[:, 1:] & mask[:, :-1]
            s = token_scores(logits, tgt, epsilon=0.0, temperature=temperature, top_k=top_k,
                             top_p=top_p if use_top_p else None)
            vocab = logits.shape[-1]
            p_y = jnp.exp(s.log_prob)[..., None]
            eps_lp = jnp.log(p_y + eps) - jnp.log1p(eps * vocab)  # [B, T, E]
            zero = jnp.zeros((), p_y.dtype)
            return (jnp.sum(jnp.where(tm[..., None], eps_lp, zero), axis=(0, 1)),
                    jnp.sum(jnp.where(tm, s.sparsemax, zero)), jnp.sum(jnp.where(tm, s.js, zero)),
                    jnp.sum(jnp.where(tm, -s.log_prob, zero)), jnp.sum(tm),
                    jnp.sum(tm & jnp.isneginf(s.log_prob)))

        entry = (run, state)
        _JITS[lm] = entry
    return entry


def decoding_scores(texts, *, model, epsilon: float | Sequence[float] = 1e-4, temperature: float = 1.0,
                    top_k: int | None = None, top_p: float | None = None, max_length: int | None = 1024,
                    batch_size: int = 8, dtype=None) -> DecodingScores:
    """ε-PPL, sparsemax score and JS of reference texts under a decoding transform of ``model``.

    Args:
      texts: list of texts (tokenized without special tokens) or of 1-D token-id arrays (each
        at least 2 tokens after truncation).
      model: causal :class:`~jaxmetrics.models.LoadedModel`, or a hub id / local directory.
      epsilon: ε >= 0, or a sequence of ε values (a grid; one forward pass serves all).
      temperature: > 0; top_k: int in ``[1, V]`` or ``None``; top_p: in ``(0, 1]`` or ``None``.
      max_length: truncation (default 1024 as in the MAUVE experiments, capped at the context).
      batch_size: documents per jitted forward.
      dtype: the model's compute dtype, as in :func:`perplexity`.

    Returns:
      :class:`DecodingScores`. With ``top_k`` / ``top_p`` the plain ``perplexity`` is ``inf`` as
      soon as one reference token falls outside the kept set (``num_filtered > 0``); compare
      truncated decoders by ``epsilon_perplexity``, as the MAUVE paper does.

    Examples:
      >>> import tempfile, numpy as np
      >>> from jaxmetrics.models import load_model
      >>> from jaxmetrics.testing import tiny_checkpoint
      >>> lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
      >>> out = decoding_scores([np.arange(3, 20), np.arange(40, 50)], model=lm, epsilon=[0.0, 1e-3], top_k=5)
      >>> out.num_tokens, out.epsilon_perplexity.shape, bool(0.0 <= out.js <= 0.6932)
      (25, (2,), True)
    """
    lm = _causal(model, "decoding_scores", dtype)
    ctx = _context_length(lm)
    L = ctx if max_length is None else min(check_int(max_length, "max_length", minimum=2), ctx)
    grid = not np.isscalar(epsilon)
    eps = [check_positive(e, "epsilon", allow_zero=True) for e in (list(epsilon) if grid else [epsilon])]
    if not eps:
        raise ValueError("epsilon: empty grid")
    check_positive(temperature, "temperature")
    vocab = int(lm.config.vocab_size)
    if top_k is not None:
        check_int(top_k, "top_k", minimum=1, maximum=vocab)
    if top_p is not None:
        top_p = check_probability(top_p, "top_p")
    bs = check_int(batch_size, "batch_size", minimum=1)
    docs = [d[:L] for d in _as_documents(lm, texts, name="texts")]
    short = [i for i, d in enumerate(docs) if d.size < 2]
    if short:
        raise ValueError(f"texts: document {short[0]} has fewer than 2 tokens; at least 2 are needed")
    run, state = _compiled(lm)
    tot = None
    # the encoding engine's planner: longest first, padded to length buckets; filler rows see one
    # token and score nothing
    for batch in plan_batches([d.size for d in docs], batch_size=bs, max_length=L):
        arrays = layout_batch(batch, docs, lm.pad_token_id)
        out = run(state, jnp.asarray(arrays.input_ids), jnp.asarray(arrays.attention_mask),
                  jnp.asarray(eps, jnp.float32), jnp.float32(temperature), jnp.float32(1.0 if top_p is None else top_p),
                  top_k=top_k, use_top_p=top_p is not None)
        out = [np.asarray(o, np.float64) for o in out]
        tot = out if tot is None else [a + c for a, c in zip(tot, out)]
    eps_sum, sp, js, nll, count, filtered = tot
    count = int(count)
    if not (np.all(np.isfinite(sp)) and np.isfinite(js)):
        raise ValueError("model: produced non-finite probabilities (NaN/inf logits)")
    eps_ppl = np.exp(-np.atleast_1d(eps_sum) / count)
    return DecodingScores(epsilon_perplexity=eps_ppl, sparsemax_score=float(sp) / count, js=float(js) / count,
                          perplexity=float(np.exp(nll / count)), num_filtered=int(filtered), num_tokens=count,
                          epsilon=tuple(eps), temperature=float(temperature), top_k=top_k, top_p=top_p,
                          signature=make_signature("decoding-scores", model=lm, epsilon=tuple(eps),
                                                   temperature=float(temperature), top_k=top_k, top_p=top_p,
                                                   max_length=L, dtype=getattr(lm, "dtype", None)))
