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

Signatures
----------

Result signatures: one string that names everything a number depends on.

As sacrebleu's and bert_score's hash strings do, a signature lets a reader check that two
reported numbers were computed the same way. Every pipeline result of jaxmetrics carries one
(``result.signature``), and every JSON the command line writes has a ``"signature"`` field.

Format: ``|``-separated ``key:value`` fields, the metric and the library version first, then the
model (its name and the first 12 hex digits of the SHA-256 of its weight files), then every
setting in alphabetical order::

    metric:mauve|jaxmetrics:0.1.0|model:all-MiniLM-L6-v2@sha256:53aa51172d14|dtype:float32|layer:-1|...

Two runs with the same signature give the same numbers (on the same backend: XLA's CPU, GPU and
TPU kernels differ in the last bits); changing any setting changes the signature.

Examples:
    >>> make_signature("bertscore", layer=6, centering="none", idf=False, seeds=None)
    'metric:bertscore|jaxmetrics:0.1.0|centering:none|idf:no|layer:6|seeds:none'
    >>> parse_signature(make_signature("mauve", seeds=[25, 26], num_buckets="auto"))["seeds"]
    '25,26'
    >>> extend_signature("metric:mauve|jaxmetrics:0.1.0|seeds:25", pooling="mean")
    'metric:mauve|jaxmetrics:0.1.0|pooling:mean|seeds:25'
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

__all__ = ["Result", "extend_signature", "key_id", "make_signature", "model_id", "parse_signature", "static_field"]

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


# ---------------------------------------------------------------------------- signatures
def model_id(model: Any) -> str:
    """``name@sha256:<12 hex>`` of a loaded model (its directory's name and its weights' hash),
    or the name of a hub id or path as given.

    Examples:
      >>> model_id("sentence-transformers/all-MiniLM-L6-v2"), model_id("/site-packages/gt_minilm/model")
      ('all-MiniLM-L6-v2', 'gt_minilm/model')
      >>> model_id("gt_minilm/model@sha256:53aa51172d14")   # an id stays itself
      'gt_minilm/model@sha256:53aa51172d14'
    """
    if model is None:
        return "none"
    if isinstance(model, (str, os.PathLike)):
        return _clean(_short_name(os.fspath(model)))
    name = getattr(model, "name", "") or getattr(model, "path", "") or type(model).__name__
    name = _short_name(str(name))
    digest = getattr(model, "weights_sha256", "")
    return _clean(f"{name}@sha256:{digest[:12]}" if digest else name)


def key_id(key: Any) -> str:
    """A ``jax.random`` key as a signature value: its words (``jax.random.key_data``), ``-``-joined,
    after the name of its implementation when that is not the default ``threefry2x32``; a raw
    ``uint32`` key (``jax.random.PRNGKey``) gives the same as the typed key it holds. A key that is
    not concrete (traced under ``jit``) is ``'traced'``: its value is unknown until it runs.

    Results that draw with a key (resampling, folds, k-means) record it under ``key``, so that two
    results with one signature drew the same numbers.

    Examples:
      >>> import jax
      >>> key_id(jax.random.key(5)), key_id(jax.random.PRNGKey(5)), key_id(jax.random.fold_in(jax.random.key(5), 1))
      ('0-5', '0-5', '202567368-3886822060')
    """
    if isinstance(key, jax.core.Tracer):
        return "traced"
    impl = ""
    with jax.ensure_compile_time_eval():   # a concrete key closed over inside jit stays concrete
        if hasattr(key, "dtype") and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
            impl = str(jax.random.key_impl(key))
            key = jax.random.key_data(key)
        words = "-".join(str(int(w)) for w in np.asarray(key).ravel().tolist())
    return words if impl in ("", "threefry2x32") else f"{_clean(impl)}:{words}"


_GENERIC = ("model", "models", "checkpoint", "weights")


def _short_name(path: str) -> str:
    """A checkpoint's name from its path: the last folder, with its parent when that folder
    says nothing (``pkg/model``), and the repository of a Hugging Face cache snapshot. An id
    :func:`model_id` already made (``pkg/model@sha256:...``) comes back unchanged."""
    parts = [p for p in os.path.normpath(path).replace(os.sep, "/").split("/") if p not in ("", ".")]
    if not parts:
        return path
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3][len("models--"):].split("--")[-1]
    if parts[-1].split("@sha256:")[0].lower() in _GENERIC and len(parts) >= 2:
        return f"{parts[-2]}/{parts[-1]}"
    return parts[-1]


def _clean(text: str) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


def _value(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return repr(float(v))
    if hasattr(v, "dtype") and hasattr(v, "shape") and getattr(v, "shape", None) == ():
        return _value(v.item())
    if isinstance(v, (list, tuple)):
        return ",".join(_value(x) for x in v)
    if hasattr(v, "name") and type(v).__module__.startswith(("numpy", "jax", "ml_dtypes")):
        return _clean(v.name)  # a dtype
    if isinstance(v, type) and str(v.__module__).startswith(("numpy", "jax", "ml_dtypes")):
        try:  # a scalar type: np.float32, jnp.bfloat16
            import numpy as np

            return np.dtype(v).name
        except TypeError:  # pragma: no cover - a numpy / jax class that is not a scalar type
            pass
    return _clean(str(v))


def make_signature(metric: str, *, model: Any = None, **settings: Any) -> str:
    """The signature of a ``metric`` computed with ``model`` (a loaded model, a name, or
    ``None`` for metrics computed from arrays) and ``settings`` (every option the numbers
    depend on; ``None`` values are written as ``none``, booleans as ``yes``/``no``, lists
    comma-separated, dtypes by name)."""
    if not isinstance(metric, str) or not metric:
        raise ValueError(f"metric: expected a non-empty name, got {metric!r}")
    return _join(metric, None if model is None else model_id(model), settings)


def _join(metric: str, model: str | None, settings: dict) -> str:
    from jaxmetrics import __version__

    fields = [f"metric:{_clean(metric)}", f"jaxmetrics:{__version__}"]
    if model is not None:
        fields.append(f"model:{_clean(model)}")
    fields += [f"{k}:{_value(settings[k])}" for k in sorted(settings)]
    return "|".join(fields)


def extend_signature(signature: str, *, model: Any = None, metric: str | None = None, **settings: Any) -> str:
    """``signature`` with ``settings`` added (or replaced) and, when given, its ``model`` and its
    ``metric`` set: for a command that computes part of the work itself (it featurizes the texts,
    then calls an array-level pipeline), or a result built on another's (a test run on scored
    sets), so that its signature names everything its numbers depend on."""
    fields = parse_signature(signature)
    old_metric = fields.pop("metric", None)
    if old_metric is None:
        raise ValueError(f"signature: no metric field in {signature!r}")
    if metric is not None and (not isinstance(metric, str) or not metric):
        raise ValueError(f"metric: expected a non-empty name, got {metric!r}")
    metric = old_metric if metric is None else metric
    fields.pop("jaxmetrics", None)
    old_model = fields.pop("model", None)
    fields.update(settings)
    return _join(metric, model_id(model) if model is not None else old_model, fields)


def parse_signature(signature: str) -> dict[str, str]:
    """The fields of a signature as a ``{key: value}`` dict (values as written)."""
    out = {}
    for part in str(signature).split("|"):
        key, sep, value = part.partition(":")
        if not sep:
            raise ValueError(f"signature: field {part!r} is not key:value")
        out[key] = value
    return out
