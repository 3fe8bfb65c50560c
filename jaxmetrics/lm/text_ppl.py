"""Per-text perplexity in the convention of Hugging Face ``evaluate``'s ``perplexity`` metric.

``evaluate.load("perplexity").compute(predictions=texts, model_id=...)`` scores every text on
its own, in one forward pass, with no sliding window:

* each text is tokenised without special tokens, truncated to its first ``max_length`` tokens
  (``max_length - 1`` when a BOS token is added), and, with ``add_start_token``, the
  tokenizer's BOS token is put in front so that the first word is scored too;
* text ``i`` with tokens ``x_0 .. x_{n_i - 1}`` (BOS included) has

      ``PPL_i = exp( (1 / (n_i - 1)) Σ_{t=1}^{n_i - 1} -ln p(x_t | x_<t) )``

  (natural logarithm; the mean of the cross-entropy over the shifted targets, padding masked);
* the reported ``mean_perplexity`` is the arithmetic mean of the ``PPL_i`` -- a mean of
  exponentials, not the token-weighted corpus perplexity of :func:`~jaxmetrics.lm.perplexity`.

Here the texts are sorted by length and scored ``batch_size`` at a time, each batch padded on the
right to a length bucket (four per octave, :func:`~jaxmetrics.models.bucket_length`), so a corpus
compiles a few shapes; one jit-compiled function runs the forward pass and returns the per-row NLL
sums and token counts. Right padding with an attention mask does not change a causal model's
values on the real tokens, so the values equal ``evaluate``'s for any batch size (up to float32
rounding) and come back in input order.
"""
from __future__ import annotations

import weakref
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_int
from jaxmetrics.models.batching import layout_batch, plan_batches
from jaxmetrics.models.protocol import resolve_model
from jaxmetrics.results import Result, static_field
from jaxmetrics.results import make_signature

__all__ = ["TextPerplexities", "text_perplexities"]


class TextPerplexities(Result):
    """Result of :func:`text_perplexities`.

    Attributes:
      perplexities: ``[N]`` float64 per-text perplexity ``exp(nll_i / num_tokens_i)``, input order
        (``evaluate``'s ``perplexities``).
      mean_perplexity: arithmetic mean of ``perplexities`` (``evaluate``'s ``mean_perplexity``).
      nll: ``[N]`` float64 summed negative log-likelihood (nats) of each text's scored tokens.
      num_tokens: ``[N]`` int64 number of scored tokens of each text (its length after truncation,
        BOS included, minus one).
      add_start_token, max_length: the settings (static).
      signature: ``metric:text-perplexity``, the model with its weights' hash,
        ``add_start_token``, ``max_length`` and the model's dtype (static;
        :mod:`jaxmetrics.results`).
    """

    perplexities: np.ndarray
    mean_perplexity: float
    nll: np.ndarray
    num_tokens: np.ndarray
    add_start_token: bool = static_field()
    max_length: Any = static_field()
    signature: str = static_field(default="", repr=False)


_SCORERS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _scorer(lm):
    """Jitted ``f(state, ids [B, T], mask [B, T]) -> (nll_sum [B] f32, count [B] i32)``.

    Logit ``t`` scores token ``t + 1`` where ``mask[:, t + 1]`` (evaluate's shifted attention mask).
    Compiled once per (model, shape); cached per model.
    """
    fn = _SCORERS.get(lm)
    if fn is None:
        from flax import nnx

        graphdef, state = nnx.split(lm.model)

        @jax.jit
        def run(state, ids, mask):
            model = nnx.merge(graphdef, state)
            with lm._precision():
                h = model(ids, mask, return_logits=False).last_hidden_state[:, :-1]  # [B, T-1, D]
                logits = model.lm_head(h).astype(jnp.float32)  # [B, T-1, V]
            tgt = ids[:, 1:]
            scored = mask[:, 1:]
            z_y = jnp.take_along_axis(logits, tgt[..., None], axis=-1)[..., 0]
            nll = jnp.where(scored, jax.nn.logsumexp(logits, axis=-1) - z_y, 0.0)
            return jnp.sum(nll, axis=-1), jnp.sum(scored, axis=-1, dtype=jnp.int32)

        fn = (run, state)
        _SCORERS[lm] = fn
    return fn


def _check_texts(texts: Any) -> list[str]:
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts: expected a list of strings, got a single string (wrap it in a list)")
    if not isinstance(texts, Sequence) and not hasattr(texts, "__iter__"):
        raise TypeError(f"texts: expected a list of strings, got {type(texts).__name__}")
    texts = list(texts)
    if not texts:
        raise ValueError("texts: the list is empty; at least one text is needed")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts: expected strings; item {bad[0]} is {type(texts[bad[0]]).__name__}")
    return texts


def text_perplexities(texts: Sequence[str], *, model: Any, batch_size: int = 16, add_start_token: bool = True,
                      max_length: int | None = None, dtype: Any = None) -> TextPerplexities:
    """Perplexity of each text under a causal LM, as Hugging Face ``evaluate``'s ``perplexity``.

    Text ``i``, tokenised without special tokens (first ``max_length`` tokens kept, or
    ``max_length - 1`` when the BOS token is added) and with the tokenizer's BOS token prepended
    when ``add_start_token``, is the sequence ``x_0 .. x_{n_i - 1}``, and

        ``PPL_i = exp( Σ_{t=1}^{n_i - 1} -ln p(x_t | x_<t) / (n_i - 1) )``,
        ``mean_perplexity = (1 / N) Σ_i PPL_i``.

    Each text is scored on its own in one forward pass (no sliding window, as ``evaluate``): a
    text longer than the model's context is refused unless ``max_length`` truncates it; to score
    long texts whole, :func:`~jaxmetrics.lm.perplexity` slides windows over their token ids (the
    error for such a text names both ways). Texts are sorted by length and batched into
    length buckets (four per octave); the values do not depend on ``batch_size`` (up to float32
    rounding) and are returned in input order. Memory per batch is about
    ``batch_size x bucket length x vocabulary`` float32 logits.

    Args:
      texts: ``N`` strings.
      model: a causal :class:`~jaxmetrics.models.LoadedModel`, or a hub id / local directory.
      batch_size: texts per jitted forward (``>= 1``).
      add_start_token: prepend the tokenizer's BOS token (needs one) so the first token is scored;
        then every text needs at least 1 token, otherwise at least 2.
      max_length: ``None`` (no truncation) or the maximum sequence length ``>= 2``, BOS included.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`TextPerplexities` with ``perplexities [N]``, ``mean_perplexity``, ``nll [N]`` and
      ``num_tokens [N]``.

    Raises:
      ValueError: ``texts`` empty, a text with too few tokens or longer than the model's context;
        ``add_start_token`` with a tokenizer that has no BOS token; ``batch_size < 1`` or
        ``max_length < 2``.
      TypeError: ``texts`` not a list of strings; a non-integer ``batch_size`` / ``max_length``.

    Examples:
      >>> import tempfile
      >>> from jaxmetrics.models import load_model
      >>> from jaxmetrics.testing import tiny_checkpoint
      >>> lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
      >>> res = text_perplexities(["The quick brown fox.", "To be, or not to be"], model=lm)
      >>> res   # doctest: +ELLIPSIS
      TextPerplexities(perplexities=f64[2], mean_perplexity=..., nll=f64[2], num_tokens=i64[2], add_start_token=True, max_length=None)
      >>> bool(abs(res.mean_perplexity - res.perplexities.mean()) < 1e-12)
      True
      >>> text_perplexities(["The quick brown fox."], model=lm, max_length=3).num_tokens.tolist()
      [2]
    """
    texts = _check_texts(texts)
    if isinstance(batch_size, bool):
        raise TypeError("batch_size: expected an integer, got bool")
    bs = check_int(batch_size, "batch_size", minimum=1)
    if not isinstance(add_start_token, (bool, np.bool_)):
        raise TypeError(f"add_start_token: expected a bool, got {type(add_start_token).__name__}")
    add_start_token = bool(add_start_token)
    if max_length is not None:
        if isinstance(max_length, bool):
            raise TypeError("max_length: expected an integer or None, got bool")
        max_length = check_int(max_length, "max_length", minimum=2)
    lm = resolve_model(model, causal=True, purpose="text_perplexities", dtype=dtype)
    tok = lm.tokenizer
    bos = getattr(tok, "bos_token_id", None)
    if add_start_token and bos is None:
        raise ValueError(f"add_start_token: the tokenizer of {lm.name or lm.kind!r} has no BOS token; "
                         "pass add_start_token=False (every text then needs at least 2 tokens)")

    limit = None if max_length is None else max_length - int(add_start_token)
    kw = dict(truncation=True, max_length=limit) if limit is not None else {}
    enc = tok(texts, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False,
              verbose=False, **kw)["input_ids"]
    head = [int(bos)] if add_start_token else []
    seqs = [np.asarray(head + list(e), np.int32) for e in enc]
    lengths = np.array([s.size for s in seqs], np.int64)
    need = 1 + int(not add_start_token)  # tokens of the text itself
    short = np.nonzero(lengths - len(head) < need)[0]
    if short.size:
        what = ("at least one token long" if add_start_token else
                "at least two tokens long with add_start_token=False (remove empty strings, or use "
                "add_start_token=True for one-token texts)")
        raise ValueError(f"texts: each text must be {what}; {short.size} text(s) are not "
                         f"(indices {short[:10].tolist()})")
    ctx = lm.max_positions
    if ctx is not None and lengths.max() > ctx:
        i = int(np.argmax(lengths))
        raise ValueError(f"texts: text {i} has {int(lengths[i])} tokens{' with BOS' if add_start_token else ''}, "
                         f"more than the model's {ctx} positions, and text_perplexities scores each text in one "
                         f"window (evaluate's convention); pass max_length <= {ctx} to score its first tokens only, "
                         "or score whole texts with jaxmetrics.perplexity (sliding windows over the token ids)")
    vocab = int(getattr(lm.config, "vocab_size", 0) or 0)
    if vocab and max(int(s.max()) for s in seqs) >= vocab:  # pragma: no cover - tokenizer/model mismatch
        raise ValueError(f"model: its tokenizer produced ids outside the model's vocabulary [0, {vocab})")

    run, state = _scorer(lm)
    rows = min(bs, len(seqs))
    cap = int(ctx) if ctx is not None else int(lengths.max())
    nll = np.zeros(len(seqs), np.float64)
    count = np.zeros(len(seqs), np.int64)
    outs = []
    # the encoding engine's planner (padded length buckets), longest first; dispatch all, then collect
    for batch in plan_batches(lengths, batch_size=rows, max_length=cap):
        arr = layout_batch(batch, seqs, lm.pad_token_id)
        outs.append((batch.items, run(state, jnp.asarray(arr.input_ids), jnp.asarray(arr.attention_mask))))
    for idx, (s, c) in outs:
        nll[idx] = np.asarray(s, np.float64)[: len(idx)]
        count[idx] = np.asarray(c, np.int64)[: len(idx)]
    if not np.all(np.isfinite(nll)):
        raise ValueError("model: produced non-finite log-probabilities (NaN/inf logits); check the weights and dtype")
    if np.any(count != lengths - 1):  # pragma: no cover - internal consistency
        raise AssertionError("internal error: scored-token counts do not match the text lengths")
    ppl = np.exp(nll / count)
    return TextPerplexities(perplexities=ppl, mean_perplexity=float(np.mean(ppl)), nll=nll, num_tokens=count,
                            add_start_token=add_start_token, max_length=max_length,
                            signature=make_signature("text-perplexity", model=lm, add_start_token=add_start_token,
                                                     max_length=max_length, dtype=getattr(lm, "dtype", None)))
