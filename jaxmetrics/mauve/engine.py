"""The MAUVE engine: quantize -> histograms -> divergence curve -> summary, one function per stage.

Every MAUVE number of the library goes through these stages (:func:`~jaxmetrics.mauve.compute_mauve`,
:func:`~jaxmetrics.mauve.compute_mauve_seeds`, :func:`~jaxmetrics.mauve.mauve_shared_codebook`,
the sweeps, :func:`~jaxmetrics.mauve.fit_to_mauve`, the generation evaluation), so one setting
gives one number whichever entry point computes it:

1. **project** (:func:`project_features`, :func:`apply_projection`): rows L2-normalised, PCA
   fitted to ``explained_var`` (its row subsample drawn from ``fold_in(key, 5)``), rows projected.
2. **quantize**: any :class:`~jaxmetrics.mauve.quantize.quantizers.Quantizer` fitted on the stacked sets
   ``[Q; P]`` labels every row (:func:`fit_labels`); the k-means quantizer's hot loop is
   :func:`~jaxmetrics.mauve.kmeans` with the key ``fold_in(key, 2)``, run for several seeds at
   once by :func:`kmeans_labels` or, for many subsets and cluster counts at once (the sweeps),
   in its masked mode by :func:`masked_kmeans_counts`.
3. **count** (:func:`split_counts`): the labels of consecutive row blocks (Q's, then P's) become
   bin counts.
4. **score** (:func:`mauve_scores`): in float64, the plain histograms give ``mauve`` and
   ``frontier_integral``, the Krichevsky-Trofimov smoothed ones (``+1/2``) ``mauve_star`` and
   ``frontier_integral_star`` (:mod:`.histograms`: divergence curve, its area, frontier integral).

Example (the whole pipeline by hand; ``compute_mauve(p_features=p, q_features=q)`` is the same):

    >>> import jax, numpy as np
    >>> from jaxmetrics.mauve import KMeansQuantizer
    >>> from jaxmetrics.mauve.engine import fit_labels, mauve_scores, split_counts
    >>> rng = np.random.default_rng(0)
    >>> p, q = rng.normal(size=(100, 8)), rng.normal(size=(80, 8)) + 0.5
    >>> rows = fit_labels(KMeansQuantizer(8), np.concatenate([q, p]), key=jax.random.key(25))
    >>> q_counts, p_counts = split_counts(rows.labels, (80, 100), rows.fitted.num_bins)
    >>> s = mauve_scores(p_counts, q_counts)
    >>> s  # doctest: +ELLIPSIS
    MauveResult(mauve=..., frontier_integral=..., divergence_curve=f64[27,2], details=HistogramDetails(mauve_star=..., frontier_integral_star=..., p_hist=f64[8], q_hist=f64[8], p_counts=i32[8], q_counts=i32[8], num_buckets=8))
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics._ops import PRECISION, is_concrete, l2_normalize
from jaxmetrics.mauve.quantize.clustering import kmeans
from jaxmetrics.mauve.frontier.histograms import _mauve_core
from jaxmetrics.mauve.frontier.results import HistogramDetails, MauveResult
from jaxmetrics.mauve.quantize.pca import (PCAProjection, _project, fit_pca, pca_eigen_from_scatter, pca_from_eigen,
                                           subsample_rows)
from jaxmetrics.mauve.sizes import bucket_size
from jaxmetrics.results import Result

__all__ = [
    "ProjectedFeatures",
    "LabelledRows",
    "ProblemCounts",
    "pad_rows",
    "project_features",
    "project_bucketed",
    "apply_projection",
    "fit_labels",
    "kmeans_labels",
    "masked_kmeans_counts",
    "split_counts",
    "mauve_scores",
]

#: ``fold_in`` salts of a seed's key: the PCA row subsample and the k-means stream.
PCA_SALT, KMEANS_SALT = 5, 2


class ProjectedFeatures(Result):
    """Output of :func:`project_features`.

    Attributes:
      pca: the fitted :class:`~jaxmetrics.mauve.quantize.pca.PCAProjection`.
      z: ``[N, m_pad]`` float32 projected rows.
    """

    pca: PCAProjection
    z: jax.Array


class LabelledRows(Result):
    """Output of :func:`fit_labels`.

    Attributes:
      fitted: the fitted quantizer (``num_bins``, ``assign``, ``soft_assign``).
      labels: ``[N]`` int bin of every row it was fitted on.
    """

    fitted: Any
    labels: jax.Array


class ProblemCounts(Result):
    """Output of :func:`masked_kmeans_counts`.

    Attributes:
      p_counts: ``[B, K]`` int32 bin counts of P's rows of each problem.
      q_counts: ``[B, K]`` int32 bin counts of Q's rows.
    """

    p_counts: jax.Array
    q_counts: jax.Array


# --------------------------------------------------------------------------- 1. project


def pad_rows(features: Any, size: int) -> np.ndarray:
    """Host rows ``[n, d]`` followed by ``size - n`` zero rows: ``[size, d]`` (numpy, same dtype).

    The padding of a bucketed size (:func:`~jaxmetrics.mauve.sizes.bucket_size`): the stages
    take ``num_valid=n`` / ``x_mask`` so padding rows are never data.

    Examples:
      >>> from jaxmetrics.mauve.engine import pad_rows
      >>> pad_rows([[1.0, 2.0]], 3).tolist()
      [[1.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
    """
    x = np.asarray(features)
    n = x.shape[0]
    if size < n:
        raise ValueError(f"size: {size} is smaller than the {n} rows")
    if size == n:
        return x
    return np.concatenate([x, np.zeros((size - n,) + x.shape[1:], x.dtype)])


_normalize_rows = jax.jit(l2_normalize)


@functools.partial(jax.jit, static_argnames=("normalize",))
def _preprocess(x: jax.Array, mean: jax.Array, components: jax.Array, normalize: bool) -> jax.Array:
    if normalize:
        x = l2_normalize(x)
    return _project(x, mean, components).astype(jnp.float32)


#: Rows per block when host rows are projected (:func:`project_features`,
#: :func:`project_bucketed`): the device holds one block of raw rows at a time and never a full
#: normalised or centred copy, so the projection stage adds about ``z`` (``[N, m_pad]``) to the
#: memory the caller's rows take. Up to this many rows, one block of ``bucket_size(N)`` rows.
PROJECT_BLOCK_ROWS = 4096


def _aligned_empty(shape: tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialised host array at a 64-byte boundary: ``jax.device_put(a, may_alias=True)``
    then shares its memory on the CPU instead of copying it (numpy aligns to 16 bytes)."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(size + 64, np.uint8)
    offset = -raw.ctypes.data % 64
    return raw[offset:offset + size].view(dtype).reshape(shape)


def _host_blocks(parts: Sequence[np.ndarray], block: int, total: int):
    """``(device block [block, d], rows taken from parts, rows of [0, total) in it)`` over the
    rows ``[0, total)`` of the host arrays ``parts`` stacked in order and followed by zero rows
    (no stacked copy is made: a block spanning two parts, or the end, is assembled alone)."""
    d = parts[0].shape[1]
    offsets = np.cumsum([0] + [p.shape[0] for p in parts])
    for start in range(0, total, block):
        stop = min(start + block, total)
        pieces = [p[max(start - o, 0):min(stop - o, p.shape[0])] for p, o in zip(parts, offsets[:-1])
                  if o < stop and o + p.shape[0] > start]
        data = sum(piece.shape[0] for piece in pieces)
        if len(pieces) == 1 and data == block:
            xb = pieces[0]
        else:
            xb = np.concatenate(pieces + [np.zeros((block - data, d), parts[0].dtype)])
        yield jax.device_put(xb), np.int32(data), stop - start


def _gather_rows(parts: Sequence[np.ndarray], index: np.ndarray) -> np.ndarray:
    """``concatenate(parts)[index]`` without the concatenated copy."""
    out = np.empty((index.size, parts[0].shape[1]), np.result_type(*parts))
    offset = 0
    for p in parts:
        sel = (index >= offset) & (index < offset + p.shape[0])
        out[sel] = p[index[sel] - offset]
        offset += p.shape[0]
    return out


def _prepared(xb: jax.Array, count: jax.Array, normalize: bool, dtype) -> tuple[jax.Array, jax.Array]:
    x = (l2_normalize(xb) if normalize else xb).astype(dtype)
    return x, (jnp.arange(xb.shape[0]) < count)[:, None]


@functools.partial(jax.jit, static_argnames=("normalize",), donate_argnums=0)
def _add_block_sum(acc: jax.Array, xb: jax.Array, count: jax.Array, normalize: bool) -> jax.Array:
    x, valid = _prepared(xb, count, normalize, acc.dtype)
    return acc + jnp.sum(jnp.where(valid, x, 0.0), axis=0)


@functools.partial(jax.jit, static_argnames=("normalize",), donate_argnums=0)
def _add_block_scatter(acc: jax.Array, xb: jax.Array, count: jax.Array, mean: jax.Array,
                       normalize: bool) -> jax.Array:
    x, valid = _prepared(xb, count, normalize, acc.dtype)
    xc = jnp.where(valid, x - mean, 0.0)
    return acc + jnp.matmul(xc.T, xc, precision=PRECISION)


_eigen_from_scatter = jax.jit(pca_eigen_from_scatter)


def _project_host_rows(parts: Sequence[np.ndarray], *, key: jax.Array, explained_var: float, pca_max_data: int,
                       normalize: bool, num_valid: int, rows: int) -> ProjectedFeatures:
    """:func:`project_features` of host rows in row blocks, ``x`` the rows of ``parts`` stacked in
    order: the PCA fitted on the data rows ``x[:num_valid]`` (``num_valid >= d``), then
    ``z [rows, m_pad]``, the projection of ``x``'s rows followed by zero rows up to ``rows`` (the
    padding of :func:`pad_rows`).

    Two passes over the fitting rows (their mean, then the scatter of the centred rows; the
    eigen-decomposition is :func:`~jaxmetrics.mauve.quantize.pca.pca_eigen_from_scatter`) and one
    over all rows (the projection). Each block program is compiled for ``[block, d]``, so every
    size above :data:`PROJECT_BLOCK_ROWS` rows shares them."""
    d = parts[0].shape[1]
    n = num_valid
    block = min(PROJECT_BLOCK_ROWS, bucket_size(rows))
    fit, num_fit = parts, n
    if 0 < pca_max_data < n:  # fit_pca's subsample: the same rows from the same key
        fit = [_gather_rows(parts, np.asarray(subsample_rows(jax.random.fold_in(key, PCA_SALT), n, pca_max_data)))]
        num_fit = int(pca_max_data)
    dtype = jnp.result_type(jax.dtypes.canonicalize_dtype(np.result_type(*parts)), jnp.float32)
    total = jnp.zeros((d,), dtype)
    # each block is waited for: dispatched ahead, every block's device copy would be alive at once
    for xb, count, _ in _host_blocks(fit, block, num_fit):
        total = _add_block_sum(total, xb, count, normalize).block_until_ready()
    mean = total / num_fit
    scatter = jnp.zeros((d, d), dtype)
    for xb, count, _ in _host_blocks(fit, block, num_fit):
        scatter = _add_block_scatter(scatter, xb, count, mean, normalize).block_until_ready()
    pca = pca_from_eigen(*_eigen_from_scatter(scatter, mean, num_fit), explained_var=explained_var)
    z = _aligned_empty((rows, pca.components.shape[1]), np.float32)
    start = 0
    for xb, _, out in _host_blocks(parts, block, rows):
        z[start:start + out] = np.asarray(_preprocess(xb, pca.mean, pca.components, normalize))[:out]
        start += out
    # the device array takes over z's memory (no second copy); nothing writes to z after this
    return ProjectedFeatures(pca=pca, z=jax.device_put(z, may_alias=True))


def apply_projection(features: Any, pca: PCAProjection, *, normalize: bool = True) -> jax.Array:
    """Rows ``[n, d]`` -> ``z [n, m_pad]`` float32: L2-normalised (``normalize``), then
    ``(x - pca.mean) @ pca.components``. Traceable (under ``jit`` / ``grad`` only the shape is
    checked).

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve.engine import apply_projection, project_features
      >>> x = np.random.default_rng(0).normal(size=(30, 6))
      >>> proj = project_features(x, key=jax.random.key(0))
      >>> bool(np.allclose(apply_projection(x, proj.pca), proj.z, atol=1e-6))   # float32 rounding
      True
    """
    d = int(pca.mean.shape[0])
    if not is_concrete(features):
        x = features
        if x.ndim != 2 or x.shape[1] != d:
            raise ValueError(f"features: expected shape [n, {d}], got {x.shape}")
    else:
        x = jnp.asarray(V.check_features(features, "features", dim=d))
    return _preprocess(x, pca.mean, pca.components, normalize)


def project_features(features: Any, *, key: jax.Array, explained_var: float = 0.9, pca_max_data: int = -1,
                     normalize: bool = True, num_valid: int | None = None) -> ProjectedFeatures:
    """Fit the projection stage on ``features [N, d]`` and project them: ``pca`` and ``z [N, m_pad]``.

    Rows are L2-normalised (``normalize``), a PCA keeping ``explained_var`` of the variance is
    fitted (on ``pca_max_data`` rows drawn with ``fold_in(key, 5)``, or all rows for -1; a
    subsample needs at least ``min(N, d + 1)`` rows, :func:`jaxmetrics._validation.check_pca_max_data`) and
    the rows are projected (float32). A concrete ``jax.Array`` input keeps its placement (rows
    sharded over a mesh stay sharded). Host rows (numpy, lists) with at least ``d`` data rows are
    streamed to the device in blocks of :data:`PROJECT_BLOCK_ROWS` rows: memory beyond the
    caller's rows is about ``z`` alone. With ``num_valid``, only the first ``num_valid`` rows
    are data and the rest padding (see :func:`pad_rows`): the PCA is fitted on the data rows
    only, and every row is projected.

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve.engine import project_features
      >>> proj = project_features(np.random.default_rng(0).normal(size=(50, 8)), key=jax.random.key(0))
      >>> proj.z.shape, proj.pca.num_components
      ((50, 8), 7)
    """
    V.check_key(key)
    x = V.check_features(features, "features")
    # before any work: a subsample too small to span the features (pca_max_data=1 made MAUVE 1)
    num_rows = x.shape[0] if num_valid is None else V.check_int(num_valid, "num_valid", minimum=1, maximum=x.shape[0])
    V.check_pca_max_data(pca_max_data, num_rows=num_rows, dim=x.shape[1])
    if not isinstance(x, jax.Array) and num_rows >= x.shape[1]:  # host rows: streamed in blocks
        return _project_host_rows((x,), key=key, explained_var=explained_var, pca_max_data=pca_max_data,
                                  normalize=normalize, num_valid=num_rows, rows=x.shape[0])
    if isinstance(features, jax.Array) and is_concrete(features):
        x = jax.device_put(x, features.sharding)
    elif not isinstance(x, jax.Array):
        x = jax.device_put(x)  # (jnp.asarray would compile a copy program for each new shape)
    # one compiled program per step (normalise; PCA; project), not one per eager array operation:
    # a fresh process traces, lowers and compiles each of them
    xn = _normalize_rows(x) if normalize else x
    pca = fit_pca(xn, key=jax.random.fold_in(key, PCA_SALT), explained_var=explained_var, max_data=pca_max_data,
                  num_valid=num_valid)
    return ProjectedFeatures(pca=pca, z=_preprocess(xn, pca.mean, pca.components, False))


def project_bucketed(features: Any, *, key: jax.Array, explained_var: float = 0.9, pca_max_data: int = -1,
                     normalize: bool = True) -> tuple[ProjectedFeatures, np.ndarray]:
    """:func:`project_features` of host rows ``[n, d]`` padded to ``bucket_size(n)`` rows.

    ``features`` may also be a tuple of host arrays ``[n_i, d]``, their rows stacked in order
    (MAUVE's ``[Q; P]``) without the stacked copy being made.

    Returns the projection (``z [bucket_size(n), m_pad]``; the PCA is fitted on the ``n`` data
    rows only) and ``z_mask [bucket_size(n)]``, true on the data rows, for k-means' masked mode.
    Nearby sample sizes share one compiled program (:func:`~jaxmetrics.mauve.sizes.bucket_size`).

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve.engine import project_bucketed
      >>> x = np.random.default_rng(0).normal(size=(51, 8))
      >>> proj, z_mask = project_bucketed(x, key=jax.random.key(0))
      >>> proj.z.shape, int(z_mask.sum())
      ((52, 8), 51)
      >>> parts, _ = project_bucketed((x[:20], x[20:]), key=jax.random.key(0))
      >>> bool(np.array_equal(parts.z, proj.z))
      True
    """
    if isinstance(features, tuple) and features and all(isinstance(f, np.ndarray) and f.ndim == 2 for f in features):
        parts = [V.check_features(f, f"features[{i}]", dim=features[0].shape[1]) for i, f in enumerate(features)]
    else:
        parts = [V.check_features(features, "features")]
    n, d = sum(p.shape[0] for p in parts), parts[0].shape[1]
    if isinstance(parts[0], np.ndarray) and n >= d:  # streamed: no padded (or stacked) copy of the rows
        V.check_key(key)
        V.check_pca_max_data(pca_max_data, num_rows=n, dim=d)
        proj = _project_host_rows(parts, key=key, explained_var=explained_var, pca_max_data=pca_max_data,
                                  normalize=normalize, num_valid=n, rows=bucket_size(n))
    else:
        x = parts[0] if len(parts) == 1 else np.concatenate(parts)
        proj = project_features(pad_rows(x, bucket_size(n)), key=key, explained_var=explained_var,
                                pca_max_data=pca_max_data, normalize=normalize, num_valid=n)
    return proj, np.arange(proj.z.shape[0]) < n


# --------------------------------------------------------------------------- 2. quantize


def fit_labels(quantizer: Any, features: Any, *, key: jax.Array) -> LabelledRows:
    """Fit ``quantizer`` on ``features [N, d]`` with ``key``: the ``fitted`` quantizer and ``labels [N]``.

    The labels are the fitted quantizer's ``train_labels`` when it kept them for these rows
    (k-means labels its training rows with its final centroids), else ``fitted.assign(features)``.

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve import KMeansQuantizer
      >>> from jaxmetrics.mauve.engine import fit_labels
      >>> out = fit_labels(KMeansQuantizer(4), np.random.default_rng(0).normal(size=(40, 6)), key=jax.random.key(0))
      >>> out.labels.shape, out.fitted.num_bins
      ((40,), 4)
    """
    fitted = quantizer.fit(features, key=key)
    tl = getattr(fitted, "train_labels", None)
    if tl is not None and tl.shape[0] == features.shape[0]:
        return LabelledRows(fitted=fitted, labels=tl)
    return LabelledRows(fitted=fitted, labels=jnp.asarray(fitted.assign(features)))


@functools.partial(jax.jit, static_argnames=("num_clusters", "num_redo", "max_points_per_centroid"))
def kmeans_labels(z: jax.Array, keys: jax.Array, *, num_clusters: int, num_redo: int = 5,
                  max_iter: int | jax.Array = 500, max_points_per_centroid: int = 256, z_mask: Any = None,
                  num_active_clusters: Any = None) -> jax.Array:
    """Labels ``[S, N]`` of :func:`~jaxmetrics.mauve.kmeans` on ``z [N, m]`` for each of the ``S``
    keys ``keys [S]``, in one compiled call (row ``s`` equals the single call with ``keys[s]``).
    ``z_mask [N]`` (the rows to cluster) and ``num_active_clusters`` select k-means' masked mode
    (padded rows and slots).

    The seeds run one after another (``lax.map``), like the restarts inside each k-means: a
    ``vmap`` would run every seed for as many Lloyd steps as the slowest one and copy the rows
    per seed (measured at n = 10,000, k = 500, 3 seeds: 7.5 s vmapped, 5.1 s in sequence).
    Memory is that of one seed.

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve.engine import kmeans_labels
      >>> z = np.random.default_rng(0).normal(size=(40, 3)).astype("float32")
      >>> kmeans_labels(z, jax.random.split(jax.random.key(0), 3), num_clusters=4).shape
      (3, 40)
    """
    run = lambda key: kmeans(z, key, num_clusters=num_clusters, num_redo=num_redo, max_iter=max_iter,
                             max_points_per_centroid=max_points_per_centroid, x_mask=z_mask,
                             num_active_clusters=num_active_clusters).labels
    return jax.lax.map(run, keys)


@functools.partial(jax.jit, static_argnames=("num_clusters", "num_redo", "max_points_per_centroid"))
def masked_kmeans_counts(z, problem_z, rows, rows_mask, rows_is_q, keys, num_active, max_iter, *, num_clusters,
                         num_redo, max_points_per_centroid=256) -> ProblemCounts:
    """Bin counts of P and Q (``[B, K]`` int32 each) of ``B`` k-means problems in one vmapped call.

    ``z [Z, R, m]`` holds the projected rows of ``Z`` feature stacks; problem ``b`` clusters rows
    ``rows[b] [W]`` (valid where ``rows_mask[b]``; ``rows_is_q[b]`` marks Q's rows) of
    ``z[problem_z[b]]`` into ``num_active[b]`` of ``num_clusters = K`` slots with key ``keys[b]``
    (:func:`~jaxmetrics.mauve.kmeans`'s masked mode: on all rows of a stack with ``num_active``
    equal to the k of a single call, the counts are those of that call).

    Examples:
      >>> import jax, jax.numpy as jnp, numpy as np
      >>> from jaxmetrics.mauve.engine import masked_kmeans_counts
      >>> z = jnp.asarray(np.random.default_rng(0).normal(size=(1, 20, 3)), jnp.float32)
      >>> rows = jnp.tile(jnp.arange(20), (2, 1))
      >>> c = masked_kmeans_counts(z, jnp.zeros(2, int), rows, rows < 16, rows < 8,
      ...     jax.random.split(jax.random.key(0), 2), jnp.array([2, 3]), 50, num_clusters=3, num_redo=2)
      >>> c.p_counts.sum(axis=1).tolist(), c.q_counts.sum(axis=1).tolist(), int(c.p_counts[0, 2] + c.q_counts[0, 2])
      ([8, 8], [8, 8], 0)
    """

    def one(zi, r, rm, isq, key, k):
        res = kmeans(z[zi][r], key, num_clusters=num_clusters, num_redo=num_redo, max_iter=max_iter,
                     max_points_per_centroid=max_points_per_centroid, x_mask=rm, num_active_clusters=k)
        onehot = jax.nn.one_hot(res.labels, num_clusters, dtype=jnp.int32)
        p = jnp.sum(onehot * (rm & ~isq)[:, None].astype(jnp.int32), axis=0)
        q = jnp.sum(onehot * (rm & isq)[:, None].astype(jnp.int32), axis=0)
        return p, q

    p, q = jax.vmap(one)(problem_z, rows, rows_mask, rows_is_q, keys, num_active)
    return ProblemCounts(p_counts=p, q_counts=q)


# --------------------------------------------------------------------------- 3. count


@functools.partial(jax.jit, static_argnames=("num_bins",))
def _counts(labels: jax.Array, num_bins: int) -> jax.Array:
    # one-hot sum: exact and deterministic on every backend (no scatter-add)
    return jnp.sum(jax.nn.one_hot(labels, num_bins, dtype=jnp.int32), axis=-2)


def split_counts(labels: Any, sizes: Sequence[int], num_bins: int) -> np.ndarray:
    """Bin counts ``[len(sizes), num_bins]`` (int32) of consecutive blocks of ``labels [..., N]``.

    Block ``i`` is the next ``sizes[i]`` labels (``sum(sizes) = N``); leading axes (seeds) are
    kept: ``[..., len(sizes), num_bins]``. ``counts_j = sum_i 1[label_i = j]``.

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.mauve.engine import split_counts
      >>> split_counts(np.array([0, 1, 1, 2, 2, 2]), (2, 4), 3).tolist()
      [[1, 1, 0], [0, 1, 3]]
    """
    if isinstance(labels, jax.Array) and not labels.is_fully_addressable:
        # labels sharded over several processes' devices: every process counts the whole array
        from jax.experimental import multihost_utils

        labels = multihost_utils.process_allgather(labels, tiled=True)
    labels = np.asarray(labels)
    sizes = [int(s) for s in sizes]
    if sum(sizes) != labels.shape[-1]:
        raise ValueError(f"sizes: {sizes} add up to {sum(sizes)}, not the {labels.shape[-1]} labels")
    nb = V.check_int(num_bins, "num_bins", minimum=1)
    # on the host (exact integer counts, nothing to compile for each new size): one bincount of
    # (leading index, block, label) triples
    lead = labels.shape[:-1]
    flat = labels.reshape(-1, labels.shape[-1]).astype(np.int64)
    block = np.repeat(np.arange(len(sizes)), sizes)
    ids = (np.arange(flat.shape[0])[:, None] * len(sizes) + block[None, :]) * nb + flat
    if flat.size and (flat.min() < 0 or flat.max() >= nb):
        raise ValueError(f"labels: expected bin ids in [0, {nb}), got values in [{flat.min()}, {flat.max()}]")
    counts = np.bincount(ids.ravel(), minlength=flat.shape[0] * len(sizes) * nb)
    return counts.reshape(lead + (len(sizes), nb)).astype(np.int32)


# --------------------------------------------------------------------------- 4. score


@functools.partial(jax.jit, static_argnames=("num_points", "scoring"))
def _summary(pc, qc, scaling, active, num_points, scoring):
    p_hist = pc / jnp.sum(pc, axis=-1, keepdims=True)
    q_hist = qc / jnp.sum(qc, axis=-1, keepdims=True)
    plain = _mauve_core(p_hist, q_hist, scaling, num_points, scoring)
    ps = jnp.where(active, pc + 0.5, 0.0)
    qs = jnp.where(active, qc + 0.5, 0.0)
    ps = ps / jnp.sum(ps, axis=-1, keepdims=True)
    qs = qs / jnp.sum(qs, axis=-1, keepdims=True)
    star = _mauve_core(ps, qs, scaling, num_points, scoring)
    return (p_hist, q_hist, plain.divergence_curve, plain.mauve, plain.frontier_integral, star.mauve,
            star.frontier_integral)


def mauve_scores(p_counts: Any, q_counts: Any, *, scaling: float = 5.0, num_points: int = 25,
                 scoring: str = "mauve-text", num_active: Any = None, divergence: str = "kl") -> MauveResult:
    """Plain and smoothed MAUVE / frontier integral of bin counts ``[..., K]``, in float64: a
    :class:`~jaxmetrics.mauve.MauveResult` whose leaves have the counts' leading axes ``[...]`` and
    whose ``details`` (a :class:`~jaxmetrics.mauve.HistogramDetails`) hold the histograms, the
    counts (float64), ``mauve_star`` and ``frontier_integral_star`` (read through as ``s.p_hist``,
    ``s.mauve_star``, ...).

    ``p_hist = p_counts / sum`` (likewise Q) give ``mauve``, ``frontier_integral`` and the
    divergence curve (:func:`~jaxmetrics.mauve.mauve_from_histograms` with ``scaling``,
    ``num_points``, ``scoring``); ``(counts + 1/2) / sum`` give ``mauve_star`` and
    ``frontier_integral_star`` (:func:`~jaxmetrics.mauve.mauve_from_counts`). With ``num_active``
    ``[...]`` only the first ``num_active`` bins of each row are bins (the rest are padding,
    count 0 and not smoothed). Compiled once per leading shape and bucketed number of bins
    (:func:`~jaxmetrics.mauve.sizes.bucket_size`; padding bins are inactive); ``scaling`` is traced.

    ``divergence`` other than ``'kl'`` (:data:`~jaxmetrics.mauve.frontier.divergences.DIVERGENCES`):
    ``mauve``, ``mauve_star`` and the curve are those of that f-divergence
    (:func:`~jaxmetrics.mauve.frontier.divergences.f_mauve` on the plain and on the ``+1/2`` smoothed
    histograms; not with ``num_active``); the frontier integrals stay KL-based.

    Examples:
      >>> from jaxmetrics.mauve.engine import mauve_scores
      >>> s = mauve_scores([5, 0, 5], [5, 5, 0])
      >>> round(float(s.mauve_star), 5), s.divergence_curve.shape
      (0.30106, (27, 2))
    """
    with jax.enable_x64(True):
        p_counts, q_counts = np.asarray(p_counts), np.asarray(q_counts)
        pc = np.asarray(p_counts, np.float64)
        qc = np.asarray(q_counts, np.float64)
        if pc.shape != qc.shape or pc.ndim < 1:
            raise ValueError(f"q_counts: shape {qc.shape} does not match p_counts shape {pc.shape}")
        k = pc.shape[-1]
        if num_active is None:  # k bins, compiled for a bucketed number of bins (zero-padded, inactive)
            kb = bucket_size(k)
            pad = [(0, 0)] * (pc.ndim - 1) + [(0, kb - k)]
            pc, qc = np.pad(pc, pad), np.pad(qc, pad)
            active = np.arange(kb) < k
        else:
            active = np.arange(k) < np.asarray(num_active, np.int32)[..., None]
        out = [np.asarray(a) for a in _summary(jax.device_put(pc), jax.device_put(qc), np.float64(scaling),
                                                 active, int(num_points), scoring)]
        p_hist, q_hist, curve, m, fi, m_star, fi_star = out
        p_hist, q_hist = p_hist[..., :k], q_hist[..., :k]  # the histograms without the padding bins
        if divergence != "kl":
            curve, m, m_star = _f_scores(p_hist, q_hist, p_counts, q_counts, divergence=divergence,
                                         scaling=scaling, num_points=num_points, scoring=scoring,
                                         num_active=num_active)
        details = HistogramDetails(p_hist=p_hist, q_hist=q_hist, p_counts=p_counts, q_counts=q_counts,
                                   mauve_star=m_star, frontier_integral_star=fi_star, num_buckets=k)
        return MauveResult(mauve=m, frontier_integral=fi, divergence_curve=curve, details=details)


def _f_scores(p_hist, q_hist, p_counts, q_counts, *, divergence, scaling, num_points, scoring, num_active):
    """The curve, ``mauve`` and ``mauve_star`` of the f-divergence ``divergence`` (float64 numpy; under x64)."""
    from jaxmetrics.mauve.frontier.divergences import f_mauve

    if num_active is not None:
        raise ValueError(f"divergence: {divergence!r} is for all bins; num_active applies to 'kl' only")
    kw = dict(divergence=divergence, scaling=scaling, num_points=num_points, scoring=scoring)
    plain = f_mauve(np.asarray(p_hist, np.float64), np.asarray(q_hist, np.float64), **kw)
    smooth = [np.asarray(c, np.float64) + 0.5 for c in (p_counts, q_counts)]
    star = f_mauve(*[c / c.sum(-1, keepdims=True) for c in smooth], **kw)
    return np.asarray(plain.divergence_curve), np.asarray(plain.mauve), np.asarray(star.mauve)
