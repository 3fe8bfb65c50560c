"""MAUVE as a loss that raises the MAUVE a fresh ``compute_mauve`` reports.

:func:`~jaxmetrics.mauve.training.soft.mauve_loss` is ``1 - soft MAUVE`` on *one* codebook. Minimising it
against a codebook that stays fixed (for instance k-means fitted on P alone) can drive the
loss to 0 while the MAUVE that :func:`~jaxmetrics.mauve.compute_mauve` reports -- which fits a
new codebook on ``P ∪ Q`` -- does not move: a codebook fitted on P is blind to the directions
in which only Q varies (its PCA keeps P's directions), and inside a cell the loss is flat, so
Q can match the cell masses without matching P. :func:`fit_to_mauve` is the recipe under which
the fresh MAUVE rises too:

1. **Refit on the union.** Every ``refit_every`` steps the codebook is refitted the way
   ``compute_mauve`` fits its own: rows L2-normalised, PCA on ``P ∪ Q`` to
   ``kmeans_explained_var``, k-means with ``num_buckets`` clusters on ``P ∪ Q`` (one cheap
   restart, a fresh key each time). Wherever Q has drifted away from P, the refitted codebook
   has a Q-only cell, and the loss pushes Q out of it.
2. **Relative temperature, annealed.** ``tau_t = s * r_t`` with ``s`` the median squared
   distance from a centroid to its nearest other centroid (in the codebook's projected space,
   recomputed at each refit) and ``r_t`` geometric from ``temperature_start`` to
   ``temperature_end`` over the steps: broad soft cells first (far points feel every cell),
   nearly hard ones at the end (soft MAUVE close to hard MAUVE).
3. **Smoothed histograms.** ``pseudocount = 0.5`` (Krichevsky-Trofimov), as
   :func:`~jaxmetrics.mauve.training.soft.mauve_loss`, so cells one side has not reached still pass a
   gradient.

The trained object is any pytree ``params`` with ``generator(params) -> q_features [n_q, d]``
(the default generator is the identity: ``params`` is the point cloud itself); the step is
``jax.jit``-compiled once and steps with optax (``optax.adam(learning_rate)`` by default).
"""
from __future__ import annotations

import dataclasses

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxmetrics import _validation as V
from jaxmetrics.mauve.pipeline.compute import compute_mauve
from jaxmetrics.mauve.sizes import resolve_num_buckets
from jaxmetrics.mauve.engine import apply_projection
from jaxmetrics.mauve.quantize.quantizers import KMeansQuantizer, _quantizer_settings
from jaxmetrics.mauve.training.soft import CentroidQuantizer, hard_mauve, mauve_loss
from jaxmetrics.results import Result, key_id, make_signature, static_field

__all__ = ["MauveFitResult", "fit_to_mauve"]


class MauveFitResult(Result):
    """Result of :func:`fit_to_mauve`: the trained parameters and the training history.

    Attributes:
      params: the trained parameters (same pytree structure as the initial ones).
      q_features: ``[n_q, d]`` ``generator(params)`` after training.
      mauve_before: float, fresh ``compute_mauve(P, Q).mauve`` before training.
      mauve_after: float, the same after training.
      loss: ``[num_steps]`` float32, ``1 - soft MAUVE`` at each step (on that step's codebook
        and temperature, before the update).
      temperature: ``[num_steps]`` float, the absolute temperature ``tau_t`` of each step.
      eval_steps: ``[C]`` int, the steps at which MAUVE was evaluated (0 = before training,
        ``num_steps`` = after).
      fresh_mauve: ``[C]`` fresh ``compute_mauve(P, Q, seed=seed).mauve`` at ``eval_steps``
        (a new k-means codebook on ``P ∪ Q``, with ``compute_mauve``'s default restarts).
      codebook_mauve: ``[C]`` hard MAUVE on the codebook the loss was using at that step (what
        the loss sees; compare with ``fresh_mauve``).
      num_buckets: ``k`` (static).
      num_refits: how many codebooks were fitted (static).
      signature: what the numbers depend on (static, not in the repr; :mod:`jaxmetrics.results`):
        ``metric:mauve-fit``, the ``key`` and ``seed``, ``num_buckets`` as given, the quantizer's
        settings, ``num_steps``, ``refit_every``, ``eval_every``, the temperatures, ``pseudocount``,
        the optimizer (``adam`` with its ``learning_rate``, or a given one by its type) and the
        generator by its name.
    """

    params: Any
    q_features: jax.Array
    mauve_before: float
    mauve_after: float
    loss: np.ndarray
    temperature: np.ndarray
    eval_steps: np.ndarray
    fresh_mauve: np.ndarray
    codebook_mauve: np.ndarray
    num_buckets: int = static_field()
    num_refits: int = static_field()
    signature: str = static_field(default="", repr=False)


def _fit_signature(key, generator, optimizer, learning_rate, quantizer, **settings: Any) -> str:
    """:class:`MauveFitResult`'s signature (``settings``: the other arguments of :func:`fit_to_mauve`)."""
    gen = "identity" if generator is None else (getattr(generator, "__qualname__", None) or type(generator).__name__)
    opt = dict(optimizer="adam", learning_rate=learning_rate) if optimizer is None else \
        dict(optimizer=type(optimizer).__name__)
    return make_signature("mauve-fit", key=key_id(key), generator=gen.replace("<", "").replace(">", ""), **opt,
                          **_quantizer_settings(quantizer), **settings)


def _identity(params: Any) -> Any:
    return params


def _median_neighbour_sq_distance(centroids: jax.Array) -> float:
    """``median_j min_{l != j} ||c_j - c_l||^2`` (the temperature's unit)."""
    c = np.asarray(centroids, np.float64)
    d2 = np.sum((c[:, None, :] - c[None, :, :]) ** 2, axis=-1)
    np.fill_diagonal(d2, np.inf)
    s = float(np.median(np.min(d2, axis=1)))
    if not np.isfinite(s) or s <= 0.0:  # coincident centroids (degenerate data): fall back to the spread
        s = float(np.mean(np.sum((c - c.mean(0)) ** 2, axis=-1))) or 1.0
    return s


def _make_step(generator: Callable[[Any], Any], opt: optax.GradientTransformation, pseudocount: float):
    def loss_fn(params, zp, pca, centroids, tau):
        zq = apply_projection(generator(params), pca)
        return mauve_loss(references=zp, candidates=zq, quantizer=CentroidQuantizer(centroids), temperature=tau,
                          pseudocount=pseudocount)

    @jax.jit
    def step(params, opt_state, zp, pca, centroids, tau):
        loss, grads = jax.value_and_grad(loss_fn)(params, zp, pca, centroids, tau)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step


#: fit_to_mauve's codebook: k-means with one restart and 50 Lloyd iterations per refit (``k`` from
#: ``num_buckets``).
FIT_QUANTIZER = KMeansQuantizer("auto", num_redo=1, max_iter=50)


def fit_to_mauve(
    params: Any,
    *,
    references: Any,
    key: jax.Array,
    generator: Callable[[Any], Any] | None = None,
    num_steps: int = 100,
    learning_rate: float = 5e-3,
    optimizer: optax.GradientTransformation | None = None,
    refit_every: int = 10,
    num_buckets: int | str = "auto",
    quantizer: KMeansQuantizer = FIT_QUANTIZER,
    temperature_start: float = 1.0,
    temperature_end: float = 0.1,
    pseudocount: float = 0.5,
    eval_every: int | None = None,
    seed: int = 25,
) -> MauveFitResult:
    """Train ``params`` so that ``Q = generator(params)`` raises a *fresh* MAUVE against P.

    This is the library's recipe for "MAUVE as a loss": the loss is
    :func:`~jaxmetrics.mauve.training.soft.mauve_loss` (``1 - soft MAUVE``) on a k-means codebook that is
    refitted on ``P ∪ Q`` every ``refit_every`` steps (``compute_mauve``'s preprocessing:
    L2-normalise, PCA to ``quantizer.explained_var`` on the union, k-means), at the temperature
    ``tau_t = s * r_start * (r_end / r_start) ** (t / (num_steps - 1))`` with ``s`` the median
    squared distance from a centroid to its nearest other centroid of the current codebook;
    see the module docstring for why each part is needed (a codebook fitted once, on P alone,
    lets the loss reach 0 while ``compute_mauve`` stays at its minimum). Success is measured
    by :func:`~jaxmetrics.mauve.compute_mauve` on a codebook fitted afresh (``seed=seed``,
    five restarts), which the training never sees.

    Args:
      params: initial parameters, any pytree; with the default ``generator`` the point cloud
        ``[n_q, d]`` itself (the candidates, Q).
      references: keyword-only, ``[n_p, d]`` target features (human text, P), fixed.
      key: ``jax.random`` key for the codebook refits (refit ``r`` uses ``fold_in(key, r)``).
      generator: ``generator(params) -> [n_q, d]`` features of Q, differentiable and jit-able
        (e.g. the output layer of a small model applied to fixed inputs); default: identity.
      num_steps: optimisation steps ``T``.
      learning_rate: Adam's step size when ``optimizer`` is not given (in feature units).
      optimizer: an optax ``GradientTransformation``; overrides ``learning_rate``.
      refit_every: steps between codebook refits on ``P ∪ Q``.
      num_buckets: ``k`` of the refitted codebooks and of the fresh evaluation (``'auto'``:
        ``max(2, round(min(n_p, n_q) / 10))``, as ``compute_mauve``); at least 2.
      quantizer: the refits' k-means settings, a ``KMeansQuantizer('auto', ...)`` (default: one
        restart, 50 Lloyd iterations, 90 % of the variance kept); its ``explained_var`` is also the
        evaluation's ``kmeans_explained_var``; its ``num_bins`` is the ``k`` of ``num_buckets``.
      temperature_start, temperature_end: ``r_start``, ``r_end`` > 0, the temperature relative
        to ``s``.
      pseudocount: ``b >= 0`` of the smoothed soft histograms.
      eval_every: also evaluate the fresh MAUVE every this many steps (``None``: before and
        after training only).
      seed: ``seed`` of the fresh ``compute_mauve`` evaluations.

    Returns:
      :class:`MauveFitResult` with the trained ``params``, ``q_features``, ``mauve_before`` /
      ``mauve_after`` and the history (``loss [T]``, ``temperature [T]``, ``eval_steps``,
      ``fresh_mauve``, ``codebook_mauve``).

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve.training.fit import fit_to_mauve
      >>> rng = np.random.default_rng(0)
      >>> p = rng.normal(size=(60, 8)).astype("float32") + 2.0
      >>> q = p[::-1] + np.eye(8, dtype="float32")[0] * 4.0   # P's rows, shifted away
      >>> r = fit_to_mauve(q, references=p, key=jax.random.key(0), num_steps=40, learning_rate=0.05)
      >>> r  # doctest: +ELLIPSIS
      MauveFitResult(params=f32[60,8], q_features=f32[60,8], mauve_before=..., loss=f32[40], ..., num_buckets=6, num_refits=4)
      >>> bool(r.mauve_before < 0.1 and r.mauve_after > 0.5)
      True
    """
    V.check_key(key)
    p = np.asarray(V.check_features(references, "references"), np.float32)
    if not isinstance(quantizer, KMeansQuantizer):
        raise TypeError(f"quantizer: expected a KMeansQuantizer, got {type(quantizer).__name__}")
    gen = _identity if generator is None else generator
    if not callable(gen):
        raise TypeError(f"generator: expected a callable generator(params) -> [n_q, d], got {type(gen).__name__}")
    num_steps = V.check_int(num_steps, "num_steps", minimum=1)
    refit_every = V.check_int(refit_every, "refit_every", minimum=1)
    if eval_every is not None:
        eval_every = V.check_int(eval_every, "eval_every", minimum=1)
    seed = V.check_int(seed, "seed")
    r_start = V.check_positive(temperature_start, "temperature_start")
    r_end = V.check_positive(temperature_end, "temperature_end")
    V.check_positive(pseudocount, "pseudocount", allow_zero=True)
    sig = _fit_signature(key, generator, optimizer, learning_rate, quantizer, num_buckets=num_buckets, seed=seed,
                         num_steps=num_steps, refit_every=refit_every, eval_every=eval_every, pseudocount=pseudocount,
                         temperature_start=r_start, temperature_end=r_end)
    if optimizer is None:
        V.check_positive(learning_rate, "learning_rate")
        optimizer = optax.adam(learning_rate)
    elif not (hasattr(optimizer, "init") and hasattr(optimizer, "update")):
        raise TypeError(f"optimizer: expected an optax GradientTransformation, got {type(optimizer).__name__}")

    gen_jit = jax.jit(gen)

    def q_of(prm) -> np.ndarray:
        q = np.asarray(gen_jit(prm))
        return np.asarray(V.check_features(q, "generator(params)", dim=p.shape[1]), np.float32)

    q = q_of(params)
    k = resolve_num_buckets(num_buckets, (p.shape[0], q.shape[0]), ("references", "generator(params)"))
    quantizer = dataclasses.replace(quantizer, num_bins=k)
    step = _make_step(gen, optimizer, float(pseudocount))

    def fresh(qf: np.ndarray) -> float:
        return float(compute_mauve(p_features=p, q_features=qf, num_buckets=k,
                                   kmeans_explained_var=quantizer.explained_var, seed=seed).mauve)

    opt_state = optimizer.init(params)
    losses = np.zeros(num_steps, np.float32)
    taus = np.zeros(num_steps, np.float64)
    eval_steps, fresh_mauve, codebook_mauve = [], [], []
    num_refits = 0
    fitted = zp = pca = scale = None

    def record(t: int, qf: np.ndarray) -> None:
        eval_steps.append(t)
        fresh_mauve.append(fresh(qf))
        codebook_mauve.append(float(hard_mauve(references=p, candidates=qf, quantizer=fitted).mauve))

    for t in range(num_steps):
        refit = t % refit_every == 0
        evaluate = t == 0 or (eval_every is not None and t % eval_every == 0)
        if t > 0 and (refit or evaluate):
            q = q_of(params)
        if refit:
            fitted = quantizer.fit(np.concatenate([q, p]), key=jax.random.fold_in(key, num_refits))
            num_refits += 1
            zp = apply_projection(p, fitted.pca)
            # the kept count is static metadata the projection does not use: zeroed, so that
            # refits keeping another count reuse the compiled step
            pca = fitted.pca.replace(num_components=0)
            scale = _median_neighbour_sq_distance(fitted.centroids)
        if evaluate:
            record(t, q)
        frac = t / (num_steps - 1) if num_steps > 1 else 1.0
        taus[t] = scale * r_start * (r_end / r_start) ** frac
        params, opt_state, loss = step(params, opt_state, zp, pca, fitted.centroids, jnp.float32(taus[t]))
        losses[t] = float(loss)
    q = q_of(params)
    record(num_steps, q)

    return MauveFitResult(params=params, q_features=jnp.asarray(q), mauve_before=fresh_mauve[0],
                          mauve_after=fresh_mauve[-1], loss=losses, temperature=taus,
                          eval_steps=np.asarray(eval_steps, np.int32), fresh_mauve=np.asarray(fresh_mauve),
                          codebook_mauve=np.asarray(codebook_mauve), num_buckets=int(k), num_refits=num_refits,
                          signature=sig)
