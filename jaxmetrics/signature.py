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
    >>> extend_signature("metric:mauve|jaxmetrics:0.1.0|seeds:25", pooling="mean")
    'metric:mauve|jaxmetrics:0.1.0|pooling:mean|seeds:25'
"""
from __future__ import annotations

import os
from typing import Any

__all__ = ["extend_signature", "make_signature", "model_id", "parse_signature"]


def model_id(model: Any) -> str:
    """``name@sha256:<12 hex>`` of a loaded model (its directory's name and its weights' hash),
    or the name of a hub id or path as given.

    Examples:
      >>> model_id("sentence-transformers/all-MiniLM-L6-v2"), model_id("/site-packages/gt_minilm/model")
      ('all-MiniLM-L6-v2', 'gt_minilm/model')
    """
    if model is None:
        return "none"
    if isinstance(model, (str, os.PathLike)):
        return _clean(_short_name(os.fspath(model)))
    name = getattr(model, "name", "") or getattr(model, "path", "") or type(model).__name__
    name = _short_name(str(name))
    digest = getattr(model, "weights_sha256", "")
    return _clean(f"{name}@sha256:{digest[:12]}" if digest else name)


_GENERIC = ("model", "models", "checkpoint", "weights")


def _short_name(path: str) -> str:
    """A checkpoint's name from its path: the last folder, with its parent when that folder
    says nothing (``pkg/model``), and the repository of a Hugging Face cache snapshot."""
    parts = [p for p in os.path.normpath(path).replace(os.sep, "/").split("/") if p not in ("", ".")]
    if not parts:
        return path
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3][len("models--"):].split("--")[-1]
    if parts[-1].lower() in _GENERIC and len(parts) >= 2:
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


def extend_signature(signature: str, *, model: Any = None, **settings: Any) -> str:
    """``signature`` with ``settings`` added (or replaced) and, when given, its ``model`` set:
    for a command that computes part of the work itself (it featurizes the texts, then calls an
    array-level pipeline), so that its signature names everything its numbers depend on."""
    fields = parse_signature(signature)
    metric = fields.pop("metric", None)
    if metric is None:
        raise ValueError(f"signature: no metric field in {signature!r}")
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
