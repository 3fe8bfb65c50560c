"""Bootstrap and subsample confidence intervals of corpus-level scores, and the resampling core
every resampling function shares (draws, p-values, signatures); see :mod:`jaxmetrics.confidence`."""
from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr, ndtri

from jaxmetrics._validation import check_choice, check_int, check_key, check_open_unit, check_resampling, concrete_value
from jaxmetrics.results import Result, key_id, make_signature, static_field

#: elements gathered per vmapped chunk when ``batch_size`` is not given (about 256 MiB of float32)
CHUNK_ELEMENTS = 1 << 26
METHODS = ("bca", "percentile")


class Interval(Result):
    """A score with its bootstrap confidence interval (:func:`confidence_interval`).

    Attributes:
      value: the statistic on the data as given (shape of the statistic's output).
      low, high: the interval's bounds (same shape).
      standard_error: standard deviation of the bootstrap values (``ddof=1``).
      bias: mean of the bootstrap values minus ``value``, the bootstrap's estimate of the
        statistic's bias at this sample size.
      confidence: the interval's nominal coverage, e.g. 0.95.
      method: ``'bca'`` or ``'percentile'`` (:func:`confidence_interval`), ``'subsample'``
        (:func:`subsample_interval`: there ``standard_error`` and ``bias`` are defined in its
        docstring).
      num_resamples: number of bootstrap resamples (or subsamples) ``B``.
      signature: what the numbers depend on (static, not in the repr; :mod:`jaxmetrics.results`):
        from :func:`confidence_interval` / :func:`subsample_interval`
        ``metric:confidence-interval`` with the ``statistic``'s name, ``method``, ``confidence``,
        ``num_resamples``, the ``key`` (and the subsamples' ``fraction``); a MAUVE interval carries
        its result's signature (:func:`~jaxmetrics.mauve.compute_mauve_seeds`).
    """

    value: jax.Array | float
    low: jax.Array | float
    high: jax.Array | float
    standard_error: jax.Array | float
    bias: jax.Array | float
    confidence: float = static_field()
    method: str = static_field()
    num_resamples: int = static_field()
    signature: str = static_field(default="", repr=False)


def _num_items(sample: Any, name: str) -> int:
    leaves = jax.tree.leaves(sample)
    if not leaves:
        raise ValueError(f"{name}: has no arrays to resample")
    sizes = set()
    for leaf in leaves:
        shape = np.shape(leaf)
        if len(shape) < 1:
            raise ValueError(f"{name}: every array needs a leading axis of items, got a scalar")
        sizes.add(shape[0])
    if len(sizes) != 1:
        raise ValueError(f"{name}: its arrays have different numbers of items {sorted(sizes)}; the leaves of "
                         "one sample are resampled together and must share their first axis")
    n = sizes.pop()
    if n < 2:
        raise ValueError(f"{name}: needs at least 2 items to resample, got {n}")
    return int(n)


def _take(sample: Any, idx: jax.Array) -> Any:
    return jax.tree.map(lambda x: jnp.take(jnp.asarray(x), idx, axis=0), sample)


def _chunk(batch_size: int | None, samples: tuple, count: int) -> int:
    if batch_size is not None:
        return min(check_int(batch_size, "batch_size", minimum=1), count)
    per = sum(int(np.prod(np.shape(x))) for s in samples for x in jax.tree.leaves(s))
    return max(1, min(count, CHUNK_ELEMENTS // max(per, 1)))


def _quantile_each(sorted_vals: jax.Array, q: jax.Array) -> jax.Array:
    """Linear-interpolated quantiles of ``sorted_vals [B, ...]`` at levels ``q [...]`` (one level
    per element, as ``numpy.quantile``'s default)."""
    b = sorted_vals.shape[0]
    pos = jnp.clip(q, 0.0, 1.0) * (b - 1)
    lo = jnp.floor(pos).astype(jnp.int32)
    hi = jnp.minimum(lo + 1, b - 1)
    frac = (pos - lo).astype(sorted_vals.dtype)
    take = lambda i: jnp.take_along_axis(sorted_vals, i[None], axis=0)[0]
    return take(lo) * (1 - frac) + take(hi) * frac


def _jackknife(statistic: Callable, samples: tuple, sizes: tuple[int, ...], batch_size: int | None) -> list:
    """Leave-one-out values of ``statistic``, one array ``[n_s, ...]`` per sample."""
    out = []
    for s, n in enumerate(sizes):
        base = jnp.arange(n - 1)

        def left_out(i, s=s, base=base):
            idx = base + (base >= i)
            parts = list(samples)
            parts[s] = _take(samples[s], idx)
            return jnp.asarray(statistic(*parts))

        out.append(jax.lax.map(left_out, jnp.arange(n), batch_size=_chunk(batch_size, samples, n)))
    return out


def _checked(statistic, samples: tuple, key, num_resamples, confidence):
    """The checks both interval functions make: ``(B, confidence, sample names, sizes, value)``,
    ``value`` being the statistic on the data as given (it must be finite)."""
    if not callable(statistic):
        raise TypeError(f"statistic: expected a function of the samples, got {type(statistic).__name__}")
    if not samples:
        raise ValueError("samples: give at least one sample to resample")
    check_key(key)
    B, conf = check_resampling(num_resamples, confidence)
    names = ["samples[0]"] if len(samples) == 1 else [f"samples[{i}]" for i in range(len(samples))]
    sizes = tuple(_num_items(s, name) for s, name in zip(samples, names))
    value = jnp.asarray(statistic(*samples))
    bad = concrete_value(lambda v: jnp.sum(~jnp.isfinite(v)), value)
    if bad is not None and int(bad):
        raise ValueError("statistic: not finite on the data as given (the interval would be NaN)")
    return B, conf, names, sizes, value


# ------------------------------------------------------------------------------ the resampling core
# The draws and the p-values every resampling function of the library uses (confidence_interval,
# compare_systems, jaxmetrics.mauve.compare_mauve): written once here.


def bootstrap_indices(keys: Any, num_resamples: int, sizes: Any) -> tuple[jax.Array, ...]:
    """The bootstrap's draws: for every sample ``s``, ``[B, n_s]`` item indices drawn uniformly
    with replacement, ``jax.random.randint(keys[s], (B, n_s), 0, n_s)``.

    Args:
      keys: one ``jax.random`` key per sample (``jax.random.split(key, S)`` for independent
        samples; one key for the paired bootstrap, whose systems share the draws).
      num_resamples: ``B``.
      sizes: ``n_s`` per sample.

    Returns:
      a tuple of ``[B, n_s]`` int32 arrays.

    Examples:
      >>> import jax
      >>> idx, = bootstrap_indices([jax.random.key(0)], 4, [3])
      >>> idx.shape, bool((idx >= 0).all() and (idx < 3).all())
      ((4, 3), True)
    """
    return tuple(jax.random.randint(k, (int(num_resamples), int(n)), 0, int(n)) for k, n in zip(keys, sizes))


def randomization_draws(key: jax.Array, num_resamples: int, n: int, *, paired: bool) -> jax.Array:
    """Approximate randomization's draws ``[B, n]``, one per key of ``jax.random.split(key, B)``.

    * ``paired=True`` (two systems scored on the same items): bool swap masks, each item's two
      entries exchanged with probability 1/2 (``jax.random.bernoulli(k, 0.5, (n,))``);
    * ``paired=False`` (two sets pooled, ``n`` rows in all): permutations of the pooled rows
      (``jax.random.permutation(k, n)``); the first ``n_a`` rows of a permutation form the
      first set's stand-in.

    Examples:
      >>> import jax
      >>> randomization_draws(jax.random.key(0), 3, 5, paired=True).shape
      (3, 5)
      >>> sorted(randomization_draws(jax.random.key(0), 2, 4, paired=False)[0].tolist())
      [0, 1, 2, 3]
    """
    keys = jax.random.split(key, int(num_resamples))
    if paired:
        return jax.vmap(lambda k: jax.random.bernoulli(k, 0.5, (int(n),)))(keys)
    return jax.vmap(lambda k: jax.random.permutation(k, int(n)))(keys)


def resampling_p_values(difference: Any, null_differences: Any, *, tolerance: float = 0.0) -> Any:
    """Two-sided p-values of "no difference" from resampled differences.

    ``p_ij = (1 + #{b : |null_bij| >= |difference_ij| - tolerance}) / (B + 1)``, and 1 on the
    diagonal. ``null_differences [B, S, S]`` are the differences under "no difference": the
    bootstrap's resampled differences centred on their mean, or the differences of the
    randomization draws. NumPy inputs are counted on the host in their own precision (float64
    stays float64) and give NumPy; JAX inputs give JAX.

    Examples:
      >>> import numpy as np
      >>> null = np.array([[[0.0, 0.1], [-0.1, 0.0]], [[0.0, 0.5], [-0.5, 0.0]], [[0.0, -0.2], [0.2, 0.0]]])
      >>> resampling_p_values(np.array([[0.0, 0.3], [-0.3, 0.0]]), null).tolist()
      [[1.0, 0.5], [0.5, 1.0]]
    """
    xp = np if isinstance(null_differences, np.ndarray) else jnp
    extreme = xp.sum(xp.abs(null_differences) >= xp.abs(difference) - tolerance, axis=0)
    p = (1.0 + extreme) / (null_differences.shape[0] + 1.0)
    return xp.where(xp.eye(p.shape[-1], dtype=bool), 1.0, p)


#: the family-wise correction of the pairwise p-values of a comparison of more than two systems


def resampling_signature(metric: str, *, key: Any, method: str, num_resamples: int, confidence: float,
                         **settings: Any) -> str:
    """The signature (:mod:`jaxmetrics.results`) of a result computed by resampling: ``metric``,
    the resampling ``method`` (``bca``, ``percentile``, ``subsample``, ``bootstrap``,
    ``randomization``), ``num_resamples``, ``confidence``, the ``key`` (:func:`jaxmetrics.results.key_id`)
    and the other ``settings`` its numbers depend on; shared by :func:`confidence_interval`,
    :func:`subsample_interval`, :func:`compare_systems` and :func:`~jaxmetrics.mauve.compare_mauve`.

    Examples:
      >>> import jax
      >>> resampling_signature("confidence-interval", key=jax.random.key(3), method="bca", num_resamples=1000,
      ...                      confidence=0.95, statistic="mean")   # doctest: +ELLIPSIS
      'metric:confidence-interval|jaxmetrics:...|confidence:0.95|key:0-3|method:bca|num_resamples:1000|statistic:mean'
    """
    return make_signature(metric, key=key_id(key), method=method, num_resamples=num_resamples,
                          confidence=confidence, **settings)


def _statistic_name(statistic: Callable) -> str:
    """A statistic's name for a signature (``jnp.mean`` -> ``'mean'``; a lambda -> ``'lambda'``)."""
    name = getattr(statistic, "__name__", None) or type(statistic).__name__
    return "lambda" if name == "<lambda>" else name


def confidence_interval(statistic: Callable[..., Any], *samples: Any, key: jax.Array,
                        num_resamples: int = 1000, confidence: float = 0.95, method: str = "bca",
                        batch_size: int | None = None) -> Interval:
    """Bootstrap confidence interval of ``statistic(*samples)``.

    Resample ``b = 1 .. B`` draws, for every sample ``s`` independently, ``n_s`` item indices
    uniformly with replacement (``jax.random.randint`` with the key ``split(key, S)[s]``), and
    evaluates ``θ*_b = statistic(*resampled)``, all ``B`` in one ``jax.lax.map`` over vmapped
    chunks of ``batch_size`` resamples. The interval is the percentile or the BCa interval
    (module docstring) of the ``θ*_b``, elementwise when the statistic returns an array.

    Args:
      statistic: a traceable function of the samples returning a scalar or a fixed-shape array,
        e.g. ``jnp.mean`` or ``lambda d: jnp.exp(d["nll"].sum() / d["count"].sum())``.
      *samples: one or more pytrees of arrays; every array of a sample has the sample's ``n_s``
        items along its first axis (``n_s >= 2``).
      key: a ``jax.random`` key (required).
      num_resamples: ``B``, at least ``(1 + confidence) / (1 - confidence)`` (39 at 0.95; fewer make the end points the extreme resamples: :func:`jaxmetrics._validation.check_resampling`) (1,000 is usual; coverage of a 95 % interval needs a few thousand
        for the third digit).
      confidence: the nominal coverage in ``[0.5, 1)``.
      method: ``'bca'`` (default) or ``'percentile'``. BCa costs ``Σ n_s`` more evaluations
        (the jackknife); for an expensive statistic on many items use ``'percentile'``.
      batch_size: resamples (and jackknife rows) per vmapped chunk; ``None``: as many as keep a
        chunk's gathered inputs under :data:`CHUNK_ELEMENTS` elements.

    Returns:
      :class:`Interval`.

    Raises:
      ValueError: a sample without arrays, with a scalar array, with fewer than 2 items or with
        arrays of different lengths; a bad ``num_resamples``, ``confidence`` or ``method``; a
        statistic that is not finite on the data (when the data are concrete).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jnp.arange(100.0)
      >>> ci = confidence_interval(jnp.mean, x, key=jax.random.key(0))
      >>> float(ci.value), bool(ci.low < 49.5 < ci.high), ci.method
      (49.5, True, 'bca')
      >>> bool(abs(ci.standard_error - x.std(ddof=1) / 10) < 0.4)   # the mean's standard error
      True

      Two samples are resampled independently; here the difference of their means:

      >>> y = jnp.arange(50.0) + 10
      >>> d = confidence_interval(lambda a, b: a.mean() - b.mean(), x, y, key=jax.random.key(1),
      ...                         method="percentile")
      >>> float(d.value), bool(d.low < 15.0 < d.high)
      (15.0, True)
    """
    check_choice(method, "method", METHODS)
    B, conf, names, sizes, value = _checked(statistic, samples, key, num_resamples, confidence)

    indices = bootstrap_indices(jax.random.split(key, len(samples)), B, sizes)

    def one(idx):
        return jnp.asarray(statistic(*(_take(s, i) for s, i in zip(samples, idx))))

    boot = jax.lax.map(one, indices, batch_size=_chunk(batch_size, samples, B))   # [B, ...]
    alpha = (1.0 - conf) / 2.0
    ordered = jnp.sort(boot, axis=0)
    if method == "percentile":
        q_lo = jnp.full(value.shape, alpha)
        q_hi = jnp.full(value.shape, 1.0 - alpha)
    else:
        below = jnp.mean(boot < value, axis=0) + 0.5 * jnp.mean(boot == value, axis=0)
        z0 = ndtri(jnp.clip(below, 0.5 / B, 1.0 - 0.5 / B))
        dev = [jnp.mean(j, axis=0) - j for j in _jackknife(statistic, samples, sizes, batch_size)]
        num = sum(jnp.sum(d ** 3, axis=0) for d in dev)
        den = sum(jnp.sum(d ** 2, axis=0) for d in dev)
        accel = jnp.where(den > 0, num / (6.0 * jnp.maximum(den, 1e-300) ** 1.5), 0.0)

        def level(z):
            t = z0 + z
            return ndtr(z0 + t / (1.0 - accel * t))

        q_lo, q_hi = level(ndtri(alpha)), level(ndtri(1.0 - alpha))
    low, high = _quantile_each(ordered, q_lo), _quantile_each(ordered, q_hi)
    se = jnp.std(boot, axis=0, ddof=1)
    sig = resampling_signature("confidence-interval", key=key, method=method, num_resamples=B, confidence=conf,
                               statistic=_statistic_name(statistic))
    return Interval(value=value, low=low, high=high, standard_error=se, bias=jnp.mean(boot, axis=0) - value,
                    confidence=conf, method=method, num_resamples=B, signature=sig)


def subsample_interval(statistic: Callable[..., Any], *samples: Any, key: jax.Array, num_resamples: int = 1000,
                       confidence: float = 0.95, fraction: float = 0.75,
                       batch_size: int | None = None) -> Interval:
    """Confidence interval of ``statistic(*samples)`` by subsampling without replacement.

    For statistics that a bootstrap resample distorts because it repeats items (a repeated text
    adds no new n-gram to distinct-n; a repeated embedding is a zero-distance neighbour inside
    Mark-Evaluate's k-NN balls), the resamples are subsets: for ``b = 1 .. B`` and every sample
    ``s`` independently, ``m_s = round(fraction · n_s)`` distinct items drawn uniformly without
    replacement (kept in their input order; ``jax.random.permutation`` with the keys
    ``split(split(key, S)[s], B)``), and ``θ*_b = statistic(*subsets)``, all ``B`` in one
    ``jax.lax.map`` over vmapped chunks of ``batch_size``.

    The interval: with ``δ_b = θ*_b - mean_b θ*_b`` (the subsample values centred on their own
    mean), ``f = Σ m_s / Σ n_s`` and the scale ``c = sqrt(f / (1 - f))``,

        low  = θ̂ + c · quantile(δ, (1 - confidence) / 2)
        high = θ̂ + c · quantile(δ, (1 + confidence) / 2)

    ``c`` is the finite-population correction of sampling without replacement: a mean of ``m``
    of ``n`` items varies around the mean of all ``n`` with variance ``σ² (1/m - 1/n)``, which
    ``c²`` turns into ``σ² / n``, the variance of the estimate itself (it is the delete-d
    jackknife's factor with ``d = n - m``; ``c = 1`` for half-samples, ``sqrt(3)`` for the
    default ``fraction = 0.75``). The quantiles keep their side (as the percentile bootstrap's
    do), so a skewed score such as a Mark-Evaluate accuracy, a monotone function of a count,
    keeps its skew. Centring on the subsamples' mean rather than on ``θ̂`` leaves out the shift
    between the estimator's expected values at ``m`` and at ``n`` items (distinct-n, Self-BLEU
    and Mark-Evaluate depend on the set size): the interval covers the estimator's expected
    value **at the given sizes** ``n_s``.

    The fraction: for a mean every fraction gives the right spread; for a statistic whose
    value depends on the set size, the spread of size-``m`` subsets, rescaled, is not exactly
    the spread at ``n``. Measured on real text (docs/diversity.md, docs/mark_evaluate.md),
    half-samples under-estimate distinct-n's standard error by about 15 % and the delete-1
    jackknife over-estimates it by 8-21 % (Efron-Stein); ``0.75`` gives 1.00-1.06 of the true
    spread for distinct-n and 1.06-1.12 for Self-BLEU, and covers Mark-Evaluate's scores at
    94-99 %. Check a new statistic by coverage.

    Args:
      statistic: a traceable function of the samples returning a scalar or a fixed-shape array.
      *samples: one or more pytrees of arrays, every array of a sample with the sample's ``n_s``
        items along its first axis.
      key: a ``jax.random`` key (required).
      num_resamples: number of subsamples ``B``, at least ``(1 + confidence) / (1 - confidence)`` (39 at 0.95; fewer make the end points the extreme resamples: :func:`jaxmetrics._validation.check_resampling`).
      confidence: the nominal coverage in ``[0.5, 1)``.
      fraction: subsample size as a fraction of each sample, in ``(0, 1)``; every subsample
        must keep at least 1 item and leave out at least 1 (``1 <= m_s <= n_s - 1``).
      batch_size: subsamples per vmapped chunk (``None``: as :func:`confidence_interval`).

    Returns:
      :class:`Interval` with ``method='subsample'``: ``value = θ̂``, ``low``, ``high`` as
      above, ``standard_error = c · std(θ*)`` (the estimate's standard error) and
      ``bias = mean(θ*) - θ̂`` (the shift from ``n_s`` to ``m_s`` items, not a bias at ``n_s``).

    Raises:
      ValueError: a sample without arrays, with a scalar array, with fewer than 2 items or with
        arrays of different lengths; a bad ``num_resamples``, ``confidence`` or ``fraction``
        (naming the sample whose subsample would be empty or whole); a statistic that is not
        finite on the data (when the data are concrete).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> heights = jnp.linspace(150.0, 190.0, 200)
      >>> ci = subsample_interval(jnp.mean, heights, key=jax.random.key(0))
      >>> float(ci.value), bool(ci.low < 170.0 < ci.high), ci.method
      (170.0, True, 'subsample')
      >>> se = heights.std(ddof=1) / jnp.sqrt(200.0)                 # the mean's standard error
      >>> bool(abs(ci.standard_error - se) < 0.2 * se)
      True
    """
    frac = check_open_unit(fraction, "fraction")
    B, conf, names, sizes, value = _checked(statistic, samples, key, num_resamples, confidence)
    subs = tuple(int(round(frac * n)) for n in sizes)
    for n, m, name in zip(sizes, subs, names):
        if not 1 <= m <= n - 1:
            raise ValueError(f"fraction: {frac} of the {n} items of {name} gives a subsample of {m}; it must keep "
                             f"at least 1 item and leave out at least 1")

    keys = tuple(jax.random.split(k, B) for k in jax.random.split(key, len(samples)))

    def one(ks):
        parts = tuple(_take(s, jnp.sort(jax.random.permutation(k, n)[:m]))
                      for s, k, n, m in zip(samples, ks, sizes, subs))
        return jnp.asarray(statistic(*parts))

    vals = jax.lax.map(one, keys, batch_size=_chunk(batch_size, samples, B))   # [B, ...]
    f = sum(subs) / sum(sizes)
    scale = float(np.sqrt(f / (1.0 - f)))
    center = jnp.mean(vals, axis=0)
    ordered = jnp.sort(vals - center, axis=0)
    alpha = (1.0 - conf) / 2.0
    q = lambda level: _quantile_each(ordered, jnp.full(value.shape, level))
    low, high = value + scale * q(alpha), value + scale * q(1.0 - alpha)
    sig = resampling_signature("confidence-interval", key=key, method="subsample", num_resamples=B, confidence=conf,
                               statistic=_statistic_name(statistic), fraction=frac)
    return Interval(value=value, low=low, high=high, standard_error=scale * jnp.std(vals, axis=0, ddof=1),
                    bias=center - value, confidence=conf, method="subsample", num_resamples=B, signature=sig)
