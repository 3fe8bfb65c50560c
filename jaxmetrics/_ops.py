"""Array helpers shared by every family: written once here, imported everywhere.

* :func:`squared_distances` — the one pairwise squared-Euclidean kernel (k-means, PRD, soft
  assignments, k-NN hyperspheres);
* :func:`row_products` — ``x @ y.T`` under the mixed-precision contract (the similarity
  matrices, the matmul expansion of :func:`squared_distances`);
* :func:`l2_normalize` — the one row normalisation (MAUVE's preprocessing, token vectors of
  the similarity family);
* :func:`is_concrete` — the one tracer check (host-side validation is skipped under ``jit``);
* :func:`accumulator_dtype` — float32, or float64 under ``jax.enable_x64(True)``;
  :func:`product_dtype` — what a product of given operands accumulates in (at least float32).

Mixed precision: a product of bfloat16 operands (a ``dtype=bfloat16`` model's layers, bfloat16
token vectors handed to a similarity kernel) keeps its operands in bfloat16 and accumulates in
float32 (``preferred_element_type``), and the norms, sums and softmaxes around it run in float32.
That is what bfloat16 matrix units (AMX, avx512_bf16, GPU and TPU tensor cores) compute at full
rate; a bfloat16-accumulated product is less accurate and, on a Xeon with AMX, was measured at a
sixth of that rate (XLA, 2048² products: 200 against 1,200-1,330 GFLOP/s). Float32 operands give
float32 products exactly as before.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxmetrics.compilation import apply_default_compilation_cache

apply_default_compilation_cache()  # on by default; see jaxmetrics.compilation

__all__ = ["PRECISION", "accumulator_dtype", "index_dtype", "is_concrete", "l2_normalize", "product_dtype",
           "row_products", "squared_distances"]

PRECISION = jax.lax.Precision.HIGHEST
"""The precision every matrix product in the library states (``precision=PRECISION``).

On a TPU, JAX multiplies float32 matrices in bfloat16 passes unless told otherwise, and a GPU
may use TF32; CPUs always multiply in float32. Stating ``HIGHEST`` on every product makes a
float32 computation float32 on every backend, so the numbers a parity test pins on the CPU are
the numbers an accelerator gives. Products of bfloat16 inputs (``dtype=bfloat16`` models) are
single bfloat16 passes whatever the precision says (accumulated in float32: :func:`product_dtype`),
so this costs nothing there. A conventions test checks that no product in the package leaves it
out (docs/sharp_edges.md)."""


def is_concrete(*xs: Any) -> bool:
    """True when no leaf of ``xs`` is a JAX tracer (so its values can be inspected on the host).

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> is_concrete(jnp.ones(2), 3.0)
      True
      >>> jax.jit(lambda x: jnp.asarray(is_concrete(x)))(1.0).item()
      False
    """
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(xs))


def accumulator_dtype() -> Any:
    """``float64`` under ``jax.enable_x64(True)``, else ``float32`` (sums are never narrower).

    Examples:
      >>> import jax
      >>> with jax.enable_x64(True):
      ...     wide = accumulator_dtype()
      >>> accumulator_dtype().__name__, wide.__name__
      ('float32', 'float64')
    """
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def product_dtype(*xs: Any) -> Any:
    """The dtype a product of ``xs`` accumulates in and returns: their common dtype, at least
    float32 (``preferred_element_type`` of every product in the library). bfloat16 operands give
    float32 -- the mixed-precision contract --, float32 gives float32, float64 float64.

    Examples:
      >>> import jax.numpy as jnp
      >>> product_dtype(jnp.ones(2, jnp.bfloat16)).name, product_dtype(jnp.ones(2)).name
      ('float32', 'float32')
    """
    return jnp.promote_types(jnp.result_type(*xs), jnp.float32)


def row_products(x: jax.Array, y: jax.Array, *, precision: Any = PRECISION) -> jax.Array:
    """``x @ y.T`` ``[n, m]`` of ``x [n, d]`` and ``y [m, d]``, accumulated and returned in
    :func:`product_dtype` ``(x, y)``: bfloat16 operands stay bfloat16 (the fast path of bfloat16
    matrix units) and the sums are float32; float32 operands give the plain float32 product.

    Examples:
      >>> import jax.numpy as jnp
      >>> x = jnp.array([[1.0, 2.0]], jnp.bfloat16)
      >>> out = row_products(x, x)
      >>> out.dtype.name, out.tolist()
      ('float32', [[5.0]])
    """
    return jnp.matmul(x, y.T, precision=precision, preferred_element_type=product_dtype(x, y))


def index_dtype() -> Any:
    """``int64`` under x64, else ``int32`` (counts of states)."""
    return jnp.int64 if jax.config.jax_enable_x64 else jnp.int32


def squared_distances(x: jax.Array, y: jax.Array, *, x_sq: jax.Array | None = None,
                      y_sq: jax.Array | None = None, tie_rtol: float = 0.0,
                      precision: Any = PRECISION, by_difference: bool = False) -> jax.Array:
    """Squared Euclidean distances ``[n, m]`` by the matmul expansion.

    ``d_ij = max(0, ||x_i||² + ||y_j||² - 2 x_i·y_j)``; with ``tie_rtol > 0``, values at or below
    ``tie_rtol · (||x_i||² + ||y_j||²)`` (the expansion's rounding level) are set to exactly 0, so
    identical rows are at distance 0 however the rows are blocked.

    With ``by_difference=True`` it is ``sum_d (x_id - y_jd)²`` from the ``[n, m, d]`` differences
    instead: exact near 0 (the expansion's absolute error is about ``eps (||x||² + ||y||²)``), at
    ``n·m·d`` memory, for small sets whose smallest distances matter (the KoLeo entropy term).
    The other options are ignored then.

    Args:
      x: ``[n, d]``; y: ``[m, d]``.
      x_sq, y_sq: optional precomputed squared norms ``[n]`` / ``[m]``.
      tie_rtol: relative rounding level snapped to 0 (0 = no snapping).
      precision: ``jax.lax.Precision`` of the product (default :data:`PRECISION`, float32 on
        every backend; ``None`` = the backend's default, bfloat16 passes on a TPU).

    Returns:
      ``[n, m]`` non-negative distances in :func:`product_dtype` (float32 for bfloat16 rows: the
      product keeps bfloat16 operands and accumulates in float32, the norms are float32).

    Examples:
      >>> import jax.numpy as jnp
      >>> squared_distances(jnp.array([[0.0, 0.0], [3.0, 4.0]]), jnp.array([[3.0, 4.0]])).tolist()
      [[25.0], [0.0]]
      >>> squared_distances(jnp.array([[1.0, 1.0]]), jnp.array([[1.0, 1.0001]]), by_difference=True).item() > 0
      True
    """
    acc = product_dtype(x, y)
    if by_difference:
        return jnp.sum((x.astype(acc)[:, None, :] - y.astype(acc)[None, :, :]) ** 2, axis=-1)
    if x_sq is None:
        xa = x.astype(acc)
        x_sq = jnp.sum(xa * xa, axis=-1)
    if y_sq is None:
        ya = y.astype(acc)
        y_sq = jnp.sum(ya * ya, axis=-1)
    dot = row_products(x, y, precision=precision)
    s = x_sq[:, None] + y_sq[None, :]
    d = jnp.maximum(s - 2.0 * dot, 0.0)
    if tie_rtol:
        d = jnp.where(d <= tie_rtol * s, jnp.zeros((), d.dtype), d)
    return d


def l2_normalize(x: Any, mask: Any = None, axis: int = -1) -> jax.Array:
    """Vectors divided by their L2 norm along ``axis``; zero (and masked) vectors stay zero.

    ``x / ||x||`` where ``||x|| > 0``, else 0. The square root is guarded so gradients stay
    finite at zero vectors (padding).

    Args:
      x: ``[..., D]``.
      mask: optional bool array of ``x``'s shape without ``axis``; masked vectors become 0.
      axis: the vector axis.

    Returns:
      array of ``x``'s shape and dtype (the norm is computed in at least float32).

    Examples:
      >>> import jax.numpy as jnp
      >>> l2_normalize(jnp.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
      [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    x = jnp.asarray(x)
    dtype = x.dtype if jnp.issubdtype(x.dtype, jnp.inexact) else product_dtype(x)
    xa = x.astype(product_dtype(x))  # bfloat16 vectors: the norm in float32, the result rounded once
    sq = jnp.sum(xa * xa, axis=axis, keepdims=True)
    pos = sq > 0
    # x * rsqrt(s), not x / sqrt(s): XLA rewrites the division into this form under jit anyway,
    # so writing it directly keeps eager and jitted results equal to the last ulp
    out = (xa * jnp.where(pos, jax.lax.rsqrt(jnp.where(pos, sq, 1.0)), 0.0)).astype(dtype)
    if mask is not None:
        out = jnp.where(jnp.expand_dims(jnp.asarray(mask, bool), axis), out, 0.0)
    return out
