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

DATA_AXIS = "data"


def make_mesh(devices: Sequence[Any] | None = None, axis: str = DATA_AXIS) -> Mesh:
    """A 1-D mesh named ``axis`` over ``devices`` (default: all of ``jax.devices()``).

    Across hosts call ``jax.distributed.initialize()`` first; ``jax.devices()`` then lists the
    devices of every process and the mesh spans them all.
    """
    devs = list(jax.devices() if devices is None else devices)
    if not devs:
        raise ValueError("devices: empty device list")
    return jax.make_mesh((len(devs),), (axis,), axis_types=(AxisType.Auto,), devices=devs)


def shard(x: Any, mesh: Mesh | None = None, axis: str = DATA_AXIS, *, replicate: bool = False):
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


def pad_to_multiple(x: np.ndarray, multiple: int, *, value: Any = 0):
    """Pad the leading axis of ``x`` to a multiple of ``multiple``.

    Returns ``(padded, mask)`` where ``mask`` is a boolean ``[n_padded]`` array that is True for
    the original rows. Metrics that take a mask ignore the padded rows.

    Examples:
        >>> import numpy as np
        >>> p, m = pad_to_multiple(np.ones((5, 2)), 4)
        >>> p.shape, int(m.sum())
        ((8, 2), 5)
    """
    x = np.asarray(x)
    n = x.shape[0]
    n_pad = (-n) % multiple
    pad_width = [(0, n_pad)] + [(0, 0)] * (x.ndim - 1)
    mask = np.concatenate([np.ones(n, bool), np.zeros(n_pad, bool)])
    return np.pad(x, pad_width, constant_values=value), mask
