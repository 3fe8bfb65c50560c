"""Inputs of the MAUVE pipeline: features given, or computed from token ids or text.

mauve-text's precedence per side (features, else tokens, else text) and its featurizer
conventions (a decoder's last token; an encoder is mean-pooled), on :mod:`jaxmetrics.models`,
which is imported only when text or tokens have to be featurized; and the device choice
(``device_id``). Used by :func:`~jaxmetrics.mauve.compute_mauve` and
:func:`~jaxmetrics.mauve.compute_mauve_seeds`.
"""
from __future__ import annotations

import contextlib
import importlib
import warnings
from typing import Any

import jax
import numpy as np

from jaxmetrics import _validation as V

__all__ = ["get_features", "device_context"]


def _featurizers(name: str) -> Any:
    """``jaxmetrics.models`` (imported lazily: the model layer is only needed for text / tokens)."""
    try:
        models = importlib.import_module("jaxmetrics.models")
        for attr in ("resolve_model", "featurize", "featurize_tokens"):
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


def _features_from_tokens(tokens: Any, name: str, models: Any, lm: Any, batch_size: int) -> np.ndarray:
    seqs = _token_lists(tokens, name)
    longest = max(a.shape[0] for a in seqs)
    limit = getattr(lm, "max_positions", None)
    if limit is not None and longest > limit:
        n_long = sum(a.shape[0] > limit for a in seqs)
        warnings.warn(f"{name}: {n_long} sequence(s) longer than the model's {limit} positions are "
                      f"truncated to their first {limit} tokens", stacklevel=4)
        longest = limit
    try:
        feats = models.featurize_tokens(seqs, model=lm, max_length=longest, batch_size=batch_size)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{name}: {e}") from e
    return np.asarray(feats)


def _features_from_text(texts: Any, name: str, models: Any, lm: Any, max_length: int, batch_size: int) -> np.ndarray:
    raw = list(texts) if not isinstance(texts, str) and texts is not None else texts
    kept = V.check_texts(raw, name, drop_empty=True)
    dropped = len(raw) - len(kept)
    if dropped:
        warnings.warn(f"{name}: dropped {dropped} empty string(s)", stacklevel=4)
    # encoders are mean-pooled, decoders keep mauve-text's last token (as `jaxmetrics mauve --pooling auto`)
    pool = models.featurize if getattr(lm, "is_causal", True) else models.sentence_embeddings
    limit = getattr(lm, "max_positions", None)
    if limit is not None and max_length > limit:  # mauve-text's 1024 on a shorter model: cap silently
        max_length = int(limit)
    return np.asarray(pool(kept, model=lm, max_length=max_length, batch_size=batch_size))


def get_features(
    p_features: Any, q_features: Any, p_tokens: Any, q_tokens: Any, p_text: Any, q_text: Any, *, model: Any,
    featurize_model_name: str, max_length: int, batch_size: int, verbose: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Features ``(p [n_p, d], q [n_q, d])``: per side the given features win over token ids,
    which win over text (mauve-text's order); the arguments are those of
    :func:`~jaxmetrics.mauve.compute_mauve`. The featurizer is ``model`` (else
    ``featurize_model_name``), resolved by :func:`jaxmetrics.models.resolve_model`.

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.mauve.inputs import get_features
      >>> x = np.zeros((3, 4), np.float32)
      >>> [a.shape for a in get_features(x, x, None, None, None, None, model=None,
      ...     featurize_model_name="gpt2", max_length=8, batch_size=1, verbose=False)]
      [(3, 4), (3, 4)]
    """
    sides = {}
    for side, feats, toks, text in (("p", p_features, p_tokens, p_text), ("q", q_features, q_tokens, q_text)):
        if feats is None and toks is None and text is None:
            raise ValueError(f"{side}_features: supply {side}_features, {side}_tokens or {side}_text")
        sides[side] = (feats, toks, text)
    need = [(side, "tokens" if toks is not None else "text")
            for side, (feats, toks, _) in sides.items() if feats is None]
    models = lm = None
    if need:
        first = f"{need[0][0]}_{need[0][1]}"
        if any(kind == "text" for _, kind in need):
            V.check_int(max_length, "max_text_length", minimum=1)
        V.check_int(batch_size, "batch_size", minimum=1)
        models = _featurizers(first)
        which = model if model is not None else featurize_model_name
        if verbose:
            print(f"loading featurizer {which if isinstance(which, str) else getattr(which, 'name', 'model')}")
        lm = models.resolve_model(which)
    out = []
    for side in ("p", "q"):
        feats, toks, text = sides[side]
        if feats is None and toks is not None:
            feats = _features_from_tokens(toks, f"{side}_tokens", models, lm, batch_size)
        elif feats is None:
            feats = _features_from_text(text, f"{side}_text", models, lm, max_length, batch_size)
        out.append(feats)
    p = V.check_features(out[0], "p_features")
    q = V.check_features(out[1], "q_features", dim=p.shape[1])
    return p, q


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
