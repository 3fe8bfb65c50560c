"""Inputs of the MAUVE pipeline: features given, or computed from token ids or text.

mauve-text's precedence per side (features, else tokens, else text), and one rule for the pooling
every MAUVE door uses when ``pooling`` is not given (:func:`default_pooling`):

* a featurizer named by mauve-text's own argument (``compute_mauve(featurize_model_name=...)``)
  keeps mauve-text's featurization: the final layer's hidden state at the last token, for every
  model (``pooling='last'`` of the encoding engine, :func:`jaxmetrics.models.encode`);
* a featurizer given as the library's ``model=`` (and the command line's ``--model``) follows the
  library's pooling table per kind of model (``'auto'``,
  :func:`jaxmetrics.models.resolve_pooling`): a decoder's last token, a sentence encoder's mean
  over its tokens. ``compute_mauve(model=...)``, ``compute_mauve_seeds``, :func:`featurize_texts`,
  ``mauve_sweep(over='length')``, ``evaluate_generation``, ``jaxmetrics mauve``, ``mauve-sweep``,
  ``compare --metric mauve`` and ``featurize`` all give one text the same vector.

:mod:`jaxmetrics.models` is imported only when text or tokens have to be featurized. Also the
device choice (``device_id``). Used by :func:`~jaxmetrics.mauve.compute_mauve` and
:func:`~jaxmetrics.mauve.compute_mauve_seeds`.
"""
from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from typing import Any

import jax
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics.mauve.sizes import _warn_at_caller, resolve_num_buckets
from jaxmetrics.results import Result, static_field

__all__ = ["MAUVE_MAX_LENGTH", "MauveInputs", "POOLING_CHOICES", "SET_NAMES", "TextFeatures", "check_pooling",
           "default_pooling", "device_context", "featurize_texts", "featurized_signature", "get_features", "split_sets"]

#: mauve-text's truncation of a text, in tokens (``max_text_length``); capped at a model's positions.
MAUVE_MAX_LENGTH = 1024

#: How the pipelines that take ``references=`` / ``candidates=`` name P and Q in their errors.
SET_NAMES = {"p": "references", "q": "candidates"}

#: The ``pooling=`` values of the MAUVE pipelines: the names of :data:`jaxmetrics.models.POOLINGS`
#: and ``'auto'`` (spelled out here so that checking them imports no model code).
POOLING_CHOICES = ("last", "mean", "cls", "auto")


def check_pooling(pooling: Any, name: str = "pooling") -> str:
    """``pooling`` if it is one of :data:`POOLING_CHOICES`, else ``ValueError`` naming ``name``.

    Examples:
      >>> check_pooling("mean")
      'mean'
    """
    if not isinstance(pooling, str) or pooling not in POOLING_CHOICES:
        raise ValueError(f"{name}: expected one of {', '.join(POOLING_CHOICES)}, got {pooling!r}")
    return pooling


def default_pooling(pooling: Any, model: Any) -> str:
    """The pooling a MAUVE door asks the encoding engine for: ``pooling`` itself when given (checked
    by :func:`check_pooling`); for ``None``, ``'last'`` when the featurizer is mauve-text's
    ``featurize_model_name`` (``model is None``: mauve-text's own featurization, the last token for
    every model) and ``'auto'`` when it is the library's ``model=`` (the pooling table: last token
    for a decoder, mean for a sentence encoder; :func:`jaxmetrics.models.resolve_pooling`).

    Examples:
      >>> default_pooling(None, None), default_pooling(None, "some/encoder"), default_pooling("cls", None)
      ('last', 'auto', 'cls')
    """
    if pooling is None:
        return "last" if model is None else "auto"
    return check_pooling(pooling)


class MauveInputs(Result):
    """Output of :func:`get_features`.

    Attributes:
      p_features: ``[n_p, d]`` features of P (human text).
      q_features: ``[n_q, d]`` features of Q (model text).
      p_source: the argument P came from (``'p_features'``, ``'p_tokens'`` or ``'p_text'``).
      q_source: the argument Q came from.
      pooling: the named pooling that featurized text or tokens (``'last'``, ``'mean'``, ``'cls'``),
        or ``None`` when both sides were given as features.
      featurizer: the featurizer's id for signatures (``name@sha256:<12 hex>``,
        :func:`jaxmetrics.results.model_id`), or ``None`` when both sides were given as features.
      dtype: the featurizer's compute dtype name, or ``None``.
      max_length: the truncation in tokens that text was featurized with (``max_length`` capped at
        the model's positions), or ``None`` when no side was given as text.
    """

    p_features: np.ndarray
    q_features: np.ndarray
    p_source: str = static_field(default="p_features")
    q_source: str = static_field(default="q_features")
    pooling: str | None = static_field(default=None)
    featurizer: str | None = static_field(default=None)
    dtype: str | None = static_field(default=None)
    max_length: int | None = static_field(default=None)


def _featurizers(name: str) -> Any:
    """``jaxmetrics.models`` (imported lazily: the model layer is only needed for text / tokens)."""
    try:
        models = importlib.import_module("jaxmetrics.models")
        for attr in ("resolve_model", "resolve_pooling", "encode"):
            if not hasattr(models, attr):
                raise ImportError(f"jaxmetrics.models has no {attr}")
    except ImportError as e:
        raise ImportError(
            f"{name}: featurizing text or token ids needs jaxmetrics.models, which could not be "
            f"imported ({e}); pass p_features/q_features instead"
        ) from e
    return models


def _token_lists(tokens: Any, name: str) -> list[np.ndarray]:
    """mauve-text's ``p_tokens``: a list of id tensors of shape ``(1, length)`` or ``(length,)``."""
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__iter__"):
        raise TypeError(f"{name}: expected a list of token-id sequences, got {type(tokens).__name__}")
    seqs = []
    for i, t in enumerate(tokens):
        if type(t).__module__.startswith("torch"):  # torch.LongTensor, as mauve-text takes
            t = t.detach().cpu().numpy()
        a = np.asarray(t)
        if a.ndim == 2 and a.shape[0] == 1:
            a = a[0]
        if a.ndim != 1:
            raise ValueError(f"{name}: item {i} has shape {a.shape}; expected (length,) or (1, length)")
        if a.size == 0:
            raise ValueError(f"{name}: item {i} is empty")
        if not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"{name}: item {i} has dtype {a.dtype}, expected integer token ids")
        seqs.append(a)
    if not seqs:
        raise ValueError(f"{name}: no sequences (the list is empty)")
    return seqs


def _features_from_tokens(tokens: Any, name: str, models: Any, lm: Any, batch_size: int, pooling: str) -> np.ndarray:
    seqs = tokens  # checked by get_features (_token_lists)
    longest = max(a.shape[0] for a in seqs)
    limit = getattr(lm, "max_positions", None)
    if limit is not None and longest > limit:
        n_long = sum(a.shape[0] > limit for a in seqs)
        _warn_at_caller(f"{name}: {n_long} sequence(s) longer than the model's {limit} positions are "
                        f"truncated to their first {limit} tokens")
        longest = limit
    try:
        feats = models.encode(token_ids=seqs, model=lm, layers=-1, pooling=pooling, max_length=longest,
                              batch_size=batch_size, desc="featurize").pooled[0]
    except (ValueError, TypeError) as e:
        raise type(e)(f"{name}: {e}") from e
    return np.asarray(feats)


def _features_from_text(texts: Any, name: str, models: Any, lm: Any, max_length: int, batch_size: int,
                        pooling: str) -> np.ndarray:
    kept = texts  # checked, empty strings dropped, by get_features
    return np.asarray(models.encode(kept, model=lm, layers=-1, pooling=pooling, max_length=max_length,
                                    batch_size=batch_size, desc="featurize").pooled[0])


def get_features(
    p_features: Any, q_features: Any, p_tokens: Any, q_tokens: Any, p_text: Any, q_text: Any, *, model: Any,
    featurize_model_name: str, max_length: int, batch_size: int, verbose: bool, pooling: str | None = None,
    num_buckets: Any = None, dtype: Any = None, names: dict[str, str] | None = None,
    max_length_name: str = "max_text_length",
) -> MauveInputs:
    """Features ``p [n_p, d]`` and ``q [n_q, d]``: per side the given features win over token ids,
    which win over text (mauve-text's order); the arguments are those of
    :func:`~jaxmetrics.mauve.compute_mauve`. The featurizer is ``model`` (else
    ``featurize_model_name``), resolved by :func:`jaxmetrics.models.resolve_model` in ``dtype``; text and
    tokens become the final layer's hidden states pooled by ``pooling`` (``None``: :func:`default_pooling`,
    mauve-text's last token for ``featurize_model_name``, the pooling table's ``'auto'`` -- last
    for a decoder, mean for an encoder -- for ``model``). With ``num_buckets``, MAUVE's minimum sizes
    (:func:`~jaxmetrics.mauve.sizes.check_sample_sizes`) are checked on the number of rows each
    side will have *before* any model is loaded. ``names`` (``{'p': 'references', 'q':
    'candidates'}``) names each side's argument in errors, for the pipelines that take the two sets
    as ``references=`` / ``candidates=`` (:func:`split_sets`); ``max_length_name`` names ``max_length``.

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.mauve.pipeline.inputs import get_features
      >>> x = np.zeros((3, 4), np.float32)
      >>> out = get_features(x, x, None, None, None, None, model=None,
      ...     featurize_model_name="gpt2", max_length=8, batch_size=1, verbose=False)
      >>> out.p_features.shape, out.q_source, out.pooling
      ((3, 4), 'q_features', None)
    """
    pooling = default_pooling(pooling, model)
    label = (lambda side, kind: names[side]) if names else (lambda side, kind: f"{side}_{kind}")
    sides, sizes, sources, kinds = {}, [], [], []
    for side, feats, toks, text in (("p", p_features, p_tokens, p_text), ("q", q_features, q_tokens, q_text)):
        if feats is not None:
            feats = V.check_features(feats, label(side, "features"))
            kind, n = "features", feats.shape[0]
        elif toks is not None:
            toks = _token_lists(toks, label(side, "tokens"))
            kind, n = "tokens", len(toks)
        elif text is not None:
            raw = list(text) if not isinstance(text, str) else text
            kept = V.check_texts(raw, label(side, "text"), drop_empty=True)
            if len(kept) < len(raw):
                _warn_at_caller(f"{label(side, 'text')}: dropped {len(raw) - len(kept)} empty string(s)")
            text = kept
            kind, n = "text", len(kept)
        else:
            raise ValueError(f"{side}_features: supply {side}_features, {side}_tokens or {side}_text")
        sides[side] = (feats, toks, text)
        sizes.append(n)
        sources.append(label(side, kind))
        kinds.append(kind)
    if num_buckets is not None:  # MAUVE's minimum sizes, before any model is loaded
        resolve_num_buckets(num_buckets, sizes, sources, warn=False)
    need = [kind for kind, (feats, _, _) in zip(kinds, sides.values()) if feats is None]
    models = lm = length = None
    used = None
    if need:
        if "text" in need:
            V.check_int(max_length, max_length_name, minimum=1)
        V.check_int(batch_size, "batch_size", minimum=1)
        models = _featurizers(sources[kinds.index(need[0])])
        which = model if model is not None else featurize_model_name
        if verbose:
            print(f"loading featurizer {which if isinstance(which, str) else getattr(which, 'name', 'model')}", file=sys.stderr)
        lm = models.resolve_model(which, dtype=dtype)
        used = models.resolve_pooling(lm, pooling)
        if "text" in need:
            # the library's one rule (jaxmetrics.models.check_max_length); mauve-text's default
            # 1024 counts as the default: capped at a shorter model's positions silently
            length = models.check_max_length(lm, None if max_length == MAUVE_MAX_LENGTH else max_length,
                                             MAUVE_MAX_LENGTH, name=max_length_name)
    out = []
    for side in ("p", "q"):
        feats, toks, text = sides[side]
        if feats is None and toks is not None:
            feats = _features_from_tokens(toks, label(side, "tokens"), models, lm, batch_size, used)
        elif feats is None:
            feats = _features_from_text(text, label(side, "text"), models, lm, length, batch_size, used)
        out.append(feats)
    p = V.check_features(out[0], label("p", "features"))
    q = V.check_features(out[1], label("q", "features"), dim=p.shape[1])
    who = dtype = None
    if lm is not None:
        from jaxmetrics.results import model_id

        who, dtype = model_id(lm), getattr(lm, "dtype", None)
        dtype = None if dtype is None else np.dtype(dtype).name
    return MauveInputs(p_features=p, q_features=q, p_source=sources[0], q_source=sources[1], pooling=used,
                       featurizer=who, dtype=dtype, max_length=length)


class TextFeatures(Result):
    """Output of :func:`featurize_texts`: MAUVE features of named sets of texts, all made with one
    featurizer, pooling and truncation.

    Attributes:
      features: ``{name: [n, d] float32 features}``, one entry per set of texts, in the order given.
      pooling: the named pooling used (``'last'``, ``'mean'`` or ``'cls'``; ``'auto'`` resolved).
      max_length: the truncation in tokens used (capped at the model's positions).
    """

    features: dict[str, np.ndarray]
    pooling: str = static_field(default="last")
    max_length: int = static_field(default=MAUVE_MAX_LENGTH)


def featurize_texts(texts: Any, *, model: Any, pooling: str = "auto", max_length: int | None = None,
                    batch_size: int = 8, cache_dir: Any = None, progress: bool = True,
                    dtype: Any = None) -> TextFeatures:
    """MAUVE features of several sets of texts with one featurizer: the final layer's hidden states
    pooled by ``pooling``, every set through the encoding engine (:func:`jaxmetrics.models.encode`)
    with the same settings, so their features are comparable (what ``compute_mauve(p_text=...,
    q_text=...)`` does for two sets, for any number of sets: the systems of a comparison, the
    sizes or lengths of a sweep).

    Args:
      texts: ``{name: N non-empty strings}`` (a mapping; its order is kept).
      model: a loaded model, a hub id or a local checkpoint directory
        (:func:`jaxmetrics.models.resolve_model`).
      pooling: ``'auto'`` (default: the pooling table of every ``model=`` door, last token for a
        decoder, mean for a sentence encoder; :func:`default_pooling`), ``'last'`` (mauve-text's
        feature for every model), ``'mean'`` or ``'cls'``.
      max_length: truncation in tokens, first tokens kept; ``None``: :data:`MAUVE_MAX_LENGTH`
        (mauve-text's 1024) or the model's positions if fewer. A value above the model's positions
        is capped at them with a warning.
      batch_size: texts per forward pass.
      cache_dir: optional feature cache folder (an interrupted run resumes where it stopped).
      progress: show progress bars on stderr.
      dtype: the model's compute dtype (``None``: a loaded model's own, float32 for a path).

    Returns:
      :class:`TextFeatures`: the features per name, the pooling and the truncation used.

    Examples:
      >>> from jaxmetrics.data import demo_model_dir
      >>> out = featurize_texts({"p": ["a text", "another"], "q": ["one more"]}, model=demo_model_dir(),
      ...                       progress=False)
      >>> out.features["p"].shape[0], out.pooling, out.max_length
      (2, 'last', 128)
    """
    from collections.abc import Mapping

    if not isinstance(texts, Mapping):
        raise TypeError(f"texts: expected a mapping {{name: list of texts}}, got {type(texts).__name__}")
    check_pooling(pooling)
    models = _featurizers("texts")
    lm = models.resolve_model(model, dtype=dtype)
    used = models.resolve_pooling(lm, pooling)
    length = models.check_max_length(lm, max_length, MAUVE_MAX_LENGTH)
    feats = {}
    for name, group in texts.items():
        try:
            feats[name] = np.asarray(models.encode(group, model=lm, layers=-1, pooling=used, max_length=length,
                                                   batch_size=batch_size, cache_dir=cache_dir, progress=progress,
                                                   desc="featurize").pooled[0])
        except (ValueError, TypeError) as e:
            raise type(e)(f"texts[{name!r}]: {e}") from e
    return TextFeatures(features=feats, pooling=used, max_length=length)


def featurized_signature(signature: str, *, model: Any, pooling: str, max_length: int, dtype: Any = None) -> str:
    """``signature`` of a result computed from features that :func:`featurize_texts` made with the
    loaded ``model``: the featurizer (with its weights' hash), layer, pooling, max length and dtype
    added, as ``compute_mauve(p_text=..., model=model)`` records them. ``dtype``: the model's compute
    dtype (``None``: the loaded model's own); ``model=None`` (features given) returns ``signature``
    unchanged.

    Examples:
      >>> featurized_signature("metric:mauve|jaxmetrics:0.1.0|seeds:25", model=None, pooling=None, max_length=None)
      'metric:mauve|jaxmetrics:0.1.0|seeds:25'
    """
    if model is None:
        return signature
    from jaxmetrics.results import extend_signature

    return extend_signature(signature, model=model, layer=-1, pooling=pooling, max_length=max_length,
                            dtype=getattr(model, "dtype", None) if dtype is None else dtype)


def split_sets(references: Any, candidates: Any) -> tuple[Any, Any, Any, Any, Any, Any]:
    """``(p_features, q_features, p_tokens, q_tokens, p_text, q_text)`` of two sets given as
    ``references=`` (P, human text) and ``candidates=`` (Q, model text), each as features
    ``[n, d]``, token-id lists (sequences of integer ids) or texts (a list of strings).

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.mauve.pipeline.inputs import split_sets
      >>> sides = split_sets(np.zeros((3, 4)), ["a text", "another"])
      >>> [x is not None for x in sides]
      [True, False, False, False, False, True]
      >>> split_sets([[1, 2, 3], [4, 5]], np.zeros((2, 4)))[2]
      [[1, 2, 3], [4, 5]]
    """
    out: dict[str, list[Any]] = {"features": [None, None], "tokens": [None, None], "text": [None, None]}
    for i, (name, value) in enumerate((("references", references), ("candidates", candidates))):
        kind, value = _kind_of(value, name)
        out[kind][i] = value
    return (*out["features"], *out["tokens"], *out["text"])


def _kind_of(value: Any, name: str) -> tuple[str, Any]:
    """``('features' | 'tokens' | 'text', value)``: what one set was given as (an iterator is
    read into a list)."""
    if value is None:
        raise ValueError(f"{name}: supply the set as features [n, d], token-id lists or a list of texts")
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name}: expected features [n, d], token-id lists or a list of texts, got one string")
    if getattr(value, "ndim", None) is not None:
        return "features", value
    seq = value if hasattr(value, "__getitem__") and hasattr(value, "__len__") else list(value)
    if len(seq) == 0:
        return "features", seq  # the features check names the empty set
    first = seq[0]
    if isinstance(first, str):
        return "text", seq
    first = np.asarray(first)
    return ("tokens" if first.ndim == 1 and first.dtype.kind in "iu" else "features"), seq


def device_context(device_id: int):
    """A context placing the work on accelerator ``device_id`` (``-1``: JAX's default device;
    a missing accelerator warns and falls back to the default)."""
    V.check_int(device_id, "device_id", minimum=-1)
    if device_id < 0:
        return contextlib.nullcontext()
    devs = [d for d in jax.devices() if d.platform != "cpu"]
    if device_id >= len(devs):
        warnings.warn(f"device_id: no accelerator {device_id} (found {len(devs)}); using the default device", stacklevel=3)
        return contextlib.nullcontext()
    return jax.default_device(devs[device_id])
