"""BERT / RoBERTa in Flax NNX vs transformers' PyTorch models (tiny random checkpoints and
the real all-MiniLM-L6-v2)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jaxmetrics.models import load_model  # noqa: E402
from jaxmetrics.testing import tiny_checkpoint  # noqa: E402


@pytest.fixture(scope="module", params=["bert", "roberta"])
def encoder(request, tmp_path_factory):
    d, tm = tiny_checkpoint(request.param, tmp_path_factory.mktemp(request.param), return_torch=True)
    return request.param, load_model(d), tm


def _batch(lm, rng):
    pad = lm.pad_token_id
    ids = rng.integers(5, lm.config.vocab_size, (3, 10)).astype(np.int32)
    mask = np.ones((3, 10), bool)
    mask[1, 6:] = False
    mask[2, 3:] = False
    ids[~mask] = pad  # right padding with the pad id, as the tokenizer does
    return ids, mask


def test_hidden_states_match_torch(encoder, rng):
    kind, lm, tm = encoder
    assert lm.kind == kind and not lm.is_causal
    ids, mask = _batch(lm, rng)
    out = lm.forward(ids, mask, output_hidden_states=True)
    assert out.logits is None
    with torch.no_grad():
        ref = tm(input_ids=torch.tensor(ids, dtype=torch.long),
                 attention_mask=torch.tensor(mask.astype(np.int64)), output_hidden_states=True)
    assert len(out.hidden_states) == lm.config.num_hidden_layers + 1 == len(ref.hidden_states)
    for ours, theirs in zip(out.hidden_states, ref.hidden_states):
        np.testing.assert_allclose(np.asarray(ours)[mask], theirs.numpy()[mask], atol=1e-4, rtol=0)
    np.testing.assert_allclose(np.asarray(out.last_hidden_state)[mask], ref.last_hidden_state.numpy()[mask],
                               atol=1e-4, rtol=0)


def test_padding_does_not_change_real_tokens(encoder, rng):
    _, lm, _ = encoder
    ids, mask = _batch(lm, rng)
    short = lm.forward(ids[2:3, :3], mask[2:3, :3]).last_hidden_state
    padded = lm.forward(ids, mask).last_hidden_state
    np.testing.assert_allclose(np.asarray(padded)[2, :3], np.asarray(short)[0], atol=1e-5)


SENTENCES = [
    "The cat sat on the mat.",
    "Evaluation of open-ended text generation is hard, and metrics disagree.",
    "JAX compiles numerical programs with XLA.",
    "a",
]


def test_minilm_token_embeddings_match_torch(minilm_dir):
    from transformers import AutoModel, AutoTokenizer

    lm = load_model(minilm_dir)
    tok = AutoTokenizer.from_pretrained(minilm_dir)
    enc = tok(SENTENCES, padding=True, return_tensors="np")
    out = lm.forward(enc["input_ids"], enc["attention_mask"])
    tm = AutoModel.from_pretrained(minilm_dir).eval()
    with torch.no_grad():
        ref = tm(input_ids=torch.tensor(enc["input_ids"]), attention_mask=torch.tensor(enc["attention_mask"]))
    mask = enc["attention_mask"].astype(bool)
    a = np.asarray(out.last_hidden_state)[mask]
    b = ref.last_hidden_state.numpy()[mask]
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    assert cos.min() >= 0.9999
    np.testing.assert_allclose(a, b, atol=1e-4)
