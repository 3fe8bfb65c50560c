"""The one pooling table and the one layer rule of jaxmetrics.

How a text's token vectors become one vector is a *named pooling*, defined here once and used by
the encoding engine (:func:`~jaxmetrics.models.encode`) for every family:

==========  =====================================================================================
``mean``    masked mean over all of the text's real tokens, special tokens ([CLS]/[SEP],
            ``<s>``/``</s>``) included: ``sum_t m_t h_t / max(sum_t m_t, 1e-9)`` (the
            sentence-transformers convention)
``last``    the hidden state at the text's last real token (mauve-text's convention for GPT-2;
            an encoder's last token is [SEP] / ``</s>``)
``cls``     the hidden state at the first token ([CLS] / ``<s>``; BERT's classifier convention)
``auto``    not a pooling but a choice: ``last`` for a causal LM, ``mean`` for an encoder
==========  =====================================================================================

``auto`` is the one default of every door that featurizes text for MAUVE from a model given as
``model=`` or ``--model`` (``compute_mauve``, ``compute_mauve_seeds``, ``featurize_texts``, the
sweeps, the generation evaluation, ``jaxmetrics mauve`` / ``mauve-sweep`` / ``compare`` /
``featurize``); only mauve-text's own argument, ``compute_mauve(featurize_model_name=...)``,
keeps mauve-text's ``last`` for every model
(:func:`jaxmetrics.mauve.pipeline.inputs.default_pooling`).

Layers are ``hidden_states`` indices in the transformers convention: ``0`` is the embedding
output, ``num_layers`` (or ``-1``) the final block's output (for GPT-2 after ``ln_f``); negative
values count from the end. :func:`resolve_layers` turns any such request into a tuple of
non-negative indices; the engine runs **one** forward pass for all of them.

Examples:
    >>> sorted(POOLINGS)
    ['cls', 'last', 'mean']
    >>> class Encoder:                     # anything with is_causal / num_layers
    ...     is_causal, num_layers = False, 6
    >>> resolve_pooling(Encoder(), "auto"), resolve_layers(Encoder(), (-1, 0, 3))
    ('mean', (6, 0, 3))
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["DEFAULT_MAX_LENGTH", "POOLINGS", "resolve_layers", "resolve_pooling"]

#: Every named pooling and what it computes (see the module docstring).
POOLINGS: dict[str, str] = {
    "mean": "masked mean over all real tokens, special tokens included",
    "last": "hidden state at the last real token",
    "cls": "hidden state at the first token",
}

#: Truncation length (tokens, first tokens kept) when ``max_length=None``, by pooling: mauve-text's
#: 1024 for ``last``, all-MiniLM-L6-v2's 256 for ``mean``, 512 otherwise (token vectors, ``cls``);
#: always capped at the model's positions.
DEFAULT_MAX_LENGTH: dict[Any, int] = {"last": 1024, "mean": 256, "cls": 512, None: 512}


def resolve_pooling(model: Any, pooling: str | None, name: str = "pooling") -> str | None:
    """The named pooling that ``pooling`` designates for ``model``.

    ``'auto'`` becomes ``'last'`` for a causal LM (``model.is_causal``) and ``'mean'`` for an
    encoder; a name of :data:`POOLINGS` (or ``None``: no pooling) is returned as is; anything
    else raises ``ValueError`` naming ``name``.
    """
    if pooling is None or pooling in POOLINGS:
        return pooling
    if pooling == "auto":
        return "last" if getattr(model, "is_causal", False) else "mean"
    raise ValueError(f"{name}: expected one of {', '.join(sorted(POOLINGS))} or 'auto', got {pooling!r}")


def resolve_layers(model: Any, layers: Any, name: str = "layers") -> Sequence[int]:
    """``layers`` (one ``hidden_states`` index or a sequence of them) as a tuple of
    non-negative indices in ``[0, model.num_layers]``, in the order given.

    Raises ``TypeError`` / ``ValueError`` naming ``name`` for a non-integer, an index out of
    range, an empty sequence or a repeated layer.
    """
    many = not isinstance(layers, (int, np.integer)) or isinstance(layers, bool)
    seq = tuple(layers) if many and hasattr(layers, "__iter__") and not isinstance(layers, str) else (layers,)
    if not seq:
        raise ValueError(f"{name}: empty; give at least one layer")
    n = int(model.num_layers) + 1
    out = []
    for v in seq:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}: expected an integer or a sequence of integers, got {type(v).__name__}")
        if not -n <= v < n:
            raise ValueError(f"{name}: must be in [{-n}, {n - 1}] for a model with {n - 1} layers, got {v}")
        out.append(int(v) % n)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated layer in {seq}")
    return tuple(out)
