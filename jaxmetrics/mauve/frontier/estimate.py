"""``estimate_mauve``: MAUVE from any density-ratio estimator (:mod:`.estimators`) and f-divergence
(:mod:`.divergences`), kept apart from the estimators themselves (one concern per file)."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Protocol, runtime_checkable
import jax
import jax.numpy as jnp
import numpy as np
from jaxmetrics._ops import PRECISION
from jaxmetrics import _validation as V
from jaxmetrics.mauve.engine import fit_labels, project_features, split_counts
from jaxmetrics.mauve.frontier.divergences import mauve_from_log_ratios
from jaxmetrics.mauve.frontier.settings import FrontierSettings
from jaxmetrics.results import Result, key_id, static_field
from jaxmetrics.mauve.frontier.estimators import ESTIMATORS, QuantizedEstimator, get_estimator
from jaxmetrics.mauve.frontier.results import MauveOutput, RatioDetails
from jaxmetrics.mauve.sizes import _warn_at_caller
from jaxmetrics.numerics import average_ranks

__all__ = ["estimate_mauve", "is_quantized", "estimator_settings", "estimate_seeds", "require_quantized",
           "separation_test", "Separation", "IndistinguishableWarning"]

#: The ``estimator=`` of compute_mauve / compute_mauve_seeds / mauve_sweep / the CLI that runs today's
#: histogram pipeline (its ``quantizer=``, ``num_buckets`` and k-means settings).
QUANTIZED = "quantized"


#: One-sided level of :func:`separation_test` and the normal quantiles it uses: ``z`` at 1 - 0.05
#: (the critical value) and at 0.8 (the power of the sample size it quotes).
SEPARATION_LEVEL = 0.05
_Z_CRITICAL = 1.6448536269514722
_Z_POWER = 0.8416212335729143
#: What docs/mauve.md's sample-size table measured (benchmarks/results/mauve_estimators_sample_size.md).
_MEASURED = ("on real text (MiniLM features, docs/mauve.md) k-NN separated a set with half its rows looping "
             "from n = 250 per side; the classifier and Gaussian estimators need about 1,000-2,500")


class IndistinguishableWarning(UserWarning):
    """A density-ratio estimator could not tell the two samples apart (:func:`separation_test`)."""


class Separation(Result):
    """:func:`separation_test`: do the estimated log ratios rank P's rows above Q's?

    Attributes:
      auc: ``P(l_P > l_Q) + P(l_P = l_Q) / 2`` over all pairs of a P row and a Q row (Mann-Whitney's
        U over ``n_p n_q``); 1/2 when the ratios carry nothing (a flat calibrated ratio).
      z: ``(auc - 1/2) / sd`` with the null standard deviation of the AUC (ties corrected); 0 when
        every ratio is equal.
      indistinguishable: ``z`` below the one-sided 5 % critical value 1.645.
      rows_needed: per side, the size at which a difference of the observed AUC would be
        detected with 80 % power, ``ceil((1.645 + 0.842)^2 / (6 (auc - 1/2)^2))``; ``None`` when
        ``auc <= 1/2`` (no sign of a difference at all).
    """

    auc: float
    z: float
    indistinguishable: bool = static_field()
    rows_needed: int | None = static_field(default=None)


def separation_test(p_log_ratio: Any, q_log_ratio: Any) -> Separation:
    """The test behind ``indistinguishable``: a one-sided Mann-Whitney test of the out-of-sample
    log ratios ``l = log dP/dQ`` at P's rows against Q's rows.

    A density-ratio estimator whose ratios rank P's rows no higher than Q's has found no
    difference: its calibration (``a >= 0``) then flattens them and MAUVE is 1.0000, or near 1
    for a weak ``a``, whatever the texts. **Flat** is defined by the estimator's own out-of-sample
    ratios (k-NN: leave-one-out; classifier and Gaussian: cross-fitted): under ``P = Q`` the rows
    of both sides are exchangeable and so are their ratios, so the AUC of P's ratios against Q's
    has the Mann-Whitney null distribution, mean 1/2 and variance
    ``(n_p + n_q + 1 - sum(t^3 - t) / ((n_p + n_q)(n_p + n_q - 1))) / (12 n_p n_q)`` (``t`` the
    sizes of tied groups; a calibrated ratio that is flat is one tied group: ``z = 0``). The
    samples are **indistinguishable at this n** when ``z < 1.645`` (5 %, one-sided: two samples of
    one distribution are flagged in 95 % of draws). Calibration is monotone, so the test reads the
    same on raw and calibrated ratios. In-sample ratios do not have this null distribution: the
    MAUVE pipelines do not test the quantized estimator (each bin's own counts), and on a
    ``GaussianEstimator(num_folds=1)`` the test flags less often than it should.

    Examples:
      >>> from jaxmetrics.mauve.frontier.estimate import separation_test
      >>> separation_test([0.0] * 50, [0.0] * 50)
      Separation(auc=0.5, z=0, indistinguishable=True, rows_needed=None)
      >>> s = separation_test([1.0] * 25 + [0.5] * 25, [0.0] * 25 + [0.6] * 25)
      >>> s.indistinguishable, round(s.auc, 2)
      (False, 0.75)
    """
    lp = np.asarray(p_log_ratio, np.float64).reshape(-1)
    lq = np.asarray(q_log_ratio, np.float64).reshape(-1)
    n_p, n_q = lp.size, lq.size
    if n_p == 0 or n_q == 0:
        raise ValueError(f"p_log_ratio: both sides need rows, got {n_p} and {n_q}")
    both = np.concatenate([lq, lp])
    ranks = average_ranks(both)
    u = float(ranks[n_q:].sum()) - n_p * (n_p + 1) / 2.0
    auc = u / (n_p * n_q)
    n = n_p + n_q
    _, ties = np.unique(both, return_counts=True)
    tie_term = float(np.sum(ties.astype(np.float64) ** 3 - ties)) / (n * (n - 1)) if n > 1 else 0.0
    var = n_p * n_q * ((n + 1) - tie_term) / 12.0
    z = (u - n_p * n_q / 2.0) / np.sqrt(var) if var > 1e-12 else 0.0
    delta = auc - 0.5
    needed = int(np.ceil((_Z_CRITICAL + _Z_POWER) ** 2 / (6.0 * delta * delta))) if delta > 1e-12 else None
    return Separation(auc=float(auc), z=float(z), indistinguishable=bool(z < _Z_CRITICAL), rows_needed=needed)


def _separation_note(sep: Separation, name: str, n_p: int, n_q: int, mauve: float) -> str:
    """The one line that says a MAUVE of ``name`` rests on no detected difference."""
    where = (f"a difference of this size would be detected (80 % power) from about {sep.rows_needed:,} rows per "
             f"side" if sep.rows_needed is not None else "the ratios show no sign of a difference at all")
    return (f"indistinguishable at this n: the {name} estimator's out-of-sample log ratios do not rank the "
            f"{n_p} references above the {n_q} candidates (AUC {sep.auc:.3f}, z = {sep.z:.2f} < 1.645, one-sided "
            f"5 %), so MAUVE {mauve:.4f} says it cannot tell the samples apart, not that the texts are alike; "
            f"{where} ({_MEASURED}); use more texts or estimator='quantized'")


def _estimator_name(est: Any) -> str:
    for name, factory in ESTIMATORS.items():
        if isinstance(factory, type) and type(est) is factory:
            return name
    return type(est).__name__


def estimator_settings(estimator: Any) -> dict[str, Any]:
    """``{'estimator': name, '<name>_<setting>': value, ...}`` of an estimator (a name or an instance),
    the entries of a result's signature (:mod:`jaxmetrics.results`).

    Examples:
      >>> from jaxmetrics.mauve.frontier.estimate import estimator_settings
      >>> estimator_settings("knn")
      {'estimator': 'knn', 'knn_k': 50, 'knn_calibrate': True, 'knn_normalize': True, 'knn_explained_var': 0.9}
    """
    est = get_estimator(estimator)
    name = _estimator_name(est)
    settings: dict[str, Any] = {"estimator": name}
    if dataclasses.is_dataclass(est):
        for f in dataclasses.fields(est):
            v = getattr(est, f.name)
            ok = v is None or isinstance(v, (bool, int, float, str))
            settings[f"{name}_{f.name}"] = v if ok else type(v).__name__
    return settings


def _signature(est, *, frontier: FrontierSettings, model: Any = None, **extra: Any) -> str:
    from jaxmetrics.results import make_signature

    settings = dict(frontier.signature_fields(), divergence=frontier.divergence)  # named even when 'kl'
    return make_signature("mauve", model=model, **settings, **extra, **estimator_settings(est))


def is_quantized(estimator: Any) -> bool:
    """Whether ``estimator`` names today's histogram pipeline (``'quantized'``), which the MAUVE
    entry points run with their own ``quantizer=`` / ``num_buckets`` / k-means settings (and
    ``mauve_star``); any other name or instance is a density-ratio estimator (:func:`estimate_mauve`).

    Examples:
      >>> from jaxmetrics.mauve.frontier.estimate import is_quantized
      >>> is_quantized("quantized"), is_quantized("knn")
      (True, False)
    """
    if isinstance(estimator, str):
        if estimator != QUANTIZED:
            get_estimator(estimator)  # an unknown name fails here, naming the argument
        return estimator == QUANTIZED
    get_estimator(estimator)
    return False


def require_quantized(estimator: Any, quantizer: Any, *, where: str) -> None:
    """Refuse a density-ratio estimator (``'knn'``, ``'classifier'``, ``'gaussian'`` or an instance)
    where only the histogram pipeline is defined — :func:`~jaxmetrics.mauve.compare_mauve` and
    :func:`~jaxmetrics.mauve.mauve_attribution` resample, count and differentiate one quantizer's
    bins — with a ``ValueError`` naming it, before any work: given as ``estimator=`` (anything but
    ``'quantized'``; an unknown name fails as such) or as ``quantizer=`` (an estimator's name, or an
    object with ``log_ratios`` and no ``fit``). ``where`` names the function in the message.

    Examples:
      >>> from jaxmetrics.mauve.frontier.estimate import require_quantized
      >>> require_quantized("quantized", "kmeans", where="compare_mauve")
      >>> require_quantized("knn", "kmeans", where="compare_mauve")
      Traceback (most recent call last):
      ...
      ValueError: estimator: compare_mauve is defined for estimator='quantized' only (it works on one quantizer's bins); 'knn' is a density-ratio estimator: score each pair with estimate_mauve(..., estimator='knn')
    """
    if not is_quantized(estimator):
        name = estimator if isinstance(estimator, str) else _estimator_name(estimator)
        if name == QUANTIZED:
            raise ValueError(f"estimator: {where} takes estimator='quantized' with its own quantizer= and "
                             "num_buckets=, not a QuantizedEstimator instance")
        raise ValueError(f"estimator: {where} is defined for estimator='quantized' only (it works on one quantizer's "
                         f"bins); {name!r} is a density-ratio estimator: score each pair with "
                         f"estimate_mauve(..., estimator={name!r})")
    as_estimator = (isinstance(quantizer, str) and quantizer in ESTIMATORS and quantizer != QUANTIZED) or (
        not isinstance(quantizer, str) and callable(getattr(quantizer, "log_ratios", None))
        and not callable(getattr(quantizer, "fit", None)))
    if as_estimator:
        name = quantizer if isinstance(quantizer, str) else _estimator_name(quantizer)
        raise ValueError(f"quantizer: {name!r} is a density-ratio estimator, not a quantizer; {where} is defined for "
                         "the histogram pipeline only (a quantizer such as 'kmeans')")


def estimate_seeds(p_features: Any, q_features: Any, *, seeds: Any, estimator: Any, frontier: FrontierSettings,
                   model: Any = None, pooling: str | None = None, **signature_extra: Any) -> list[MauveOutput]:
    """:func:`estimate_mauve` once per seed (key ``jax.random.key(s)``), the signature naming every
    seed and the featurizer ``model`` and, with a ``model``, its ``pooling`` (recorded on each result)
    (the ratio path of compute_mauve / compute_mauve_seeds).

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.mauve.frontier.estimate import estimate_seeds
      >>> from jaxmetrics.mauve import FrontierSettings
      >>> rng = np.random.default_rng(0)
      >>> out = estimate_seeds(rng.normal(size=(80, 4)), rng.normal(size=(80, 4)), seeds=(1, 2), estimator="gaussian",
      ...                      frontier=FrontierSettings())
      >>> len(out), out[0].estimator
      (2, 'gaussian')
    """
    est = get_estimator(estimator)
    if model is not None:
        signature_extra = dict(signature_extra, pooling=pooling)
    sig = _signature(est, frontier=frontier, model=model, seeds=tuple(seeds), **signature_extra)
    outs = [_estimate(p_features, q_features, key=jax.random.key(s), estimator=est, frontier=frontier,
                      signature=sig, pooling=pooling) for s in seeds]
    note = seeds_note(outs)
    if note:
        _warn_at_caller(note, IndistinguishableWarning)
    return outs


def seeds_note(outs: Any) -> str:
    """The note of several seeds' results: the first flagged seed's, with how many were flagged
    (``''`` when none was).

    Examples:
      >>> seeds_note([])
      ''
    """
    flagged = [o for o in outs if o.indistinguishable]
    if not flagged:
        return ""
    return flagged[0].note + ("" if len(outs) == 1 else f" (at {len(flagged)} of {len(outs)} seeds)")


def estimate_mauve(*, references: Any, candidates: Any, key: jax.Array, estimator: Any = "knn",
                   frontier: FrontierSettings | None = None, divergence: str | None = None,
                   scaling: float | None = None, num_points: int | None = None,
                   scoring: str | None = None) -> MauveOutput:
    """MAUVE_f of P (``references``, human, ``[n_p, d]``) and Q (``candidates``, model, ``[n_q, d]``)
    with any estimator of the family; the frontier is ``frontier`` (a
    :class:`~jaxmetrics.mauve.FrontierSettings`) or its ``divergence``, ``scaling``, ``num_points`` and
    ``scoring`` given as keywords.

    ``estimator`` (a name of :func:`available_estimators` or an instance) estimates ``l = log dP/dQ``
    at every row; :func:`~jaxmetrics.mauve.frontier.divergences.mauve_from_log_ratios` gives the curve of the
    f-divergence ``divergence`` (:data:`~jaxmetrics.mauve.frontier.divergences.DIVERGENCES`, default ``'kl'``:
    today's MAUVE), its area and the frontier integral, in float64. ``key`` draws the estimator's
    randomness (folds, quantizer); ``estimator='quantized'`` with ``key=jax.random.key(s)`` equals
    ``compute_mauve(p_features=p, q_features=q, seed=s).mauve``. The result's ``signature`` names the
    estimator and its settings, the frontier and the ``key`` (:func:`jaxmetrics.results.key_id`).

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve import estimate_mauve
      >>> rng = np.random.default_rng(0)
      >>> p, q = rng.normal(size=(300, 8)), rng.normal(size=(300, 8)) + 0.5
      >>> out = estimate_mauve(references=p, candidates=q, key=jax.random.key(0), estimator="gaussian")
      >>> out  # doctest: +ELLIPSIS
      MauveOutput(mauve=..., frontier_integral=..., divergence_curve=f64[27,2], p_log_ratio=f64[300], q_log_ratio=f64[300], estimator='gaussian', indistinguishable=False, pooling=None)
      >>> out.details  # doctest: +ELLIPSIS
      RatioDetails(p_log_ratio=f64[300], q_log_ratio=f64[300], estimator='gaussian', indistinguishable=False)
      >>> same = estimate_mauve(references=p, candidates=rng.normal(size=(300, 8)), key=jax.random.key(0),
      ...                       estimator="gaussian")
      >>> bool(same.mauve > out.mauve)
      True
    """
    V.check_key(key)
    frontier = FrontierSettings.resolve(frontier, divergence=divergence, scaling=scaling, num_points=num_points,
                                        scoring=scoring)
    est = get_estimator(estimator)
    out = _estimate(references, candidates, key=key, estimator=est, frontier=frontier,
                    signature=_signature(est, frontier=frontier, key=key_id(key)))
    if out.indistinguishable:
        _warn_at_caller(out.note, IndistinguishableWarning)
    return out


def _estimate(p_features: Any, q_features: Any, *, key: jax.Array, estimator: Any, frontier: FrontierSettings,
              signature: str, pooling: str | None = None) -> MauveOutput:
    """:func:`estimate_mauve` with its settings resolved (an estimator instance, the frontier) and the
    result's ``signature`` and ``pooling``."""
    lr = estimator.log_ratios(references=p_features, candidates=q_features, key=key)
    with jax.enable_x64(True):
        lp = np.asarray(lr.p_log_ratio, np.float64)
        lq = np.asarray(lr.q_log_ratio, np.float64)
        res = mauve_from_log_ratios(lp, lq, divergence=frontier.divergence, **frontier._kwargs())
    name = _estimator_name(estimator)
    flagged, note = False, ""
    if not isinstance(estimator, QuantizedEstimator):  # in-sample bin ratios: no Mann-Whitney null
        sep = separation_test(lp, lq)
        if sep.indistinguishable:
            flagged, note = True, _separation_note(sep, name, lp.size, lq.size, float(res.mauve))
    details = RatioDetails(p_log_ratio=lp, q_log_ratio=lq, estimator=name, indistinguishable=flagged, note=note)
    return MauveOutput(mauve=float(res.mauve), frontier_integral=float(res.frontier_integral),
                       divergence_curve=np.asarray(res.divergence_curve), details=details,
                       divergence=frontier.divergence, signature=signature, pooling=pooling)
