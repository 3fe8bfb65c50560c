"""The model protocol of jaxmetrics and the one function that turns ``model=`` into a model.

Every function of the library that needs a model takes it as ``model=`` and passes it to
:func:`resolve_model`, which accepts

* a :class:`~jaxmetrics.models.LoadedModel` (returned as is),
* a Hugging Face hub id (``"gpt2-large"``) or a local checkpoint directory, as ``str`` or
  ``os.PathLike`` (loaded with :func:`~jaxmetrics.models.load_model`; safetensors only),

and raises one error message for anything else.

Causal language models (GPT-2, Llama, Mistral, Qwen2) implement :class:`CausalLM`:

==========================================  ===============================================
``module(input_ids, attention_mask, ...)``  :class:`~jaxmetrics.models.ModelOutput`: hidden
                                            states (and logits unless ``return_logits=False``)
``module.lm_head(hidden)``                  float32 logits ``[..., V]`` of final hidden states
``module.init_cache(batch_size, max_len)``  an empty key/value cache for ``max_len`` slots
``module.decode_step(input_ids, positions,  logits ``[B, t, V]`` of ``t`` new tokens written
key_mask, cache, cache_index)``             at ``cache_index``, and the updated cache
==========================================  ===============================================

Sampling, sliding-window perplexity, LM scores and generation perplexity use only these four
entry points; nothing outside :mod:`jaxmetrics.models` touches a model's submodules.
"""
from __future__ import annotations

import os
from typing import Any, ClassVar, Protocol, runtime_checkable

import jax

__all__ = ["CausalLM", "resolve_model"]


@runtime_checkable
class CausalLM(Protocol):
    """What every causal decoder module of :mod:`jaxmetrics.models` provides (see module docstring)."""

    is_causal: ClassVar[bool]

    def __call__(self, input_ids: jax.Array, attention_mask: jax.Array, *,
                 output_hidden_states: bool = False, return_logits: bool = True) -> Any: ...

    def lm_head(self, hidden: jax.Array) -> jax.Array: ...

    def init_cache(self, batch_size: int, max_len: int) -> Any: ...

    def decode_step(self, input_ids: jax.Array, positions: jax.Array, key_mask: jax.Array, cache: Any,
                    cache_index: Any) -> Any: ...


def model_type_error(model: Any) -> TypeError:
    """The one error for a ``model=`` argument of the wrong type."""
    return TypeError("model: expected a loaded model (jaxmetrics.models.load_model), a Hugging Face hub id "
                     f"or a local checkpoint directory (str or os.PathLike), got {type(model).__name__}")


def resolve_model(model: Any, *, causal: bool = False, purpose: str = "", dtype: Any = None) -> Any:
    """The :class:`~jaxmetrics.models.LoadedModel` that a ``model=`` argument designates.

    Args:
      model: a loaded model, or a hub id / local checkpoint directory (``str`` or
        ``os.PathLike``), loaded with :func:`~jaxmetrics.models.load_model`.
      causal: require a causal language model (GPT-2, Llama, Mistral, Qwen2).
      purpose: what the model is needed for, quoted in the error for a non-causal model.
      dtype: the compute dtype, ``'float32'`` or ``'bfloat16'`` (see
        :func:`~jaxmetrics.models.load_model`). A path is loaded in it (``None``: float32); a
        loaded model must have been loaded in it (``None``: its own).

    Returns:
      :class:`~jaxmetrics.models.LoadedModel`.

    Raises:
      TypeError: ``model`` is none of the accepted types (the one message of the library).
      ValueError: the checkpoint cannot be found or loaded, ``causal`` and it has no LM head, or
        ``dtype`` is not a model dtype or not the loaded model's.

    Examples:
      >>> resolve_model(3.5)
      Traceback (most recent call last):
      ...
      TypeError: model: expected a loaded model (jaxmetrics.models.load_model), a Hugging Face hub id or a local checkpoint directory (str or os.PathLike), got float
    """
    from jaxmetrics.models.loader import LoadedModel, check_dtype, load_model

    if dtype is not None:
        dtype = check_dtype(dtype)
    if isinstance(model, LoadedModel):
        lm = model
        if dtype is not None and check_dtype(lm.dtype) != dtype:
            raise ValueError(f"dtype: the model was loaded in {check_dtype(lm.dtype).name}, not {dtype.name}; "
                             f"load it with load_model(..., dtype={dtype.name!r}) or pass its path")
    elif isinstance(model, (str, os.PathLike)):
        lm = load_model(model, dtype="float32" if dtype is None else dtype)
    else:
        raise model_type_error(model)
    if causal and not lm.is_causal:
        need = f"; {purpose} needs" if purpose else "; this needs"
        raise ValueError(f"model: {lm.name or lm.kind!r} ({lm.kind}) has no causal LM head{need} a causal "
                         "language model (GPT-2, Llama, Mistral, Qwen2)")
    return lm
