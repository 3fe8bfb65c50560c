"""The MAUVE results: a value, its frontier integral and its divergence curve, three ways.

* :class:`MauveResult`: the array kernels' result (:func:`~jaxmetrics.mauve.mauve_from_histograms`,
  :func:`~jaxmetrics.mauve.engine.mauve_scores`, soft MAUVE), batched leaves allowed;
* :class:`MauveOutput`: one run of the pipeline (:func:`~jaxmetrics.mauve.compute_mauve`,
  :func:`~jaxmetrics.mauve.estimate_mauve`, each pair of :func:`~jaxmetrics.mauve.mauve_shared_codebook`);
* :class:`MauveSeedsOutput`: several seeds (:func:`~jaxmetrics.mauve.compute_mauve_seeds`).

What only one estimator of the frontier has lives in one ``details`` field, never as a block of
``None``: :class:`HistogramDetails` (the histograms, their counts and the smoothed ``mauve_star``)
or :class:`RatioDetails` (the estimated log density ratios). The pipeline results read the
details' fields through as properties (``out.p_hist``, ``out.num_buckets``, ``out.p_log_ratio``),
mauve-text's names; one the estimator does not have raises :class:`AttributeError`.
"""
from __future__ import annotations

from typing import Any

import jax
import numpy as np

from jaxmetrics.confidence import Interval
from jaxmetrics.results import Result, static_field

__all__ = ["MauveResult", "HistogramDetails", "RatioDetails", "MauveOutput", "MauveSeedsOutput"]

QUANTIZED = "quantized"


class HistogramDetails(Result):
    """What the histogram (quantized) frontier has beyond the curve; leaves may carry leading axes
    ``[...]`` (seeds, a batch of count rows).

    Attributes:
      mauve_star: ``[...]`` MAUVE of the Krichevsky-Trofimov (+1/2) smoothed histograms.
      frontier_integral_star: ``[...]`` their frontier integral.
      p_hist: ``[..., k]`` float64 unsmoothed histogram of P (human text).
      q_hist: ``[..., k]`` float64 unsmoothed histogram of Q (model text).
      p_counts: ``[..., k]`` bin counts of P.
      q_counts: ``[..., k]`` bin counts of Q.
      num_buckets: ``k`` (static).
    """

    mauve_star: Any
    frontier_integral_star: Any
    p_hist: Any
    q_hist: Any
    p_counts: Any
    q_counts: Any
    num_buckets: int = static_field()

    @property
    def estimator(self) -> str:
        """``'quantized'``: the histograms of a quantizer."""
        return QUANTIZED


class RatioDetails(Result):
    """What a density-ratio frontier has beyond the curve (:mod:`jaxmetrics.mauve.frontier.estimators`).

    Attributes:
      p_log_ratio: ``[..., n_p]`` float64 estimated ``log dP/dQ`` at P's rows.
      q_log_ratio: ``[..., n_q]`` at Q's rows.
      estimator: the estimator's name (static; ``'knn'``, ``'classifier'``, ``'gaussian'``, ...).
      indistinguishable: whether the estimator could not tell the two samples apart at this size
        (static): its out-of-sample log ratios do not rank P's rows above Q's at the one-sided 5 %
        level (:func:`~jaxmetrics.mauve.frontier.estimate.separation_test`); MAUVE is then 1 or
        near it because the estimator saw no difference, not because the texts are alike. With
        several seeds: at one seed at least.
      note: with ``indistinguishable``, the sentence that says so, with the test's figures and the
        sample size a difference of the observed size would need (static, not in the repr);
        ``''`` otherwise.
    """

    p_log_ratio: Any
    q_log_ratio: Any
    estimator: str = static_field()
    indistinguishable: bool = static_field(default=False)
    note: str = static_field(default="", repr=False)


#: The names the pipeline results read through from their ``details``.
_HISTOGRAM_NAMES = ("mauve_star", "frontier_integral_star", "p_hist", "q_hist", "p_counts", "q_counts", "num_buckets")
_RATIO_NAMES = ("p_log_ratio", "q_log_ratio")


def _detail(name: str) -> property:
    def get(self):
        try:
            return getattr(self.details, name)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__}.{name}: estimator={self.estimator!r} has no {name} "
                                 f"(see .details, a {type(self.details).__name__})") from None

    get.__name__ = name
    get.__doc__ = f"``details.{name}`` (read-only)."
    return property(get)


class _ReadThrough:
    """``estimator`` and the details' fields as read-only properties; ``to_dict`` flattens them in."""

    details: Any

    @property
    def estimator(self) -> str:
        """The estimator of the frontier: ``'quantized'`` (histograms) or a density-ratio estimator's name."""
        return self.details.estimator

    @property
    def indistinguishable(self) -> bool:
        """``details.indistinguishable``: a density-ratio estimator saw no difference between the
        samples at this size (:class:`RatioDetails`); always ``False`` for histograms."""
        return bool(getattr(self.details, "indistinguishable", False))

    @property
    def note(self) -> str:
        """``details.note``: why the value says nothing about the texts, or ``''``."""
        return getattr(self.details, "note", "")

    def _details_dict(self) -> dict[str, Any]:
        return {**self.details.to_dict(), "estimator": self.estimator}

    def _inline_repr(self, base: str) -> str:
        """``base`` (the plain repr) with ``details=Details(a=..., b=...)`` written as ``a=..., b=...``."""
        inner = repr(self.details)
        return base.replace(f"details={inner}", inner[len(type(self.details).__name__) + 1:-1])


for _n in _HISTOGRAM_NAMES + _RATIO_NAMES:
    setattr(_ReadThrough, _n, _detail(_n))


class MauveResult(Result):
    """MAUVE of two histograms: :func:`~jaxmetrics.mauve.mauve_from_histograms`,
    :func:`~jaxmetrics.mauve.mauve_from_counts`, :func:`~jaxmetrics.mauve.soft_mauve`,
    :func:`~jaxmetrics.mauve.hard_mauve`, :func:`~jaxmetrics.mauve.engine.mauve_scores`.

    A pytree (it can be returned from ``jax.jit`` and mapped with ``jax.vmap``); with batched
    histograms ``[..., k]`` every field gains the leading ``[...]`` axes.

    Attributes:
      mauve: ``[...]`` the area under the divergence curve, in (0, 1].
      frontier_integral: ``[...]`` in [0, 1]; 0 for identical histograms.
      divergence_curve: ``[..., m + 2, 2]``; column 0 is ``exp(-c KL(q||R))``, column 1 is
        ``exp(-c KL(p||R))``; row 0 is ``(1, 0)`` and the last row ``(0, 1)``.
      details: ``None``, or from :func:`~jaxmetrics.mauve.engine.mauve_scores` a
        :class:`HistogramDetails` (histograms, counts, ``mauve_star``; read through as
        ``mauve_star``, ``frontier_integral_star``, ``p_hist``, ``q_hist``).
    """

    mauve: jax.Array
    frontier_integral: jax.Array
    divergence_curve: jax.Array
    details: HistogramDetails | None = None

    def __repr__(self) -> str:
        base = super().__repr__()
        return base.replace(", details=None)", ")")

    @property
    def mauve_star(self):
        """``details.mauve_star`` (read-only)."""
        return self.details.mauve_star

    @property
    def frontier_integral_star(self):
        """``details.frontier_integral_star`` (read-only)."""
        return self.details.frontier_integral_star

    @property
    def p_hist(self):
        """``details.p_hist`` (read-only)."""
        return self.details.p_hist

    @property
    def q_hist(self):
        """``details.q_hist`` (read-only)."""
        return self.details.q_hist


class MauveOutput(_ReadThrough, Result):
    """Result of :func:`~jaxmetrics.mauve.compute_mauve`, :func:`~jaxmetrics.mauve.estimate_mauve` and of
    each pair of :func:`~jaxmetrics.mauve.mauve_shared_codebook`.

    mauve-text's fields are read as ``out.mauve``, ``out.frontier_integral``, ``out.divergence_curve``
    and, through ``details`` (k-means and other quantizers), ``out.mauve_star``,
    ``out.frontier_integral_star``, ``out.p_hist``, ``out.q_hist``, ``out.num_buckets`` (and the bin
    counts ``out.p_counts``, ``out.q_counts``); with a density-ratio estimator ``out.p_log_ratio``,
    ``out.q_log_ratio``. ``repr`` and :meth:`to_dict` show the details' fields in line.

    Attributes:
      mauve: float, the area under the divergence curve (of the plain histograms).
      frontier_integral: float, the (KL-based) frontier integral.
      divergence_curve: ``[m + 2, 2]`` float64 (end points included).
      details: :class:`HistogramDetails` (``estimator='quantized'``) or :class:`RatioDetails`.
      pooling: how text or token ids became features (static): ``'last'`` (mauve-text's final
        hidden state at the last token), ``'mean'`` or ``'cls'``; ``None`` when features were given.
      signature: what the numbers depend on (static; :mod:`jaxmetrics.results`): ``metric:mauve``,
        the featurizer with its weights' hash when text or tokens were featurized (with its layer,
        pooling, ``max_length`` and dtype), the seeds, ``num_buckets`` as given, the quantizer or
        estimator and its settings, ``mauve_scaling_factor``, the curve's size and the scoring.
      divergence: the f-divergence of ``mauve``, ``mauve_star`` and the curve (static, not in the
        repr; :data:`~jaxmetrics.mauve.frontier.divergences.DIVERGENCES`, default ``'kl'``); the frontier
        integrals are KL-based whatever it is.
    """

    mauve: float
    frontier_integral: float
    divergence_curve: np.ndarray
    details: HistogramDetails | RatioDetails
    pooling: str | None = static_field(default=None)
    signature: str = static_field(default="", repr=False)
    divergence: str = static_field(default="kl", repr=False)

    def __repr__(self) -> str:
        return self._inline_repr(super().__repr__())

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python, the details' fields in line (mauve-text's names) with ``estimator``."""
        out = {k: v for k, v in super().to_dict().items() if k != "details"}
        return {**out, **self._details_dict()}


class MauveSeedsOutput(_ReadThrough, Result):
    """Result of :func:`~jaxmetrics.mauve.compute_mauve_seeds`: mean and spread over seeds, and per-seed values.

    Attributes:
      mauve_mean: float, mean of ``mauve`` over the seeds.
      mauve_std: float, its sample standard deviation (``ddof=1``; 0 for one seed).
      frontier_integral_mean: float, mean of ``frontier_integral``.
      frontier_integral_std: float, sample standard deviation of ``frontier_integral``.
      mauve: ``[S]`` per-seed MAUVE.
      frontier_integral: ``[S]`` per-seed frontier integral.
      divergence_curve: ``[S, m + 2, 2]`` float64.
      details: per seed (leading axis ``[S]``): :class:`HistogramDetails` (histograms ``[S, k]``,
        ``mauve_star [S]``, ...; read through as ``out.p_hist``, ``out.mauve_star``, ...) or
        :class:`RatioDetails` (``[S, n]`` log ratios).
      seeds: the ``S`` seeds, in order (static).
      pooling: as in :class:`MauveOutput` (static).
      signature: as in :class:`MauveOutput` (static), with every seed: for one seed ``s`` it is
        the signature of ``compute_mauve(..., seed=s)``.
      mauve_interval: with ``confidence``: :class:`~jaxmetrics.confidence.Interval` of
        ``mauve_mean`` for the estimator's value at this size, combining the sampling and the
        seed spread (:mod:`jaxmetrics.mauve.pipeline.interval`); else ``None``.
      frontier_integral_interval: the same for ``frontier_integral_mean``.
      sampling_standard_error: with ``confidence``: the bootstrap standard error of
        ``mauve_mean`` over the rows (the sampling spread; ``mauve_std`` is the seed spread).
      divergence: as in :class:`MauveOutput` (static, not in the repr).

    ``mauve_star_mean`` / ``mauve_star_std`` (properties) are the mean and sample standard deviation
    of ``details.mauve_star`` (histogram details only).
    """

    mauve_mean: float
    mauve_std: float
    frontier_integral_mean: float
    frontier_integral_std: float
    mauve: np.ndarray
    frontier_integral: np.ndarray
    divergence_curve: np.ndarray
    details: HistogramDetails | RatioDetails
    seeds: tuple[int, ...] = static_field()
    pooling: str | None = static_field(default=None)
    signature: str = static_field(default="", repr=False)
    mauve_interval: Interval | None = None
    frontier_integral_interval: Interval | None = None
    sampling_standard_error: float | None = None
    divergence: str = static_field(default="kl", repr=False)

    @property
    def mauve_star_mean(self) -> float:
        """Mean of ``details.mauve_star`` over the seeds."""
        from jaxmetrics.numerics import mean_std

        return mean_std(self.mauve_star)[0]

    @property
    def mauve_star_std(self) -> float:
        """Sample standard deviation (``ddof=1``) of ``details.mauve_star`` over the seeds."""
        from jaxmetrics.numerics import mean_std

        return mean_std(self.mauve_star)[1]

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python, the details' fields in line with ``estimator`` (and the
        ``mauve_star`` statistics under histograms)."""
        out = {k: v for k, v in super().to_dict().items() if k != "details"}
        out.update(self._details_dict())
        if isinstance(self.details, HistogramDetails):
            out.update(mauve_star_mean=self.mauve_star_mean, mauve_star_std=self.mauve_star_std)
        return out
