"""Comparisons of systems by resampling: :func:`compare_systems` (paired bootstrap or approximate
randomization), Holm's correction of a leaderboard's pairwise p-values (:func:`holm_adjust`) and
the results they return; see :mod:`jaxmetrics.confidence`."""
from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_choice, check_int, check_key, check_resampling, concrete_value
from jaxmetrics.results import Result, static_field
from jaxmetrics.confidence.intervals import (_chunk, _num_items, _statistic_name, bootstrap_indices,
                                             randomization_draws, resampling_p_values, resampling_signature)

#: ``compare_systems(method=)``: the paired bootstrap or approximate randomization
COMPARISON_METHODS = ("bootstrap", "randomization")

HOLM = "holm"


def holm_adjust(p_values: Any) -> Any:
    """Holm's step-down adjustment of a family of p-values: reject the hypotheses whose adjusted
    p-value is below ``α`` and the probability of rejecting any true one is at most ``α``, whatever
    the dependence between the tests (the family-wise error rate; Holm 1979).

    With the ``m`` p-values in ascending order ``p_(1) <= ... <= p_(m)``, the ``i``-th adjusted
    p-value is ``max_{j <= i} min(1, (m - j + 1) p_(j))``, returned in the input's order (one p-value
    gives itself). A leaderboard of ``S`` systems tests ``m = S (S - 1) / 2`` pairs:
    :func:`compare_systems`, :func:`~jaxmetrics.mauve.compare_mauve` and ``jaxmetrics compare``
    adjust their pairwise p-values with it when ``S > 2``.

    Args:
      p_values: a 1-D family of p-values in ``[0, 1]``, or a square ``[S, S]`` matrix of pairwise
        p-values (``S >= 2``; the family is its ``S (S - 1) / 2`` pairs above the diagonal, read
        there; the result is symmetric with 1 on the diagonal). NumPy (or a list) gives NumPy,
        JAX gives JAX (traceable).

    Returns:
      the adjusted p-values, of the input's shape.

    Raises:
      ValueError: an empty family, a shape that is neither 1-D nor square, a value outside
        ``[0, 1]`` or NaN (when concrete).

    Examples:
      >>> holm_adjust([0.01, 0.04, 0.03, 0.2]).tolist()   # ascending: 0.01·4, 0.03·3, 0.04·2, 0.2·1
      [0.04, 0.09, 0.09, 0.2]
      >>> holm_adjust(np.array([[1.0, 0.01, 0.02], [0.01, 1.0, 0.5], [0.02, 0.5, 1.0]])).tolist()
      [[1.0, 0.03, 0.04], [0.03, 1.0, 0.5], [0.04, 0.5, 1.0]]
    """
    xp = jnp if isinstance(p_values, jax.Array) else np
    p = p_values if xp is jnp else np.asarray(p_values, np.float64)
    shape = tuple(p.shape)
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] >= 2:
        rows, cols = np.triu_indices(shape[0], 1)
        family = p[rows, cols]
    elif len(shape) == 1 and shape[0] >= 1:
        family = p
    else:
        raise ValueError(f"p_values: expected a non-empty 1-D family or a square [S, S] matrix (S >= 2), got shape {shape}")
    bad = concrete_value(lambda v: jnp.sum(~((v >= 0) & (v <= 1))), family)
    if bad is not None and int(bad):
        raise ValueError("p_values: every p-value must be in [0, 1] (no NaN)")
    m = family.shape[0]
    order = xp.argsort(family, stable=True) if xp is jnp else np.argsort(family, kind="stable")
    scaled = (m - xp.arange(m)) * family[order]
    running = jax.lax.cummax(scaled, axis=0) if xp is jnp else np.maximum.accumulate(scaled)
    adjusted = xp.minimum(running, 1.0)[xp.argsort(order)]
    if len(shape) == 1:
        return adjusted
    if xp is jnp:
        return jnp.ones(shape, p.dtype).at[rows, cols].set(adjusted).at[cols, rows].set(adjusted)
    out = np.ones(shape)
    out[rows, cols] = out[cols, rows] = adjusted
    return out


class SignificantDifference(Result):
    """One significant pair of :meth:`SystemComparison.significant`.

    Attributes:
      better, worse: the systems' names, the higher-scoring first (static).
      p_value: the pair's raw p-value (static).
      adjusted_p_value: its p-value after the comparison's ``correction`` (Holm's with more than two
        systems, else the raw one), which decided it is significant (static).
    """

    better: str = static_field()
    worse: str = static_field()
    p_value: float = static_field()
    adjusted_p_value: float | None = static_field(default=None)


class SystemComparison(Result):
    """Pairwise significance of the differences between systems scored on the same items
    (:func:`compare_systems`). Entry ``[i, j]`` compares system ``i`` with system ``j``.

    Attributes:
      scores: ``[S]`` each system's score on the items as given.
      difference: ``[S, S]`` ``scores[i] - scores[j]``.
      low, high: ``[S, S]`` the paired-bootstrap percentile interval of the difference.
      p_value: ``[S, S]`` two-sided raw p-value of "no difference" (1 on the diagonal), each pair
        tested on its own.
      adjusted_p_value: ``[S, S]`` the p-values after ``correction``: Holm's step-down adjustment
        over the ``S (S - 1) / 2`` pairs (:func:`holm_adjust`) when more than two systems are
        compared, so that the chance of any false "significant" in the whole table is at most the
        level; equal to ``p_value`` for two systems. They decide :meth:`significant`.
      names: the systems' names, in order (static).
      method: ``'bootstrap'`` or ``'randomization'``, how the p-values were computed (static).
      confidence: the intervals' nominal coverage (static).
      num_resamples: resamples (bootstrap) or permutations (randomization) (static).
      correction: ``'holm'`` (more than two systems) or ``'none'`` (two) (static).
      signature: what the numbers depend on (static, not in the repr; :mod:`jaxmetrics.results`):
        ``metric:compare-systems`` with the ``statistic``'s name, ``method``, ``num_resamples``,
        ``confidence``, ``correction`` and the ``key`` (``metric:compare-mauve`` and its MAUVE
        settings for :func:`~jaxmetrics.mauve.compare_mauve`).
    """

    scores: jax.Array
    difference: jax.Array
    low: jax.Array
    high: jax.Array
    p_value: jax.Array
    adjusted_p_value: jax.Array
    names: tuple[str, ...] = static_field()
    method: str = static_field()
    confidence: float = static_field()
    num_resamples: int = static_field()
    correction: str = static_field()
    signature: str = static_field(default="", repr=False, kw_only=True)

    def significant(self, level: float = 0.05) -> list[SignificantDifference]:
        """A :class:`SignificantDifference` for every pair whose adjusted p-value (``adjusted_p_value``,
        Holm's with more than two systems) is below ``level``."""
        out = []
        for i, a in enumerate(self.names):
            for j, b in enumerate(self.names):
                if i < j and float(self.adjusted_p_value[i, j]) < level:
                    better, worse = (a, b) if float(self.difference[i, j]) > 0 else (b, a)
                    out.append(SignificantDifference(better=better, worse=worse, p_value=float(self.p_value[i, j]),
                                                     adjusted_p_value=float(self.adjusted_p_value[i, j])))
        return out


def pairwise_correction(num_systems: int) -> str:
    """The correction a comparison of ``num_systems`` systems names for its pairwise p-values:
    ``'holm'`` (:func:`holm_adjust` over the ``S (S - 1) / 2`` pairs) for more than two systems,
    ``'none'`` for two (one pair, which Holm's adjustment leaves as it is).
    :func:`compare_systems` and :func:`~jaxmetrics.mauve.compare_mauve` record it.

    Examples:
      >>> pairwise_correction(2), pairwise_correction(4)
      ('none', 'holm')
    """
    return HOLM if check_int(num_systems, "num_systems", minimum=2) > 2 else "none"


def compare_systems(statistic: Callable[[Any], Any], systems: Any, *, key: jax.Array, num_resamples: int = 1000,
                    method: str = "bootstrap", confidence: float = 0.95,
                    batch_size: int | None = None) -> SystemComparison:
    """Paired significance of score differences between systems evaluated on the same items.

    Every system has one entry per item (its per-pair F1 against the shared references, a
    document's NLL and token count, ...), item ``i`` of every system belonging together. With
    ``θ_s = statistic(data_s)`` and ``Δ_ij = θ_i - θ_j``:

    * ``method="bootstrap"`` (the paired bootstrap, as sacrebleu's ``paired-bs``): ``B``
      resamples of the item indices, shared by all systems, give ``Δ*_ij``; the interval is their
      percentile interval and ``p_ij = (1 + #{|Δ*_ij - mean Δ*_ij| >= |Δ_ij|}) / (B + 1)`` (the
      resampled differences, centred, as the distribution under "no difference");
    * ``method="randomization"`` (approximate randomization): ``B`` draws swap each item's two
      entries with probability 1/2, and ``p_ij = (1 + #{|Δ^r_ij| >= |Δ_ij|}) / (B + 1)``; the
      interval is still the paired bootstrap's.

    Every resample of every pair is one vmapped computation (chunked by ``batch_size``).

    Args:
      statistic: a traceable function of one system's data returning a scalar (``jnp.mean``).
      systems: ``{name: data}`` (or a sequence, named ``system0``, ...) of at least 2 systems; the
        data of every system is a pytree with the same structure and shapes, ``n >= 2`` items
        along the first axis.
      key: a ``jax.random`` key (required).
      num_resamples: ``B``, at least ``(1 + confidence) / (1 - confidence)`` (39 at 0.95; fewer make the end points the extreme resamples: :func:`jaxmetrics._validation.check_resampling`).
      method: ``'bootstrap'`` or ``'randomization'``.
      confidence: nominal coverage of the intervals, in ``[0.5, 1)``.
      batch_size: resamples per vmapped chunk (``None``: as :func:`confidence_interval`).

    With more than two systems the ``S (S - 1) / 2`` pairwise p-values are adjusted by Holm's
    step-down procedure (:func:`holm_adjust`; ``adjusted_p_value``, ``correction='holm'``): the raw
    ``p_value`` of a pair holds for that pair alone, the adjusted one for the whole table, and
    :meth:`SystemComparison.significant` uses the adjusted one.

    Returns:
      :class:`SystemComparison`; ``.significant(0.05)`` lists the significant pairs.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> base = jax.random.normal(jax.random.key(0), (200,))
      >>> out = compare_systems(jnp.mean, {"a": base + 0.3, "b": base, "c": base + 0.01 * jnp.sin(base)},
      ...                       key=jax.random.key(1))
      >>> out.names, [(d.better, d.worse) for d in out.significant(0.05)]
      (('a', 'b', 'c'), [('a', 'b'), ('a', 'c')])
      >>> bool(out.p_value[1, 2] > 0.05)
      True
    """
    if not callable(statistic):
        raise TypeError(f"statistic: expected a function of one system's data, got {type(statistic).__name__}")
    if isinstance(systems, dict):
        names, datas = tuple(str(k) for k in systems), list(systems.values())
    elif isinstance(systems, (list, tuple)):
        names, datas = tuple(f"system{i}" for i in range(len(systems))), list(systems)
    else:
        raise TypeError(f"systems: expected a dict {{name: data}} or a sequence, got {type(systems).__name__}")
    if len(datas) < 2:
        raise ValueError(f"systems: need at least 2 systems to compare, got {len(datas)}")
    check_key(key)
    B, conf = check_resampling(num_resamples, confidence)
    check_choice(method, "method", COMPARISON_METHODS)
    n = _num_items(datas[0], f"systems[{names[0]!r}]")
    first = jax.tree.structure(datas[0])
    for name, d in zip(names, datas):
        if jax.tree.structure(d) != first or _num_items(d, f"systems[{name!r}]") != n or \
                [np.shape(x) for x in jax.tree.leaves(d)] != [np.shape(x) for x in jax.tree.leaves(datas[0])]:
            raise ValueError(f"systems[{name!r}]: every system needs the same items (pytree structure and shapes) as "
                             f"{names[0]!r}: they are compared item by item")
    stacked = jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *datas)   # leaves [S, n, ...]
    S = len(datas)
    per_system = jax.vmap(lambda d: jnp.asarray(statistic(d)))
    scores = per_system(stacked)
    if scores.shape != (S,):
        raise ValueError(f"statistic: must return a scalar per system, got shape {scores.shape[1:]}")
    bad = concrete_value(lambda v: jnp.sum(~jnp.isfinite(v)), scores)
    if bad is not None and int(bad):
        raise ValueError("statistic: not finite on a system's data as given")
    diff = scores[:, None] - scores[None, :]
    k_boot, k_perm = jax.random.split(key)
    idx, = bootstrap_indices([k_boot], B, [n])
    chunk = _chunk(batch_size, tuple(datas), B)
    boot = jax.lax.map(lambda i: per_system(jax.tree.map(lambda x: jnp.take(x, i, axis=1), stacked)), idx,
                       batch_size=chunk)                                          # [B, S]
    bdiff = boot[:, :, None] - boot[:, None, :]                                   # [B, S, S]
    alpha = (1.0 - conf) / 2.0
    low, high = (jnp.quantile(bdiff, q, axis=0) for q in (alpha, 1.0 - alpha))
    if method == "bootstrap":
        null = bdiff - jnp.mean(bdiff, axis=0)
    else:
        ii, jj = np.triu_indices(S, 1)

        def permuted(swap):
            def pair(i, j):
                pick = lambda x: jnp.where(swap.reshape((n,) + (1,) * (x.ndim - 2)), x[j], x[i])
                unpick = lambda x: jnp.where(swap.reshape((n,) + (1,) * (x.ndim - 2)), x[i], x[j])
                return jnp.asarray(statistic(jax.tree.map(pick, stacked))) - \
                    jnp.asarray(statistic(jax.tree.map(unpick, stacked)))
            return jax.vmap(pair)(jnp.asarray(ii), jnp.asarray(jj))               # [pairs]

        swaps = randomization_draws(k_perm, B, n, paired=True)
        rdiff = jax.lax.map(permuted, swaps, batch_size=chunk)                    # [B, pairs]
        null = jnp.zeros((B, S, S), rdiff.dtype).at[:, ii, jj].set(rdiff).at[:, jj, ii].set(rdiff)
    p = resampling_p_values(diff, null)
    adjusted, correction = holm_adjust(p), pairwise_correction(S)
    sig = resampling_signature("compare-systems", key=key, method=method, num_resamples=B, confidence=conf,
                               correction=correction, statistic=_statistic_name(statistic))
    return SystemComparison(scores=scores, difference=diff, low=low, high=high, p_value=p, adjusted_p_value=adjusted,
                            names=names, method=method, confidence=conf, num_resamples=B, correction=correction,
                            signature=sig)
