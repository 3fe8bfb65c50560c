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
one vmapped call; :func:`fit_quantizer` / :func:`mauve_shared_codebook` give comparable scores for
several pairs by quantizing them all with one codebook.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import time
import warnings
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics.mauve.histograms import _check_scoring, mauve_from_counts, mauve_from_histograms
from jaxmetrics.mauve.clustering import kmeans
from jaxmetrics.mauve.quantizers import (
    FittedQuantizer,
    KMeansQuantizer,
    Quantizer,
    _counts,
    get_quantizer,
)
from jaxmetrics.results import Result, static_field

__all__ = [
    "MauveOutput",
    "MauveSeedsOutput",
    "compute_mauve",
    "compute_mauve_seeds",
    "fit_quantizer",
    "histogram",
    "mauve_shared_codebook",
    "auto_num_buckets",
]


class MauveOutput(Result):
    """Result of :func:`compute_mauve` (and of each pair of :func:`mauve_shared_codebook`).

    The fields of mauve-text's return value, plus the bin counts.

    Attributes:
      mauve: float, the area under the divergence curve of the plain histograms.
      frontier_integral: float, frontier integral of the plain histograms.
      mauve_star: float, MAUVE of the Krichevsky-Trofimov (+1/2) smoothed histograms.
      frontier_integral_star: float, frontier integral of the smoothed histograms.
      p_hist: ``[k]`` float64 unsmoothed histogram of P (human text).
      q_hist: ``[k]`` float64 unsmoothed histogram of Q (model text).
      divergence_curve: ``[m + 2, 2]`` float64 (end points included).
      p_counts: ``[k]`` int bin counts of P (not in mauve-text).
      q_counts: ``[k]`` int bin counts of Q (not in mauve-text).
      num_buckets: ``k`` (static).
    """

    mauve: float
    frontier_integral: float
    mauve_star: float
    frontier_integral_star: float
    p_hist: np.ndarray
    q_hist: np.ndarray
    divergence_curve: np.ndarray
    p_counts: np.ndarray
    q_counts: np.ndarray
    num_buckets: int = static_field()


class MauveSeedsOutput(Result):
    """Result of :func:`compute_mauve_seeds`: mean and spread over seeds, and per-seed values.

    Attributes:
      mauve_mean: float, mean of ``mauve`` over the seeds.
      mauve_std: float, its sample standard deviation (``ddof=1``; 0 for one seed).
      mauve_star_mean: float, mean of ``mauve_star``.
      mauve_star_std: float, sample standard deviation of ``mauve_star``.
      frontier_integral_mean: float, mean of ``frontier_integral``.
      frontier_integral_std: float, sample standard deviation of ``frontier_integral``.
      mauve: ``[S]`` per-seed MAUVE.
      frontier_integral: ``[S]`` per-seed frontier integral.
      mauve_star: ``[S]`` per-seed smoothed MAUVE.
      frontier_integral_star: ``[S]`` per-seed smoothed frontier integral.
      p_hist: ``[S, k]`` float64 histograms of P.
      q_hist: ``[S, k]`` float64 histograms of Q.
      divergence_curve: ``[S, m + 2, 2]`` float64.
      num_buckets: ``k`` (static).
      seeds: the ``S`` seeds, in order (static).
    """

    mauve_mean: float
    mauve_std: float
    mauve_star_mean: float
    mauve_star_std: float
    frontier_integral_mean: float
    frontier_integral_std: float
    mauve: np.ndarray
    frontier_integral: np.ndarray
    mauve_star: np.ndarray
    frontier_integral_star: np.ndarray
    p_hist: np.ndarray
    q_hist: np.ndarray
    divergence_curve: np.ndarray
    num_buckets: int = static_field()
    seeds: tuple[int, ...] = static_field()


def _mean_std(v: np.ndarray) -> tuple[float, float]:
    v = np.asarray(v, np.float64)
    return float(np.mean(v)), float(np.std(v, ddof=1)) if v.size > 1 else 0.0


def auto_num_buckets(*sizes: int) -> int:
    """mauve-text's ``'auto'`` rule: ``max(2, round(min(sizes) / 10))`` (Python rounding).

    Examples:
      >>> from jaxmetrics.mauve.compute import auto_num_buckets
      >>> auto_num_buckets(1000, 5000), auto_num_buckets(15, 15), auto_num_buckets(25, 30)
      (100, 2, 2)
    """
    return max(2, int(round(min(sizes) / 10)))


# --------------------------------------------------------------------------- inputs


def _featurizers(name: str) -> Any:
    """``jaxmetrics.models`` (imported lazily: the model layer is only needed for text / tokens)."""
    try:
        models = importlib.import_module("jaxmetrics.models")
        for attr in ("resolve_model", "featurize", "featurize_tokens"):
            if not hasattr(models, attr):
                raise ImportError(f"jaxmetrics.models has no {attr}")
    except ImportError as e:
        raise ImportError(
            f"{name}: featurizing text or token ids needs jaxmetrics.models, which could not be "
            f"imported ({e}); pass p_features/q_features instead"
        ) from e
    return models


def _token_lists(tokens: Any, name: str) -> list[np.ndarray]:
    """mauve-text's ``p_tokens``: a list of id tensors of shape ``(1, length)`` or ``(length,)``."""
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__iter__"):
        raise TypeError(f"{name}: expected a list of token-id sequences, got {type(tokens).__name__}")
    seqs = []
    for i, t in enumerate(tokens):
        if type(t).__module__.startswith("torch"):  # torch.LongTensor, as mauve-text takes
            t = t.detach().cpu().numpy()
        a = np.asarray(t)
        if a.ndim == 2 and a.shape[0] == 1:
            a = a[0]
        if a.ndim != 1:
            raise ValueError(f"{name}: item {i} has shape {a.shape}; expected (length,) or (1, length)")
        if a.size == 0:
            raise ValueError(f"{name}: item {i} is empty")
        if not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"{name}: item {i} has dtype {a.dtype}, expected integer token ids")
        seqs.append(a)
    if not seqs:
        raise ValueError(f"{name}: no sequences (the list is empty)")
    return seqs


def _features_from_tokens(tokens: Any, name: str, models: Any, lm: Any, batch_size: int) -> np.ndarray:
    seqs = _token_lists(tokens, name)
    longest = max(a.shape[0] for a in seqs)
    limit = getattr(lm, "max_positions", None)
    if limit is not None and longest > limit:
        n_long = sum(a.shape[0] > limit for a in seqs)
        warnings.warn(f"{name}: {n_long} sequence(s) longer than the model's {limit} positions are "
                      f"truncated to their first {limit} tokens", stacklevel=4)
        longest = limit
    try:
        feats = models.featurize_tokens(seqs, model=lm, max_length=longest, batch_size=batch_size)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{name}: {e}") from e
    return np.asarray(feats)


def _features_from_text(texts: Any, name: str, models: Any, lm: Any, max_length: int, batch_size: int) -> np.ndarray:
    raw = list(texts) if not isinstance(texts, str) and texts is not None else texts
    kept = V.check_texts(raw, name, drop_empty=True)
    dropped = len(raw) - len(kept)
    if dropped:
        warnings.warn(f"{name}: dropped {dropped} empty string(s)", stacklevel=4)
    # encoders are mean-pooled, decoders keep mauve-text's last token (as `jaxmetrics mauve --pooling auto`)
    pool = models.featurize if getattr(lm, "is_causal", True) else models.sentence_embeddings
    limit = getattr(lm, "max_positions", None)
    if limit is not None and max_length > limit:  # mauve-text's 1024 on a shorter model: cap silently
        max_length = int(limit)
    return np.asarray(pool(kept, model=lm, max_length=max_length, batch_size=batch_size))


def _get_features(
    p_features: Any, q_features: Any, p_tokens: Any, q_tokens: Any, p_text: Any, q_text: Any, *, model: Any,
    featurize_model_name: str, max_length: int, batch_size: int, verbose: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Features of P and Q: given features win over token ids, which win over text (mauve-text's order)."""
    sides = {}
    for side, feats, toks, text in (("p", p_features, p_tokens, p_text), ("q", q_features, q_tokens, q_text)):
        if feats is None and toks is None and text is None:
            raise ValueError(f"{side}_features: supply {side}_features, {side}_tokens or {side}_text")
        sides[side] = (feats, toks, text)
    need = [(side, "tokens" if toks is not None else "text")
            for side, (feats, toks, _) in sides.items() if feats is None]
    models = lm = None
    if need:
        first = f"{need[0][0]}_{need[0][1]}"
        if any(kind == "text" for _, kind in need):
            V.check_int(max_length, "max_text_length", minimum=1)
        V.check_int(batch_size, "batch_size", minimum=1)
        models = _featurizers(first)
        which = model if model is not None else featurize_model_name
        if verbose:
            print(f"loading featurizer {which if isinstance(which, str) else getattr(which, 'name', 'model')}")
        lm = models.resolve_model(which)
    out = []
    for side in ("p", "q"):
        feats, toks, text = sides[side]
        if feats is None and toks is not None:
            feats = _features_from_tokens(toks, f"{side}_tokens", models, lm, batch_size)
        elif feats is None:
            feats = _features_from_text(text, f"{side}_text", models, lm, max_length, batch_size)
        out.append(feats)
    p = V.check_features(out[0], "p_features")
    q = V.check_features(out[1], "q_features", dim=p.shape[1])
    return p, q


def _resolve_num_buckets(num_buckets: Any, sizes: Sequence[int]) -> int:
    if isinstance(num_buckets, str):
        if num_buckets != "auto":
            raise ValueError(f"num_buckets: expected 'auto' or an integer, got {num_buckets!r}")
        k = auto_num_buckets(*sizes)
    else:
        k = V.check_int(num_buckets, "num_buckets", minimum=1)
    total = int(sum(sizes))
    if k > total:
        raise ValueError(f"num_buckets: {k} buckets for only {total} points")
    smallest = min(int(n) for n in sizes)
    if smallest < 2 * k:
        warnings.warn(f"num_buckets: {k} buckets but one side has only {smallest} points (fewer "
                      f"than 2 per bucket); the histograms are too sparse for MAUVE to mean much",
                      UserWarning, stacklevel=3)
    return k


def _device_ctx(device_id: int):
    V.check_int(device_id, "device_id", minimum=-1)
    if device_id < 0:
        return contextlib.nullcontext()
    devs = [d for d in jax.devices() if d.platform != "cpu"]
    if device_id >= len(devs):
        warnings.warn(f"device_id: no accelerator {device_id} (found {len(devs)}); using the default device", stacklevel=3)
        return contextlib.nullcontext()
    return jax.default_device(devs[device_id])


def _check_common(*, kmeans_explained_var, kmeans_num_redo, kmeans_max_iter, pca_max_data, num_points, scaling):
    V.check_open_unit(kmeans_explained_var, "kmeans_explained_var")
    V.check_int(kmeans_num_redo, "kmeans_num_redo", minimum=1)
    V.check_int(kmeans_max_iter, "kmeans_max_iter", minimum=1)
    V.check_int(pca_max_data, "pca_max_data", minimum=-1)
    if pca_max_data == 0:
        raise ValueError("pca_max_data: must be -1 (all rows) or a positive number of rows, got 0")
    V.check_int(num_points, "divergence_curve_discretization_size", minimum=1)
    V.check_positive(scaling, "mauve_scaling_factor")


def _make_quantizer(quantizer: Any, k: int, *, explained_var, num_redo, max_iter, pca_max_data) -> Quantizer:
    if isinstance(quantizer, str) and quantizer == "kmeans":
        return KMeansQuantizer(k, explained_var=explained_var, num_redo=num_redo, max_iter=max_iter,
                               pca_max_data=pca_max_data)
    q = get_quantizer(quantizer, k)
    return q


def _labels_of(fitted: FittedQuantizer, stacked: np.ndarray, *, fitted_on_stacked: bool) -> jax.Array:
    tl = getattr(fitted, "train_labels", None) if fitted_on_stacked else None
    if tl is not None and tl.shape[0] == stacked.shape[0]:
        return tl  # k-means already labelled the fitting rows with its final centroids
    return jnp.asarray(fitted.assign(stacked))


# --------------------------------------------------------------------------- histogram stage


def _scores_from_counts(p_counts: np.ndarray, q_counts: np.ndarray, *, num_points: int, scaling: float,
                        scoring: str = "mauve-text"):
    """Plain and KT-smoothed MAUVE / FI from counts ``[..., k]``, in float64."""
    with jax.enable_x64(True):
        pc = jnp.asarray(np.asarray(p_counts), jnp.float64)
        qc = jnp.asarray(np.asarray(q_counts), jnp.float64)
        p_hist = pc / jnp.sum(pc, axis=-1, keepdims=True)
        q_hist = qc / jnp.sum(qc, axis=-1, keepdims=True)
        plain = mauve_from_histograms(p_hist, q_hist, scaling=scaling, num_points=num_points, scoring=scoring)
        star = mauve_from_counts(pc, qc, pseudocount=0.5, scaling=scaling, num_points=num_points, scoring=scoring)
        return (np.asarray(p_hist), np.asarray(q_hist), np.asarray(plain.divergence_curve),
                np.asarray(plain.mauve), np.asarray(plain.frontier_integral),
                np.asarray(star.mauve), np.asarray(star.frontier_integral))


def _output(p_counts, q_counts, k, num_points, scaling, scoring: str = "mauve-text") -> MauveOutput:
    p_hist, q_hist, curve, m, fi, ms, fis = _scores_from_counts(p_counts, q_counts, num_points=num_points,
                                                                scaling=scaling, scoring=scoring)
    return MauveOutput(mauve=float(m), frontier_integral=float(fi), mauve_star=float(ms),
                       frontier_integral_star=float(fis), p_hist=p_hist, q_hist=q_hist, divergence_curve=curve,
                       p_counts=np.asarray(p_counts), q_counts=np.asarray(q_counts), num_buckets=int(k))


# --------------------------------------------------------------------------- public API


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
      p_text, q_text: lists of strings, featurized by :func:`jaxmetrics.models.featurize` (the
        last token's hidden state, mauve-text's convention) for a decoder, or by
        :func:`jaxmetrics.models.sentence_embeddings` (mean pooling) for an encoder, whose last
        token is ``[SEP]``; truncated to ``max_text_length`` tokens; empty strings are dropped
        with a warning.
      num_buckets: ``'auto'`` or the number of clusters ``k``.
      pca_max_data: -1 fits the PCA on all rows, otherwise on this many random rows.
      kmeans_explained_var: PCA keeps the first components reaching this fraction of the variance.
      kmeans_num_redo: k-means restarts (the best objective is kept); run in parallel.
      kmeans_max_iter: maximum Lloyd iterations per restart.
      featurize_model_name: featurizer (hub id or local checkpoint directory) used for tokens and
        text when ``model`` is not given.
      device_id: ``>= 0`` runs on that accelerator (``-1``: JAX's default device).
      max_text_length: truncation length in tokens of ``p_text`` / ``q_text`` (mauve-text's
        1024); capped silently at the model's positions when it has fewer.
      divergence_curve_discretization_size: number of interior mixture weights ``m``.
      mauve_scaling_factor: ``c`` > 0.
      verbose: print timings.
      seed: integer seed; the keys are derived from ``jax.random.key(seed)``.
      batch_size: texts per forward pass of the featurizer (texts are sorted by length first).
        The one default that differs from mauve-text's (1): it changes only the speed, not
        the features.
      use_float64: accepted for mauve-text compatibility (its featurizer precision; here the
        featurizer runs in the model's ``dtype`` -- pass ``model=load_model(..., dtype=...)`` --,
        clustering is float32 as in mauve-text and the histogram stage is always float64).
      model: keyword-only; a loaded model (:func:`jaxmetrics.models.load_model`), a hub id or a
        local checkpoint directory, resolved by :func:`jaxmetrics.models.resolve_model`. When
        given it is used instead of ``featurize_model_name``.
      quantizer: keyword-only; ``'kmeans'`` (default), another registered name, or a
        :class:`~jaxmetrics.mauve.quantizers.Quantizer` instance (its own settings are used).
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

    Returns:
      :class:`MauveOutput` with mauve-text's fields ``mauve, frontier_integral, mauve_star,
      frontier_integral_star, p_hist [k], q_hist [k], divergence_curve [m + 2, 2], num_buckets``
      and the bin counts ``p_counts``, ``q_counts``.

    Examples:
      >>> from jaxmetrics.mauve.compute import compute_mauve
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> p = rng.normal(size=(200, 16)).astype("float32")
      >>> compute_mauve(p_features=p, q_features=p)
      MauveOutput(mauve=1, frontier_integral=0, mauve_star=1, frontier_integral_star=0, p_hist=f64[20], q_hist=f64[20], divergence_curve=f64[27,2], p_counts=i32[20], q_counts=i32[20], num_buckets=20)
    """
    _check_common(kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
                  kmeans_max_iter=kmeans_max_iter, pca_max_data=pca_max_data,
                  num_points=divergence_curve_discretization_size, scaling=mauve_scaling_factor)
    scoring = _check_scoring(scoring)
    V.check_int(seed, "seed")
    with _device_ctx(device_id):
        t0 = time.perf_counter()
        p, q = _get_features(p_features, q_features, p_tokens, q_tokens, p_text, q_text, model=model,
                             featurize_model_name=featurize_model_name, max_length=max_text_length,
                             batch_size=batch_size, verbose=verbose)
        k = _resolve_num_buckets(num_buckets, (p.shape[0], q.shape[0]))
        quant = _make_quantizer(quantizer, k, explained_var=kmeans_explained_var, num_redo=kmeans_num_redo,
                                max_iter=kmeans_max_iter, pca_max_data=pca_max_data)
        stacked = np.concatenate([q, p], axis=0)
        t1 = time.perf_counter()
        if mesh is not None:
            from jaxmetrics.sharding import place_rows

            fitted = quant.fit(place_rows(stacked, mesh, name="p_features"), key=jax.random.key(seed))
        else:
            fitted = quant.fit(stacked, key=jax.random.key(seed))
        labels = _labels_of(fitted, stacked, fitted_on_stacked=True)
        nb = int(fitted.num_bins)
        q_counts = np.asarray(_counts(labels[: q.shape[0]], nb))
        p_counts = np.asarray(_counts(labels[q.shape[0]:], nb))
        t2 = time.perf_counter()
        out = _output(p_counts, q_counts, nb, divergence_curve_discretization_size, float(mauve_scaling_factor),
                      scoring)
        if verbose:
            print(f"features {t1 - t0:.2f} s, quantization {t2 - t1:.2f} s, "
                  f"histogram stage {time.perf_counter() - t2:.2f} s; k = {nb}, mauve = {out.mauve:.4f}")
        return out


def compute_mauve_seeds(
    p_features: Any = None,
    q_features: Any = None,
    *,
    seeds: Sequence[int] = (25, 26, 27, 28, 29),
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
    max_text_length: int = 1024,
    divergence_curve_discretization_size: int = 25,
    mauve_scaling_factor: float = 5,
    batch_size: int = 16,
    model: Any = None,
    quantizer: str | Quantizer = "kmeans",
    scoring: str = "mauve-text",
) -> MauveSeedsOutput:
    """MAUVE over several k-means seeds: mean, sample standard deviation and per-seed values.

    Seed variance of MAUVE (std ~0.005-0.01) is as large as real model gaps, so report
    ``mauve_mean +- mauve_std``. The features are computed once. With the k-means quantizer the
    normalisation and PCA are fitted once (with ``seeds[0]``) and the k-means runs for all seeds
    are one ``jax.vmap``-ed call (memory ~ ``len(seeds) * kmeans_num_redo * N * k`` floats); other
    quantizers are fitted once per seed. Each seed ``s`` gives the value of
    ``compute_mauve(..., seed=s)`` (with ``pca_max_data=-1``; a PCA subsample is drawn once,
    from ``seeds[0]``).

    Args:
      p_features, q_features: as in :func:`compute_mauve`.
      seeds: the integer seeds (keys ``jax.random.key(s)``).
      p_tokens, q_tokens, p_text, q_text, model, quantizer, scoring, ...: as in :func:`compute_mauve`.

    Returns:
      :class:`MauveSeedsOutput`: ``mauve_mean``, ``mauve_std`` (``ddof=1``) and the same for
      ``mauve_star`` and ``frontier_integral``; per-seed values ``[S]``, histograms ``[S, k]``
      and curves ``[S, m + 2, 2]``.

    Examples:
      >>> from jaxmetrics.mauve.compute import compute_mauve_seeds
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> p, q = rng.normal(size=(150, 8)), rng.normal(size=(150, 8)) + 1.0
      >>> out = compute_mauve_seeds(p, q, seeds=(1, 2, 3))
      >>> out  # doctest: +ELLIPSIS
      MauveSeedsOutput(mauve_mean=..., mauve_std=..., ..., divergence_curve=f64[3,27,2], num_buckets=15, seeds=(1, 2, 3))
      >>> out.mauve.shape, 0 < out.mauve_mean < 1, out.mauve_std >= 0
      ((3,), True, True)
    """
    _check_common(kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
                  kmeans_max_iter=kmeans_max_iter, pca_max_data=pca_max_data,
                  num_points=divergence_curve_discretization_size, scaling=mauve_scaling_factor)
    scoring = _check_scoring(scoring)
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds: expected a sequence of integers, got {type(seeds).__name__}")
    seeds = tuple(V.check_int(s, "seeds") for s in seeds)
    if not seeds:
        raise ValueError("seeds: at least one seed is needed")
    p, q = _get_features(p_features, q_features, p_tokens, q_tokens, p_text, q_text, model=model,
                         featurize_model_name=featurize_model_name, max_length=max_text_length,
                         batch_size=batch_size, verbose=False)
    k = _resolve_num_buckets(num_buckets, (p.shape[0], q.shape[0]))
    quant = _make_quantizer(quantizer, k, explained_var=kmeans_explained_var, num_redo=kmeans_num_redo,
                            max_iter=kmeans_max_iter, pca_max_data=pca_max_data)
    stacked = np.concatenate([q, p], axis=0)
    nq = q.shape[0]
    if isinstance(quant, KMeansQuantizer):
        _, z = quant._preprocess_fit(stacked, jax.random.key(seeds[0]))
        keys = jnp.stack([quant._kmeans_key(jax.random.key(s)) for s in seeds])
        labels = _kmeans_labels_vmapped(z, keys, k, quant.num_redo, quant.max_iter, quant.max_points_per_centroid)
        nb = k
    else:
        per_seed = []
        for s in seeds:
            fitted = quant.fit(stacked, key=jax.random.key(s))
            per_seed.append(_labels_of(fitted, stacked, fitted_on_stacked=True))
        labels = jnp.stack(per_seed)
        nb = int(fitted.num_bins)
    count = jax.vmap(lambda lab: _counts(lab, nb))
    q_counts, p_counts = np.asarray(count(labels[:, :nq])), np.asarray(count(labels[:, nq:]))
    p_hist, q_hist, curve, m, fi, ms, fis = _scores_from_counts(
        p_counts, q_counts, num_points=divergence_curve_discretization_size, scaling=float(mauve_scaling_factor),
        scoring=scoring)
    m_mean, m_std = _mean_std(m)
    ms_mean, ms_std = _mean_std(ms)
    fi_mean, fi_std = _mean_std(fi)
    return MauveSeedsOutput(mauve_mean=m_mean, mauve_std=m_std, mauve_star_mean=ms_mean, mauve_star_std=ms_std,
                            frontier_integral_mean=fi_mean, frontier_integral_std=fi_std, mauve=m,
                            frontier_integral=fi, mauve_star=ms, frontier_integral_star=fis, p_hist=p_hist,
                            q_hist=q_hist, divergence_curve=curve, num_buckets=int(nb), seeds=seeds)


@functools.partial(jax.jit, static_argnames=("k", "num_redo", "mppc"))
def _kmeans_labels_vmapped(z, keys, k, num_redo, max_iter, mppc):
    run = lambda key: kmeans(z, key, num_clusters=k, num_redo=num_redo, max_iter=max_iter,
                             max_points_per_centroid=mppc).labels
    return jax.vmap(run)(keys)


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
      >>> from jaxmetrics.mauve.compute import fit_quantizer, histogram
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> sets = [rng.normal(size=(100, 8)) + s for s in (0.0, 0.5, 1.0)]
      >>> fitted = fit_quantizer(sets)
      >>> fitted.num_bins, histogram(fitted, sets[0]).shape
      (10, (10,))
    """
    if isinstance(feature_sets, np.ndarray) or not isinstance(feature_sets, Sequence) or not feature_sets:
        raise TypeError("feature_sets: expected a non-empty list of [n_i, d] arrays")
    arrays = []
    for i, f in enumerate(feature_sets):
        arrays.append(V.check_features(f, f"feature_sets[{i}]", dim=arrays[0].shape[1] if arrays else None))
    _check_common(kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
                  kmeans_max_iter=kmeans_max_iter, pca_max_data=pca_max_data, num_points=1, scaling=1.0)
    k = _resolve_num_buckets(num_buckets, [a.shape[0] for a in arrays])
    quant = _make_quantizer(quantizer, k, explained_var=kmeans_explained_var, num_redo=kmeans_num_redo,
                            max_iter=kmeans_max_iter, pca_max_data=pca_max_data)
    return quant.fit(np.concatenate(arrays, axis=0), key=jax.random.key(V.check_int(seed, "seed")))


def histogram(fitted: FittedQuantizer, features: Any, *, counts: bool = False) -> np.ndarray:
    """Histogram ``[num_bins]`` of ``features [n, d]`` under ``fitted``: ``counts_j / n`` (or counts).

    Examples:
      >>> from jaxmetrics.mauve.compute import histogram, fit_quantizer
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(50, 4))
      >>> float(histogram(fit_quantizer([x], num_buckets=5), x).sum())
      1.0
    """
    c = np.asarray(_counts(jnp.asarray(fitted.assign(features)), int(fitted.num_bins)))
    return c if counts else c / c.sum()


def mauve_shared_codebook(
    pairs: Sequence[tuple[Any, Any]],
    *,
    fitted: FittedQuantizer | None = None,
    divergence_curve_discretization_size: int = 25,
    mauve_scaling_factor: float = 5,
    scoring: str = "mauve-text",
    **fit_kwargs: Any,
) -> list[MauveOutput]:
    """MAUVE of several ``(p_features, q_features)`` pairs under one shared codebook.

    The codebook is ``fitted`` or, by default, :func:`fit_quantizer` on all sets stacked as
    ``[Q_1; P_1; Q_2; P_2; ...]`` (``fit_kwargs`` go to it). Each pair's MAUVE is then computed
    from its own histograms as in :func:`compute_mauve` (``scoring`` as there).

    Examples:
      >>> from jaxmetrics.mauve.compute import mauve_shared_codebook
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> h = rng.normal(size=(100, 8))
      >>> outs = mauve_shared_codebook([(h, rng.normal(size=(100, 8))), (h, rng.normal(size=(100, 8)) + 2)])
      >>> outs[0].mauve > outs[1].mauve
      True
    """
    if not isinstance(pairs, Sequence) or not pairs:
        raise TypeError("pairs: expected a non-empty list of (p_features, q_features) pairs")
    V.check_int(divergence_curve_discretization_size, "divergence_curve_discretization_size", minimum=1)
    V.check_positive(mauve_scaling_factor, "mauve_scaling_factor")
    scoring = _check_scoring(scoring)
    sets = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"pairs: item {i} is not a (p_features, q_features) pair")
        p = V.check_features(pair[0], f"pairs[{i}][0]", dim=sets[0].shape[1] if sets else None)
        q = V.check_features(pair[1], f"pairs[{i}][1]", dim=p.shape[1])
        sets += [q, p]
    fresh = fitted is None
    if fresh:
        fitted = fit_quantizer(sets, **fit_kwargs)
    stacked = np.concatenate(sets, axis=0)
    labels = _labels_of(fitted, stacked, fitted_on_stacked=fresh)
    nb = int(fitted.num_bins)
    outs, start = [], 0
    for j in range(0, len(sets), 2):
        nq, np_ = sets[j].shape[0], sets[j + 1].shape[0]
        qc = np.asarray(_counts(labels[start:start + nq], nb))
        pc = np.asarray(_counts(labels[start + nq:start + nq + np_], nb))
        start += nq + np_
        outs.append(_output(pc, qc, nb, divergence_curve_discretization_size, float(mauve_scaling_factor),
                            scoring))
    return outs
