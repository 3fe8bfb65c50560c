"""One training step of :func:`~jaxmetrics.training.finetune`: the optimizer, the jit-compiled update
and the micro-batches each objective trains on.

The update is a pure function ``(params, opt_state, ref_params, batch) -> (params, opt_state, loss,
kl)`` over the ``nnx.Param`` state of a Flax NNX causal LM of the GPT-2 family, compiled once per
run (``jax.jit``); gradient accumulation is ``optax.MultiSteps`` (the parameters change every
``grad_accum``-th call). The batch of step ``s``, micro-batch ``u`` is drawn from
``numpy.random.default_rng([seed, s, u])`` and its sampling key is ``fold_in(fold_in(key(seed), s), u)``:
every draw is a function of the seed and the step, which is what makes a resumed run equal an
uninterrupted one.
"""
from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxmetrics.training.objectives import mle, policy_gradient, token_kl, token_ot
from jaxmetrics.training.settings import FinetuneSettings

__all__ = ["batch_indices", "build_update", "make_optimizer", "step_key"]


def make_optimizer(settings: FinetuneSettings) -> optax.GradientTransformation:
    """AdamW at a constant rate after global-norm clipping, its updates accumulated over
    ``settings.grad_accum`` calls (``optax.MultiSteps``; 1: every call updates)."""
    tx = optax.chain(optax.clip_by_global_norm(settings.max_grad_norm),
                     optax.adamw(settings.learning_rate, weight_decay=settings.weight_decay))
    return optax.MultiSteps(tx, every_k_schedule=settings.grad_accum)


def batch_indices(settings: FinetuneSettings, step: int, micro: int, num_passages: int) -> np.ndarray:
    """``[batch_size]`` distinct passage indices of micro-batch ``micro`` of step ``step`` (1-based),
    drawn from ``numpy.random.default_rng([seed, step, micro])``."""
    rng = np.random.default_rng([settings.seed, step, micro])
    return np.sort(rng.choice(num_passages, size=settings.batch_size, replace=False))


def step_key(seed: int, step: int, micro: int) -> jax.Array:
    """The sampling key of micro-batch ``micro`` of step ``step``: ``fold_in(fold_in(key(seed), step), micro)``."""
    return jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), step), micro)


def _logits(graphdef, params, rest, ids):
    m = nnx.merge(graphdef, params, rest)
    return m(ids[:, :-1], jnp.ones(ids[:, :-1].shape, bool)).logits


#: compiled updates by (graph, the settings the program depends on): a resumed or repeated run in
#: one process reuses the program instead of compiling it again (a few most recent are kept)
_UPDATES: dict = {}
_KEEP = 8


def _update_key(graphdef: Any, s: FinetuneSettings) -> tuple:
    return (graphdef, s.objective, s.gen_len, s.mle_weight, s.mle_coef, s.kl_coef, s.learning_rate, s.weight_decay,
            s.max_grad_norm, s.grad_accum)


def _compile_update(graphdef: Any, settings: FinetuneSettings, tx: optax.GradientTransformation) -> Callable:
    objective, gen_len = settings.objective, settings.gen_len

    def loss_fn(p, ref_params, rest, batch):
        ids = batch["ids"]
        logits = _logits(graphdef, p, rest, ids)
        targets = ids[:, 1:]
        if objective == "mle":
            return mle(logits, targets, jnp.ones(targets.shape, bool)), jnp.float32(0)
        if objective == "token_ot":
            emb = nnx.merge(graphdef, p, rest).output_embeddings()
            return token_ot(logits, targets, jnp.ones(targets.shape, bool), emb,
                            mle_weight=settings.mle_weight), jnp.float32(0)
        logits, tokens = logits[:, -gen_len:], targets[:, -gen_len:]
        mask = jnp.ones(tokens.shape, bool)
        ref_logits = _logits(graphdef, ref_params, rest, ids)[:, -gen_len:]
        kl = token_kl(logits, ref_logits, mask)
        loss = policy_gradient(logits, tokens, mask, batch["advantage"]) + settings.kl_coef * kl
        if settings.mle_coef:
            human = batch["human"]
            loss = loss + settings.mle_coef * mle(_logits(graphdef, p, rest, human), human[:, 1:],
                                                  jnp.ones(human[:, 1:].shape, bool))
        return loss, kl

    @jax.jit
    def update(p, opt_state, ref_params, rest, batch):
        (loss, kl), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, ref_params, rest, batch)
        updates, opt_state = tx.update(grads, opt_state, p)
        return optax.apply_updates(p, updates), opt_state, loss, kl

    return update


def build_update(module: nnx.Module, settings: FinetuneSettings) -> tuple[Callable, Any, optax.GradientTransformation]:
    """The jit-compiled update of ``module``'s family for ``settings.objective``, ``module``'s
    parameters (an ``nnx.State``) and the optimizer (:func:`make_optimizer`) whose state it updates.

    The update takes ``(params, opt_state, ref_params, batch)`` with ``batch`` a dict: ``ids``
    ``[B, T]`` int32 token rows (passages for MLE / token OT: every next token is a target;
    prompt + sampled continuation for the policy gradient: the last ``gen_len`` tokens are the
    targets) and, for the policy gradient, ``advantage`` ``[B]`` and, when ``mle_coef > 0``,
    ``human`` ``[B, T]`` (each prompt's human passage: the MLE term's targets). It returns the new
    parameters and optimizer state, the loss and the mean ``KL(p_theta || p_start)`` at the targets (0 for MLE and
    token OT, which do not compute it). The compiled program is shared by the runs of one process
    with the same model graph and the same settings it depends on.
    """
    graphdef, params, rest = nnx.split(module, nnx.Param, ...)
    key = _update_key(graphdef, settings)
    if key not in _UPDATES:
        if len(_UPDATES) >= _KEEP:
            _UPDATES.pop(next(iter(_UPDATES)))
        tx = make_optimizer(settings)
        _UPDATES[key] = (_compile_update(graphdef, settings, tx), tx)
    update, tx = _UPDATES[key]
    return (lambda p, opt_state, ref_params, batch: update(p, opt_state, ref_params, rest, batch)), params, tx
