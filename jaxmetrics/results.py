"""The one result type of jaxmetrics: frozen dataclasses that are pytrees.

Every public function that returns more than one value returns a subclass of :class:`Result`.
A subclass is declared like a dataclass (fields with type annotations and optional
defaults); :class:`Result` turns it into

* a **frozen dataclass** (``dataclasses.replace`` / :meth:`Result.replace` make modified copies),
* a **pytree** registered with ``jax.tree_util.register_dataclass``: array fields are leaves,
  fields declared with :func:`static_field` (names, settings) are static metadata, so a result
  can be returned from ``jax.jit`` and mapped with ``jax.tree.map``,
* with a **short** ``repr`` (scalars with their value, arrays as ``dtype[shape]``, never an
  array dump);
* with one output contract: :meth:`Result.to_dict` (plain Python), :meth:`Result.write_json`
  (that dict as JSON, to a file) and, for a result that is a table, :meth:`Result.to_csv`
  (``to_csv(path=None) -> str``: the CSV text, also written to ``path`` when given) built from
  the rows its :meth:`Result.csv_rows` returns.

Examples:
    >>> import jax, jax.numpy as jnp
    >>> from jaxmetrics.results import Result, static_field
    >>> class Score(Result):
    ...     value: jax.Array
    ...     per_item: jax.Array
    ...     name: str = static_field(default="demo")
    >>> s = jax.jit(lambda x: Score(jnp.mean(x), x))(jnp.arange(4.0))
    >>> s
    Score(value=1.5, per_item=f32[4], name='demo')
    >>> s.to_dict()
    {'value': 1.5, 'per_item': [0.0, 1.0, 2.0, 3.0], 'name': 'demo'}
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import numbers
from typing import Any

import jax
import numpy as np

from jaxmetrics.compilation import apply_default_compilation_cache

apply_default_compilation_cache()  # on by default; see jaxmetrics.compilation

__all__ = ["Result", "static_field"]

_DTYPE_ABBREV = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
                 "int32": "i32", "int64": "i64", "int8": "i8", "int16": "i16", "uint8": "u8",
                 "uint32": "u32", "uint64": "u64", "bool": "bool"}


def static_field(**kwargs: Any) -> Any:
    """A dataclass field that is static pytree metadata (a setting or a name, not an array).

    Static fields must be hashable (``str``, ``int``, ``float``, ``bool``, tuples of those,
    ``None``); they survive ``jax.jit`` unchanged and are not touched by ``jax.tree.map``.
    """
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["static"] = True
    return dataclasses.field(metadata=metadata, **kwargs)


def _summary(v: Any) -> str:
    """Short text for one field value: scalars by value, arrays by dtype and shape."""
    if isinstance(v, Result):
        return repr(v)
    if v is None or isinstance(v, (bool, str)):
        return repr(v)
    if isinstance(v, numbers.Number):
        return _number(v)
    if isinstance(v, (np.ndarray, jax.Array)) or hasattr(v, "shape") and hasattr(v, "dtype"):
        shape = tuple(v.shape)
        if shape == () and not isinstance(v, jax.core.Tracer):
            try:
                return _number(v.item())
            except Exception:  # pragma: no cover - non-numeric 0-d arrays
                pass
        dt = _DTYPE_ABBREV.get(str(v.dtype), str(v.dtype))
        if "key<" in dt:
            dt = "key"
        return f"{dt}[{','.join(str(d) for d in shape)}]"
    if isinstance(v, (list, tuple)):
        if len(v) <= 4 and all(isinstance(x, (numbers.Number, str, type(None))) for x in v):
            inner = ", ".join(_summary(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
        kind = "list" if isinstance(v, list) else "tuple"
        return f"{kind}[{len(v)}]"
    if isinstance(v, dict):
        if len(v) <= 6:
            return "{" + ", ".join(f"{k!r}: {_summary(x)}" for k, x in v.items()) + "}"
        return f"dict[{len(v)}]"
    return f"<{type(v).__name__}>"


def _number(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return repr(bool(x))
    if isinstance(x, numbers.Integral):
        return str(int(x))
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return str(x)
    return f"{x:.6g}"


def _plain(v: Any) -> Any:
    """JSON-friendly copy: arrays -> (nested) lists or Python scalars, results -> dicts."""
    if isinstance(v, Result):
        return v.to_dict()
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (np.ndarray, jax.Array)) or isinstance(v, np.generic):
        a = np.asarray(v)
        if a.dtype.kind == "V" or "key<" in str(getattr(v, "dtype", "")):  # PRNG keys
            return np.asarray(jax.random.key_data(v)).tolist()
        return a.item() if a.ndim == 0 else a.tolist()
    return v


class Result:
    """Base class of every result: a frozen dataclass registered as a pytree.

    Subclasses only declare fields. Fields are array (pytree) leaves unless declared with
    :func:`static_field`. Equality is identity (arrays have no single truth value); compare
    fields instead.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(frozen=True, repr=False, eq=False)(cls)
        fields = dataclasses.fields(cls)
        data = [f.name for f in fields if not f.metadata.get("static", False)]
        meta = [f.name for f in fields if f.metadata.get("static", False)]
        jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)

    def __repr__(self) -> str:
        parts = ", ".join(f"{f.name}={_summary(getattr(self, f.name))}"
                          for f in dataclasses.fields(self) if f.repr)
        return f"{type(self).__name__}({parts})"

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python (floats, ints, strings, nested lists), ready for JSON."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def replace(self, **changes: Any) -> "Result":
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def write_json(self, path: str | os.PathLike, *, indent: int = 2) -> None:
        """Write :meth:`to_dict` to ``path`` as JSON (UTF-8, a final newline; non-finite numbers as
        ``NaN`` / ``Infinity``, which Python's :mod:`json` reads back)."""
        text = json.dumps(self.to_dict(), indent=indent) + "\n"
        with open(os.fspath(path), "w", encoding="utf-8") as fh:
            fh.write(text)

    def csv_rows(self) -> list:
        """The rows of this result's table, one ``{column: value}`` per row (every row with the same
        columns, in order); a result that is not a table raises ``TypeError``."""
        raise TypeError(f"{type(self).__name__} is not a table: use to_dict() or write_json()")

    def to_csv(self, path: str | os.PathLike | None = None) -> str:
        """:meth:`csv_rows` as CSV text (a header line, then one line per row; floats written
        exactly with ``repr``, ``None`` as an empty cell), also written to ``path`` when given."""
        rows = self.csv_rows()
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        if rows:
            w.writerow(list(rows[0]))
            for row in rows:
                w.writerow([_csv_cell(v) for v in row.values()])
        text = buf.getvalue()
        if path is not None:
            with open(os.fspath(path), "w", newline="", encoding="utf-8") as fh:
                fh.write(text)
        return text


def _csv_cell(v: Any) -> str:
    """One CSV cell: ``None`` empty, booleans and integers as such, other numbers as ``repr(float)``."""
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_, numbers.Integral)):
        return str(v if isinstance(v, (bool, np.bool_)) else int(v))
    if isinstance(v, numbers.Real):
        return repr(float(v))
    return str(v)
