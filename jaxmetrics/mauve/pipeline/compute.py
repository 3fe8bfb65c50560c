"""``compute_mauve``: mauve-text's API on top of the JAX quantizer and histogram stage.

Pipeline (as mauve-text 0.4.0): features of P (human text) and Q (model text) -- given, or
computed from token ids or text by :mod:`jaxmetrics.models` -- are stacked as ``[Q; P]``; a
quantizer is fitted on them (default: L2-normalise, PCA to ``kmeans_explained_var``, k-means with
``kmeans_num_redo`` restarts); the bin counts of Q and P give the plain histograms (``mauve``,
``frontier_integral``) and the Krichevsky-Trofimov smoothed ones (``mauve_star``,
``frontier_integral_star``) through :func:`~jaxmetrics.mauve.mauve_from_histograms`. The
histogram stage always runs in float64.

Seeds: ``seed`` plays mauve-text's role (PCA subsample from ``fold_in(key(seed), 5)``, k-means from
``fold_in(key(seed), 2)``), but the random streams are JAX's, so the clusters differ from faiss's;
averages over seeds agree (see tests). :func:`compute_mauve_seeds` runs several k-means seeds in
one compiled call; :func:`fit_quantizer` / :func:`mauve_shared_codebook` give comparable scores for
several pairs by quantizing them all with one codebook.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics.mauve.engine import (
    KMEANS_SALT,
    fit_labels,
    kmeans_labels,
    mauve_scores,
    project_bucketed,
    split_counts,
)
from jaxmetrics.mauve.frontier.estimate import estimate_seeds, is_quantized, seeds_note
from jaxmetrics.mauve.frontier.results import HistogramDetails, MauveOutput, MauveResult, MauveSeedsOutput, RatioDetails
from jaxmetrics.mauve.frontier.settings import MAUVE_TEXT_NAMES, FrontierSettings
from jaxmetrics.mauve.pipeline.inputs import SET_NAMES, default_pooling, device_context, get_features, split_sets
from jaxmetrics.mauve.pipeline.interval import BOOTSTRAP_SALT, seed_mean_intervals
from jaxmetrics.mauve.quantize.quantizers import FittedQuantizer, KMeansQuantizer, Quantizer, get_quantizer
from jaxmetrics.mauve.sizes import auto_num_buckets, bucket_size, resolve_num_buckets
from jaxmetrics.numerics import mean_std
from jaxmetrics.results import extend_signature

__all__ = [
    "MauveOutput",
    "MauveSeedsOutput",
    "compute_mauve",
    "compute_mauve_seeds",
    "auto_num_buckets",
    "resolve_num_buckets",
]


def _signature(inputs, quant, *, seeds, num_buckets, frontier: FrontierSettings) -> str:
    """The signature of a MAUVE result (see :class:`MauveOutput`); ``divergence`` is named when not KL."""
    from jaxmetrics.mauve.quantize.quantizers import _quantizer_settings
    from jaxmetrics.results import make_signature

    settings = dict(seeds=tuple(seeds), num_buckets=num_buckets, **frontier.signature_fields(),
                    **_quantizer_settings(quant))
    if inputs.featurizer is not None:
        settings.update(layer=-1, pooling=inputs.pooling, max_length=inputs.max_length, dtype=inputs.dtype)
    return make_signature("mauve", model=inputs.featurizer, **settings)


def _estimates(inputs, seeds, *, estimator, frontier: FrontierSettings):
    """The density-ratio path: one :class:`~jaxmetrics.mauve.MauveOutput` per seed."""
    extra = {}
    if inputs.featurizer is not None:
        extra = dict(layer=-1, max_length=inputs.max_length, dtype=inputs.dtype)
    return estimate_seeds(inputs.p_features, inputs.q_features, seeds=seeds, estimator=estimator,
                          frontier=frontier, model=inputs.featurizer, pooling=inputs.pooling, **extra)


def _check_common(*, kmeans_explained_var, kmeans_num_redo, kmeans_max_iter, pca_max_data) -> KMeansQuantizer:
    """compute_mauve's k-means settings, checked (naming its arguments), as ``KMeansQuantizer('auto', ...)``."""
    return KMeansQuantizer("auto", explained_var=kmeans_explained_var, num_redo=kmeans_num_redo,
                           max_iter=kmeans_max_iter, pca_max_data=pca_max_data)


def _make_quantizer(quantizer: Any, k: int, **kmeans: Any) -> Quantizer:
    """The quantizer with ``k`` bins: ``'kmeans'`` (with ``kmeans`` settings), a
    ``KMeansQuantizer('auto', ...)`` given ``k``, or any other name or instance as
    :func:`~jaxmetrics.mauve.quantize.quantizers.get_quantizer` resolves it."""
    if isinstance(quantizer, str) and quantizer == "kmeans":
        return KMeansQuantizer(k, **kmeans)
    if isinstance(quantizer, KMeansQuantizer) and isinstance(quantizer.num_bins, str):
        return dataclasses.replace(quantizer, num_bins=k)
    return get_quantizer(quantizer, k)


def _output(scores: MauveResult, pooling: str | None = None, signature: str = "",
            divergence: str = "kl") -> MauveOutput:
    """The :class:`MauveOutput` of one pair's :func:`~jaxmetrics.mauve.engine.mauve_scores` (unbatched)."""
    d = scores.details
    details = HistogramDetails(p_hist=d.p_hist, q_hist=d.q_hist, p_counts=d.p_counts, q_counts=d.q_counts,
                               mauve_star=float(d.mauve_star), frontier_integral_star=float(d.frontier_integral_star),
                               num_buckets=int(d.num_buckets))
    return MauveOutput(mauve=float(scores.mauve), frontier_integral=float(scores.frontier_integral),
                       divergence_curve=scores.divergence_curve, details=details, pooling=pooling,
                       signature=signature, divergence=divergence)


def _check_estimator(estimator: Any, **quantized_only: Any) -> bool:
    """Whether ``estimator`` is the histogram pipeline; with a density-ratio estimator, a
    ``quantized_only`` setting off its default (``{name: (value, default)}``) is an error."""
    quantized = is_quantized(estimator)
    if not quantized:
        for name, (value, default) in quantized_only.items():
            if not (value is default or (isinstance(value, str) and value == default)):
                raise ValueError(f"{name}: applies to estimator='quantized' only, not to estimator={estimator!r} "
                                 "(a density-ratio estimator takes its settings as an instance)")
    return quantized


def _prepare(sides, *, num_buckets, quantizer, quantized, model, max_length, batch_size, pooling, verbose=False,
             dtype=None, featurize_model_name="gpt2-large", names=None, max_length_name="max_text_length"):
    """Features and quantizer of compute_mauve / compute_mauve_seeds: ``(inputs, quantizer)``; the
    quantizer is ``None`` for a density-ratio estimator. ``sides`` are the six inputs of
    :func:`~jaxmetrics.mauve.pipeline.inputs.get_features`."""
    pooling = default_pooling(pooling, model)
    if isinstance(num_buckets, str) and num_buckets != "auto":
        raise ValueError(f"num_buckets: expected 'auto' or an integer, got {num_buckets!r}")
    inputs = get_features(*sides, model=model, featurize_model_name=featurize_model_name, max_length=max_length,
                          batch_size=batch_size, verbose=verbose, pooling=pooling, num_buckets=num_buckets,
                          dtype=dtype, names=names, max_length_name=max_length_name)
    if not quantized:
        return inputs, None
    k = resolve_num_buckets(num_buckets, (inputs.p_features.shape[0], inputs.q_features.shape[0]),
                            (inputs.p_source, inputs.q_source))
    return inputs, _make_quantizer(quantizer, k)


# --------------------------------------------------------------------------- public API


def _kmeans_labels_of_seeds(quant: KMeansQuantizer, q: np.ndarray, p: np.ndarray, seeds: Sequence[int]) -> np.ndarray:
    """Labels ``[S, n_q + n_p]`` of the rows ``[Q; P]`` (host arrays) under ``quant`` for each seed:
    :meth:`KMeansQuantizer.fit` with ``key(seed)`` (rows and clusters padded to bucketed sizes), the
    projection fitted once (with ``seeds[0]``'s key) and streamed from ``q`` and ``p`` without a
    stacked copy."""
    n = q.shape[0] + p.shape[0]
    if quant.num_bins > n:
        raise ValueError(f"num_buckets: {quant.num_bins} bins for only {n} points")
    proj, z_mask = project_bucketed((q, p), key=jax.random.key(seeds[0]), explained_var=quant.explained_var,
                                    pca_max_data=quant.pca_max_data, normalize=quant.normalize)
    keys = jnp.stack([jax.random.fold_in(jax.random.key(s), KMEANS_SALT) for s in seeds])
    labels = kmeans_labels(proj.z, keys, num_clusters=bucket_size(quant.num_bins), num_redo=quant.num_redo,
                           max_iter=quant.max_iter, max_points_per_centroid=quant.max_points_per_centroid,
                           z_mask=z_mask, num_active_clusters=quant.num_bins)
    return np.asarray(labels)[:, :n]


def compute_mauve(
    p_features: Any = None,
    q_features: Any = None,
    p_tokens: Sequence[Any] | None = None,
    q_tokens: Sequence[Any] | None = None,
    p_text: Sequence[str] | None = None,
    q_text: Sequence[str] | None = None,
    num_buckets: int | str = "auto",
    pca_max_data: int = -1,
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    featurize_model_name: str = "gpt2-large",
    device_id: int = -1,
    max_text_length: int = 1024,
    divergence_curve_discretization_size: int = 25,
    mauve_scaling_factor: float = 5,
    verbose: bool = False,
    seed: int = 25,
    batch_size: int = 16,
    use_float64: bool = False,
    *,
    model: Any = None,
    quantizer: str | Quantizer = "kmeans",
    mesh: Any = None,
    scoring: str = "mauve-text",
    pooling: str | None = None,
    dtype: Any = None,
    estimator: Any = "quantized",
    divergence: str = "kl",
) -> MauveOutput:
    """MAUVE between P (human text) and Q (model text), with mauve-text 0.4.0's API.

    ``MAUVE(P, Q)`` is the area under the divergence curve
    ``{(exp(-c KL(Q || R_w)), exp(-c KL(P || R_w))) : R_w = w P + (1 - w) Q}`` of the
    quantized distributions (``c = mauve_scaling_factor``); see
    :func:`~jaxmetrics.mauve.mauve_from_histograms`. Quantization: stack ``[Q; P]``, L2-normalise,
    PCA to ``kmeans_explained_var``, k-means into ``num_buckets`` clusters (``'auto'``:
    ``max(2, round(min(n_p, n_q) / 10))``), best of ``kmeans_num_redo`` restarts of at most
    ``kmeans_max_iter`` Lloyd steps.

    The signature is mauve-text's, positional order included (``p`` is the human text / the
    references, ``q`` the model text / the candidates); the jaxmetrics-only arguments come after
    it and are keyword-only.

    Args:
      p_features, q_features: ``[n_p, d]``, ``[n_q, d]`` finite features. Each side is given by
        its features, else its tokens, else its text (mauve-text's precedence).
      p_tokens, q_tokens: lists of token-id sequences, each a 1-D sequence or a tensor of shape
        ``(1, length)`` (mauve-text's ``torch.LongTensor`` s are accepted), featurized with
        :func:`jaxmetrics.models.featurize_tokens`. As in mauve-text, ``max_text_length`` does
        not apply to tokens: every sequence is used whole, except that sequences longer than the
        model's position embeddings are cut to them, with a warning (mauve-text would fail).
      p_text, q_text: lists of strings, featurized by the encoding engine
        (:func:`jaxmetrics.models.encode`) with ``pooling`` -- by default, with
        ``featurize_model_name``, mauve-text's feature: the final hidden state at the last token,
        for every model (an encoder's last token is ``[SEP]`` / ``</s>``, as in mauve-text, which
        accepts ``bert`` models); with ``model=``, the library's pooling table (see ``pooling``);
        truncated to ``max_text_length`` tokens; empty strings are dropped with a warning.
      num_buckets: ``'auto'`` or the number of clusters ``k`` (at least 2, and at most the
        number of points of each side; see :mod:`jaxmetrics.mauve.sizes`: below that a
        ``ValueError`` names the side, and a ``UserWarning`` says when the smaller side has fewer
        than 7.5 points per bucket).
      pca_max_data: -1 fits the PCA on all rows, otherwise on this many random rows: at least
        ``min(n_p + n_q, d + 1)`` (the feature dimension + 1, or all rows), checked before the
        quantization (from text: once featurized). A smaller subsample spans fewer directions
        than the features have, and keeps them for lack of others: at 1 row every text projects
        to one point and MAUVE was 1 for any texts (:func:`jaxmetrics._validation.check_pca_max_data`).
      kmeans_explained_var: PCA keeps the first components reaching this fraction of the variance.
      kmeans_num_redo: k-means restarts (the best objective is kept); run in parallel.
      kmeans_max_iter: maximum Lloyd iterations per restart.
      featurize_model_name: featurizer (hub id or local checkpoint directory) used for tokens and
        text when ``model`` is not given; featurized as mauve-text does (the last token, whatever
        the model), unless ``pooling`` says otherwise.
      device_id: ``>= 0`` runs on that accelerator (``-1``: JAX's default device).
      max_text_length: truncation length in tokens of ``p_text`` / ``q_text`` (mauve-text's
        1024); capped silently at the model's positions when it has fewer.
      divergence_curve_discretization_size: number of interior mixture weights ``m >= 3`` (with
        1 or 2 the curve is its two end segments; :class:`~jaxmetrics.mauve.FrontierSettings`).
      mauve_scaling_factor: ``c >= 1`` (below 1 two texts with nothing in common score above 1/2;
        :class:`~jaxmetrics.mauve.FrontierSettings`).
      verbose: print timings.
      seed: integer seed; the keys are derived from ``jax.random.key(seed)``.
      batch_size: texts per forward pass of the featurizer (texts are sorted by length first).
        The one default that differs from mauve-text's (1): it changes only the speed, not
        the features.
      use_float64: accepted for mauve-text compatibility (its featurizer precision; here the
        featurizer runs in ``dtype``, clustering is float32 as in mauve-text and the histogram
        stage is always float64).
      model: keyword-only; a loaded model (:func:`jaxmetrics.models.load_model`), a hub id or a
        local checkpoint directory, resolved by :func:`jaxmetrics.models.resolve_model`. When
        given it is used instead of ``featurize_model_name``, and pooled by the library's table
        (``pooling``), as ``jaxmetrics mauve --model`` pools it.
      quantizer: keyword-only; ``'kmeans'`` (default), another registered name, or a
        :class:`~jaxmetrics.mauve.quantize.quantizers.Quantizer` instance (its own settings are used).
      mesh: keyword-only; optional :class:`jax.sharding.Mesh` (``jaxmetrics.sharding.make_mesh()``):
        the stacked feature rows are sharded over it for the PCA and k-means (XLA inserts the
        collectives); needs ``n_p + n_q`` to be a multiple of the device count, else it runs
        replicated with a warning (padding rows would change the clustering).
      scoring: keyword-only; how the divergence curve is scored: ``'mauve-text'`` (default,
        mauve-text >= 0.2: uniform mixture-weight grid) or ``'paper'`` (the NeurIPS 2021 paper's
        code, ``krishnap25/mauve-experiments``: angular grid ``cos(linspace(1e-6, pi/2 - 1e-6, m))``,
        unsymmetrised ``sklearn.metrics.auc``), to compare with numbers published with that code.
        It applies to ``mauve`` and ``mauve_star`` (and the curve); the frontier integrals do not
        depend on it. See :func:`~jaxmetrics.mauve.mauve_from_histograms`.
      pooling: keyword-only; how text and token ids become one vector each (the pooling table of
        :mod:`jaxmetrics.models.pooling`): ``None`` (default) depends on how the featurizer was
        named -- ``featurize_model_name`` (mauve-text's argument) keeps mauve-text's
        featurization, ``'last'``, for every model; ``model=`` (the library's argument) follows the
        library's table, ``'auto'``: the last token of a decoder (GPT-2, Llama), the mean over
        the tokens of a sentence encoder (BERT, RoBERTa, all-MiniLM-L6-v2) -- the same vector
        ``jaxmetrics mauve --model`` and every other MAUVE door use
        (:func:`~jaxmetrics.mauve.pipeline.inputs.default_pooling`). Or name one: ``'last'``,
        ``'mean'`` (masked mean over the tokens, the sentence-transformers convention),
        ``'cls'``, ``'auto'``. The result records the pooling used (``out.pooling`` and its
        signature; ``None`` for given features). The choice changes the number: see
        ``docs/mauve.md``.
      dtype: keyword-only; the featurizer's compute dtype, ``'float32'`` or ``'bfloat16'``;
        ``None``: float32 for a path, a loaded model's own
        (:func:`~jaxmetrics.models.resolve_model`). Recorded in the signature.
      estimator: keyword-only; how the divergence frontier is estimated (the MAUVE family,
        ``docs/mauve.md``): ``'quantized'`` (default: the histograms of ``quantizer``, mauve-text's
        numbers), or a density-ratio estimator of :mod:`jaxmetrics.mauve.frontier.estimators` by name
        (``'knn'``, ``'classifier'``, ``'gaussian'``) or as an instance with its settings; key
        ``jax.random.key(seed)``. ``quantizer``, ``num_buckets``, ``mesh`` and the k-means
        settings apply to ``'quantized'`` only. When a density-ratio estimator cannot tell the
        samples apart (its out-of-sample ratios do not rank P above Q at 5 %,
        :func:`~jaxmetrics.mauve.frontier.estimate.separation_test`), the result says so:
        ``out.indistinguishable`` is true, ``out.note`` says why and from what size a difference
        of the observed size would show, and an ``IndistinguishableWarning`` is issued.
      divergence: keyword-only; the f-divergence whose frontier ``mauve`` (and ``mauve_star``)
        summarise: ``'kl'`` (default, MAUVE as published), ``'chi2'``, ``'hellinger'``, ``'tv'``,
        ``'js'`` (:data:`~jaxmetrics.mauve.frontier.divergences.DIVERGENCES`); the frontier integrals are
        KL-based whatever it is.

    Returns:
      :class:`MauveOutput` with ``mauve``, ``frontier_integral``, ``divergence_curve [m + 2, 2]``, the
      ``pooling`` used and ``details``: a :class:`HistogramDetails` (``'quantized'``: ``mauve_star``,
      ``frontier_integral_star``, ``p_hist [k]``, ``q_hist [k]``, the bin counts, ``num_buckets``, read
      as ``out.p_hist`` etc., mauve-text's names) or a :class:`RatioDetails` (a density-ratio
      estimator: ``out.p_log_ratio``, ``out.q_log_ratio``).

    Examples:
      >>> from jaxmetrics.mauve.pipeline.compute import compute_mauve
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> p = rng.normal(size=(200, 16)).astype("float32")
      >>> compute_mauve(p_features=p, q_features=p)
      MauveOutput(mauve=1, frontier_integral=0, divergence_curve=f64[27,2], mauve_star=1, frontier_integral_star=0, p_hist=f64[20], q_hist=f64[20], p_counts=i32[20], q_counts=i32[20], num_buckets=20, pooling=None)
    """
    V.check_int(seed, "seed")
    frontier = FrontierSettings.resolve(None, names=MAUVE_TEXT_NAMES, none_is_default=False,
                                        scaling=mauve_scaling_factor, num_points=divergence_curve_discretization_size,
                                        divergence=divergence, scoring=scoring)
    quantized = _check_estimator(estimator, quantizer=(quantizer, "kmeans"), num_buckets=(num_buckets, "auto"),
                                 mesh=(mesh, None))
    kmeans = _check_common(kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
                           kmeans_max_iter=kmeans_max_iter, pca_max_data=pca_max_data)
    if isinstance(quantizer, str) and quantizer == "kmeans":
        quantizer = kmeans
    with device_context(device_id):
        t0 = time.perf_counter()
        inputs, quant = _prepare(
            (p_features, q_features, p_tokens, q_tokens, p_text, q_text), num_buckets=num_buckets,
            quantizer=quantizer, quantized=quantized, featurize_model_name=featurize_model_name,
            max_length=max_text_length, batch_size=batch_size, model=model, pooling=pooling, verbose=verbose,
            dtype=dtype)
        p, q = inputs.p_features, inputs.q_features
        if quant is None:
            (est,) = _estimates(inputs, (seed,), estimator=estimator, frontier=frontier)
            return est
        t1 = time.perf_counter()
        if mesh is None and isinstance(quant, KMeansQuantizer):  # host rows: no stacked copy
            labels, nb = _kmeans_labels_of_seeds(quant, q, p, (seed,))[0], quant.num_bins
        else:
            rows = np.concatenate([q, p], axis=0)
            if mesh is not None:
                from jaxmetrics.sharding import place_rows

                rows = place_rows(rows, mesh, name="p_features")
            fit = fit_labels(quant, rows, key=jax.random.key(seed))
            labels, nb = fit.labels, int(fit.fitted.num_bins)
        q_counts, p_counts = split_counts(labels, (q.shape[0], p.shape[0]), nb)
        t2 = time.perf_counter()
        scores = mauve_scores(p_counts, q_counts, divergence=frontier.divergence, **frontier._kwargs())
        out = _output(scores, inputs.pooling,
                      _signature(inputs, quant, seeds=(seed,), num_buckets=num_buckets, frontier=frontier),
                      frontier.divergence)
        if verbose:
            print(f"features {t1 - t0:.2f} s, quantization {t2 - t1:.2f} s, "
                  f"histogram stage {time.perf_counter() - t2:.2f} s; k = {nb}, mauve = {out.mauve:.4f}", file=sys.stderr)
        return out


def compute_mauve_seeds(
    *,
    references: Any,
    candidates: Any,
    seeds: Sequence[int] = (25, 26, 27, 28, 29),
    num_buckets: int | str = "auto",
    quantizer: str | Quantizer = "kmeans",
    frontier: FrontierSettings | None = None,
    scaling: float | None = None,
    num_points: int | None = None,
    estimator: Any = "quantized",
    model: Any = None,
    pooling: str | None = None,
    dtype: Any = None,
    max_length: int = 1024,
    batch_size: int = 16,
    confidence: float | None = None,
    num_resamples: int = 1000,
) -> MauveSeedsOutput:
    """MAUVE over several k-means seeds: mean, sample standard deviation and per-seed values.

    Seed variance of MAUVE (std ~0.005-0.01) is as large as real model gaps, so report
    ``mauve_mean +- mauve_std``. The features are computed once. With the k-means quantizer the
    normalisation and PCA are fitted once (with ``seeds[0]``) and the k-means runs for all seeds
    are one compiled call, seed after seed (memory of one k-means: ``N * k`` floats per tile pass); other
    quantizers are fitted once per seed. Each seed ``s`` gives the value of
    ``compute_mauve(..., seed=s)`` (with ``pca_max_data=-1``; a PCA subsample is drawn once,
    from ``seeds[0]``).

    With ``confidence`` the result also holds intervals of ``mauve_mean`` and
    ``frontier_integral_mean`` for the estimator's value at this sample size: a bootstrap over
    each side's rows (every resample scored from its bin counts under every seed's clusters, in
    one vmapped float64 computation; key ``fold_in(jax.random.key(seeds[0]), BOOTSTRAP_SALT)``)
    combined with the seed spread. See :mod:`jaxmetrics.mauve.pipeline.interval` for the construction,
    what it covers and its coverage on real text (91 % for a nominal 95 % with three seeds);
    with one seed it misses the quantization spread and is too narrow.

    Args:
      references: keyword-only; P, the human text: features ``[n_p, d]``, token-id lists or a list
        of texts (``p_features`` / ``p_tokens`` / ``p_text`` of :func:`compute_mauve`).
      candidates: keyword-only; Q, the model text, in any of the same three forms.
      seeds: the integer seeds (keys ``jax.random.key(s)``).
      num_buckets: ``'auto'`` or ``k``, as in :func:`compute_mauve`.
      quantizer: ``'kmeans'`` (mauve-text's settings), another registered name, or a quantizer
        instance; the k-means settings of :func:`compute_mauve` are
        ``KMeansQuantizer('auto', explained_var=..., num_redo=..., max_iter=..., pca_max_data=...)``
        (``'auto'``: ``k`` from ``num_buckets``).
      frontier: a :class:`~jaxmetrics.mauve.FrontierSettings` (``scaling``, ``num_points``,
        ``divergence``, ``scoring``), or ``scaling`` (c, default 5) and ``num_points`` (m, default 25)
        as keywords.
      estimator, model, pooling, dtype: as in :func:`compute_mauve` (``pooling=None``: the
        library's table for ``model=``, last token for a decoder and mean for a sentence encoder;
        without ``model``, mauve-text's default featurizer, gpt2-large, and its last token). With a density-ratio ``estimator`` each seed is one
        :func:`~jaxmetrics.mauve.estimate_mauve` with key ``jax.random.key(s)`` (the k-NN estimator is
        deterministic: its spread is 0), and ``confidence`` is not available.
      max_length, batch_size: compute_mauve's ``max_text_length`` and ``batch_size``.
      confidence: ``None`` (no interval) or the intervals' nominal coverage in ``[0.5, 1)``.
      num_resamples: bootstrap resamples with ``confidence``, at least ``(1 + confidence) / (1 - confidence)`` (39 at 0.95; fewer make the end points the extreme resamples: :func:`jaxmetrics._validation.check_resampling`).

    Returns:
      :class:`MauveSeedsOutput`: ``mauve_mean``, ``mauve_std`` (``ddof=1``) and the same for
      ``frontier_integral`` (and, under histograms, ``mauve_star``); per-seed values ``[S]``, curves
      ``[S, m + 2, 2]`` and ``details`` per seed (histograms ``[S, k]``, or log ratios).

    Examples:
      >>> from jaxmetrics.mauve.pipeline.compute import compute_mauve_seeds
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> p, q = rng.normal(size=(150, 8)), rng.normal(size=(150, 8)) + 1.0
      >>> out = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2, 3))
      >>> out  # doctest: +ELLIPSIS
      MauveSeedsOutput(mauve_mean=..., mauve_std=..., ..., divergence_curve=f64[3,27,2], details=HistogramDetails(mauve_star=f64[3], ..., num_buckets=15), seeds=(1, 2, 3), pooling=None, mauve_interval=None, frontier_integral_interval=None, sampling_standard_error=None)
      >>> out.mauve.shape, 0 < out.mauve_mean < 1, out.mauve_std >= 0
      ((3,), True, True)
      >>> ci = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2, 3), confidence=0.95).mauve_interval
      >>> bool(ci.low < out.mauve_mean < ci.high), ci.method
      (True, 'reflected')
    """
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds: expected a sequence of integers, got {type(seeds).__name__}")
    seeds = tuple(V.check_int(s, "seeds") for s in seeds)
    if not seeds:
        raise ValueError("seeds: at least one seed is needed")
    if confidence is not None:
        V.check_resampling(num_resamples, confidence)
    frontier = FrontierSettings.resolve(frontier, scaling=scaling, num_points=num_points)
    quantized = _check_estimator(estimator, quantizer=(quantizer, "kmeans"), num_buckets=(num_buckets, "auto"))
    if confidence is not None and not quantized:   # refused before any featurization or fit
        raise ValueError(f"confidence: intervals need estimator='quantized', not {estimator!r}")
    if confidence is not None and frontier.divergence != "kl":
        raise ValueError(f"confidence: intervals are for divergence='kl', not {frontier.divergence!r}")
    inputs, quant = _prepare(split_sets(references, candidates), num_buckets=num_buckets, quantizer=quantizer,
                             quantized=quantized, max_length=max_length, batch_size=batch_size, model=model,
                             pooling=pooling, dtype=dtype, names=SET_NAMES, max_length_name="max_length")
    p, q = inputs.p_features, inputs.q_features
    if quant is None:
        ests = _estimates(inputs, seeds, estimator=estimator, frontier=frontier)
        m, fi = (np.asarray([getattr(e, f) for e in ests]) for f in ("mauve", "frontier_integral"))
        (m_mean, m_std), (fi_mean, fi_std) = mean_std(m), mean_std(fi)
        note = seeds_note(ests)  # flagged when the estimator saw no difference at one seed at least
        details = RatioDetails(p_log_ratio=np.stack([e.p_log_ratio for e in ests]),
                               q_log_ratio=np.stack([e.q_log_ratio for e in ests]), estimator=ests[0].estimator,
                               indistinguishable=bool(note), note=note)
        return MauveSeedsOutput(mauve_mean=m_mean, mauve_std=m_std, frontier_integral_mean=fi_mean,
                                frontier_integral_std=fi_std, mauve=m, frontier_integral=fi,
                                divergence_curve=np.stack([e.divergence_curve for e in ests]), details=details,
                                seeds=seeds, pooling=inputs.pooling, signature=ests[0].signature,
                                divergence=ests[0].divergence)
    if isinstance(quant, KMeansQuantizer):  # one projection, the k-means of every seed in one call
        labels = _kmeans_labels_of_seeds(quant, q, p, seeds)
        nb = quant.num_bins
    else:
        stacked = np.concatenate([q, p], axis=0)
        per_seed = [fit_labels(quant, stacked, key=jax.random.key(s)) for s in seeds]
        labels = jnp.stack([r.labels for r in per_seed])
        nb = int(per_seed[-1].fitted.num_bins)
    counts = split_counts(labels, (q.shape[0], p.shape[0]), nb)  # [S, 2, k]
    q_counts, p_counts = counts[:, 0], counts[:, 1]
    sc = mauve_scores(p_counts, q_counts, divergence=frontier.divergence, **frontier._kwargs())
    m_mean, m_std = mean_std(sc.mauve)
    fi_mean, fi_std = mean_std(sc.frontier_integral)
    signature = _signature(inputs, quant, seeds=seeds, num_buckets=num_buckets, frontier=frontier)
    intervals = {}
    if confidence is not None:
        m_ci, fi_ci, sampling_se = seed_mean_intervals(
            labels, (q.shape[0], p.shape[0]), nb, sc.mauve, sc.frontier_integral,
            key=jax.random.fold_in(jax.random.key(seeds[0]), BOOTSTRAP_SALT), num_resamples=num_resamples,
            confidence=confidence, **frontier._kwargs())
        signature = extend_signature(signature, bootstrap="reflected", num_resamples=m_ci.num_resamples,
                                     confidence=m_ci.confidence)
        intervals = dict(mauve_interval=m_ci.replace(signature=signature),
                         frontier_integral_interval=fi_ci.replace(signature=signature),
                         sampling_standard_error=sampling_se)
    return MauveSeedsOutput(mauve_mean=m_mean, mauve_std=m_std, frontier_integral_mean=fi_mean,
                            frontier_integral_std=fi_std, mauve=sc.mauve, frontier_integral=sc.frontier_integral,
                            divergence_curve=sc.divergence_curve, details=sc.details, seeds=seeds,
                            pooling=inputs.pooling, signature=signature, divergence=frontier.divergence, **intervals)
