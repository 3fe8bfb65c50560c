"""One codebook for several distributions: :func:`fit_quantizer` and :func:`mauve_shared_codebook`.

With a separate codebook per pair (mauve-text, :func:`~jaxmetrics.mauve.compute_mauve`),
``MAUVE(H1, M1)`` and ``MAUVE(H2, M2)`` are not comparable; quantizing every set with one fitted
quantizer makes them so. The stages are the engine's (:mod:`.engine`): fit on all sets stacked,
count each set's rows, score each pair.
"""
from __future__ import annotations

import inspect
from typing import Any, Sequence

import jax
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics.mauve.pipeline.compute import MauveOutput, _check_common, _make_quantizer, _output, resolve_num_buckets
from jaxmetrics.mauve.engine import mauve_scores, split_counts
from jaxmetrics.mauve.frontier.settings import FrontierSettings
from jaxmetrics.mauve.quantize.quantizers import FittedQuantizer, Quantizer, _quantizer_settings
from jaxmetrics.results import make_signature

__all__ = ["fit_quantizer", "mauve_shared_codebook"]


def fit_quantizer(
    feature_sets: Sequence[Any],
    *,
    num_buckets: int | str = "auto",
    quantizer: str | Quantizer = "kmeans",
    seed: int = 25,
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    pca_max_data: int = -1,
) -> FittedQuantizer:
    """Fit one codebook on the concatenation of several feature sets ``[n_i, d]``.

    Histograms of different sets under the same fitted quantizer are comparable, so
    ``MAUVE(H1, M1)`` and ``MAUVE(H2, M2)`` can be ranked against each other (with a separate
    codebook per pair, as in mauve-text, they cannot: a known limitation of mauve-text).
    ``'auto'`` buckets: ``max(2, round(min_i n_i / 10))``.

    Examples:
      >>> from jaxmetrics.mauve import bin_counts, fit_quantizer
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> sets = [rng.normal(size=(100, 8)) + s for s in (0.0, 0.5, 1.0)]
      >>> fitted = fit_quantizer(sets)
      >>> fitted.num_bins, bin_counts(fitted, sets[0]).shape
      (10, (10,))
    """
    if isinstance(feature_sets, np.ndarray) or not isinstance(feature_sets, Sequence) or not feature_sets:
        raise TypeError("feature_sets: expected a non-empty list of [n_i, d] arrays")
    arrays = []
    for i, f in enumerate(feature_sets):
        arrays.append(V.check_features(f, f"feature_sets[{i}]", dim=arrays[0].shape[1] if arrays else None))
    _check_common(kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
                  kmeans_max_iter=kmeans_max_iter, pca_max_data=pca_max_data)
    k = resolve_num_buckets(num_buckets, [a.shape[0] for a in arrays], [f"feature_sets[{i}]" for i in range(len(arrays))])
    quant = _make_quantizer(quantizer, k, explained_var=kmeans_explained_var, num_redo=kmeans_num_redo,
                            max_iter=kmeans_max_iter, pca_max_data=pca_max_data)
    return quant.fit(np.concatenate(arrays, axis=0), key=jax.random.key(V.check_int(seed, "seed")))


def mauve_shared_codebook(
    pairs: Sequence[tuple[Any, Any]],
    *,
    fitted: FittedQuantizer | None = None,
    frontier: FrontierSettings | None = None,
    scaling: float | None = None,
    num_points: int | None = None,
    scoring: str | None = None,
    **fit_kwargs: Any,
) -> list[MauveOutput]:
    """MAUVE of several ``(p_features, q_features)`` pairs under one shared codebook.

    The codebook is ``fitted`` or, by default, :func:`fit_quantizer` on all sets stacked as
    ``[Q_1; P_1; Q_2; P_2; ...]`` (``fit_kwargs`` go to it). Each pair's MAUVE is then computed
    from its own histograms as in :func:`compute_mauve`, under ``frontier`` (a
    :class:`~jaxmetrics.mauve.FrontierSettings`, ``divergence='kl'`` only) or its ``scaling`` (c),
    ``num_points`` (m) and ``scoring`` given as keywords. Each result's ``signature`` names
    ``codebook:shared`` with the fit's seed, ``num_buckets`` as given and the quantizer's settings,
    or ``codebook:given`` with the bins of a ``fitted`` codebook (how it was fitted is not known
    here: extend the signature with it, :func:`jaxmetrics.results.extend_signature`).

    Examples:
      >>> from jaxmetrics.mauve.pipeline.codebook import mauve_shared_codebook
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> h = rng.normal(size=(100, 8))
      >>> outs = mauve_shared_codebook([(h, rng.normal(size=(100, 8))), (h, rng.normal(size=(100, 8)) + 2)])
      >>> outs[0].mauve > outs[1].mauve
      True
    """
    if not isinstance(pairs, Sequence) or not pairs:
        raise TypeError("pairs: expected a non-empty list of (p_features, q_features) pairs")
    frontier = FrontierSettings.resolve(frontier, scaling=scaling, num_points=num_points, scoring=scoring)
    if frontier.divergence != "kl":
        raise ValueError(f"frontier: the shared codebook scores KL MAUVE, not divergence={frontier.divergence!r}")
    sets = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"pairs: item {i} is not a (p_features, q_features) pair")
        p = V.check_features(pair[0], f"pairs[{i}][0]", dim=sets[0].shape[1] if sets else None)
        q = V.check_features(pair[1], f"pairs[{i}][1]", dim=p.shape[1])
        sets += [q, p]
    sizes = [x.shape[0] for x in sets]
    stacked = np.concatenate(sets, axis=0)
    given = fitted is not None
    if fitted is None:
        fitted = fit_quantizer(sets, **fit_kwargs)
        tl = getattr(fitted, "train_labels", None)
        labels = tl if tl is not None and tl.shape[0] == stacked.shape[0] else fitted.assign(stacked)
    else:
        labels = fitted.assign(stacked)
    nb = int(fitted.num_bins)
    counts = split_counts(labels, sizes, nb)  # [Q_1, P_1, Q_2, P_2, ...]
    q_counts, p_counts = counts[0::2], counts[1::2]
    sc = mauve_scores(p_counts, q_counts, **frontier._kwargs())
    sig = _shared_signature(given, frontier, nb, fit_kwargs)
    return [_output(jax.tree.map(lambda a: a[i], sc), signature=sig) for i in range(len(pairs))]


def _shared_signature(given: bool, frontier: FrontierSettings, num_bins: int, fit_kwargs: dict) -> str:
    """The signature of :func:`mauve_shared_codebook`'s results (its docstring)."""
    if given:
        return make_signature("mauve", codebook="given", num_buckets=num_bins, **frontier.signature_fields())
    kw = {name: p.default for name, p in inspect.signature(fit_quantizer).parameters.items()
          if p.default is not inspect.Parameter.empty}
    kw.update(fit_kwargs)
    quant = _make_quantizer(kw["quantizer"], num_bins, explained_var=kw["kmeans_explained_var"],
                            num_redo=kw["kmeans_num_redo"], max_iter=kw["kmeans_max_iter"], pca_max_data=kw["pca_max_data"])
    return make_signature("mauve", codebook="shared", seeds=(kw["seed"],), num_buckets=kw["num_buckets"],
                          **frontier.signature_fields(), **_quantizer_settings(quant))
