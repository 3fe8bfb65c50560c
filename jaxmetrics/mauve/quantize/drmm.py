"""MAUVE-DRMM: quantization by a Deep Residual Mixture Model (Hämäläinen et al., 2020).

The MAUVE paper's experiments use the DRMM as a drop-in alternative to k-means: 3 layers of 10
components (at most 1000 bins), minibatches of 64, a data-dependent initialization, raw
features, and a point's bin = its tuple of per-layer most likely components. Our reading:

* **Model.** ``L`` layers; layer ``l`` is a mixture of ``C`` Gaussians ``N(mu_lk, sigma_l^2 I)``
  with **one scale per layer** (the reference code's default "scalar sigma"). Layer 1 models
  ``r_1 = x``; a point takes its most likely component
  ``k_l = argmax_k log N(r_l; mu_lk, sigma_l^2 I) = argmin_k ||r_l - mu_lk||^2`` and layer ``l + 1``
  models the residual ``r_{l+1} = r_l - mu_{l, k_l}``. Generatively
  ``x = mu_{1,k_1} + ... + mu_{L,k_L} + noise``: ``C^L`` leaves from ``C L`` mean vectors.
* **Bins.** ``bin = sum_l k_l C^(L - l)``, the tuple ``(k_1, ..., k_L)`` read in base ``C``. The
  choice is the training E-step's (the likelihood without the mixture weights: the reference
  code's "modified E-step"); the weights ``pi_lk`` (shares of the training points) are
  reported but do not move points between bins.
* **Training: hard EM over minibatches.** Every point keeps its current path
  ``(k_1, ..., k_L)``; the model keeps the sufficient statistics of all paths (per component,
  the sum of its members' inputs and its count; per pair of layers, how often two components
  are chosen together). For each minibatch of 64: E-step of its points along the residual
  chain with the current means, their old paths swapped for the new ones in the statistics,
  then the exact M-step of every layer (each mean = the mean of its members' residuals, layers
  solved in order; "incremental EM", Neal & Hinton 1998). An epoch in which no point changes
  its path is a fixed point, and training stops there.
* **Initialization.** Layer by layer over the training points (or ``init_batch_size`` of
  them): the ``C`` means start on ``C`` distinct random residuals (every component starts on
  data) and take one Lloyd step.
* **Dead components.** As k-means does with empty clusters (faiss), a component that has no
  member at the end of an epoch takes a copy of the fullest component's mean, pushed apart from
  it by a small symmetric perturbation, so every layer keeps all its components.

Why not the reference code's optimizer (Adam, step 0.005 held for half of training, then
annealed quadratically; an M-step loss of the assigned component's log-likelihood): on
high-dimensional data Adam moves every mean by about the same amount per step whatever its
number of members, so the mean with most members reaches the centre of the data first and
then wins every point. With that optimizer (and every component started on data, and dead
components re-seeded) 99% of the points of ``N(0, I_1024)`` fell into one bin; a
Robbins-Monro (online) EM with the same step-size schedule still left whole layers with one
dominant component. The exact M-step has no step size: each mean jumps to its members'
mean, as in Lloyd's k-means, and no component falls behind. A separate variance per component
(this module's earlier version) collapses too: one broad component's log-determinant wins
every point in high dimension.

Other deviations: the reference code also feeds the previous layers' one-hot choices to each
layer as discrete inputs (a layer's choice can depend on the previous ones); we leave that out.
Inputs are centred and divided by their root-mean-square coordinate.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics._ops import PRECISION, squared_distances
from jaxmetrics.mauve.quantize.quantizers import register_quantizer
from jaxmetrics.results import Result, static_field

__all__ = ["DRMMLogProbs", "DRMMSummary", "drmm_layer_log_probs", "DRMMQuantizer", "FittedDRMMQuantizer"]

_LOG_2PI = math.log(2.0 * math.pi)
_MIN_LOG_SIGMA = math.log(1e-4)


class DRMMLogProbs(Result):
    """Per-layer log-probabilities along the residual chain (:func:`drmm_layer_log_probs`).

    Attributes:
      log_probs: ``[L, n, C]`` ``log pi_lk + log N(r_l; mu_lk, sigma_lk^2)`` of every point
        ``n`` under every component ``k`` of every layer ``l``.
      components: ``[L, n]`` int32, the most likely component of each layer (the hard path).
    """

    log_probs: jax.Array
    components: jax.Array


class DRMMSummary(Result):
    """How a fitted DRMM spreads a set of points over its bins (:meth:`FittedDRMMQuantizer.summarize`).

    Attributes:
      component_counts: ``[L, C]`` int32, points whose layer-``l`` choice is component ``k``.
      num_points: number of points summarized (static).
      num_bins: ``C^L`` (static).
      num_occupied_bins: bins holding at least one point (static).
      largest_bin_fraction: fraction of the points in the fullest bin (static).
      components_used: per layer, the number of components chosen by at least one point (static).
    """

    component_counts: jax.Array
    num_points: int = static_field()
    num_bins: int = static_field()
    num_occupied_bins: int = static_field()
    largest_bin_fraction: float = static_field()
    components_used: tuple = static_field()


def drmm_layer_log_probs(means: jax.Array, log_sigma: jax.Array, logits: jax.Array, x: jax.Array) -> DRMMLogProbs:
    """Run the residual chain: ``log pi_lk + log N(r_l; mu_lk, sigma_lk^2 I)`` for every layer.

    Args:
      means: ``[L, C, d]``.
      log_sigma: log standard deviations, broadcastable to ``[L, C, d]``: ``[L, 1, 1]`` for one
        scale per layer (the fitted DRMM), ``[L, C, 1]`` per component, ``[L, C, d]`` diagonal.
      logits: ``[L, C]`` mixture logits (``pi_l = softmax(logits_l)``).
      x: ``[n, d]``.

    Returns:
      :class:`DRMMLogProbs` with ``log_probs [L, n, C]`` and ``components [L, n]`` int32, where
      ``components[l]`` is the most likely component of layer ``l`` and
      ``r_{l+1} = r_l - means[l, components[l]]`` (residuals under ``stop_gradient``).

    Examples:
      >>> import jax.numpy as jnp
      >>> means = jnp.array([[[0.0], [10.0]], [[-1.0], [1.0]]])  # L=2, C=2, d=1
      >>> out = drmm_layer_log_probs(means, jnp.zeros((2, 1, 1)), jnp.zeros((2, 2)), jnp.array([[11.0]]))
      >>> out
      DRMMLogProbs(log_probs=f32[2,1,2], components=i32[2,1])
      >>> out.components[:, 0].tolist()  # 11 -> component 1 (mean 10), residual 1 -> component 1 (mean 1)
      [1, 1]
    """
    log_sigma = jnp.broadcast_to(jnp.maximum(log_sigma, _MIN_LOG_SIGMA), means.shape)
    log_w = jax.nn.log_softmax(logits, axis=-1)

    def layer(r, params):
        mu, ls, lw = params  # [C, d], [C, d], [C]
        inv_var = jnp.exp(-2.0 * ls)
        # sum_d (r - mu)^2 / var expanded as three products (no [n, C, d] temporary).
        quad = (jnp.matmul(r * r, inv_var.T, precision=PRECISION)
                - 2.0 * jnp.matmul(r, (mu * inv_var).T, precision=PRECISION) + jnp.sum(mu * mu * inv_var, axis=-1))
        lp = lw - 0.5 * jnp.maximum(quad, 0.0) - jnp.sum(ls, axis=-1) - 0.5 * r.shape[-1] * _LOG_2PI
        k = jnp.argmax(lp, axis=-1).astype(jnp.int32)
        r_next = jax.lax.stop_gradient(r - mu[k])
        return r_next, (lp, k)

    _, (lp, ks) = jax.lax.scan(layer, x, (means, log_sigma, log_w))
    return DRMMLogProbs(log_probs=lp, components=ks)


def _bins_from_components(ks: jax.Array, num_components: int) -> jax.Array:
    num_layers = ks.shape[0]
    powers = num_components ** jnp.arange(num_layers - 1, -1, -1, dtype=jnp.int32)
    return jnp.sum(ks * powers[:, None], axis=0).astype(jnp.int32)


def _no_weights(means):
    return jnp.zeros(means.shape[:2], means.dtype)


@jax.jit
def _components(means, log_sigma, x):
    return drmm_layer_log_probs(means, log_sigma[:, None, None], _no_weights(means), x).components


@jax.jit
def _assign(means, log_sigma, x):
    return _bins_from_components(_components(means, log_sigma, x), means.shape[1])


@jax.jit
def _soft_assign(means, log_sigma, x, temperature):
    lp = drmm_layer_log_probs(means, log_sigma[:, None, None], _no_weights(means), x).log_probs
    post = jax.nn.softmax(lp / temperature, axis=-1)  # [L, n, C]
    out = post[0]
    for layer in range(1, post.shape[0]):  # static loop over layers (L is tiny)
        out = (out[:, :, None] * post[layer][:, None, :]).reshape(out.shape[0], -1)
    return out


@functools.partial(jax.jit, static_argnames=("num_layers", "num_components"))
def _init_from_batch(batch: jax.Array, key: jax.Array, num_layers: int, num_components: int) -> jax.Array:
    """Data-dependent init, layer by layer on the batch residuals ``r_l`` (``r_1`` = the batch).

    Layer ``l`` starts its ``C`` means on ``C`` distinct random residuals, takes one Lloyd step
    (each mean becomes the mean of the residuals nearest to it; a mean without any keeps its
    place), and passes ``r_{l+1} = r_l - (nearest mean)`` on. Returns ``means [L, C, d]``.
    """
    r = batch
    means = []
    for kl in jax.random.split(key, num_layers):  # static loop over the few layers
        mu = r[jax.random.permutation(kl, r.shape[0])[:num_components]]
        oh = jax.nn.one_hot(jnp.argmin(squared_distances(r, mu), axis=-1), num_components, dtype=r.dtype)
        cnt = jnp.sum(oh, axis=0)
        mu = jnp.where(cnt[:, None] > 0, jnp.matmul(oh.T, r, precision=PRECISION) / jnp.maximum(cnt, 1.0)[:, None], mu)
        means.append(mu)
        r = r - mu[jnp.argmin(squared_distances(r, mu), axis=-1)]
    return jnp.stack(means)


def _e_step(means, x):
    """Hard E-step along the residual chain: nearest-mean choices ``[L, n]`` and the layer inputs ``[L, n, d]``."""
    r, ks, rs = x, [], []
    for l in range(means.shape[0]):  # static loop over layers
        k = jnp.argmin(squared_distances(r, means[l]), axis=-1).astype(jnp.int32)
        ks.append(k)
        rs.append(r)
        r = r - means[l][k]
    return jnp.stack(ks), jnp.stack(rs), r


def _split_dead(means, counts):
    """Re-seed the components of one layer that have no member, by splitting the fullest one.

    As faiss's k-means does with empty clusters: the dead component takes a copy of the mean of
    the component with the most members and the two are pushed apart by a small symmetric
    perturbation (``+-1%`` of the spread of the layer's means, alternating signs over the
    coordinates); the count is split in half for the next dead component's choice.
    ``means [C, d]``, ``counts [C]``; returns the new means.
    """
    num_components, d = means.shape
    sign = jnp.where(jnp.arange(d) % 2 == 0, 1.0, -1.0).astype(means.dtype)
    spread = 1e-2 * jnp.sqrt(jnp.mean(jnp.square(means - jnp.mean(means, axis=0)))) + 1e-6

    def body(c, carry):
        means, cnt = carry
        big = jnp.argmax(cnt)
        src = means[big]
        split = means.at[c].set(src + spread * sign).at[big].set(src - spread * sign)
        halved = cnt.at[c].set(0.5 * cnt[big]).at[big].set(0.5 * cnt[big])
        dead = cnt[c] == 0
        return jnp.where(dead, split, means), jnp.where(dead, halved, cnt)

    means, _ = jax.lax.fori_loop(0, num_components, body, (means, counts.astype(jnp.float32)))
    return means


def _stats(ks, x, num_components):
    """Sufficient statistics of hard assignments ``ks [L, n]`` of rows ``x [n, d]``:
    member sums ``[L, C, d]``, member counts ``[L, C]`` and co-occurrences ``[L, L, C, C]``."""
    oh = jax.nn.one_hot(ks, num_components, dtype=jnp.float32)  # [L, n, C]
    return (jnp.einsum("lnc,nd->lcd", oh, x, precision=PRECISION), jnp.sum(oh, axis=1),
            jnp.einsum("lnc,mne->lmce", oh, oh, precision=PRECISION))


def _m_step(sums, counts, co, means):
    """Closed-form M-step of every layer given all points' current choices.

    The members of component ``k`` of layer ``l`` have residuals ``x_i - sum_{j<l} mu_{j, k_ij}``, so
    their mean is ``(sums_lk - sum_{j<l} sum_c co[l, j, k, c] mu_jc) / counts_lk``; layers are
    solved in order. A component without members keeps its mean.
    """
    out = []
    for l in range(means.shape[0]):  # static loop over layers
        s = sums[l]
        for j in range(l):
            s = s - jnp.matmul(co[l, j], out[j], precision=PRECISION)
        out.append(jnp.where(counts[l][:, None] > 0, s / jnp.maximum(counts[l], 1.0)[:, None], means[l]))
    return jnp.stack(out)


@functools.partial(jax.jit, static_argnames=("batch_size",))
def _train_epoch(state, x, key, *, batch_size):
    """One pass of incremental hard EM over ``x`` in minibatches; then re-seed dead components.

    ``state``: ``means [L, C, d]``, every point's current choices ``ks [L, n]`` and their
    statistics (:func:`_stats`). Per minibatch: E-step on its points with the current means,
    swap their old choices for the new ones in the statistics, M-step (:func:`_m_step`).
    """
    n = x.shape[0]
    num_layers, num_components = state["means"].shape[:2]
    nbatch = max(n // batch_size, 1)
    order = jax.random.permutation(key, n)[: nbatch * batch_size].reshape(nbatch, batch_size)
    sums, counts, co = _stats(state["ks"], x, num_components)  # exact again (no float drift across epochs)
    state = dict(state, sums=sums, counts=counts, co=co)

    def step(carry, idx):
        st, moved = carry
        xb = x[idx]
        new, _, r_last = _e_step(st["means"], xb)
        old = st["ks"][:, idx]
        sn, cn, on = _stats(new, xb, num_components)
        so, c_o, oo = _stats(old, xb, num_components)
        sums, counts, co = st["sums"] + sn - so, st["counts"] + cn - c_o, st["co"] + on - oo
        means = _m_step(sums, counts, co, st["means"])
        st = dict(means=means, ks=st["ks"].at[:, idx].set(new), sums=sums, counts=counts, co=co)
        return (st, moved + jnp.sum(new != old)), jnp.mean(jnp.square(r_last))

    (state, moved), losses = jax.lax.scan(step, (state, jnp.asarray(0, jnp.int32)), order)
    counts = state["counts"]
    means = jnp.stack([_split_dead(state["means"][l], counts[l]) for l in range(num_layers)])
    return dict(state, means=means), jnp.mean(losses), jnp.sum(counts == 0), moved


@jax.jit
def _layer_log_sigma(means, x):
    """``log sigma_l [L]``: log root-mean-square coordinate of the residual layer ``l``'s choice leaves."""
    _, rs, r_last = _e_step(means, x)
    res_sq = jnp.mean(jnp.square(jnp.concatenate([rs[1:], r_last[None]], axis=0)), axis=(1, 2))
    return jnp.maximum(0.5 * jnp.log(jnp.maximum(res_sq, 1e-30)), _MIN_LOG_SIGMA)


@functools.partial(jax.jit, static_argnames=("num_components",))
def _full_state(means, x, num_components):
    """E-step of all points and the statistics of their paths (the start of training)."""
    ks, _, _ = _e_step(means, x)
    sums, counts, co = _stats(ks, x, num_components)
    return dict(means=means, ks=ks, sums=sums, counts=counts, co=co)


@dataclasses.dataclass(frozen=True)
class DRMMQuantizer:
    """Unfitted MAUVE-DRMM quantizer (settings only); ``fit`` trains the DRMM by hard EM.

    Args:
      num_layers: ``L`` (3).
      num_components: ``C`` per layer (10); ``num_bins = C^L``.
      num_epochs: maximum passes over the data (20, as in the MAUVE experiments' script);
        training stops earlier at a fixed point (an epoch in which no point changes its path).
      batch_size: points per EM step (64).
      init_batch_size: points used for the data-dependent initialization; ``None`` (default)
        uses all of them (the reference code uses 256; in high dimension the means of so few
        points are a noisy start).

    Examples:
      >>> import jax, numpy as np
      >>> x = np.random.default_rng(0).standard_normal((300, 6)).astype(np.float32)
      >>> fq = DRMMQuantizer(num_layers=2, num_components=4, num_epochs=2).fit(x, key=jax.random.key(0))
      >>> fq.num_bins, fq.assign(x).shape, fq.soft_assign(x, 1.0).shape
      (16, (300,), (300, 16))
      >>> fq.train_summary.components_used  # every layer uses all its components
      (4, 4)
    """

    num_layers: int = 3
    num_components: int = 10
    num_epochs: int = 20
    batch_size: int = 64
    init_batch_size: int | None = None

    def fit(self, features: Any, *, key: jax.Array, verbose: bool = False) -> "FittedDRMMQuantizer":
        """Train the DRMM on ``features`` ``[n, d]`` (``n >= num_components``) and return it fitted.

        ``key`` (a ``jax.random`` key) draws the initialization rows and the minibatch order;
        ``verbose`` prints every epoch's mean squared residual and how many paths changed.
        """
        V.check_key(key)
        x = np.asarray(V.check_features(features, "features"), np.float32)
        n, d = x.shape
        L = V.check_int(self.num_layers, "num_layers", minimum=1)
        C = V.check_int(self.num_components, "num_components", minimum=2)
        if C**L > 2**31 - 1:
            raise ValueError(f"num_components: {C}^{L} bins do not fit an int32 bin id")
        epochs = V.check_int(self.num_epochs, "num_epochs", minimum=1)
        bs = min(V.check_int(self.batch_size, "batch_size", minimum=1), n)
        nb_init = n if self.init_batch_size is None else min(
            V.check_int(self.init_batch_size, "init_batch_size", minimum=1), n)
        if nb_init < C:
            raise ValueError(f"features: {nb_init} points to initialize {C} components per layer")

        mean = x.mean(axis=0)
        scale = max(float(np.sqrt(np.mean((x - mean) ** 2))), 1e-12)
        xs = jnp.asarray((x - mean) / scale)
        kinit, kperm, ktrain = jax.random.split(key, 3)
        init_rows = xs if nb_init == n else xs[jax.random.choice(kperm, n, (nb_init,), replace=False)]
        state = _full_state(_init_from_batch(init_rows, kinit, L, C), xs, num_components=C)
        losses, reseeded = [], 0
        for e, k in enumerate(jax.random.split(ktrain, epochs)):  # loop over epochs, not data
            state, loss, dead, moved = _train_epoch(state, xs, k, batch_size=bs)
            losses.append(float(loss))
            reseeded += int(dead)
            if verbose:
                print(f"drmm epoch {e + 1}/{epochs}: mean squared residual {losses[-1]:.4f}, "
                      f"paths changed {int(moved)}, re-seeded {int(dead)}", file=sys.stderr)
            if int(moved) == 0 and int(dead) == 0:
                break  # a fixed point of EM: further epochs change nothing
        fitted = FittedDRMMQuantizer(
            means=state["means"],
            log_sigma=_layer_log_sigma(state["means"], xs),
            weights=state["counts"] / n,
            mean=jnp.asarray(mean),
            scale=scale,
            losses=tuple(losses),
            num_reseeded=reseeded,
        )
        return dataclasses.replace(fitted, train_summary=fitted.summarize(x))


class FittedDRMMQuantizer(Result):
    """A trained DRMM used as a quantizer with ``num_bins = C^L`` bins.

    ``assign(x)`` is the base-``C`` index of the per-layer most likely components;
    ``soft_assign(x, tau)`` is ``prod_l softmax_k(log p_l(k | r_l) / tau)`` over the ``C^L``
    tuples along the hard residual path (rows sum to 1; the one-hot of ``assign`` as ``tau -> 0``).

    Attributes:
      means: ``[L, C, d]`` component means (in the standardized space).
      log_sigma: ``[L]`` log standard deviation of each layer's components.
      weights: ``[L, C]`` mixture weights ``pi_lk``: the share of the training points whose
        layer-``l`` choice is ``k`` (reported; bins do not depend on them).
      mean: ``[d]`` mean of the training features (standardization).
      scale: root-mean-square coordinate of the centred training features (static).
      losses: per epoch, the mean squared residual coordinate after the last layer, averaged
        over the epoch's minibatches (static).
      num_reseeded: dead components re-seeded during training, summed over epochs (static).
      train_summary: :class:`DRMMSummary` of the training points (occupied bins, per-layer
        component usage), or ``None``.
    """

    means: jax.Array
    log_sigma: jax.Array
    weights: jax.Array
    mean: jax.Array
    scale: float = static_field()
    losses: tuple = static_field(default=())
    num_reseeded: int = static_field(default=0)
    train_summary: DRMMSummary | None = None

    @property
    def num_bins(self) -> int:
        """``C^L``."""
        L, C = self.means.shape[:2]
        return int(C**L)

    def _prep(self, features: Any) -> jax.Array:
        x = jnp.asarray(features)
        if x.ndim != 2 or x.shape[1] != self.mean.shape[0]:
            raise ValueError(f"features: expected shape [n, {self.mean.shape[0]}], got {x.shape}")
        return (x.astype(jnp.float32) - self.mean) / self.scale

    def assign(self, features: Any) -> jax.Array:
        """Hard bins ``[n]`` int32: ``sum_l k_l C^(L-1-l)``."""
        return _assign(self.means, self.log_sigma, self._prep(features))

    def components(self, features: Any) -> jax.Array:
        """Per-layer most likely components ``[L, n]`` int32."""
        return _components(self.means, self.log_sigma, self._prep(features))

    def soft_assign(self, features: Any, temperature: Any) -> jax.Array:
        """Soft bins ``[n, C^L]`` (product of per-layer tempered posteriors)."""
        return _soft_assign(self.means, self.log_sigma, self._prep(features), temperature)

    def summarize(self, features: Any) -> DRMMSummary:
        """:class:`DRMMSummary` of ``features`` ``[n, d]``: occupied bins and per-layer component usage.

        Examples:
          >>> import jax, numpy as np
          >>> x = np.random.default_rng(0).standard_normal((300, 6)).astype(np.float32)
          >>> fq = DRMMQuantizer(num_layers=2, num_components=4, num_epochs=2).fit(x, key=jax.random.key(0))
          >>> s = fq.summarize(x)
          >>> s.num_points, s.num_bins, s.components_used, 1 <= s.num_occupied_bins <= 16
          (300, 16, (4, 4), True)
        """
        ks = np.asarray(self.components(features))
        L, C = self.means.shape[:2]
        counts = np.stack([np.bincount(k, minlength=C) for k in ks]).astype(np.int32)
        bins = np.asarray(_bins_from_components(jnp.asarray(ks), C))
        bin_counts = np.bincount(bins, minlength=self.num_bins)
        return DRMMSummary(
            component_counts=jnp.asarray(counts),
            num_points=int(ks.shape[1]),
            num_bins=self.num_bins,
            num_occupied_bins=int(np.sum(bin_counts > 0)),
            largest_bin_fraction=float(bin_counts.max() / max(ks.shape[1], 1)),
            components_used=tuple(int(v) for v in np.sum(counts > 0, axis=1)),
        )


def _factory(num_bins: int | None = None, **kwargs: Any) -> DRMMQuantizer:
    """Registry factory: ``compute_mauve(..., quantizer="drmm")`` passes ``num_buckets`` as
    ``num_bins``; it is ignored because the number of bins is fixed by the model (``num_components ** num_layers``)."""
    del num_bins
    return DRMMQuantizer(**kwargs)


register_quantizer("drmm", _factory)
