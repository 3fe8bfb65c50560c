"""Generation perplexity (the MAUVE experiments' "Gen. PPL"): each generated text scored in one
forward pass of a causal LM (the sliding-window :func:`~jaxmetrics.lm.perplexity` with one window per text).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from jaxmetrics._validation import check_choice, check_int
from jaxmetrics.lm.windows import _as_documents, _causal, _context_length, perplexity
from jaxmetrics.results import Result, make_signature, static_field

__all__ = ["GenerationPerplexity", "generation_perplexity"]


class GenerationPerplexity(Result):
    """Result of :func:`generation_perplexity`.

    Attributes:
      perplexity: ``exp(nll / denominator)`` in the chosen convention.
      nll: total negative log-likelihood (nats) of the predicted tokens.
      num_predicted: tokens predicted (``Σ (n - 1)``).
      denominator: the count divided by (``Σ n`` for ``'mauve'``, ``Σ (n - 1)`` for ``'exact'``).
      doc_perplexity: ``[n_docs]`` per-text perplexity ``exp(nll_d / (n_d - 1))``.
      convention, max_length: the settings (static).
      signature: what the numbers depend on (static, not in the repr; :mod:`jaxmetrics.results`):
        ``metric:generation-perplexity``, the model with its weights' hash, ``convention``,
        ``max_length`` (after the cap at the model's positions), ``remove_ids`` and ``dtype``.
    """

    perplexity: float
    nll: float
    num_predicted: int
    denominator: int
    doc_perplexity: np.ndarray
    convention: str = static_field()
    max_length: int = static_field()
    signature: str = static_field(default="", repr=False)


def generation_perplexity(generations, *, model, max_length: int | None = 1024, batch_size: int = 8,
                          convention: str = "mauve", remove_ids: Sequence[int] | None = None,
                          mesh=None, dtype=None) -> GenerationPerplexity:
    """Perplexity of generated texts under a scoring model (MAUVE-experiments "Gen. PPL").

    Convention of ``krishnap25/mauve-experiments`` (``convention='mauve'``): each generation
    (including its prompt tokens) is truncated to ``max_length`` tokens and scored in one
    forward pass (teacher forcing, targets ``x_1 .. x_{n-1}``), and

        ``Gen-PPL = exp( Σ_docs Σ_{t=1}^{n-1} -ln p(x_t | x_<t) / Σ_docs n )``

    — the denominator counts all ``n`` tokens of each text although only ``n - 1`` are
    predicted (a quirk of that code). ``convention='exact'`` divides by ``Σ (n - 1)`` instead.
    The MAUVE experiments score with gpt2-large; pass any causal model here.

    Args:
      generations: list of texts (tokenized with the model's tokenizer, no special tokens) or
        of 1-D token-id arrays; each at least 2 tokens after ``remove_ids`` and truncation.
      model: causal :class:`~jaxmetrics.models.LoadedModel`, or a hub id / local directory.
      max_length: truncation length (default 1024, as in the MAUVE experiments; capped at the
        model's context without a warning); ``None`` = the model's context.
      batch_size: documents per jitted forward.
      convention: ``'mauve'`` or ``'exact'``.
      remove_ids: token ids dropped before scoring (MAUVE experiments remove EOS/pad tokens).
      mesh: optional device mesh, as in :func:`perplexity` (documents split over its devices).
      dtype: the model's compute dtype, as in :func:`perplexity`.

    Returns:
      :class:`GenerationPerplexity`.

    Examples:
      >>> import tempfile, numpy as np
      >>> from jaxmetrics.testing import tiny_checkpoint
      >>> lm = tiny_checkpoint("gpt2", tempfile.mkdtemp())          # model= takes a directory too
      >>> gens = [np.arange(5, 15), np.arange(20, 26)]
      >>> a = generation_perplexity(gens, model=lm, convention="mauve")
      >>> b = generation_perplexity(gens, model=lm, convention="exact")
      >>> a.num_predicted, a.denominator, b.denominator, bool(a.perplexity < b.perplexity)
      (14, 16, 14, True)
    """
    check_choice(convention, "convention", ("mauve", "exact"))
    lm = _causal(model, "generation_perplexity", dtype)
    ctx = _context_length(lm)
    L = ctx if max_length is None else min(check_int(max_length, "max_length", minimum=2), ctx)
    docs = _as_documents(lm, generations, name="generations")
    if remove_ids is not None:
        drop = np.asarray(list(remove_ids), dtype=np.int64)
        docs = [d[~np.isin(d, drop)] for d in docs]
    docs = [d[:L] for d in docs]
    res = perplexity(docs, model=lm, max_length=L, stride=L, batch_size=batch_size, convention="exact", mesh=mesh)
    denom = int(sum(d.size for d in docs)) if convention == "mauve" else res.num_tokens
    return GenerationPerplexity(perplexity=float(np.exp(res.nll / denom)), nll=res.nll,
                                num_predicted=res.num_tokens, denominator=denom,
                                doc_perplexity=res.doc_perplexity, convention=convention, max_length=L,
                                signature=make_signature("generation-perplexity", model=lm, convention=convention,
                                                         max_length=L, dtype=getattr(lm, "dtype", None),
                                                         remove_ids=None if remove_ids is None else
                                                         sorted(int(i) for i in remove_ids)))
