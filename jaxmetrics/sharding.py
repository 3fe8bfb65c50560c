"""Placing arrays on a device mesh.

jaxmetrics kernels contain no collectives of their own: they are ordinary ``jax.jit``
functions, and when their inputs carry a :class:`jax.sharding.NamedSharding` XLA's SPMD
partitioner splits the work and inserts the reductions. These helpers build a 1-D mesh
over the available devices and shard the leading (example) axis of arrays over it.

Examples:
    >>> import jax.numpy as jnp
    >>> from jaxmetrics.sharding import make_mesh, shard
    >>> mesh = make_mesh()
    >>> x = shard(jnp.ones((8, 3)), mesh)
    >>> x.shape
    (8, 3)
"""
from __future__ import annotations

from typing import Any, Sequence

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from jaxmetrics.results import Result

__all__ = ["DATA_AXIS", "PaddedRows", "make_mesh", "pad_and_shard", "pad_to_multiple", "place_rows", "shard"]

DATA_AXIS = "data"


class PaddedRows(Result):
    """Rows padded to a multiple of a device count (:func:`pad_to_multiple`, :func:`pad_and_shard`).

    Attributes:
      values: the padded array (or pytree of arrays) ``[n_padded, ...]``.
      rows_mask: bool ``[n_padded]``, True for the original rows (slice outputs with
        ``out[rows_mask]`` or ``out[:n]``, or pass it to a metric as its mask).
    """

    values: Any
    rows_mask: np.ndarray


def make_mesh(devices: Sequence[Any] | None = None, axis: str = DATA_AXIS) -> Mesh:
    """A 1-D mesh named ``axis`` over ``devices`` (default: all of ``jax.devices()``).

    Across hosts call ``jax.distributed.initialize()`` first; ``jax.devices()`` then lists the
    devices of every process and the mesh spans them all.

    Examples:
        >>> from jaxmetrics.sharding import make_mesh
        >>> import jax
        >>> mesh = make_mesh(jax.devices()[:1])
        >>> mesh.axis_names, mesh.size
        (('data',), 1)
    """
    devs = list(jax.devices() if devices is None else devices)
    if not devs:
        raise ValueError("devices: empty device list")
    return jax.make_mesh((len(devs),), (axis,), axis_types=(AxisType.Auto,), devices=devs)


def shard(x: Any, mesh: Mesh | None = None, axis: str = DATA_AXIS, *, replicate: bool = False) -> Any:
    """Put ``x`` (an array or a pytree of arrays) on ``mesh``, split along its first axis.

    Args:
      x: array(s) whose leading dimension is the example axis ``[n, ...]``; ``n`` must be a
        multiple of the number of devices on ``axis`` (pad with a mask otherwise, see
        :func:`pad_to_multiple`).
      mesh: the mesh (default :func:`make_mesh` over all devices).
      axis: mesh axis to split over.
      replicate: copy the whole array to every device instead of splitting it.

    Returns:
      The same pytree with every leaf a sharded ``jax.Array``.

    Examples:
        >>> from jaxmetrics.sharding import make_mesh, shard
        >>> import jax, jax.numpy as jnp
        >>> ids, mask = shard((jnp.zeros((8, 4), int), jnp.ones((8, 4), bool)), make_mesh())
        >>> ids.sharding.spec
        P('data', None)
    """
    mesh = make_mesh(axis=axis) if mesh is None else mesh
    n_dev = mesh.shape[axis]

    def place(leaf):
        leaf = jax.numpy.asarray(leaf)
        if replicate or leaf.ndim == 0:
            spec = PartitionSpec()
        else:
            if leaf.shape[0] % n_dev:
                raise ValueError(
                    f"x: leading dimension {leaf.shape[0]} is not a multiple of the {n_dev} devices "
                    f"on mesh axis {axis!r}; pad it first (jaxmetrics.sharding.pad_to_multiple)")
            spec = PartitionSpec(axis, *([None] * (leaf.ndim - 1)))
        return jax.device_put(leaf, NamedSharding(mesh, spec))

    return jax.tree.map(place, x)


def place_rows(x: Any, mesh: Mesh | None, axis: str = DATA_AXIS, *, name: str = "x") -> Any:
    """Shard the rows of ``x`` over ``mesh`` when their number divides evenly, else replicate.

    For kernels where padding rows would change the result (k-means, PCA, k-NN hyperspheres:
    a padded row is a data point), a row count that is not a multiple of the device count
    cannot be split by :func:`shard`; the array is then replicated on the mesh (the
    computation runs unsharded) and a :class:`UserWarning` says how to get sharding. With
    ``mesh=None`` ``x`` is returned as a plain array.

    Args:
      x: array ``[n, ...]`` (or pytree of arrays with the same ``n``).
      mesh: the mesh, or None.
      name: argument name used in the warning.

    Examples:
        >>> from jaxmetrics.sharding import make_mesh, place_rows
        >>> import jax.numpy as jnp
        >>> place_rows(jnp.ones((8, 2)), make_mesh()).shape
        (8, 2)
    """
    if mesh is None:
        return jax.tree.map(jax.numpy.asarray, x)
    n_dev = mesh.shape[axis]
    rows = {int(np.shape(leaf)[0]) for leaf in jax.tree.leaves(x) if np.ndim(leaf)}
    if all(r % n_dev == 0 for r in rows):
        return shard(x, mesh, axis)
    import warnings

    warnings.warn(f"{name}: {sorted(rows)} rows do not divide over the {n_dev} devices of mesh axis "
                  f"{axis!r}; computing unsharded (replicated). Use a multiple of {n_dev} rows to shard.",
                  UserWarning, stacklevel=3)
    return shard(x, mesh, axis, replicate=True)


def pad_and_shard(x: Any, mesh: Mesh, axis: str = DATA_AXIS, *, edge: bool = False) -> PaddedRows:
    """Pad the rows of ``x`` (an array or pytree of arrays with the same ``n``; ``None`` leaves
    are kept) to a multiple of the devices on ``axis`` and shard them over ``mesh``.

    For kernels that are independent per row (vmapped pairs, windows) or take a mask: the padded
    rows are zeros / False (``edge=True``: copies of the last row, for kernels that need every
    row to be valid input); slice the outputs back with ``[:n]`` or mask them out.

    Returns:
      :class:`PaddedRows` with the sharded ``values`` and ``rows_mask [n_padded]`` (True for the
      original rows).

    Examples:
        >>> import numpy as np
        >>> from jaxmetrics.sharding import make_mesh, pad_and_shard
        >>> out = pad_and_shard((np.ones((3, 2)), np.ones(3, bool)), make_mesh())
        >>> a, b = out.values
        >>> a.shape[0] % len(make_mesh().devices.flat), int(out.rows_mask.sum())
        (0, 3)
    """
    n_dev = mesh.shape[axis]
    rows = {int(np.shape(leaf)[0]) for leaf in jax.tree.leaves(x)}
    if len(rows) != 1:
        raise ValueError(f"x: all arrays must have the same number of rows, got {sorted(rows)}")
    (n,) = rows
    mask = pad_to_multiple(np.zeros(n, bool), n_dev).rows_mask

    def pad(leaf):
        leaf = np.asarray(leaf)
        extra = (-n) % n_dev
        if edge and extra and n:
            return np.concatenate([leaf, np.repeat(leaf[-1:], extra, axis=0)])
        return pad_to_multiple(leaf, n_dev).values

    return PaddedRows(shard(jax.tree.map(pad, x), mesh, axis), mask)


def pad_to_multiple(x: np.ndarray, multiple: int, *, value: Any = 0) -> PaddedRows:
    """Pad the leading axis of ``x`` to a multiple of ``multiple`` with ``value``.

    Returns:
      :class:`PaddedRows`: the padded array and ``rows_mask`` (True for the original rows).
      Metrics that take a mask ignore the padded rows.

    Examples:
        >>> from jaxmetrics.sharding import pad_to_multiple
        >>> import numpy as np
        >>> out = pad_to_multiple(np.ones((5, 2)), 4)
        >>> out.values.shape, int(out.rows_mask.sum())
        ((8, 2), 5)
    """
    x = np.asarray(x)
    n = x.shape[0]
    n_pad = (-n) % multiple
    pad_width = [(0, n_pad)] + [(0, 0)] * (x.ndim - 1)
    mask = np.concatenate([np.ones(n, bool), np.zeros(n_pad, bool)])
    return PaddedRows(np.pad(x, pad_width, constant_values=value), mask)
