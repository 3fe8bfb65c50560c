"""save_pretrained writes a checkpoint that jaxmetrics and transformers both load with the same logits."""
import numpy as np
import pytest

from jaxmetrics.models import load_model, save_pretrained
from jaxmetrics.models.saving import to_hf_state_dict


def _perturbed(lm):
    """The model with every weight moved, so that a checkpoint equal to the original cannot pass."""
    import jax
    from flax import nnx

    params = nnx.state(lm.model, nnx.Param)
    moved = jax.tree.map(lambda x: x + 0.01 * jax.random.normal(jax.random.key(3), x.shape, x.dtype), params)
    nnx.update(lm.model, moved)
    return lm


def test_saved_gpt2_loads_in_jaxmetrics_and_transformers_with_the_same_logits(tiny_checkpoint_dir, tmp_path):
    torch = pytest.importorskip("torch")
    from transformers import GPT2LMHeadModel

    lm = _perturbed(load_model(tiny_checkpoint_dir("gpt2")))
    saved = save_pretrained(lm, tmp_path / "ckpt")
    assert {"config.json", "model.safetensors"} <= set(saved.files)
    assert any(f.startswith("tokenizer") for f in saved.files)
    ids = np.array([[5, 17, 42, 7, 99, 3]])
    want = np.asarray(lm.forward(ids, np.ones_like(ids)).logits)
    again = np.asarray(load_model(saved.path).forward(ids, np.ones_like(ids)).logits)
    np.testing.assert_array_equal(again, want)
    hf = GPT2LMHeadModel.from_pretrained(saved.path).eval()
    with torch.no_grad():
        theirs = hf(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(theirs, want, atol=2e-5, rtol=1e-4)
    assert load_model(saved.path).tokenizer("a b").input_ids == lm.tokenizer("a b").input_ids


def test_saving_refuses_other_architectures(tiny_checkpoint_dir, tmp_path):
    bert = load_model(tiny_checkpoint_dir("bert"))
    with pytest.raises(ValueError, match="^model: saving writes GPT-2 and Llama-family checkpoints only"):
        save_pretrained(bert, tmp_path / "b")
    with pytest.raises(ValueError, match="^model:"):
        to_hf_state_dict(bert.model, bert.config)
    assert not (tmp_path / "b").exists()


def test_saved_llama_loads_in_jaxmetrics_and_transformers_with_the_same_logits(tmp_path):
    torch = pytest.importorskip("torch")
    import transformers as tf

    from jaxmetrics.testing import _bpe_tokenizer

    torch.manual_seed(0)
    cfg = tf.LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         initializer_range=0.2, tie_word_embeddings=False)
    tf.LlamaForCausalLM(cfg).save_pretrained(str(tmp_path / "src"))
    _bpe_tokenizer("gpt2", 90).save_pretrained(str(tmp_path / "src"))
    lm = _perturbed(load_model(tmp_path / "src"))
    saved = save_pretrained(lm, tmp_path / "out")
    ids = np.array([[5, 17, 42, 7, 60, 3]])
    want = np.asarray(lm.forward(ids, np.ones_like(ids)).logits)
    np.testing.assert_array_equal(np.asarray(load_model(saved.path).forward(ids, np.ones_like(ids)).logits), want)
    hf = tf.LlamaForCausalLM.from_pretrained(saved.path).eval()
    with torch.no_grad():
        theirs = hf(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(theirs, want, atol=2e-5, rtol=1e-4)
