"""On-disk feature cache with atomic writes and resume.

Layout: ``cache_dir/<key>/chunk-<uuid>.npz``, one file per computed batch, each holding
the SHA-256 hashes of its texts and their feature rows. ``<key>`` encodes the model
fingerprint, the feature kind, the layer, ``max_length`` and the dtype, so changing any of
them never reuses stale features. A chunk is written to a temporary file and moved into
place with ``os.replace`` (atomic on POSIX), so a run killed at any moment leaves only
complete chunks; the next run loads them and computes only the missing texts.
"""
from __future__ import annotations

import hashlib
import os
import re
import uuid
import warnings
from pathlib import Path

import numpy as np

from jaxmetrics._files import check_folder_writable

__all__ = ["FeatureCache", "check_writable_dir", "text_hash"]


def check_writable_dir(path: str | os.PathLike, name: str) -> Path:
    """Check that the folder ``path`` exists or can be created, and that files can be written in
    it, without creating anything (a probe file is removed at once).

    The checks of a cache folder or an output folder before any work: ``path`` is a directory,
    or does not exist and its nearest existing ancestor is a writable directory.

    Args:
      path: the folder.
      name: the argument or option named in errors (``'cache_dir'``, ``'--cache-dir'``).

    Returns:
      ``path`` as a :class:`~pathlib.Path` (``~`` expanded).

    Raises:
      TypeError: ``path`` is not a path.
      ValueError: naming ``name``: ``path`` is empty, is a file, lies under a file, or its folder
        is not writable.

    Examples:
      >>> import tempfile, os
      >>> d = tempfile.mkdtemp()
      >>> check_writable_dir(os.path.join(d, "new", "cache"), "cache_dir").name
      'cache'
      >>> open(os.path.join(d, "f"), "w").close()
      >>> check_writable_dir(os.path.join(d, "f", "cache"), "cache_dir")
      Traceback (most recent call last):
      ...
      ValueError: cache_dir: cannot create '...f/cache': '...f' is a file, not a directory
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a folder path, got {type(path).__name__}")
    if not os.fspath(path):
        raise ValueError(f"{name}: empty folder name")
    p = Path(path).expanduser()
    if p.exists():
        if not p.is_dir():
            raise ValueError(f"{name}: {str(path)!r} exists and is not a directory")
        probe = p
    else:
        probe = next((a for a in p.absolute().parents if a.exists()), None)
        if probe is not None and not probe.is_dir():
            raise ValueError(f"{name}: cannot create {str(path)!r}: {str(probe)!r} is a file, not a directory")
    check_folder_writable(probe, f"{name}: cannot write in {str(path)!r}: {str(probe)!r} is not writable")
    return p


def text_hash(text: str) -> str:
    """SHA-256 hex digest of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


class FeatureCache:
    """Feature vectors keyed by text hash, stored under ``cache_dir/<key>/``.

    Counters (for this process): ``hits`` (texts found on disk), ``computed`` (texts whose
    features were written by :meth:`put`) and ``chunks_written``.

    Examples:
      >>> import tempfile, numpy as np
      >>> c = FeatureCache(tempfile.mkdtemp(), "demo")
      >>> c.put(["a", "b"], np.eye(2, dtype=np.float32))
      >>> found = c.get_many(["b", "c"])
      >>> sorted(found), c.hits, c.computed
      ([0], 1, 2)
    """

    def __init__(self, cache_dir: str | os.PathLike, key: str):
        if not isinstance(cache_dir, (str, os.PathLike)):
            raise TypeError(f"cache_dir: expected a path, got {type(cache_dir).__name__}")
        safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", key)
        self.dir = check_writable_dir(cache_dir, "cache_dir") / safe
        self.dir.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.computed = 0
        self.chunks_written = 0
        self._index: dict[str, np.ndarray] | None = None

    def _load(self) -> dict[str, np.ndarray]:
        if self._index is None:
            index: dict[str, np.ndarray] = {}
            for f in sorted(self.dir.glob("chunk-*.npz")):
                try:
                    with np.load(f, allow_pickle=False) as z:
                        hashes, feats = z["hashes"], z["features"]
                except Exception as e:  # a foreign or damaged file: skip it, it will be recomputed
                    warnings.warn(f"cache_dir: ignoring unreadable cache file {f} ({e})", stacklevel=3)
                    continue
                for h, row in zip(hashes.tolist(), feats):
                    index[h] = row
            self._index = index
        return self._index

    def get_many(self, texts: list[str]) -> dict[int, np.ndarray]:
        """``{position in texts: feature row}`` for the texts already in the cache."""
        index = self._load()
        found = {}
        for i, t in enumerate(texts):
            row = index.get(text_hash(t))
            if row is not None:
                found[i] = row
        self.hits += len(found)
        return found

    def put(self, texts: list[str], features: np.ndarray) -> None:
        """Atomically write one chunk with the features of ``texts`` (``[len(texts), ...]``)."""
        features = np.asarray(features)
        hashes = np.array([text_hash(t) for t in texts])
        name = f"chunk-{uuid.uuid4().hex}.npz"
        tmp = self.dir / f".tmp-{name}"
        with open(tmp, "wb") as fh:
            np.savez(fh, hashes=hashes, features=features)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.dir / name)
        self.chunks_written += 1
        self.computed += len(texts)
        index = self._load()
        for h, row in zip(hashes.tolist(), features):
            index[h] = row
