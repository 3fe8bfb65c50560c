"""The resumable training state of an ``out_dir``: parameters, optimizer state, step and curves in one
``training_state.npz`` (written to a temporary file and renamed, so a killed process leaves the last
complete state), and the run's identity in ``finetune_run.json`` (a rerun with other settings, another
starting model or other texts is refused, naming ``out_dir``).

The data order and every key are functions of the seed and the step, so the step is the whole
"position" in the data: a resumed run draws what an uninterrupted run draws, and with the same
seed ends with bit-identical parameters.
"""
from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

__all__ = ["RUN_FILE", "STATE_FILE", "check_run_identity", "read_state", "write_state"]

STATE_FILE = "training_state.npz"
RUN_FILE = "finetune_run.json"


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_state(out_dir: str | os.PathLike, *, params: Any, opt_state: Any, step: int, curves: dict,
                extra: dict[str, np.ndarray] | None = None) -> Path:
    """Write the training state after ``step`` completed updates atomically; returns its path.

    ``extra``: more named arrays of the state (the rewards' sample pool), read back by name."""
    arrays = {f"x_{k}": np.asarray(v) for k, v in (extra or {}).items()}
    for prefix, tree in (("p", params), ("o", opt_state)):
        for i, leaf in enumerate(jax.tree.leaves(tree)):
            arrays[f"{prefix}{i}"] = np.asarray(leaf)
    arrays["step"] = np.asarray(step, np.int64)
    arrays["curves"] = np.asarray(json.dumps(curves))
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path = Path(out_dir) / STATE_FILE
    _atomic_write(path, buf.getvalue())
    return path


def read_state(out_dir: str | os.PathLike, *, params: Any, opt_state: Any) -> tuple[Any, Any, int, dict, dict] | None:
    """The state saved in ``out_dir`` as ``(params, opt_state, step, curves, extra)``, with the pytree
    structures of the given templates and ``write_state``'s ``extra`` arrays by name, or ``None``
    when there is none."""
    path = Path(out_dir) / STATE_FILE
    if not path.is_file():
        return None
    with np.load(path) as z:
        loaded = {k: z[k] for k in z.files}
    trees = []
    for prefix, tree in (("p", params), ("o", opt_state)):
        leaves, treedef = jax.tree.flatten(tree)
        new = [loaded.get(f"{prefix}{i}") for i in range(len(leaves))]
        if any(n is None or n.shape != np.shape(t) for n, t in zip(new, leaves)):
            raise ValueError(f"out_dir: {path} does not match this model and optimizer; "
                             "choose another out_dir or delete it")
        trees.append(jax.tree.unflatten(treedef, [jax.numpy.asarray(n) for n in new]))
    extra = {k[2:]: v for k, v in loaded.items() if k.startswith("x_")}
    return trees[0], trees[1], int(loaded["step"]), json.loads(str(loaded["curves"])), extra


def check_run_identity(out_dir: str | os.PathLike, identity: dict) -> bool:
    """Record ``identity`` in a new ``out_dir``, or check that an existing run's agrees.

    Returns whether the run existed. Raises ``ValueError`` naming ``out_dir`` and the fields that
    differ when ``out_dir`` holds a run with other settings.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir: {os.fspath(out_dir)!r} is a file; expected a directory")
    out.mkdir(parents=True, exist_ok=True)
    path = out / RUN_FILE
    plain = json.loads(json.dumps(identity, sort_keys=True, default=str))
    if not path.is_file():
        if (out / STATE_FILE).exists():
            raise ValueError(f"out_dir: {os.fspath(out_dir)!r} holds a training state without its {RUN_FILE}")
        _atomic_write(path, (json.dumps(plain, indent=2, sort_keys=True) + "\n").encode())
        return False
    old = json.loads(path.read_text())
    differ = sorted(k for k in set(old) | set(plain) if old.get(k) != plain.get(k))
    if differ:
        shown = ", ".join(f"{k}: {old.get(k)!r} there, {plain.get(k)!r} now" for k in differ[:4])
        raise ValueError(f"out_dir: {os.fspath(out_dir)!r} holds a fine-tuning run with other settings ({shown}); "
                         "rerun with the same settings to resume it, or choose another out_dir")
    return True
