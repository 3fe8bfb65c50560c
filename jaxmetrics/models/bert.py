"""BERT and RoBERTa encoders in Flax NNX (covers bert-base/large, roberta-base/large and
all-MiniLM-L6-v2).

Matches transformers' PyTorch ``BertModel`` / ``RobertaModel`` (without the pooler):
embeddings = word + position + token type (all zeros) followed by LayerNorm; post-LN
blocks with exact (erf) GELU unless the config says otherwise. RoBERTa numbers positions
from ``padding_idx + 1`` and gives pad tokens position ``padding_idx``, as transformers does.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxmetrics.models._base import (
    ModelOutput, activation, attention, build_pretrained, dense, inv_sqrt, merge_heads, packed_layout, split_heads,
    strip_prefix, take,
)


def _linear(i, o, dtype, rngs):
    return dense(i, o, dtype=dtype, rngs=rngs)


def _ln(cfg, dtype, rngs):
    return nnx.LayerNorm(cfg.hidden_size, epsilon=cfg.layer_norm_eps, dtype=dtype, param_dtype=dtype, rngs=rngs)


class BertLayer(nnx.Module):
    def __init__(self, cfg, *, dtype, rngs):
        d, f = cfg.hidden_size, cfg.intermediate_size
        self.num_heads = cfg.num_attention_heads
        self.scale = inv_sqrt(d // self.num_heads)
        self.query = _linear(d, d, dtype, rngs)
        self.key = _linear(d, d, dtype, rngs)
        self.value = _linear(d, d, dtype, rngs)
        self.attn_out = _linear(d, d, dtype, rngs)
        self.attn_ln = _ln(cfg, dtype, rngs)
        self.intermediate = _linear(d, f, dtype, rngs)
        self.output = _linear(f, d, dtype, rngs)
        self.out_ln = _ln(cfg, dtype, rngs)
        self.act = activation(cfg.hidden_act)

    def __call__(self, x, allowed):
        h = self.num_heads
        ctx = attention(split_heads(self.query(x), h), split_heads(self.key(x), h),
                        split_heads(self.value(x), h), allowed, scale=self.scale)
        x = self.attn_ln(x + self.attn_out(merge_heads(ctx)))
        return self.out_ln(x + self.output(self.act(self.intermediate(x))))


class Bert(nnx.Module):
    """BERT encoder. ``__call__(input_ids [B, T], attention_mask [B, T])`` -> :class:`ModelOutput`
    with ``hidden_states`` of ``num_hidden_layers + 1`` entries (``[0]`` = embeddings)."""

    is_causal = False

    def __init__(self, cfg, *, dtype=jnp.float32, rngs: nnx.Rngs):
        pet = getattr(cfg, "position_embedding_type", "absolute") or "absolute"
        if pet != "absolute":
            raise ValueError(f"config: position_embedding_type {pet!r} is not supported (only 'absolute')")
        d = cfg.hidden_size
        self.word_embeddings = nnx.Embed(cfg.vocab_size, d, dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.position_embeddings = nnx.Embed(cfg.max_position_embeddings, d, dtype=dtype, param_dtype=dtype,
                                             rngs=rngs)
        self.token_type_embeddings = nnx.Embed(cfg.type_vocab_size, d, dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.emb_ln = _ln(cfg, dtype, rngs)
        self.layer = nnx.List([BertLayer(cfg, dtype=dtype, rngs=rngs) for _ in range(cfg.num_hidden_layers)])
        self.padding_idx = int(cfg.pad_token_id) if cfg.pad_token_id is not None else 0

    supports_packing = True

    def position_ids(self, input_ids, mask):
        t = input_ids.shape[1]
        return jnp.broadcast_to(jnp.arange(t)[None, :], input_ids.shape)

    def packed_positions(self, within):
        """Position ids of tokens at position ``within`` of their own text (packed rows)."""
        return within

    def __call__(self, input_ids, attention_mask, *, output_hidden_states: bool = False,
                 segment_ids=None) -> ModelOutput:
        """``segment_ids [B, T]`` (optional, replaces ``attention_mask``): rows packed with several
        texts, see :func:`jaxmetrics.models._base.packed_layout`."""
        if segment_ids is not None:
            within, allowed, mask = packed_layout(segment_ids)
            pos = self.packed_positions(within)
        else:
            mask = attention_mask.astype(bool)
            pos = self.position_ids(input_ids, mask)
            allowed = mask[:, None, None, :]  # [B, 1, 1, Tk]
        x = (self.word_embeddings(input_ids) + self.position_embeddings(pos)
             + self.token_type_embeddings.embedding[...][0])  # token_type_ids are all zero
        x = self.emb_ln(x)
        hidden = [x] if output_hidden_states else None
        for layer in self.layer:
            x = layer(x, allowed)
            if output_hidden_states:
                hidden.append(x)
        return ModelOutput(x, tuple(hidden) if output_hidden_states else None, None)

    @classmethod
    def from_pretrained(cls, config, state_dict: dict[str, np.ndarray], *, dtype=jnp.float32):
        """Build from a transformers ``BertConfig``/``RobertaConfig`` and a name -> numpy array state dict."""
        convert = convert_roberta if issubclass(cls, Roberta) else convert_bert
        return build_pretrained(cls, config, convert(config, state_dict), dtype=dtype)


class Roberta(Bert):
    """RoBERTa encoder: BERT with positions ``padding_idx + 1, padding_idx + 2, ...`` on
    non-pad tokens and ``padding_idx`` on pad tokens (pad tokens are ``input_ids == pad_token_id``)."""

    def position_ids(self, input_ids, mask):
        real = (input_ids != self.padding_idx).astype(jnp.int32)
        return jnp.cumsum(real, axis=1) * real + self.padding_idx

    def packed_positions(self, within):
        return within + self.padding_idx + 1


def _fix_legacy_names(sd: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    for k, v in sd.items():
        if k.endswith(".gamma"):
            k = k[: -len("gamma")] + "weight"
        elif k.endswith(".beta"):
            k = k[: -len("beta")] + "bias"
        out[k] = v
    return out


def convert_bert(config, state_dict: dict[str, np.ndarray], prefixes=("bert.",)) -> dict[tuple, np.ndarray]:
    """Map transformers BERT weight names to :class:`Bert` nnx paths (``nn.Linear`` weights are transposed)."""
    sd = _fix_legacy_names(strip_prefix(state_dict, prefixes))
    e = "embeddings."
    p: dict[tuple, np.ndarray] = {
        ("word_embeddings", "embedding"): take(sd, e + "word_embeddings.weight"),
        ("position_embeddings", "embedding"): take(sd, e + "position_embeddings.weight"),
        ("token_type_embeddings", "embedding"): take(sd, e + "token_type_embeddings.weight"),
        ("emb_ln", "scale"): take(sd, e + "LayerNorm.weight"),
        ("emb_ln", "bias"): take(sd, e + "LayerNorm.bias"),
    }
    names = {
        "query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
        "attn_out": "attention.output.dense", "intermediate": "intermediate.dense", "output": "output.dense",
    }
    for i in range(config.num_hidden_layers):
        pre = f"encoder.layer.{i}."
        for ours, theirs in names.items():
            p[("layer", i, ours, "kernel")] = take(sd, pre + theirs + ".weight", transpose=True)
            p[("layer", i, ours, "bias")] = take(sd, pre + theirs + ".bias")
        for ours, theirs in (("attn_ln", "attention.output.LayerNorm"), ("out_ln", "output.LayerNorm")):
            p[("layer", i, ours, "scale")] = take(sd, pre + theirs + ".weight")
            p[("layer", i, ours, "bias")] = take(sd, pre + theirs + ".bias")
    return p


def convert_roberta(config, state_dict: dict[str, np.ndarray]) -> dict[tuple, np.ndarray]:
    """Map transformers RoBERTa weight names to :class:`Roberta` nnx paths."""
    return convert_bert(config, state_dict, prefixes=("roberta.",))
