"""The normalised similarity family of Chen et al. (2020) on padded token embeddings.

For unit token vectors ``X1`` (candidate, ``L1 x D``) and ``X2`` (reference, ``L2 x D``)
with ``S = X1 X2^T`` and token weights ``a`` (over ``X1``) and ``b`` (over ``X2``), uniform
over the mask unless given:

    Sim(X1, X2) = C(X1, X2) / sqrt(C(X1, X1) C(X2, X2))

========== ===================================================== ==========================
metric     C (precision side P, averaged over candidate tokens)  notes
========== ===================================================== ==========================
cosine     ``sum_ij S_ij`` = (sum x1).(sum x2)                   mean-pooled cosine (SBERT)
cka        ``sum_ij S_ij^2`` = ||X1 X2^T||_F^2                   linear CKA, no Gram centring
wmd        ``max_{pi in Pi(a,b)} <pi, S>``                       exact OT (host LP, see below)
rwmd       ``P = sum_i a_i max_j S_ij``; R mirror                relaxed WMD (= BERTScore)
twmd       ``<pi_m, S>``, pi_m = m Sinkhorn iterations of        tempered WMD, T = epsilon
           exp(S/T) (cols then rows for P, rows then cols for R)
trwmd      ``P = sum_i a_i sum_j softmax_j(S_ij/T) S_ij``        <pi*, S>: the authors' code
trwmd_lse  ``P = sum_i a_i T logsumexp_j(S_ij / T)``             the paper's closed form
========== ===================================================== ==========================

``F = 2PR/(P+R)`` is formed from the raw values *before* normalisation, then P, R and F
are each normalised (``P12 / sqrt(P11 P22)`` etc.). Symmetric metrics return P = R = F.

``trwmd`` vs ``trwmd_lse``: both come from the row-relaxed entropic problem
``max_pi <pi, S> + T H(pi)`` whose optimal plan is ``pi*_ij = a_i softmax_j(S_ij / T)``.
The paper plugs ``pi*`` into the *objective* (log-sum-exp form, → max as T → 0); the
authors' code returns only the transport term ``<pi*, S>``. They differ by the entropy:
``trwmd_lse = trwmd + T * sum_i a_i H(softmax_j(S_ij/T))`` (so ``trwmd_lse >= trwmd``).

Convention (differs from the authors' code): P is averaged over *candidate* tokens and R
over *reference* tokens, as in BERTScore. The authors call ``metric(cand, ref)`` and
report their index 0 ("R") — which is P here.

Defined values instead of NaN (inside jit, where we cannot raise): a side with no tokens
gives 0 for P, R and F; ``P + R = 0`` gives ``F = 0``; ``C11 C22 <= 0`` gives ``Sim = 0``.
The public wrapper :func:`similarity_scores` raises on such inputs instead.

Argument names (``docs/conventions.md``): the batched kernels take ``candidates=`` /
``references=`` ``[B, L, D]`` with ``candidates_mask`` / ``references_mask`` and
``candidates_weights`` / ``references_weights``; the per-pair kernel :func:`pair_similarity`
takes ``candidate=`` / ``reference=`` ``[L, D]`` with ``candidate_mask`` etc. All keyword-only.

Exact WMD: XLA has no LP solver, and a network simplex in JAX would be slow and hard to
verify. A demanding user wants the *exact* value (the test is against POT's ``emd2`` to
1e-6), so the plan is solved on the host by scipy's HiGHS LP solver through
``jax.pure_callback`` (jit/vmap compatible), and the value ``<stop_grad(pi*), S>`` is
differentiable with the Danskin (sub)gradient ``d WMD / d S = pi*``. For a fully on-device
smooth approximation use ``twmd`` with small T and many iterations.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Iterator

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import is_concrete, l2_normalize, product_dtype, row_products
from jaxmetrics._validation import check_choice, check_int, check_positive
from jaxmetrics.results import Result
from jaxmetrics.similarity.checks import score_checked_pairs
from jaxmetrics.similarity.sinkhorn import sinkhorn_plan

__all__ = ["METRICS", "PRF", "TEMPERED", "batch_similarity", "emd_plan", "greedy_match", "harmonic_f",
           "pair_similarity", "similarity_loss", "similarity_scores"]

METRICS = ("cosine", "cka", "wmd", "rwmd", "twmd", "trwmd", "trwmd_lse")
TEMPERED = ("twmd", "trwmd", "trwmd_lse")
BACKENDS = ("log", "ott")


class PRF(Result):
    """Precision, recall and F1 of candidate/reference pairs (per pair, or corpus means).

    Precision is averaged over the candidate's tokens, recall over the reference's tokens and
    ``F1 = 2PR / (P + R)`` (normalised separately in the normalised family). The one result of
    jaxmetrics that can be unpacked, as ``bert_score.score``'s tuple:
    ``P, R, F = bertscore(cands, refs, model=...)``.

    Attributes:
      precision: ``[B]`` per pair (scalar for one pair or a corpus mean).
      recall: same shape as ``precision``.
      f1: same shape as ``precision``.

    Examples:
      >>> import jax.numpy as jnp
      >>> s = PRF(jnp.array([0.5, 1.0]), jnp.array([1.0, 1.0]), jnp.array([0.6667, 1.0]))
      >>> s
      PRF(precision=f32[2], recall=f32[2], f1=f32[2])
      >>> p, r, f = s
      >>> p.tolist()
      [0.5, 1.0]
    """

    precision: Any
    recall: Any
    f1: Any

    def __iter__(self) -> Iterator[Any]:
        return iter((self.precision, self.recall, self.f1))


def _weights(mask, w):
    w = jnp.where(mask, jnp.ones(mask.shape) if w is None else w, 0.0)
    tot = jnp.sum(w)
    return w / jnp.where(tot > 0, tot, 1.0)


def _safe_div(num, den):
    ok = den != 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), 0.0)


def harmonic_f(p, r):
    """``2 p r / (p + r)``, defined as 0 where ``p + r = 0`` (the F of P and R, any shape; traceable)."""
    return _safe_div(2.0 * p * r, p + r)


def _normalize_family(c12, c11, c22):
    """``c12 / sqrt(c11 c22)``, defined as 0 where ``c11 c22 <= 0``."""
    den = c11 * c22
    pos = den > 0
    return jnp.where(pos, c12 * jax.lax.rsqrt(jnp.where(pos, den, 1.0)), 0.0)


def _masked_max(s, valid, axis):
    """Max of ``s`` over ``axis`` among the ``valid`` entries (0 where there is none)."""
    m = jnp.max(jnp.where(valid, s, -jnp.inf), axis=axis)
    return jnp.where(jnp.isfinite(m), m, 0.0)


def _masked_lse(z, valid, axis):
    m = _masked_max(z, valid, axis)
    e = jnp.where(valid, jnp.exp(z - jnp.expand_dims(m, axis)), 0.0)
    s = jnp.sum(e, axis=axis)
    return jnp.where(s > 0, jnp.log(jnp.where(s > 0, s, 1.0)) + m, 0.0)


def _masked_softmax(z, valid, axis):
    m = _masked_max(z, valid, axis)
    e = jnp.where(valid, jnp.exp(z - jnp.expand_dims(m, axis)), 0.0)
    return e / jnp.where(valid.any(axis=axis, keepdims=True), e.sum(axis=axis, keepdims=True), 1.0)


def greedy_match(sim, valid):
    """Greedy matching of one pair's token similarities (traceable): the best similarity of every
    candidate token ``[L1]`` (over the reference's tokens) and of every reference token ``[L2]``
    (over the candidate's), among the ``valid`` entries of ``sim [L1, L2]`` (0 for a token with
    none). RWMD and BERTScore average these, weighted, into P and R.
    """
    return _masked_max(sim, valid, 1), _masked_max(sim, valid, 0)


# ----------------------------------------------------------------------- exact OT (host)
def _emd_plan_host(s, a, b):
    """Exact max <pi, S> over Pi(a, b) for a batch (any leading dims), by scipy HiGHS."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    s = np.asarray(s, np.float64)
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    lead = s.shape[:-2]
    s2 = s.reshape((-1,) + s.shape[-2:])
    a2 = a.reshape((-1, a.shape[-1]))
    b2 = b.reshape((-1, b.shape[-1]))
    out = np.zeros_like(s2)
    for k in range(s2.shape[0]):
        ri = np.flatnonzero(a2[k] > 0)
        ci = np.flatnonzero(b2[k] > 0)
        if ri.size == 0 or ci.size == 0:
            continue
        aa = a2[k, ri] / a2[k, ri].sum()
        bb = b2[k, ci] / b2[k, ci].sum()
        n, m = ri.size, ci.size
        if n == 1 or m == 1:
            plan = np.outer(aa, bb)
        else:
            rows = np.concatenate([np.repeat(np.arange(n), m), n + np.tile(np.arange(m), n)])
            cols = np.concatenate([np.arange(n * m), np.arange(n * m)])
            a_eq = coo_matrix((np.ones(2 * n * m), (rows, cols)), shape=(n + m, n * m)).tocsr()
            # one marginal constraint is redundant; drop the last to keep the LP full rank
            res = linprog(-s2[k][np.ix_(ri, ci)].ravel(), A_eq=a_eq[:-1],
                          b_eq=np.concatenate([aa, bb])[:-1], bounds=(0, None), method="highs",
                          options={"primal_feasibility_tolerance": 1e-10,
                                   "dual_feasibility_tolerance": 1e-10})
            if res.status != 0:  # pragma: no cover - LP is always feasible and bounded
                raise RuntimeError(f"exact WMD: HiGHS failed ({res.message})")
            plan = np.maximum(res.x.reshape(n, m), 0.0)
        out[k][np.ix_(ri, ci)] = plan
    return out.reshape(lead + s.shape[-2:]).astype(s.dtype)


def emd_plan(sim: jax.Array, row_weights: jax.Array, col_weights: jax.Array) -> jax.Array:
    """Exact optimal plan ``argmax_{pi in Pi(a, b)} <pi, S>`` (host LP, no gradient), with the
    marginals ``a = row_weights``, ``b = col_weights`` (as in
    :func:`~jaxmetrics.similarity.sinkhorn_plan`).

    Args:
      sim: ``[L1, L2]``; row_weights: ``[L1]``; col_weights: ``[L2]`` non-negative weights (zeros
        = absent tokens; renormalised to sum 1).

    Returns:
      ``[L1, L2]`` plan.

    Examples:
      >>> import jax.numpy as jnp
      >>> emd_plan(jnp.eye(2), jnp.array([0.5, 0.5]), jnp.array([0.5, 0.5])).tolist()
      [[0.5, 0.0], [0.0, 0.5]]
    """
    sg = jax.lax.stop_gradient
    sim = sg(jnp.asarray(sim))
    spec = jax.ShapeDtypeStruct(sim.shape, sim.dtype)
    return jax.pure_callback(_emd_plan_host, spec, sim, sg(jnp.asarray(row_weights, sim.dtype)),
                             sg(jnp.asarray(col_weights, sim.dtype)), vmap_method="broadcast_all")


# ------------------------------------------------------------------------- raw C values
def _raw_pair(x, y, x_mask, y_mask, *, metric: str, temperature=1.0, num_iterations: int = 1,
              x_weights=None, y_weights=None, backend: str = "log"):
    """Un-normalised ``(P, R)`` of one pair of unit-vector sets (see module table).

    Args:
      x: ``[L1, D]`` candidate unit vectors; y: ``[L2, D]`` reference unit vectors.
      x_mask: bool ``[L1]``; y_mask: bool ``[L2]``.
      metric: one of :data:`METRICS` (static).
      temperature: T > 0 for the tempered metrics (traced).
      num_iterations: Sinkhorn iterations for ``twmd`` (static).
      x_weights, y_weights: optional ``[L1]`` / ``[L2]`` token weights (default uniform).
      backend: Sinkhorn backend for ``twmd``: ``"log"`` or ``"ott"``.

    Returns:
      ``(p, r)`` scalars.
    """
    valid = x_mask[:, None] & y_mask[None, :]
    s = jnp.where(valid, row_products(x, y), 0.0)  # bfloat16 vectors: bfloat16 operands, float32 sums
    a = _weights(x_mask, x_weights)
    b = _weights(y_mask, y_weights)
    if metric == "cosine":
        c = jnp.sum(s)
        return c, c
    if metric == "cka":
        c = jnp.sum(s * s)
        return c, c
    if metric == "rwmd":
        best_x, best_y = greedy_match(s, valid)
        return jnp.sum(a * best_x), jnp.sum(b * best_y)
    if metric == "wmd":
        c = jnp.sum(emd_plan(s, a, b) * s)
        return c, c
    if metric == "twmd":
        kw = dict(row_weights=a, col_weights=b, backend=backend)
        pp = sinkhorn_plan(s, x_mask, y_mask, temperature, num_iterations, order="cols_first", **kw)
        pr = sinkhorn_plan(s, x_mask, y_mask, temperature, num_iterations, order="rows_first", **kw)
        return jnp.sum(pp * s), jnp.sum(pr * s)
    if metric == "trwmd":
        z = s / temperature
        p = jnp.sum(a * jnp.sum(_masked_softmax(z, valid, 1) * s, axis=1))
        r = jnp.sum(b * jnp.sum(_masked_softmax(z, valid, 0) * s, axis=0))
        return p, r
    if metric == "trwmd_lse":
        z = s / temperature
        p = jnp.sum(a * temperature * _masked_lse(z, valid, 1))
        r = jnp.sum(b * temperature * _masked_lse(z, valid, 0))
        return p, r
    raise ValueError(f"metric: expected one of {METRICS}, got {metric!r}")


def pair_similarity(*, candidate: jax.Array, reference: jax.Array, candidate_mask: jax.Array,
                    reference_mask: jax.Array, metric: str = "twmd", temperature=0.1,
                    num_iterations: int = 1, candidate_weights=None, reference_weights=None,
                    normalize: bool = True, normalize_tokens: bool = True,
                    backend: str = "log") -> PRF:
    """Normalised similarity ``Sim = C12 / sqrt(C11 C22)`` of one candidate/reference pair.

    ``C`` of each metric is in the module docstring; P is averaged over the candidate's
    tokens, R over the reference's, ``F = 2PR/(P+R)`` is formed before normalisation. No
    checks (a kernel: safe under ``jit`` / ``vmap`` / ``grad``); an empty side gives 0. One pair,
    so its arrays are singular and their masks and weights follow them (``candidate_mask``);
    the batched :func:`batch_similarity` / :func:`similarity_scores` take ``candidates`` with
    ``candidates_mask`` (docs/conventions.md, masks).

    Args:
      candidate: ``[L1, D]`` candidate token vectors.
      reference: ``[L2, D]`` reference token vectors.
      candidate_mask, reference_mask: bool ``[L1]`` / ``[L2]``, True for tokens that take part.
      metric: one of ``cosine, cka, wmd, rwmd, twmd, trwmd, trwmd_lse`` (static).
      temperature: T > 0 for ``twmd / trwmd / trwmd_lse`` (traced).
      num_iterations: Sinkhorn iterations for ``twmd`` (static; paper default 1).
      candidate_weights, reference_weights: optional token weights (e.g. idf), ``[L1]`` /
        ``[L2]``; default uniform over the mask.
      normalize: apply the family normalisation (static; default True).
      normalize_tokens: L2-normalise the token vectors first (static; idempotent on unit
        vectors, so leave it on unless the inputs are already unit).
      backend: ``"log"`` or ``"ott"`` Sinkhorn for ``twmd``.

    Returns:
      :class:`PRF` of scalars.

    Examples:
      >>> import jax.numpy as jnp
      >>> x = jnp.array([[1.0, 0.0], [0.6, 0.8]]); m = jnp.array([True, True])
      >>> out = pair_similarity(candidate=x, reference=x, candidate_mask=m, reference_mask=m,
      ...                       metric="twmd", temperature=0.1)
      >>> [round(float(v), 4) for v in out]
      [1.0, 1.0, 1.0]
    """
    x, y, x_mask, y_mask = candidate, reference, candidate_mask, reference_mask
    if normalize_tokens:
        x = l2_normalize(x, x_mask)
        y = l2_normalize(y, y_mask)
    kw = dict(metric=metric, temperature=temperature, num_iterations=num_iterations,
              backend=backend)
    wx, wy = candidate_weights, reference_weights
    p12, r12 = _raw_pair(x, y, x_mask, y_mask, x_weights=wx, y_weights=wy, **kw)
    f12 = harmonic_f(p12, r12)
    ok = jnp.any(x_mask) & jnp.any(y_mask)
    if normalize:
        p11, r11 = _raw_pair(x, x, x_mask, x_mask, x_weights=wx, y_weights=wx, **kw)
        p22, r22 = _raw_pair(y, y, y_mask, y_mask, x_weights=wy, y_weights=wy, **kw)
        f11, f22 = harmonic_f(p11, r11), harmonic_f(p22, r22)
        p12 = _normalize_family(p12, p11, p22)
        r12 = _normalize_family(r12, r11, r22)
        f12 = _normalize_family(f12, f11, f22)
    zero = jnp.zeros_like(p12)
    return PRF(jnp.where(ok, p12, zero), jnp.where(ok, r12, zero), jnp.where(ok, f12, zero))


@partial(jax.jit, static_argnames=("metric", "num_iterations", "normalize",
                                   "normalize_tokens", "backend"))
def batch_similarity(*, candidates: jax.Array, references: jax.Array, candidates_mask: jax.Array,
                     references_mask: jax.Array, metric: str = "twmd", temperature=0.1,
                     num_iterations: int = 1, candidates_weights=None, references_weights=None,
                     normalize: bool = True, normalize_tokens: bool = True,
                     backend: str = "log") -> PRF:
    """:func:`pair_similarity` vmapped over B pairs (jit-compiled kernel, no checks).

    Args:
      candidates: ``[B, L1, D]`` candidate token vectors.
      references: ``[B, L2, D]`` reference token vectors.
      candidates_mask: bool ``[B, L1]``; references_mask: bool ``[B, L2]``.
      candidates_weights, references_weights: optional ``[B, L1]`` / ``[B, L2]``.
      metric, temperature, num_iterations, normalize, normalize_tokens, backend: as in
        :func:`pair_similarity` (``temperature`` is traced: changing it does not recompile).

    Returns:
      :class:`PRF` of ``[B]`` arrays.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jax.random.normal(jax.random.key(0), (2, 3, 4)); m = jnp.ones((2, 3), bool)
      >>> out = batch_similarity(candidates=x, references=x, candidates_mask=m,
      ...                        references_mask=m, metric="cka")
      >>> out
      PRF(precision=f32[2], recall=f32[2], f1=f32[2])
      >>> [round(float(v), 4) for v in out.f1]
      [1.0, 1.0]
    """
    cw = (jnp.ones(candidates_mask.shape, product_dtype(candidates)) if candidates_weights is None
          else candidates_weights)
    rw = (jnp.ones(references_mask.shape, product_dtype(references)) if references_weights is None
          else references_weights)
    fn = partial(pair_similarity, metric=metric, num_iterations=num_iterations,
                 normalize=normalize, normalize_tokens=normalize_tokens, backend=backend)
    return jax.vmap(lambda x, y, mx, my, wx, wy: fn(
        candidate=x, reference=y, candidate_mask=mx, reference_mask=my, temperature=temperature,
        candidate_weights=wx, reference_weights=wy))(
        candidates, references, candidates_mask, references_mask, cw, rw)


# --------------------------------------------------------------------- validated entry
def similarity_scores(*, candidates: Any, references: Any, candidates_mask: Any,
                      references_mask: Any, metric: str = "twmd", temperature=0.1,
                      num_iterations: int = 1, candidates_weights=None, references_weights=None,
                      normalize: bool = True, backend: str = "log", mesh=None) -> PRF:
    """Validated entry point: the normalised similarity family on padded token embeddings.

    ``Sim = C(X1, X2) / sqrt(C(X1, X1) C(X2, X2))`` per pair for P, R and F (see the module
    docstring for C of each metric). Token vectors are L2-normalised inside; centre them
    first with :func:`~jaxmetrics.similarity.centering.center_embeddings` if wanted.

    Args:
      candidates: ``[B, L1, D]`` candidate token embeddings.
      references: ``[B, L2, D]`` reference token embeddings (pair b = row b of each).
      candidates_mask: bool ``[B, L1]``; references_mask: bool ``[B, L2]`` (True = token
        takes part).
      metric: ``cosine | cka | wmd | rwmd | twmd | trwmd | trwmd_lse``.
      temperature: T > 0 (tempered metrics).
      num_iterations: Sinkhorn iterations for ``twmd`` (>= 1, default 1 as in the paper).
      candidates_weights, references_weights: optional non-negative token weights ``[B, L]``.
      normalize: apply the family normalisation.
      backend: ``"log"`` (default) or ``"ott"`` Sinkhorn.
      mesh: optional :class:`jax.sharding.Mesh`: the B pairs are padded to a multiple of the
        device count (copies of the last pair, dropped from the output) and sharded over its
        ``'data'`` axis (or its first axis). Global arrays spanning several processes
        (``jax.make_array_from_process_local_data``) are accepted when B divides over the
        devices; their values are not checked on the host and the outputs come back replicated
        on every process.

    Returns:
      :class:`PRF` of ``[B]`` arrays.

    Raises:
      ValueError: bad shapes, NaN/inf embeddings, a row without tokens, ``T <= 0``,
        unknown metric, ``num_iterations < 1``.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jax.random.normal(jax.random.key(0), (2, 5, 8)); m = jnp.ones((2, 5), bool)
      >>> out = similarity_scores(candidates=x, references=x, candidates_mask=m,
      ...                         references_mask=m, metric="twmd", temperature=0.1)
      >>> [round(float(v), 4) for v in out.f1]
      [1.0, 1.0]
    """
    check_choice(metric, "metric", METRICS)
    check_choice(backend, "backend", BACKENDS)
    num_iterations = check_int(num_iterations, "num_iterations", minimum=1)
    if metric in TEMPERED and is_concrete(temperature):
        if np.ndim(temperature):
            raise ValueError(f"temperature: expected a scalar, got shape {np.shape(temperature)}")
        check_positive(float(np.asarray(temperature)), "temperature")
    def kernel(cand, ref, cmask, rmask, cw, rw):
        return batch_similarity(candidates=cand, references=ref, candidates_mask=cmask, references_mask=rmask,
                                metric=metric, temperature=jnp.asarray(temperature, product_dtype(cand)),
                                num_iterations=num_iterations, candidates_weights=cw, references_weights=rw,
                                normalize=normalize, backend=backend)

    return score_checked_pairs(kernel, candidates=candidates, references=references, candidates_mask=candidates_mask,
                               references_mask=references_mask, candidates_weights=candidates_weights,
                               references_weights=references_weights, mesh=mesh, positive_rows=True)


def similarity_loss(*, candidates: jax.Array, references: jax.Array, candidates_mask: jax.Array,
                    references_mask: jax.Array, metric: str = "twmd", temperature=0.1,
                    num_iterations: int = 1) -> jax.Array:
    """Differentiable training loss ``mean_b (1 - F_b)`` of a tempered (or any) metric.

    Args:
      candidates: ``[B, L1, D]``; references: ``[B, L2, D]``; candidates_mask: bool
        ``[B, L1]``; references_mask: bool ``[B, L2]``; metric, temperature, num_iterations:
        as in :func:`batch_similarity`.

    Returns:
      0-d loss; gradients w.r.t. the embeddings are finite with padding (padding gets 0).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jax.random.normal(jax.random.key(0), (2, 4, 8)); m = jnp.ones((2, 4), bool)
      >>> loss = lambda c: similarity_loss(candidates=c, references=x + 0.1,
      ...                                  candidates_mask=m, references_mask=m)
      >>> bool(jnp.all(jnp.isfinite(jax.grad(loss)(x))))
      True
    """
    out = batch_similarity(candidates=candidates, references=references,
                           candidates_mask=candidates_mask, references_mask=references_mask,
                           metric=metric, temperature=temperature, num_iterations=num_iterations)
    return jnp.mean(1.0 - out.f1)
