"""Result signatures: one string that names everything a number depends on.

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
"""
from __future__ import annotations

import os
from typing import Any

__all__ = ["make_signature", "model_id", "parse_signature"]


def model_id(model: Any) -> str:
    """``name@sha256:<12 hex>`` of a loaded model (its directory's base name and its weights'
    hash), or a plain string as given."""
    if model is None:
        return "none"
    if isinstance(model, (str, os.PathLike)):
        return _clean(os.path.basename(os.path.normpath(os.fspath(model))) or os.fspath(model))
    name = getattr(model, "name", "") or getattr(model, "path", "") or type(model).__name__
    name = os.path.basename(os.path.normpath(str(name))) or str(name)
    digest = getattr(model, "weights_sha256", "")
    return _clean(f"{name}@sha256:{digest[:12]}" if digest else name)


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
    try:
        import numpy as np

        if isinstance(v, type) and issubclass(v, np.generic):
            return np.dtype(v).name
    except Exception:  # pragma: no cover
        pass
    return _clean(str(v))


def make_signature(metric: str, *, model: Any = None, **settings: Any) -> str:
    """The signature of a ``metric`` computed with ``model`` (a loaded model, a name, or
    ``None`` for metrics computed from arrays) and ``settings`` (every option the numbers
    depend on; ``None`` values are written as ``none``, booleans as ``yes``/``no``, lists
    comma-separated, dtypes by name)."""
    from jaxmetrics import __version__

    if not isinstance(metric, str) or not metric:
        raise ValueError(f"metric: expected a non-empty name, got {metric!r}")
    fields = [f"metric:{_clean(metric)}", f"jaxmetrics:{__version__}"]
    if model is not None:
        fields.append(f"model:{model_id(model)}")
    fields += [f"{k}:{_value(settings[k])}" for k in sorted(settings)]
    return "|".join(fields)


def parse_signature(signature: str) -> dict[str, str]:
    """The fields of a signature as a ``{key: value}`` dict (values as written)."""
    out = {}
    for part in str(signature).split("|"):
        key, sep, value = part.partition(":")
        if not sep:
            raise ValueError(f"signature: field {part!r} is not key:value")
        out[key] = value
    return out
