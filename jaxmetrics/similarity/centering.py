"""Centering of contextual word vectors (Chen et al. 2020, §5) followed by L2 normalisation.

Methods (``centering=``), for token vectors ``w`` of sentence ``i`` (only tokens inside ``embeddings_mask``
count):

* ``"none"``       — ``v = w`` (L2 normalisation only; the uncentred baseline).
* ``"dimension"``  — ``v = w - mean_d(w)`` (scalar mean over the D coordinates).
* ``"sentence"``   — ``v = w - mean of the tokens of the same sentence``.
* ``"corpus"``     — ``v = w - mean of all tokens of all sentences`` (token weighted).
* ``"batch"``      — ``v = w - mean of all tokens of the sentences in the same batch of
  ``center_batch_size`` consecutive sentences`` (token weighted; the paper's recommendation,
  approximating corpus centering). A sentence's vectors therefore depend on its neighbours in
  the input order; the text pipelines also offer batches that do not
  (``SimilaritySettings(centering_batches="hashed")``, :func:`~jaxmetrics.similarity.chunks.centering_batches`).

Candidates and references are centred **separately** (call this once per side), then every
token vector is divided by its norm (:func:`jaxmetrics._ops.l2_normalize`). A vector that is
exactly zero after centering (e.g. a batch holding a single token) stays the zero vector —
its similarities are 0 — instead of becoming NaN.
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from jaxmetrics._ops import l2_normalize

__all__ = ["CENTERING_METHODS", "center_embeddings"]

CENTERING_METHODS = ("none", "dimension", "sentence", "corpus", "batch")


@partial(jax.jit, static_argnames=("centering", "center_batch_size", "normalize"))
def center_embeddings(embeddings: jax.Array, embeddings_mask: jax.Array, *, centering: str = "batch",
                      center_batch_size: int = 32, normalize: bool = True) -> jax.Array:
    """Center padded token embeddings and L2-normalise every token vector.

    Definition: ``v = w - mean`` with the mean of ``centering`` (see the module docstring),
    computed over the tokens in ``embeddings_mask`` only; then ``v / ||v||`` (zero vectors
    stay zero). Masked positions of the output are 0.

    Args:
      embeddings: float ``[N, L, D]`` token vectors of N sentences (padded).
      embeddings_mask: bool ``[N, L]``, True for tokens that take part (padding False).
      centering: one of ``"none" | "dimension" | "sentence" | "corpus" | "batch"`` (static; the
        pipelines' ``centering=``).
      center_batch_size: sentences per centering batch for ``"batch"`` (static; the paper: 32).
      normalize: L2-normalise after centering (static; default True).

    Returns:
      ``[N, L, D]`` centred (unit) vectors, zero at masked positions.

    Examples:
      >>> import jax.numpy as jnp
      >>> e = jnp.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [9.0, 9.0]]])
      >>> m = jnp.array([[True, True], [True, False]])
      >>> out = center_embeddings(e, m, centering="corpus", normalize=False)
      >>> [[round(v, 4) for v in row] for row in out[0].tolist()]  # mean of 3 tokens: (2/3, 2/3)
      [[0.3333, -0.6667], [-0.6667, 0.3333]]
    """
    if centering not in CENTERING_METHODS:
        raise ValueError(f"centering: expected one of {CENTERING_METHODS}, got {centering!r}")
    emb = jnp.asarray(embeddings)
    mask = jnp.asarray(embeddings_mask, bool)
    m = mask[..., None].astype(emb.dtype)
    if centering == "none":
        v = emb
    elif centering == "dimension":
        v = emb - jnp.mean(emb, axis=-1, keepdims=True)
    else:
        sums = jnp.sum(emb * m, axis=1)            # [N, D]
        counts = jnp.sum(m, axis=1)                # [N, 1]
        if centering == "sentence":
            gs, gc = sums, counts
        else:
            n = emb.shape[0]
            if centering == "corpus":
                seg = jnp.zeros((n,), jnp.int32)
                num = 1
            else:
                if center_batch_size < 1:
                    raise ValueError(f"center_batch_size: must be >= 1, got {center_batch_size}")
                seg = jnp.arange(n, dtype=jnp.int32) // center_batch_size
                num = -(-n // center_batch_size)
            gsum = jax.ops.segment_sum(sums, seg, num_segments=num)
            gcnt = jax.ops.segment_sum(counts, seg, num_segments=num)
            gs, gc = gsum[seg], gcnt[seg]
        mean = gs / jnp.where(gc > 0, gc, 1.0)
        v = emb - mean[:, None, :]
    v = jnp.where(mask[..., None], v, 0.0)
    return l2_normalize(v, mask) if normalize else v
