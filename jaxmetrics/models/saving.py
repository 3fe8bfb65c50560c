"""Write a model back as a Hugging Face checkpoint: ``config.json``, ``model.safetensors`` (transformers'
tensor names and layout) and the tokenizer files, so that :func:`~jaxmetrics.models.load_model` and
transformers (``GPT2LMHeadModel`` / ``LlamaForCausalLM.from_pretrained``) both read it and compute the same logits.

:func:`to_hf_state_dict` is the inverse of the loaders' converters: of
:func:`jaxmetrics.models.gpt2.convert_gpt2` for GPT-2 and of :func:`jaxmetrics.models.llama.convert_llama`
for the Llama family (Llama, Mistral, Qwen2); encoders (BERT, RoBERTa) are refused by name.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from jaxmetrics.results import Result, static_field

__all__ = ["SavedCheckpoint", "save_pretrained", "to_hf_state_dict"]


class SavedCheckpoint(Result):
    """The files :func:`save_pretrained` wrote.

    Attributes:
      path: the checkpoint directory (give it to ``load_model``).
      files: the names of the files written in it, sorted.
    """

    path: str = static_field()
    files: tuple[str, ...] = static_field()


def _gpt2_state_dict(module: Any, config: Any) -> dict[str, np.ndarray]:
    from flax import nnx

    sd: dict[str, np.ndarray] = {}
    names = {"kernel": "weight", "bias": "bias", "scale": "weight", "embedding": "weight"}
    for path, var in nnx.to_flat_state(nnx.state(module, nnx.Param)):
        parts = [str(p) for p in path]
        parts[-1] = names[parts[-1]]
        sd["transformer." + ".".join(parts)] = np.ascontiguousarray(np.asarray(var[...], np.float32))
    expected = 4 + 12 * int(config.n_layer)
    if len(sd) != expected:
        raise ValueError(f"model: expected {expected} GPT-2 tensors for {config.n_layer} layers, got {len(sd)}")
    return sd


def _llama_state_dict(module: Any) -> dict[str, np.ndarray]:
    from flax import nnx

    sd: dict[str, np.ndarray] = {}
    for path, var in nnx.to_flat_state(nnx.state(module, nnx.Param)):
        parts = [str(p) for p in path]
        arr = np.asarray(var[...], np.float32)
        if parts == ["unembed", "kernel"]:          # the untied head: nn.Linear [V, D]
            sd["lm_head.weight"] = np.ascontiguousarray(arr.T)
            continue
        if parts[-1] == "kernel":                   # nnx [in, out] -> nn.Linear [out, in]
            parts[-1], arr = "weight", arr.T
        elif parts[-1] == "embedding":
            parts[-1] = "weight"
        sd["model." + ".".join(parts)] = np.ascontiguousarray(arr)
    return sd


def to_hf_state_dict(module: Any, config: Any) -> dict[str, np.ndarray]:
    """transformers' state dict (``{name: float32 array}``) of a GPT-2 or Llama-family module.

    The inverse of the loaders' converters. GPT-2: the nnx path ``h/0/attn/c_attn/kernel`` becomes
    ``transformer.h.0.attn.c_attn.weight``; GPT-2's ``Conv1D`` stores weights ``[in, out]``, the
    layout of ``nnx.Linear``, so nothing is transposed, and the LM head is tied to ``wte`` and not
    stored (as transformers' ``save_pretrained`` does). Llama / Mistral / Qwen2: ``layers/0/self_attn/
    q_proj/kernel`` becomes ``model.layers.0.self_attn.q_proj.weight``, transposed to ``nn.Linear``'s
    ``[out, in]``; an untied head is ``lm_head.weight``.

    Raises:
      ValueError: ``model`` is neither a GPT-2 nor a Llama-family decoder, or a GPT-2's parameters
        are not the ``4 + 12 * n_layer`` tensors of ``config``.
    """
    from jaxmetrics.models.gpt2 import GPT2
    from jaxmetrics.models.llama import Llama

    if isinstance(module, GPT2):
        return _gpt2_state_dict(module, config)
    if isinstance(module, Llama):
        return _llama_state_dict(module)
    raise ValueError(f"model: saving writes GPT-2 and Llama-family checkpoints only, got a {type(module).__name__}")


def save_pretrained(model: Any, out_dir: str | os.PathLike, *, tokenizer: Any = None, config: Any = None,
                    dtype: Any = None) -> SavedCheckpoint:
    """Write ``model`` as a Hugging Face checkpoint directory.

    Writes ``config.json`` (``config.save_pretrained``), ``model.safetensors`` (:func:`to_hf_state_dict`,
    float32, ``{"format": "pt"}`` metadata as transformers writes) and, when there is a tokenizer, its
    files (``tokenizer.save_pretrained``). The weights are written to a temporary file and renamed,
    so a reader never sees half a file.

    Args:
      model: a :class:`~jaxmetrics.models.LoadedModel` of a GPT-2 or a Llama-family decoder (its
        tokenizer and config are used unless given), or a bare module with ``config=``.
      out_dir: the directory to write (created if missing; files of the same names are replaced).
      tokenizer: the tokenizer to save (default: the loaded model's).
      config: the transformers config (default: the loaded model's).
      dtype: the loaded model's compute dtype, checked as every ``model=`` is
        (:func:`~jaxmetrics.models.resolve_model`; ``None``: its own). The weights are written in float32.

    Returns:
      :class:`SavedCheckpoint`.

    Examples:
      >>> import tempfile
      >>> from jaxmetrics.models import load_model
      >>> from jaxmetrics.testing import tiny_checkpoint
      >>> lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
      >>> saved = save_pretrained(lm, tempfile.mkdtemp())
      >>> "model.safetensors" in saved.files and "config.json" in saved.files
      True
      >>> float(abs(load_model(saved.path).forward([[5, 6]], [[1, 1]]).logits
      ...           - lm.forward([[5, 6]], [[1, 1]]).logits).max())
      0.0
    """
    from safetensors.numpy import save_file

    from jaxmetrics.models.loader import LoadedModel

    if isinstance(model, LoadedModel):
        from jaxmetrics.models.protocol import resolve_model

        model = resolve_model(model, dtype=dtype)
    elif dtype is not None:
        from jaxmetrics.models.loader import check_dtype

        check_dtype(dtype)
    module = model.model if isinstance(model, LoadedModel) else model
    if isinstance(model, LoadedModel):
        tokenizer = model.tokenizer if tokenizer is None else tokenizer
        config = model.config if config is None else config
    if config is None:
        raise ValueError("config: a bare module needs its transformers config (config=...)")
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir: expected a directory path, got {type(out_dir).__name__}")
    sd = to_hf_state_dict(module, config)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir: {os.fspath(out_dir)!r} is a file; expected a directory")
    out.mkdir(parents=True, exist_ok=True)
    before = set(os.listdir(out))
    config.save_pretrained(str(out))
    tmp = out / f".model.safetensors.tmp-{os.getpid()}"
    save_file(sd, str(tmp), metadata={"format": "pt"})
    os.replace(tmp, out / "model.safetensors")
    written = {"config.json", "model.safetensors"}
    if tokenizer is not None:
        written.update(Path(f).name for f in tokenizer.save_pretrained(str(out)))
    new = set(os.listdir(out)) - before
    return SavedCheckpoint(path=str(out), files=tuple(sorted((written | new) & set(os.listdir(out)))))
