"""Input checks shared by every public entry point (the one place they are written).

Each check raises ``ValueError`` (or ``TypeError``) whose message starts with the argument's
name, so a user sees at once which input was wrong. Checks run on the host, at the public
boundary, before anything is traced or compiled.

Shape and dtype checks always run. Value checks (NaN/inf, ranges, a mask that selects nothing)
run only on concrete values: host data, and ``jax.Array`` s that are not tracers -- also a
concrete array closed over by a function under ``jax.jit`` / ``jax.grad`` / ``jax.vmap``, which
is checked once per trace with :func:`concrete_value` (evaluated at trace time, never staged into
the compiled program). A tracer gets the shape checks only: its values do not exist yet, and
asking for them would raise ``ConcretizationTypeError``.
"""
from __future__ import annotations

import numbers
import os
from typing import Any, Iterable

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._files import check_folder_writable, check_input_file  # re-exported: the file checks need no JAX
from jaxmetrics._ops import is_concrete

__all__ = [
    "check_choice",
    "check_features",
    "check_input_file",
    "check_int",
    "check_key",
    "check_mask",
    "check_open_unit",
    "check_pca_max_data",
    "check_positive",
    "check_probability",
    "check_resampling",
    "check_texts",
    "concrete_value",
    "min_resamples",
]


def concrete_value(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` evaluated now, on concrete inputs, also while a function is being traced.

    Returns ``None`` when a leaf of ``args`` is a tracer (its value is unknown at trace time).
    Otherwise ``fn`` runs under :func:`jax.ensure_compile_time_eval`, so ``jnp`` operations on a
    concrete ``jax.Array`` that a jitted function closed over give concrete results (not
    tracers) and add nothing to the compiled program; the result comes to the host with
    ``jax.device_get`` (an explicit transfer, once per trace: a cached jit call runs no check).
    Only the arguments' own values count: ``x[:1]`` computed inside the traced function is a
    tracer again.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jnp.array([1.0, jnp.nan])
      >>> int(concrete_value(lambda a: jnp.sum(~jnp.isfinite(a)), x))
      1
      >>> count_nan = lambda a: jnp.sum(jnp.isnan(a))
      >>> def step(y):  # x is closed over (concrete), y is traced
      ...     print(concrete_value(count_nan, x), concrete_value(count_nan, y))
      ...     return y
      >>> _ = jax.jit(step)(jnp.ones(2))
      1 None
    """
    if not is_concrete(*args):
        return None
    with jax.ensure_compile_time_eval():
        out = fn(*args)
    # An explicit copy (allowed under jax.transfer_guard("disallow")); normally one scalar.
    return jax.tree.map(np.asarray, jax.device_get(out))


def check_features(x: Any, name: str, *, dim: int | None = None, min_rows: int = 1) -> Any:
    """Return ``x`` as a finite float ``[n, d]`` array, or raise naming ``name``.

    Rejects ``None``, non-numeric data, arrays that are not 2-D, fewer than ``min_rows`` rows,
    ``d == 0``, NaN/inf entries, and (when ``dim`` is given) a feature dimension other than
    ``dim``. Integer and boolean inputs become float32. Host data (lists, numpy) comes back as a
    numpy array; a ``jax.Array`` stays a ``jax.Array`` on its devices (sharding kept); a tracer
    gets the shape checks only.

    Examples:
      >>> check_features([[1, 2], [3, 4]], "x").dtype
      dtype('float32')
      >>> check_features([[1.0, float("nan")]], "p_features")
      Traceback (most recent call last):
      ...
      ValueError: p_features: contains 1 NaN or infinite value(s)
    """
    if x is None:
        raise ValueError(f"{name}: expected an array of shape [n, d], got None")
    traced = not is_concrete(x)
    if isinstance(x, jax.Array):
        arr = x
    else:
        try:
            arr = np.asarray(x)
        except Exception as e:  # pragma: no cover - exotic inputs
            raise TypeError(f"{name}: could not convert to an array ({e})") from e
    dt = np.dtype(arr.dtype) if not str(arr.dtype).startswith("key") else None
    if dt is None or dt == object or not (np.issubdtype(dt, np.number) or dt == np.bool_):
        raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array [n, d], got shape {tuple(arr.shape)}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: the set is empty (shape {tuple(arr.shape)})")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name}: needs at least {min_rows} rows, got {arr.shape[0]}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name}: features have dimension 0 (shape {tuple(arr.shape)})")
    if dim is not None and arr.shape[1] != dim:
        raise ValueError(f"{name}: feature dimension {arr.shape[1]} does not match the other set's {dim}")
    if not traced and np.issubdtype(dt, np.floating):
        # A concrete jax.Array (also one closed over inside jit) is counted on its devices,
        # eagerly (one scalar comes back); host data with numpy.
        if isinstance(arr, jax.Array):
            bad = int(concrete_value(lambda a: jnp.sum(~jnp.isfinite(a)), arr))
        else:
            bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        if bad:
            raise ValueError(f"{name}: contains {bad} NaN or infinite value(s)")
    if not np.issubdtype(dt, np.floating):
        arr = arr.astype(jnp.float32) if isinstance(arr, jax.Array) else arr.astype(np.float32)
    return arr


def check_mask(mask: Any, shape: tuple[int, ...], name: str, *, nonempty: bool = False) -> Any:
    """``None`` or a boolean array of ``shape``; with ``nonempty`` it must select something.

    Examples:
      >>> check_mask([True, False], (2,), "p_mask").tolist()
      [True, False]
      >>> check_mask([False, False], (2,), "q_mask", nonempty=True)
      Traceback (most recent call last):
      ...
      ValueError: q_mask: masks out every row (the set would be empty)
    """
    if mask is None:
        return None
    m = mask if isinstance(mask, jax.Array) else np.asarray(mask)
    if tuple(m.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {list(shape)}, got {list(m.shape)}")
    if nonempty and is_concrete(m):
        selected = concrete_value(jnp.any, m) if isinstance(m, jax.Array) else np.any(m)
        if not bool(selected):
            raise ValueError(f"{name}: masks out every row (the set would be empty)")
    return m.astype(bool)


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Check a real scalar is > 0 (or >= 0 with ``allow_zero``) and finite; return it as float.

    Examples:
      >>> check_positive(0.5, "temperature")
      0.5
    """
    if isinstance(value, (np.ndarray, jax.Array)) and np.ndim(value) == 0 and is_concrete(value):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {type(value).__name__}")
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}: must be finite and {bound}, got {value!r}")
    return v


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Check ``value`` is an integer (Python or numpy) within ``[minimum, maximum]``.

    Examples:
      >>> check_int(3, "k", minimum=1)
      3
      >>> check_int(2.5, "k")
      Traceback (most recent call last):
      ...
      TypeError: k: expected an integer, got float 2.5
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__} {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name}: must be <= {maximum}, got {v}")
    return v


def check_open_unit(value: Any, name: str) -> float:
    """Check a real scalar lies strictly inside (0, 1).

    Examples:
      >>> check_open_unit(0.9, "explained_var")
      0.9
    """
    return _check_unit(value, name, include_one=False)


def check_probability(value: Any, name: str) -> float:
    """Check a real scalar lies in (0, 1] (e.g. ``top_p``).

    Examples:
      >>> check_probability(1.0, "top_p")
      1.0
    """
    return _check_unit(value, name, include_one=True)


def _check_unit(value: Any, name: str, *, include_one: bool) -> float:
    v = check_positive(value, name)
    if v > 1.0 or (v == 1.0 and not include_one):
        interval = "in (0, 1]" if include_one else "strictly between 0 and 1"
        raise ValueError(f"{name}: must lie {interval}, got {value!r}")
    return v


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """Check ``value`` is one of ``choices``.

    Examples:
      >>> check_choice("corpus", "reduction", ("corpus", "sequence"))
      'corpus'
    """
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value


#: The fewest rows a PCA subsample may have (``pca_max_data``): two rows span one direction. The
#: data-dependent bound of :func:`check_pca_max_data` is larger (the feature dimension + 1).
MIN_PCA_ROWS = 2


def check_pca_max_data(value: Any, name: str = "pca_max_data", *, num_rows: int | None = None,
                       dim: int | None = None) -> int:
    """Check a PCA subsample size: ``-1`` (all rows) or enough rows to span the features.

    A PCA fitted on ``m`` rows has at most ``m - 1`` directions of non-zero variance. With
    ``m <= dim`` the projection keeps directions because the subsample has no others, not because
    they explain the variance: on one row every feature projects to the same point (one k-means
    bucket holds everything and MAUVE is 1 for any texts), on two rows onto one line. So a
    subsample (``value < num_rows``) needs at least ``min(num_rows, dim + 1)`` rows; a value of at
    least ``num_rows`` fits on all rows. Without ``num_rows`` / ``dim`` (settings checked before
    the data is known) only the data-free minimum :data:`MIN_PCA_ROWS` is checked.

    Examples:
      >>> check_pca_max_data(-1), check_pca_max_data(500, num_rows=1000, dim=384)
      (-1, 500)
      >>> check_pca_max_data(2, num_rows=1000, dim=384)
      Traceback (most recent call last):
      ...
      ValueError: pca_max_data: a PCA fitted on 2 of the 1000 rows spans at most 1 of the 384 feature directions, so it would keep directions for lack of others rather than for the variance they explain (at 1 row every text projects to one point and MAUVE is 1); give -1 (all rows) or at least 385 rows (the feature dimension + 1)
    """
    v = check_int(value, name, minimum=-1)
    if v == -1:
        return v
    if v < MIN_PCA_ROWS:
        raise ValueError(f"{name}: must be -1 (all rows) or at least {MIN_PCA_ROWS} rows (one row spans no "
                         f"direction: every text projects to one point and MAUVE is 1), got {v}")
    if num_rows is not None and dim is not None:
        need = min(int(num_rows), int(dim) + 1)
        if v < need:
            raise ValueError(f"{name}: a PCA fitted on {v} of the {num_rows} rows spans at most {v - 1} of the {dim} "
                             f"feature directions, so it would keep directions for lack of others rather than for "
                             f"the variance they explain (at 1 row every text projects to one point and MAUVE is "
                             f"1); give -1 (all rows) or at least {need} rows"
                             + (" (the feature dimension + 1)" if need == int(dim) + 1 else " (all rows)"))
    return v


#: The lowest nominal coverage of a confidence interval: below 1/2 an interval misses the value
#: more often than it covers it.
MIN_CONFIDENCE = 0.5


def min_resamples(confidence: float) -> int:
    """The fewest resamples for a ``confidence`` interval: ``ceil((1 + c) / (1 - c))`` (39 at 0.95).

    With fewer than ``2 / (1 - c) - 1`` resamples the ``(1 - c) / 2`` tail holds less than one
    resample, so the interval's end points are the smallest and the largest resample; the range of
    ``B`` draws covers a value with probability ``(B - 1) / (B + 1)`` only, below ``c``.

    Examples:
      >>> min_resamples(0.95), min_resamples(0.9), min_resamples(0.99)
      (39, 19, 199)
    """
    return int(np.ceil(round((1.0 + confidence) / (1.0 - confidence), 9)))


def check_confidence(confidence: Any, name: str = "confidence") -> float:
    """Check an interval's nominal coverage: in ``[MIN_CONFIDENCE, 1)`` (the error names ``name``).

    Examples:
      >>> check_confidence(0.9)
      0.9
      >>> check_confidence(0.3, "--confidence")
      Traceback (most recent call last):
      ...
      ValueError: --confidence: must be at least 0.5 (an interval of lower coverage misses the value more often than it covers it), got 0.3
    """
    conf = check_open_unit(confidence, name)
    if conf < MIN_CONFIDENCE:
        raise ValueError(f"{name}: must be at least {MIN_CONFIDENCE} (an interval of lower coverage misses the "
                         f"value more often than it covers it), got {confidence!r}")
    return conf


def check_resampling(num_resamples: Any, confidence: Any, *, names: tuple[str, str] = ("num_resamples", "confidence"),
                     ) -> tuple[int, float]:
    """Check a resampling's ``num_resamples`` and ``confidence``: ``confidence`` in
    ``[MIN_CONFIDENCE, 1)`` and at least :func:`min_resamples` resamples (the errors name
    ``names``); returns both.

    Examples:
      >>> check_resampling(1000, 0.95)
      (1000, 0.95)
      >>> check_resampling(20, 0.95)
      Traceback (most recent call last):
      ...
      ValueError: num_resamples: a 95% interval needs at least 39 resamples, got 20 (with fewer, its end points are the extreme resamples and it covers less than 95%)
    """
    b_name, c_name = names
    conf = check_confidence(confidence, c_name)
    b = check_int(num_resamples, b_name, minimum=2)
    need = min_resamples(conf)
    if b < need:
        pct = f"{conf * 100:g}%"
        raise ValueError(f"{b_name}: a {pct} interval needs at least {need} resamples, got {b} (with fewer, "
                         f"its end points are the extreme resamples and it covers less than {pct})")
    return b, conf


def check_seeds(seeds: Any, name: str = "seeds") -> tuple[int, ...]:
    """A non-empty sequence of distinct integer seeds, as a tuple.

    Examples:
      >>> check_seeds([3, 1])
      (3, 1)
      >>> check_seeds((1, 1))
      Traceback (most recent call last):
      ...
      ValueError: seeds: repeated seeds in (1, 1)
    """
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"{name}: expected a sequence of integers, got {type(seeds).__name__}")
    out = tuple(check_int(s, name) for s in seeds)
    if not out:
        raise ValueError(f"{name}: at least one seed is needed")
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated seeds in {out}")
    return out


def check_key(key: Any, name: str = "key") -> Any:
    """Check ``key`` is a ``jax.random`` key (new-style ``jax.random.key`` or a raw ``uint32[2]``).

    Examples:
      >>> import jax
      >>> _ = check_key(jax.random.key(0))
      >>> check_key(0)
      Traceback (most recent call last):
      ...
      TypeError: key: expected a jax.random key (jax.random.key(seed)), got int
    """
    dt = getattr(key, "dtype", None)
    ok = dt is not None and (jnp.issubdtype(dt, jax.dtypes.prng_key)
                             or (np.dtype(dt) == np.uint32 and tuple(key.shape[-1:]) == (2,)))
    if not ok:
        raise TypeError(f"{name}: expected a jax.random key (jax.random.key(seed)), got {type(key).__name__}")
    return key


def check_texts(texts: Any, name: str, *, drop_empty: bool = False, allow_empty: bool = False) -> list[str]:
    """Check ``texts`` is a non-empty sequence of strings; return it as a list.

    With ``drop_empty`` empty / whitespace-only strings are removed (the caller warns); with
    ``allow_empty`` they are kept (the caller scores them); otherwise they raise, naming how many
    and where.

    Examples:
      >>> check_texts(["a", "b"], "references")
      ['a', 'b']
      >>> check_texts(["a", " "], "candidates")
      Traceback (most recent call last):
      ...
      ValueError: candidates: 1 empty or whitespace-only text(s) (indices [1]); drop them first
    """
    if isinstance(texts, (str, bytes)) or texts is None or not hasattr(texts, "__iter__"):
        raise TypeError(f"{name}: expected a list of strings, got {type(texts).__name__}")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{name}: item {i} is {type(t).__name__}, expected str")
    if drop_empty:
        out = [t for t in out if t.strip()]
    elif not allow_empty:
        empty = [i for i, t in enumerate(out) if not t.strip()]
        if empty:
            raise ValueError(f"{name}: {len(empty)} empty or whitespace-only text(s) (indices "
                             f"{empty[:10]}{' ...' if len(empty) > 10 else ''}); drop them first")
    if not out:
        raise ValueError(f"{name}: no texts (the list is empty)")
    return out
