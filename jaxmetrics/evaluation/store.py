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
rest. A damaged file (truncated, edited, from another version: unreadable or of the wrong
shape) is named with its cause in a ``UserWarning`` and treated as missing, so that entry alone
is recomputed and written over it; every other file is still used. Without a ``cache_dir`` the
same store lives in memory for one call.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from jaxmetrics.models.cache import check_writable_dir

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


#: What reading a damaged cache file raises (``json.JSONDecodeError`` and ``UnicodeDecodeError``
#: are ``ValueError`` s; a truncated ``.npz`` is a ``BadZipFile``, a missing member a ``KeyError``).
_DAMAGED = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile)


class RunStore:
    """Files of the runs (see the module docstring); ``root=None`` keeps them in memory.

    Every ``load_*`` takes an optional ``check``: a function of the loaded value that raises
    ``ValueError`` with the cause when the value cannot be this entry (say, the wrong number of
    rows). A file that cannot be read or fails its check is named in a warning and reported as
    missing (``None``), so the caller recomputes it and saves it over the damaged one.

    Examples:
      >>> import tempfile, numpy as np
      >>> s = RunStore(tempfile.mkdtemp())
      >>> s.save_array(("p", "greedy", "seed0"), "features-x", np.ones((2, 3), np.float32))
      >>> s.load_array(("p", "greedy", "seed0"), "features-x").shape
      (2, 3)
      >>> s.load_array(("p", "greedy", "seed1"), "features-x") is None
      True
      >>> import warnings
      >>> with warnings.catch_warnings(record=True) as caught:
      ...     warnings.simplefilter("always")
      ...     s.load_array(("p", "greedy", "seed0"), "features-x", check=lambda a: _rows(a, 3)) is None
      True
      >>> print(caught[0].message)
      cache_dir: ignoring damaged cache file .../p/greedy/seed0/features-x.npy (ValueError: shape (2, 3),
      expected 2 dimensions and 3 along axis 0); it is recomputed
    """

    def __init__(self, root: str | os.PathLike | None):
        self.root = None if root is None else check_writable_dir(root, "cache_dir")
        self._mem: dict[tuple, Any] = {}
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, run: tuple[str, ...], name: str, ext: str) -> Path:
        return self.root.joinpath(*run, name + ext)

    def _read(self, run: tuple[str, ...], name: str, ext: str, read: Callable[[Path], Any],
              check: Callable[[Any], None] | None) -> Any:
        if self.root is None:
            return self._mem.get(run + (name,))
        p = self._path(run, name, ext)
        if not p.exists():
            return None
        try:
            value = read(p)
            if check is not None:
                check(value)
        except _DAMAGED as e:
            warnings.warn(f"cache_dir: ignoring damaged cache file {p} ({type(e).__name__}: {e}); it is recomputed",
                          UserWarning, stacklevel=3)
            return None
        return value

    # -- arrays (features) and array dicts (generations)
    def save_array(self, run: tuple[str, ...], name: str, arr: np.ndarray) -> None:
        if self.root is None:
            self._mem[run + (name,)] = np.array(arr)
            return
        _atomic_write(self._path(run, name, ".npy"), lambda p: np.save(p, np.asarray(arr)))

    def load_array(self, run: tuple[str, ...], name: str, *, check: Callable | None = None) -> np.ndarray | None:
        return self._read(run, name, ".npy", lambda p: np.load(p, allow_pickle=False), check)

    def save_arrays(self, run: tuple[str, ...], name: str, arrays: dict[str, np.ndarray]) -> None:
        if self.root is None:
            self._mem[run + (name,)] = {k: np.array(v) for k, v in arrays.items()}
            return

        def write(p):
            with open(p, "wb") as f:
                np.savez(f, **arrays)
        _atomic_write(self._path(run, name, ".npz"), write)

    def load_arrays(self, run: tuple[str, ...], name: str, *,
                    check: Callable | None = None) -> dict[str, np.ndarray] | None:
        def read(p):
            with open(p, "rb") as f, np.load(f, allow_pickle=False) as z:  # the file is closed on a bad zip too
                return {k: z[k] for k in z.files}
        return self._read(run, name, ".npz", read, check)

    # -- JSON (scores, manifest)
    def save_json(self, run: tuple[str, ...], name: str, obj: Any) -> None:
        if self.root is None:
            self._mem[run + (name,)] = json.loads(json.dumps(obj))
            return
        _atomic_write(self._path(run, name, ".json"),
                      lambda p: Path(p).write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n"))

    def load_json(self, run: tuple[str, ...], name: str, *, check: Callable | None = None) -> dict | None:
        """A JSON object (anything else in the file counts as damaged)."""
        def read(p):
            obj = json.loads(p.read_text(encoding="utf-8"))
            if not isinstance(obj, dict):
                raise ValueError(f"a JSON {type(obj).__name__}, expected an object")
            return obj
        return self._read(run, name, ".json", read, check)


def _rows(arr: np.ndarray, n: int, *, ndim: int = 2, axis: int = 0) -> None:
    """``check`` of a cached array: ``ndim`` dimensions and ``n`` rows along ``axis``."""
    if arr.ndim != ndim or arr.shape[axis] != n:
        raise ValueError(f"shape {arr.shape}, expected {ndim} dimensions and {n} along axis {axis}")


def _has_keys(obj: dict, keys: tuple[str, ...]) -> None:
    """``check`` of a cached dict (scores, arrays): the ``keys`` it must have."""
    missing = [k for k in keys if k not in obj]
    if missing:
        raise ValueError(f"no {', '.join(map(repr, missing))}")
