"""Architecture registry: ``config.json``'s ``model_type`` -> implementation.

Each entry names a module (imported lazily, so loading GPT-2 never imports the BERT
code), the ``nnx.Module`` class and the weight-conversion function. The class is built
as ``cls(config, dtype=..., rngs=nnx.Rngs(0))`` (abstractly, see
:func:`jaxmetrics.models._base.build_module`) and ``convert(config, state_dict)`` maps
transformers weight names (numpy arrays from safetensors) to the module's nnx paths.
The class attribute ``is_causal`` says whether ``__call__`` returns logits.

To add an architecture, add one :class:`Architecture` entry to ``ARCHITECTURES``
(or call :func:`register_architecture`).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Architecture:
    """Where the implementation of one ``model_type`` lives.

    Attributes:
      module: dotted module path, imported on first use.
      cls: name of the ``nnx.Module`` class in that module.
      convert: name of the ``convert(config, state_dict) -> {nnx path: array}`` function.
      kind: short family name exposed as ``LoadedModel.kind``.
    """

    module: str
    cls: str
    convert: str
    kind: str

    def module_class(self) -> type:
        """The ``nnx.Module`` class (its module is imported on first use)."""
        return getattr(importlib.import_module(self.module), self.cls)

    def converter(self) -> Callable:
        """The ``convert(config, state_dict) -> {nnx path: array}`` function."""
        return getattr(importlib.import_module(self.module), self.convert)


ARCHITECTURES: dict[str, Architecture] = {
    "gpt2": Architecture("jaxmetrics.models.gpt2", "GPT2", "convert_gpt2", "gpt2"),
    "bert": Architecture("jaxmetrics.models.bert", "Bert", "convert_bert", "bert"),
    "roberta": Architecture("jaxmetrics.models.bert", "Roberta", "convert_roberta", "roberta"),
    "xlm-roberta": Architecture("jaxmetrics.models.bert", "Roberta", "convert_roberta", "roberta"),
    "llama": Architecture("jaxmetrics.models.llama", "Llama", "convert_llama", "llama"),
    "mistral": Architecture("jaxmetrics.models.llama", "Llama", "convert_llama", "mistral"),
    "qwen2": Architecture("jaxmetrics.models.llama", "Llama", "convert_llama", "qwen2"),
}


def register_architecture(model_type: str, arch: Architecture) -> None:
    """Add (or replace) the implementation used for ``model_type``.

    Examples:
      >>> register_architecture("camembert", Architecture("jaxmetrics.models.bert", "Roberta",
      ...                                                 "convert_roberta", "roberta"))
      >>> get_architecture("camembert").kind
      'roberta'
    """
    if not isinstance(model_type, str) or not model_type:
        raise TypeError("model_type: expected a non-empty string")
    ARCHITECTURES[model_type] = arch


def known_model_types() -> list[str]:
    """Sorted ``model_type`` values the loader can build.

    Examples:
      >>> {"gpt2", "bert", "roberta"} <= set(known_model_types())
      True
    """
    return sorted(ARCHITECTURES)


def get_architecture(model_type: str) -> Architecture:
    """The registry entry for ``model_type``, or a ``ValueError`` listing the known ones.

    Examples:
      >>> get_architecture("gpt2").cls
      'GPT2'
    """
    try:
        return ARCHITECTURES[model_type]
    except KeyError:
        raise ValueError(
            f"model_type: architecture {model_type!r} is not supported by jaxmetrics; "
            f"known architectures: {', '.join(known_model_types())}"
        ) from None
