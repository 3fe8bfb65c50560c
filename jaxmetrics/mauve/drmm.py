"""MAUVE-DRMM: quantization by a Deep Residual Mixture Model (Hämäläinen & Solin, 2020).

Our reading of the DRMM, as used by the MAUVE paper's experiments (``nLayers=3``,
``nComponentsPerLayer=10``, batch 64, learning rate 0.005, data-dependent initialization from
a batch of 256, raw features; we seed the means of each layer with k-means++ on the batch
residuals):

* the model is a stack of ``L`` layers; each layer is a mixture of ``C`` Gaussian components
  (here diagonal covariance) with weights ``pi_l``, means ``mu_l`` and scales ``sigma_l``;
* layer 1 models the input ``r_1 = x``; a point is assigned to its most likely component
  ``k_l = argmax_k [log pi_lk + log N(r_l; mu_lk, sigma_lk^2)]`` and the next layer models the
  residual ``r_{l+1} = r_l - mu_{l, k_l}`` of that component. The generative reading is
  ``x = mu_{1,k_1} + mu_{2,k_2} + ... + noise``: each layer refines the previous layer's
  choice, so ``C^L`` leaves are described with only ``C L`` mean vectors;
* a point's MAUVE bin is its tuple ``(k_1, ..., k_L)`` of per-layer most likely components,
  read as a base-``C`` number (``bin = sum_l k_l C^(L - l)``), so there are at most ``C^L``
  (1000 by default) bins;
* training: the original code runs a stochastic EM; here every layer's mixture is fitted by
  minibatch gradient descent (optax Adam) on its negative log-likelihood
  ``-sum_l log sum_k pi_lk N(r_l; mu_lk, sigma_lk^2)``, with the residuals ``r_l`` passed on
  under ``stop_gradient`` (each layer fits the data the previous layers leave, as in EM on
  the residuals; gradients do not flow back through the hard choice).

The model is written in Flax NNX and trained with optax; there is no JAX DRMM library, and
the training loop is a few lines around ``optax.adam``. Inputs are centred and divided by
their root-mean-square coordinate (the original used raw features; standardizing makes one
learning rate work for features of any scale, and does not change which points share bins
beyond the effect on the fitted model).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxmetrics import _validation as V
from jaxmetrics.mauve.quantizers import register_quantizer
from jaxmetrics.results import Result, static_field

__all__ = ["DRMM", "DRMMLogProbs", "drmm_layer_log_probs", "DRMMQuantizer", "FittedDRMMQuantizer"]

_LOG_2PI = math.log(2.0 * math.pi)
_MIN_LOG_STD = math.log(1e-3)


class DRMMLogProbs(Result):
    """Per-layer log-probabilities along the residual chain (:func:`drmm_layer_log_probs`).

    Attributes:
      log_probs: ``[L, n, C]`` ``log pi_lk + log N(r_l; mu_lk, sigma_lk^2)`` of every point
        ``n`` under every component ``k`` of every layer ``l``.
      components: ``[L, n]`` int32, the most likely component of each layer (the hard path).
    """

    log_probs: jax.Array
    components: jax.Array


class DRMM(nnx.Module):
    """Deep residual mixture: ``L`` layers of ``C`` diagonal Gaussian components in ``R^d``.

    Parameters: ``means [L, C, d]``, ``log_std [L, C, d]`` (floored at ``log 1e-3``),
    ``logits [L, C]`` (mixture weights ``pi = softmax(logits)``).

    Examples:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> m = DRMM(4, num_layers=3, num_components=10, rngs=nnx.Rngs(0))
      >>> m.layer_log_probs(jnp.zeros((2, 4)))
      DRMMLogProbs(log_probs=f32[3,2,10], components=i32[3,2])
    """

    def __init__(self, dim: int, *, num_layers: int = 3, num_components: int = 10, rngs: nnx.Rngs):
        self.num_layers = num_layers
        self.num_components = num_components
        self.means = nnx.Param(0.1 * jax.random.normal(rngs.params(), (num_layers, num_components, dim)))
        self.log_std = nnx.Param(jnp.zeros((num_layers, num_components, dim)))
        self.logits = nnx.Param(jnp.zeros((num_layers, num_components)))

    def layer_log_probs(self, x: jax.Array) -> DRMMLogProbs:
        """:func:`drmm_layer_log_probs` of ``x [n, d]`` under this model's parameters."""
        return drmm_layer_log_probs(self.means[...], self.log_std[...], self.logits[...], x)

    def nll(self, x: jax.Array) -> jax.Array:
        """Mean over points of ``-sum_l log sum_k pi_lk N(r_l; mu_lk, sigma_lk^2)`` (a scalar)."""
        lp = self.layer_log_probs(x).log_probs
        return -jnp.mean(jnp.sum(jax.nn.logsumexp(lp, axis=-1), axis=0))


def drmm_layer_log_probs(means: jax.Array, log_std: jax.Array, logits: jax.Array, x: jax.Array) -> DRMMLogProbs:
    """Run the residual chain: ``log pi_lk + log N(r_l; mu_lk, sigma_lk^2)`` for every layer.

    Args:
      means: ``[L, C, d]``; log_std: ``[L, C, d]``; logits: ``[L, C]``; x: ``[n, d]``.

    Returns:
      :class:`DRMMLogProbs` with ``log_probs [L, n, C]`` and ``components [L, n]`` int32, where
      ``components[l]`` is the most likely component of layer ``l`` and
      ``r_{l+1} = r_l - means[l, components[l]]`` (residuals under ``stop_gradient``).

    Examples:
      >>> import jax.numpy as jnp
      >>> means = jnp.array([[[0.0], [10.0]], [[-1.0], [1.0]]])  # L=2, C=2, d=1
      >>> out = drmm_layer_log_probs(means, jnp.zeros((2, 2, 1)), jnp.zeros((2, 2)), jnp.array([[11.0]]))
      >>> out
      DRMMLogProbs(log_probs=f32[2,1,2], components=i32[2,1])
      >>> out.components[:, 0].tolist()  # 11 -> component 1 (mean 10), residual 1 -> component 1 (mean 1)
      [1, 1]
    """
    log_std = jnp.maximum(log_std, _MIN_LOG_STD)
    log_w = jax.nn.log_softmax(logits, axis=-1)

    def layer(r, params):
        mu, ls, lw = params  # [C, d], [C, d], [C]
        inv_var = jnp.exp(-2.0 * ls)
        # sum_d (r - mu)^2 / var expanded as three products (no [n, C, d] temporary).
        quad = (r * r) @ inv_var.T - 2.0 * r @ (mu * inv_var).T + jnp.sum(mu * mu * inv_var, axis=-1)
        lp = lw - 0.5 * quad - jnp.sum(ls, axis=-1) - 0.5 * r.shape[-1] * _LOG_2PI
        k = jnp.argmax(lp, axis=-1).astype(jnp.int32)
        r_next = jax.lax.stop_gradient(r - mu[k])
        return r_next, (lp, k)

    _, (lp, ks) = jax.lax.scan(layer, x, (means, log_std, log_w))
    return DRMMLogProbs(log_probs=lp, components=ks)


def _bins_from_components(ks: jax.Array, num_components: int) -> jax.Array:
    num_layers = ks.shape[0]
    powers = num_components ** jnp.arange(num_layers - 1, -1, -1, dtype=jnp.int32)
    return jnp.sum(ks * powers[:, None], axis=0).astype(jnp.int32)


@jax.jit
def _assign(means, log_std, logits, x):
    ks = drmm_layer_log_probs(means, log_std, logits, x).components
    return _bins_from_components(ks, means.shape[1])


@jax.jit
def _soft_assign(means, log_std, logits, x, temperature):
    lp = drmm_layer_log_probs(means, log_std, logits, x).log_probs
    post = jax.nn.softmax(lp / temperature, axis=-1)  # [L, n, C]
    out = post[0]
    for layer in range(1, post.shape[0]):  # static loop over layers (L is tiny)
        out = (out[:, :, None] * post[layer][:, None, :]).reshape(out.shape[0], -1)
    return out


@functools.partial(jax.jit, static_argnames=("num_layers", "num_components"))
def _init_from_batch(batch: jax.Array, key: jax.Array, num_layers: int, num_components: int):
    """Data-dependent init, layer by layer on the batch residuals.

    Means are ``num_components`` residuals picked by k-means++ seeding (each next one with
    probability proportional to its squared distance to the means chosen so far), scales are
    the residuals' per-coordinate std. Returns ``(means [L, C, d], log_std [L, C, d])``.
    """
    r = batch
    means, log_std = [], []
    for kl in jax.random.split(key, num_layers):  # static loops over the few layers / components
        keys = jax.random.split(kl, num_components)
        mu = r[jax.random.randint(keys[0], (), 0, r.shape[0])][None]
        for kc in keys[1:]:
            d2 = jnp.min(jnp.sum((r[:, None, :] - mu[None]) ** 2, axis=-1), axis=1)
            i = jax.random.categorical(kc, jnp.log(jnp.maximum(d2, 1e-30)))
            mu = jnp.concatenate([mu, r[i][None]], axis=0)
        ls = jnp.broadcast_to(jnp.log(jnp.maximum(jnp.std(r, axis=0), 1e-3)), mu.shape)
        means.append(mu)
        log_std.append(ls)
        d2 = jnp.sum((r[:, None, :] - mu[None]) ** 2, axis=-1)
        r = r - mu[jnp.argmin(d2, axis=-1)]
    return jnp.stack(means), jnp.stack(log_std)


@dataclasses.dataclass(frozen=True)
class DRMMQuantizer:
    """Unfitted MAUVE-DRMM quantizer (settings only); ``fit`` trains a :class:`DRMM`.

    Args:
      num_layers: ``L`` (3).
      num_components: ``C`` per layer (10); ``num_bins = C^L``.
      num_epochs: passes over the data (20, as in the MAUVE experiments' script).
      batch_size: points per step (64).
      learning_rate: Adam step size (0.005).
      init_batch_size: points used for the data-dependent initialization (256).

    Examples:
      >>> import jax, numpy as np
      >>> x = np.random.default_rng(0).standard_normal((300, 6)).astype(np.float32)
      >>> fq = DRMMQuantizer(num_layers=2, num_components=4, num_epochs=2).fit(x, key=jax.random.key(0))
      >>> fq.num_bins, fq.assign(x).shape, fq.soft_assign(x, 1.0).shape
      (16, (300,), (300, 16))
    """

    num_layers: int = 3
    num_components: int = 10
    num_epochs: int = 20
    batch_size: int = 64
    learning_rate: float = 0.005
    init_batch_size: int = 256

    def fit(self, features: Any, *, key: jax.Array, verbose: bool = False) -> "FittedDRMMQuantizer":
        """Train the DRMM on ``features`` ``[n, d]`` and return the fitted quantizer.

        ``key`` (a ``jax.random`` key) draws the initial parameters, the initialization batch
        and the minibatch order; ``verbose`` prints the loss of every epoch.
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
        lr = V.check_positive(self.learning_rate, "learning_rate")
        nb_init = min(V.check_int(self.init_batch_size, "init_batch_size", minimum=1), n)

        mean = x.mean(axis=0)
        scale = max(float(np.sqrt(np.mean((x - mean) ** 2))), 1e-12)
        xs = jnp.asarray((x - mean) / scale)
        kmodel, kinit, kperm, ktrain = jax.random.split(key, 4)
        model = DRMM(d, num_layers=L, num_components=C, rngs=nnx.Rngs(params=kmodel))
        init_idx = jax.random.choice(kperm, n, (nb_init,), replace=False)
        model.means[...], model.log_std[...] = _init_from_batch(xs[init_idx], kinit, L, C)
        graphdef, params = nnx.split(model, nnx.Param)
        opt_state = optax.adam(lr).init(params)
        epoch = _make_epoch(graphdef, lr, bs)
        losses = []
        for e, k in enumerate(jax.random.split(ktrain, epochs)):  # loop over epochs, not data
            params, opt_state, loss = epoch(params, opt_state, xs, k)
            losses.append(float(loss))
            if verbose:
                print(f"drmm epoch {e + 1}/{epochs}: nll {losses[-1]:.4f}")
        return FittedDRMMQuantizer(
            means=params["means"][...],
            log_std=params["log_std"][...],
            logits=params["logits"][...],
            mean=jnp.asarray(mean),
            scale=scale,
            losses=tuple(losses),
        )


@functools.lru_cache(maxsize=32)  # one compiled epoch per (architecture, settings), reused across fits
def _make_epoch(graphdef, lr: float, batch_size: int):
    tx = optax.adam(lr)

    @jax.jit
    def epoch(params, opt_state, x, key):
        n = x.shape[0]
        nbatch = max(n // batch_size, 1)
        order = jax.random.permutation(key, n)[: nbatch * batch_size].reshape(nbatch, batch_size)

        def step(carry, idx):
            p, o = carry
            loss, g = jax.value_and_grad(lambda q: nnx.merge(graphdef, q, copy=True).nll(x[idx]))(p)
            upd, o = tx.update(g, o, p)
            return (optax.apply_updates(p, upd), o), loss

        (params, opt_state), losses = jax.lax.scan(step, (params, opt_state), order)
        return params, opt_state, jnp.mean(losses)

    return epoch


class FittedDRMMQuantizer(Result):
    """A trained DRMM used as a quantizer with ``num_bins = C^L`` bins.

    ``assign(x)`` is the base-``C`` index of the per-layer most likely components;
    ``soft_assign(x, tau)`` is ``prod_l softmax_k(log p_l(k | r_l) / tau)`` over the ``C^L``
    tuples along the hard residual path (rows sum to 1; the one-hot of ``assign`` as ``tau -> 0``).

    Attributes:
      means: ``[L, C, d]`` component means (in the standardized space).
      log_std: ``[L, C, d]`` component log standard deviations.
      logits: ``[L, C]`` mixture logits.
      mean: ``[d]`` mean of the training features (standardization).
      scale: root-mean-square coordinate of the centred training features (static).
      losses: mean negative log-likelihood of every epoch (static).
    """

    means: jax.Array
    log_std: jax.Array
    logits: jax.Array
    mean: jax.Array
    scale: float = static_field()
    losses: tuple = static_field(default=())

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
        return _assign(self.means, self.log_std, self.logits, self._prep(features))

    def components(self, features: Any) -> jax.Array:
        """Per-layer most likely components ``[L, n]`` int32."""
        return drmm_layer_log_probs(self.means, self.log_std, self.logits, self._prep(features)).components

    def soft_assign(self, features: Any, temperature: Any) -> jax.Array:
        """Soft bins ``[n, C^L]`` (product of per-layer tempered posteriors)."""
        return _soft_assign(self.means, self.log_std, self.logits, self._prep(features), temperature)


def _factory(num_bins: int | None = None, **kwargs: Any) -> DRMMQuantizer:
    """Registry factory: ``compute_mauve(..., quantizer="drmm")`` passes ``num_buckets`` as
    ``num_bins``; it is ignored because the number of bins is fixed by the model (``num_components ** num_layers``)."""
    del num_bins
    return DRMMQuantizer(**kwargs)


register_quantizer("drmm", _factory)
