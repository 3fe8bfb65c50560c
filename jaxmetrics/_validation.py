"""Input checks shared by every public entry point.

Each check raises ``ValueError`` (or ``TypeError``) whose message starts with the
argument's name, so a user sees at once which input was wrong. Checks run on the
host, at the public boundary, before anything is traced or compiled.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np


def as_2d_features(x: Any, name: str, *, dim: int | None = None) -> np.ndarray:
    """Return ``x`` as a finite float ``[n, d]`` numpy array, or raise naming ``name``.

    Rejects non-numeric data, arrays that are not 2-D, empty sets (n == 0 or d == 0),
    NaN/inf entries, and (when ``dim`` is given) a feature dimension other than ``dim``.
    """
    if x is None:
        raise ValueError(f"{name}: expected an array of shape [n, d], got None")
    try:
        arr = np.asarray(x)
    except Exception as e:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name}: could not convert to an array ({e})") from e
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array [n, d], got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: the set is empty (shape {arr.shape})")
    if arr.shape[1] == 0:
        raise ValueError(f"{name}: features have dimension 0 (shape {arr.shape})")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float32)
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name}: contains {bad} NaN or infinite value(s)")
    if dim is not None and arr.shape[1] != dim:
        raise ValueError(f"{name}: feature dimension {arr.shape[1]} does not match the other set's {dim}")
    return arr


def check_finite_array(x: Any, name: str) -> np.ndarray:
    """Return ``x`` as a numpy array after checking that every entry is finite."""
    arr = np.asarray(x)
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return arr


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Check a real scalar is > 0 (or >= 0 with ``allow_zero``) and finite."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {type(value).__name__}")
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}: must be finite and {bound}, got {value!r}")
    return v


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Check ``value`` is an integer (Python or numpy) within ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__} {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name}: must be <= {maximum}, got {v}")
    return v


def check_open_unit(value: Any, name: str) -> float:
    """Check a real scalar lies strictly inside (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number in (0, 1), got {type(value).__name__}")
    v = float(value)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name}: must lie strictly between 0 and 1, got {value!r}")
    return v


def check_texts(texts: Any, name: str, *, drop_empty: bool = False) -> list[str]:
    """Check ``texts`` is a non-empty sequence of strings.

    With ``drop_empty`` empty / whitespace-only strings are removed (the caller warns);
    otherwise they raise. Returns a list.
    """
    if isinstance(texts, str) or texts is None:
        raise TypeError(f"{name}: expected a list of strings, got {type(texts).__name__}")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{name}: item {i} is {type(t).__name__}, expected str")
    if drop_empty:
        out = [t for t in out if t.strip()]
    else:
        empty = [i for i, t in enumerate(out) if not t.strip()]
        if empty:
            raise ValueError(f"{name}: {len(empty)} empty or whitespace-only text(s), first at index {empty[0]}")
    if not out:
        raise ValueError(f"{name}: no texts (the list is empty)")
    return out
