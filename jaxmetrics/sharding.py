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

__all__ = ["DATA_AXIS", "PaddedRows", "host_readable", "make_mesh", "pad_and_shard", "pad_to_multiple", "place_rows",
           "replicate_global", "shard", "spans_processes", "to_host"]

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
        return _put(leaf, NamedSharding(mesh, spec))

    return jax.tree.map(place, x)


def spans_processes(x: Any) -> bool:
    """True when ``x`` is a ``jax.Array`` with shards on another process's devices (a global
    array of a multi-process run, e.g. from ``jax.make_array_from_process_local_data``); its
    values cannot be read on this host without a collective (:func:`to_host`).

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from jaxmetrics.sharding import spans_processes
        >>> spans_processes(jnp.ones(3)), spans_processes(np.ones(3))
        (False, False)
    """
    if not isinstance(x, jax.Array) or isinstance(x, jax.core.Tracer):
        return False  # host data, or a tracer (under jit): no shards to read
    return not x.is_fully_addressable and not x.is_fully_replicated


def host_readable(*xs: Any) -> bool:
    """True when every leaf of ``xs`` can be read on this host: no JAX tracer (under ``jit``) and
    no array spanning other processes (:func:`spans_processes`). Host-side value checks run
    only then; shape checks always run.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from jaxmetrics.sharding import host_readable
        >>> host_readable(jnp.ones(2), 3.0)
        True
        >>> jax.jit(lambda x: jnp.asarray(host_readable(x)))(1.0).item()
        False
    """
    return not any(isinstance(x, jax.core.Tracer) or spans_processes(x) for x in jax.tree.leaves(xs))


def to_host(x: Any) -> Any:
    """``x`` (an array or pytree of arrays) as numpy arrays holding the full value, on every
    process: arrays spanning processes are gathered
    (``jax.experimental.multihost_utils.process_allgather``; every process must call this
    together), others are read directly (no collective, no copy between devices).

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxmetrics.sharding import make_mesh, shard, to_host
        >>> to_host(shard(jnp.arange(8.0), make_mesh())).tolist()
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    """
    def get(leaf):
        if spans_processes(leaf):
            from jax.experimental import multihost_utils

            return np.asarray(multihost_utils.process_allgather(leaf, tiled=True))
        return np.asarray(leaf)

    return jax.tree.map(get, x)


def replicate_global(x: Any, mesh: Mesh) -> Any:
    """Leaves of ``x`` that span processes (:func:`spans_processes`) copied whole to every
    device of ``mesh`` (so ``np.asarray`` works on every process); other leaves unchanged.

    Examples:
        >>> import jax.numpy as jnp
        >>> from jaxmetrics.sharding import make_mesh, replicate_global, shard
        >>> mesh = make_mesh()
        >>> replicate_global(shard(jnp.arange(8.0), mesh), mesh).shape
        (8,)
    """
    rep = NamedSharding(mesh, PartitionSpec())
    return jax.tree.map(lambda leaf: _put(leaf, rep) if spans_processes(leaf) else leaf, x)


def _put(leaf: Any, sharding: NamedSharding) -> jax.Array:
    """``jax.device_put`` that also reshards arrays spanning processes (by a jitted identity;
    no-op when the placement already matches)."""
    if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
        if leaf.sharding.is_equivalent_to(sharding, leaf.ndim):
            return leaf
        return jax.jit(lambda a: a, out_shardings=sharding)(leaf)
    return jax.device_put(leaf, sharding)


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

    extra = (-n) % n_dev
    if extra and any(spans_processes(leaf) for leaf in jax.tree.leaves(x)):
        raise ValueError(
            f"x: {n} rows of an array spanning several processes do not divide over the {n_dev} "
            f"devices of mesh axis {axis!r}; pad each process's rows (with a mask) so the global "
            f"row count is a multiple of {n_dev} before jax.make_array_from_process_local_data")

    def pad(leaf):
        if spans_processes(leaf):  # already global, row count checked above: placed by shard()
            return leaf
        leaf = np.asarray(leaf)
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
