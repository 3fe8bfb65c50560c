"""The on-disk cache of :func:`~jaxmetrics.evaluation.evaluate_generation`.

Layout under ``cache_dir``::

    manifest.json                         featurizer name, fingerprint and hidden size
    <protocol hash>/<setting>/seed<s>/    one generation run (model, data, lengths in the hash)
        generation.npz                    token ids of every row (prompt and continuation)
        features-<hash>.npy               its features (featurizer, pooling, length in the hash)
        scores-<hash>.json                its scores (every scoring option in the hash)
    <protocol hash>/human/                the human texts, same files

Every file is written to a temporary name and moved into place (``os.replace``), so a run
killed at any moment leaves only complete files; the next run loads them and computes the
rest. Without a ``cache_dir`` the same store lives in memory for one call.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RunStore", "stable_hash"]


def stable_hash(obj: Any, n: int = 12) -> str:
    """Short SHA-256 of a JSON-able object (keys sorted) or of bytes / arrays.

    Examples:
      >>> stable_hash({"b": 1, "a": [1, 2]}) == stable_hash({"a": [1, 2], "b": 1})
      True
    """
    h = hashlib.sha256()
    if isinstance(obj, (bytes, bytearray)):
        h.update(obj)
    elif isinstance(obj, np.ndarray):
        h.update(str(obj.dtype).encode() + str(obj.shape).encode() + np.ascontiguousarray(obj).tobytes())
    else:
        h.update(json.dumps(obj, sort_keys=True, default=str).encode())
    return h.hexdigest()[:n]


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def pack_ids(seqs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Ragged id rows as ``ids`` (concatenated) + ``offsets``."""
    lengths = np.array([len(s) for s in seqs], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = np.concatenate([np.asarray(s, np.int32) for s in seqs]) if seqs else np.zeros(0, np.int32)
    return {"ids": ids.astype(np.int32), "offsets": offsets}


def unpack_ids(ids: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    return [ids[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


class RunStore:
    """Files of the runs (see the module docstring); ``root=None`` keeps them in memory.

    Examples:
      >>> import tempfile, numpy as np
      >>> s = RunStore(tempfile.mkdtemp())
      >>> s.save_array(("p", "greedy", "seed0"), "features-x", np.ones((2, 3), np.float32))
      >>> s.load_array(("p", "greedy", "seed0"), "features-x").shape
      (2, 3)
      >>> s.load_array(("p", "greedy", "seed1"), "features-x") is None
      True
    """

    def __init__(self, root: str | os.PathLike | None):
        self.root = None if root is None else Path(root).expanduser()
        self._mem: dict[tuple, Any] = {}
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, run: tuple[str, ...], name: str, ext: str) -> Path:
        return self.root.joinpath(*run, name + ext)

    # -- arrays (features) and array dicts (generations)
    def save_array(self, run: tuple[str, ...], name: str, arr: np.ndarray) -> None:
        if self.root is None:
            self._mem[run + (name,)] = np.array(arr)
            return
        _atomic_write(self._path(run, name, ".npy"), lambda p: np.save(p, np.asarray(arr)))

    def load_array(self, run: tuple[str, ...], name: str) -> np.ndarray | None:
        if self.root is None:
            return self._mem.get(run + (name,))
        p = self._path(run, name, ".npy")
        return np.load(p, allow_pickle=False) if p.exists() else None

    def save_arrays(self, run: tuple[str, ...], name: str, arrays: dict[str, np.ndarray]) -> None:
        if self.root is None:
            self._mem[run + (name,)] = {k: np.array(v) for k, v in arrays.items()}
            return

        def write(p):
            with open(p, "wb") as f:
                np.savez(f, **arrays)
        _atomic_write(self._path(run, name, ".npz"), write)

    def load_arrays(self, run: tuple[str, ...], name: str) -> dict[str, np.ndarray] | None:
        if self.root is None:
            return self._mem.get(run + (name,))
        p = self._path(run, name, ".npz")
        if not p.exists():
            return None
        with np.load(p, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}

    # -- JSON (scores, manifest)
    def save_json(self, run: tuple[str, ...], name: str, obj: Any) -> None:
        if self.root is None:
            self._mem[run + (name,)] = json.loads(json.dumps(obj))
            return
        _atomic_write(self._path(run, name, ".json"),
                      lambda p: Path(p).write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n"))

    def load_json(self, run: tuple[str, ...], name: str) -> Any:
        if self.root is None:
            return self._mem.get(run + (name,))
        p = self._path(run, name, ".json")
        return json.loads(p.read_text()) if p.exists() else None
