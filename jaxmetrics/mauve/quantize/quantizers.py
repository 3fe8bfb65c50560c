"""Quantizer interface for MAUVE, the k-means quantizer, and a name registry.

A :class:`Quantizer` holds settings only; ``fit(features, key=...)`` returns a
:class:`FittedQuantizer` that maps raw feature rows to ``num_bins`` bins, hard (``assign``) or
soft (``soft_assign``, rows summing to 1). MAUVE only needs the bin counts of each set, so any
quantizer (k-means, DRMM, lattice, learned soft codebooks) plugs into
:func:`jaxmetrics.mauve.compute_mauve` through this interface::

    QUANTIZERS["name"] = factory       # factory(num_bins, **kwargs) -> Quantizer
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics._ops import is_concrete, squared_distances
from jaxmetrics.mauve.quantize.clustering import _assign_to_centroids, kmeans
from jaxmetrics.mauve.engine import KMEANS_SALT, _counts, apply_projection, project_bucketed, project_features
from jaxmetrics.mauve.quantize.pca import PCAProjection
from jaxmetrics.mauve.sizes import bucket_size, check_num_buckets
from jaxmetrics.results import Result, static_field

__all__ = [
    "Quantizer",
    "FittedQuantizer",
    "KMeansQuantizer",
    "FittedKMeansQuantizer",
    "QUANTIZERS",
    "register_quantizer",
    "get_quantizer",
    "available_quantizers",
    "bin_counts",
    "soft_bin_counts",
    "soft_assignment",
]


@runtime_checkable
class Quantizer(Protocol):  # unfitted: settings only
    """Settings of a quantizer; :meth:`fit` learns the bins from ``[N, d]`` features."""

    def fit(self, features: np.ndarray | jax.Array, *, key: jax.Array) -> "FittedQuantizer": ...


@runtime_checkable
class FittedQuantizer(Protocol):
    """A learned partition of feature space into ``num_bins`` bins."""

    num_bins: int

    def assign(self, features) -> jax.Array: ...  # int32 [n] bin ids (hard)

    def soft_assign(self, features, temperature) -> jax.Array: ...  # [n, num_bins] rows sum to 1


class FittedKMeansQuantizer(Result):
    """k-means codebook with its preprocessing (L2-normalise, PCA projection).

    ``assign(x) = argmin_j ||z(x) - c_j||^2`` and
    ``soft_assign(x, T) = softmax_j(-||z(x) - c_j||^2 / T)``, with ``z`` the preprocessed rows.
    A pytree, so it can be passed to (and returned from) jitted functions.

    Attributes:
      pca: the fitted :class:`~jaxmetrics.mauve.quantize.pca.PCAProjection`.
      centroids: ``[k, m_pad]`` in the projected space; ``num_bins`` is ``k``.
      train_labels: ``[N]`` labels of the fitting rows (saves one assignment pass), or ``None``.
      normalize: whether rows are L2-normalised before the projection (static).
    """

    pca: PCAProjection
    centroids: jax.Array
    train_labels: jax.Array | None = None
    normalize: bool = static_field(default=True)

    @property
    def num_bins(self) -> int:
        """``k``, the number of centroids."""
        return int(self.centroids.shape[0])

    def transform(self, features: Any) -> jax.Array:
        """Preprocessed rows ``z [n, m_pad]`` (float32) of raw feature rows ``[n, d]``."""
        return apply_projection(features, self.pca, normalize=self.normalize)

    def assign(self, features: Any) -> jax.Array:
        """Hard bin ids ``[n]`` int32 of raw feature rows ``[n, d]``."""
        return _assign_to_centroids(self.transform(features), self.centroids)

    def soft_assign(self, features: Any, temperature: float | jax.Array) -> jax.Array:
        """Soft assignments ``[n, k]``: ``softmax(-||z - c||^2 / temperature)`` (rows sum to 1)."""
        if is_concrete(temperature):
            V.check_positive(temperature, "temperature")
        return soft_assignment(self.transform(features), self.centroids, jnp.asarray(temperature, jnp.float32))


@jax.jit
def soft_assignment(points: jax.Array, centroids: jax.Array, temperature: jax.Array) -> jax.Array:
    """Soft assignment of points to centroids, ``[n, k]``: the one kernel every quantizer's
    ``soft_assign`` and soft MAUVE use.

    ``a_ij = softmax_j(-||x_i - c_j||^2 / tau)`` with the distances of
    :func:`jaxmetrics._ops.squared_distances` (rows sum to 1; no validation: callers check
    ``tau > 0`` at their public boundary).

    Args:
      points: ``[n, d]``; centroids: ``[k, d]`` (same dtype).
      temperature: ``tau > 0``, traced, in units of squared distance.

    Examples:
      >>> import jax.numpy as jnp
      >>> soft_assignment(jnp.array([[0.0], [1.0]]), jnp.array([[0.0], [1.0]]), 0.01).round(3).tolist()
      [[1.0, 0.0], [0.0, 1.0]]
    """
    return jax.nn.softmax(-squared_distances(points, centroids) / temperature, axis=-1)


@dataclasses.dataclass(frozen=True)
class KMeansQuantizer:
    """mauve-text's quantizer: L2-normalise -> PCA (``explained_var``) -> k-means (faiss-like).

    Args:
      num_bins: number of clusters ``k >= 2`` (one cluster makes MAUVE 1 for any texts), or
        ``'auto'`` in a MAUVE pipeline's ``quantizer=``
        (``compute_mauve_seeds(quantizer=KMeansQuantizer('auto', explained_var=0.95))``): ``k`` is
        then the pipeline's ``num_buckets``.
      explained_var: PCA keeps the first components reaching this fraction of the variance.
      num_redo: k-means restarts (best objective kept), run in parallel.
      max_iter: maximum Lloyd iterations per restart.
      pca_max_data: -1 fits PCA on all rows, otherwise on this many random rows: at least 2, and
        when fitted at least the feature dimension + 1 (or all rows), else ``ValueError`` (a
        smaller subsample spans too few directions: one row makes MAUVE 1 for any texts;
        :func:`jaxmetrics._validation.check_pca_max_data`).
      max_points_per_centroid: k-means trains on at most this many rows per cluster.
      normalize: L2-normalise rows first (mauve-text's ``norm='l2'``).

    Examples:
      >>> from jaxmetrics.mauve.quantize.quantizers import KMeansQuantizer
      >>> import jax, numpy as np
      >>> x = np.random.default_rng(0).normal(size=(60, 8)).astype("float32")
      >>> fitted = KMeansQuantizer(4).fit(x, key=jax.random.key(0))
      >>> fitted  # doctest: +ELLIPSIS
      FittedKMeansQuantizer(pca=PCAProjection(..., num_components=7), centroids=f32[4,8], train_labels=i32[60], normalize=True)
      >>> fitted.assign(x[:3]).shape, fitted.soft_assign(x[:3], 0.1).sum(axis=1).round(5).tolist()
      ((3,), [1.0, 1.0, 1.0])
    """

    num_bins: int | str
    explained_var: float = 0.9
    num_redo: int = 5
    max_iter: int = 500
    pca_max_data: int = -1
    max_points_per_centroid: int = 256
    normalize: bool = True

    def __post_init__(self) -> None:
        if not (isinstance(self.num_bins, str) and self.num_bins == "auto"):
            check_num_buckets(self.num_bins, "num_bins")
        V.check_open_unit(self.explained_var, "kmeans_explained_var")
        V.check_int(self.num_redo, "kmeans_num_redo", minimum=1)
        V.check_int(self.max_iter, "kmeans_max_iter", minimum=1)
        V.check_pca_max_data(self.pca_max_data)  # the data-dependent bound: when fitted (project_features)
        V.check_int(self.max_points_per_centroid, "max_points_per_centroid", minimum=1)

    def fit(self, features: Any, *, key: jax.Array) -> FittedKMeansQuantizer:
        """Fit on ``[N, d]`` features (``N >= num_bins``); ``key`` seeds PCA subsampling and k-means."""
        V.check_key(key)
        if isinstance(self.num_bins, str):
            raise ValueError("num_bins: 'auto' is resolved by the MAUVE pipelines (their num_buckets); "
                             "give an integer to fit the quantizer directly")
        n = np.shape(features)[0] if np.ndim(features) == 2 else None
        if n is not None and self.num_bins > n:
            raise ValueError(f"num_buckets: {self.num_bins} bins for only {n} points")
        kkey = jax.random.fold_in(key, KMEANS_SALT)
        if isinstance(features, jax.Array):  # device data keeps its shape and placement (a mesh)
            proj = project_features(features, key=key, explained_var=self.explained_var,
                                    pca_max_data=self.pca_max_data, normalize=self.normalize)
            res = kmeans(proj.z, kkey, num_clusters=self.num_bins, num_redo=self.num_redo, max_iter=self.max_iter,
                         max_points_per_centroid=self.max_points_per_centroid)
            return FittedKMeansQuantizer(pca=proj.pca, centroids=res.centroids, train_labels=res.labels,
                                         normalize=self.normalize)
        # host data: rows and clusters padded to bucketed sizes, so that nearby sample sizes share
        # one compiled program (masked rows and inactive slots change nothing, see bucket_size)
        proj, z_mask = project_bucketed(features, key=key, explained_var=self.explained_var,
                                        pca_max_data=self.pca_max_data, normalize=self.normalize)
        n, k = int(z_mask.sum()), self.num_bins
        res = kmeans(proj.z, kkey, num_clusters=bucket_size(k), num_redo=self.num_redo, max_iter=self.max_iter,
                     max_points_per_centroid=self.max_points_per_centroid, x_mask=z_mask, num_active_clusters=k)
        # sliced on the host and put back as they are (jnp.asarray would compile a copy per shape)
        return FittedKMeansQuantizer(pca=proj.pca, centroids=jax.device_put(np.asarray(res.centroids)[:k]),
                                     train_labels=jax.device_put(np.asarray(res.labels)[:n]), normalize=self.normalize)


QUANTIZERS: dict[str, Callable[..., Quantizer]] = {"kmeans": KMeansQuantizer}  # name -> factory(num_bins, **kw)

# Quantizers shipped in other modules, which register themselves when imported; looked up
# lazily so ``import jaxmetrics.mauve`` stays light (they pull in Flax and optax).
_LAZY_MODULES = {"drmm": "jaxmetrics.mauve.quantize.drmm", "lattice": "jaxmetrics.mauve.quantize.lattice"}


def register_quantizer(name: str, factory: Callable[..., Quantizer]) -> None:
    """Register ``factory(num_bins, **kwargs) -> Quantizer`` under ``name`` (overwrites).

    Examples:
      >>> from jaxmetrics.mauve.quantize.quantizers import register_quantizer, get_quantizer, KMeansQuantizer, QUANTIZERS
      >>> register_quantizer("kmeans-3redo", lambda k, **kw: KMeansQuantizer(k, num_redo=3))
      >>> get_quantizer("kmeans-3redo", 10).num_redo
      3
      >>> _ = QUANTIZERS.pop("kmeans-3redo")
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name: expected a non-empty string, got {name!r}")
    if not callable(factory):
        raise TypeError(f"factory: expected a callable factory(num_bins, **kwargs), got {type(factory).__name__}")
    QUANTIZERS[name] = factory


def available_quantizers() -> list[str]:
    """Names :func:`get_quantizer` accepts: the registered ones and those whose module registers
    them on first use (``'drmm'``, ``'lattice'``), sorted; nothing is imported.

    Examples:
      >>> from jaxmetrics.mauve.quantize.quantizers import available_quantizers
      >>> available_quantizers()
      ['drmm', 'kmeans', 'lattice']
    """
    return sorted(set(QUANTIZERS) | set(_LAZY_MODULES))


def get_quantizer(quantizer: str | Quantizer, num_buckets: int, **kwargs: Any) -> Quantizer:
    """Resolve ``quantizer`` (a registered name or an instance) to a :class:`Quantizer`.

    Examples:
      >>> from jaxmetrics.mauve.quantize.quantizers import get_quantizer
      >>> get_quantizer("kmeans", 8).num_bins
      8
    """
    if isinstance(quantizer, str):
        if quantizer not in QUANTIZERS and quantizer in _LAZY_MODULES:
            importlib.import_module(_LAZY_MODULES[quantizer])
        if quantizer not in QUANTIZERS:
            raise ValueError(f"quantizer: unknown name {quantizer!r}; registered: {sorted(QUANTIZERS)}")
        return QUANTIZERS[quantizer](num_buckets, **kwargs)
    if not callable(getattr(quantizer, "fit", None)):
        raise TypeError(f"quantizer: expected a name or an object with fit(features, key=...), got {type(quantizer).__name__}")
    return quantizer


def _quantizer_settings(quantizer: Any) -> dict[str, Any]:
    """The signature fields of an (unfitted) quantizer (:mod:`jaxmetrics.results`):
    ``quantizer`` (its class name without ``Quantizer``, lower case: ``'kmeans'``, ``'drmm'``,
    ``'lattice'``) and each scalar setting as ``<name>_<field>``; ``num_bins`` is left out (the
    caller records the ``num_buckets`` it was given, ``'auto'`` or a number)."""
    name = type(quantizer).__name__
    name = (name[: -len("Quantizer")] if name.endswith("Quantizer") and name != "Quantizer" else name).lower()
    out: dict[str, Any] = {"quantizer": name}
    if dataclasses.is_dataclass(quantizer):
        for f in dataclasses.fields(quantizer):
            v = getattr(quantizer, f.name)
            if f.name == "num_bins" or not f.init:
                continue
            ok = v is None or isinstance(v, (bool, int, float, str)) or (
                isinstance(v, tuple) and all(isinstance(x, (bool, int, float, str)) for x in v))
            out[f"{name}_{f.name}"] = v if ok else type(v).__name__
    return out


def bin_counts(fitted: FittedQuantizer, features: Any) -> jax.Array:
    """Counts ``[num_bins]`` (int32) of the rows ``[n, d]`` in each bin of ``fitted``.

    ``counts_j = sum_i 1[assign(x_i) = j]``.

    Examples:
      >>> from jaxmetrics.mauve.quantize.quantizers import bin_counts, KMeansQuantizer
      >>> import jax, numpy as np
      >>> x = np.random.default_rng(0).normal(size=(40, 6)).astype("float32")
      >>> fitted = KMeansQuantizer(4).fit(x, key=jax.random.key(1))
      >>> int(bin_counts(fitted, x).sum())
      40
    """
    return _counts(jnp.asarray(fitted.assign(features)), int(fitted.num_bins))


def soft_bin_counts(fitted: FittedQuantizer, features: Any, temperature: float) -> jax.Array:
    """Soft counts ``[num_bins]``: ``sum_i soft_assign(x_i, T)`` (differentiable in the features).

    Examples:
      >>> from jaxmetrics.mauve.quantize.quantizers import soft_bin_counts, KMeansQuantizer
      >>> import jax, numpy as np
      >>> x = np.random.default_rng(0).normal(size=(40, 6)).astype("float32")
      >>> fitted = KMeansQuantizer(4).fit(x, key=jax.random.key(1))
      >>> round(float(soft_bin_counts(fitted, x, 0.5).sum()), 3)
      40.0
    """
    return jnp.sum(fitted.soft_assign(features, temperature), axis=0)
