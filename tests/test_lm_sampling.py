"""KV-cache sampling: greedy == argmax decoding without cache, top-k=1 == greedy, cached logits ==
full-forward logits (GPT-2 and Llama), filters respected, reproducible keys, bad input."""
from __future__ import annotations

import jax
import numpy as np
import pytest
import torch

from jaxmetrics.lm import sampling as S
from jaxmetrics.models import load_model
from jaxmetrics.testing import tiny_checkpoint

CTX = 32


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpt2s")
    path, tm = tiny_checkpoint("gpt2", d, max_positions=CTX, return_torch=True)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in tm.named_parameters():
            p.copy_((1.0 if ("ln" in name and name.endswith("weight")) else 0.0) + 0.3 * torch.randn(p.shape, generator=g))
    tm.save_pretrained(path)
    return load_model(path)


PROMPTS = [np.array([5, 6, 7, 8]), np.array([9]), np.array([10, 11])]


def _full_logits(lm, seq):
    """Full (uncached) forward; right-padded to CTX so every call has one compiled shape."""
    n = len(seq)
    ids = np.zeros((1, CTX), np.int64)
    ids[0, :n] = seq
    mask = np.arange(CTX)[None] < n
    return np.asarray(lm.forward(ids, mask).logits[0, :n])


def _greedy_no_cache(lm, prompt, m, eos=None):
    seq = list(prompt)
    out = []
    for _ in range(m):
        tok = int(np.argmax(_full_logits(lm, seq)[-1]))
        out.append(tok)
        seq.append(tok)
        if eos is not None and tok == eos:
            break
    return out


def test_greedy_equals_argmax_decoding_without_cache(lm):
    out = S.generate(PROMPTS, model=lm, key=jax.random.key(0), max_new_tokens=6, greedy=True, eos_token_id=None,
                     return_logits=True)
    assert out.tokens.shape == (3, 6) and out.tokens_mask.all()
    for i, p in enumerate(PROMPTS):
        assert out.tokens[i].tolist() == _greedy_no_cache(lm, p, 6)


def test_top_k_1_equals_greedy_and_stops_at_eos(lm):
    g = S.generate(PROMPTS, model=lm, key=jax.random.key(0), max_new_tokens=6, greedy=True, eos_token_id=None,
                   return_logits=True)
    k1 = S.generate(PROMPTS, model=lm, key=jax.random.key(7), max_new_tokens=6, top_k=1, temperature=0.8,
                    eos_token_id=None, return_logits=True)
    np.testing.assert_array_equal(g.tokens, k1.tokens)
    eos = int(g.tokens[0, 2])  # make row 0's third greedy token the stop token
    e = S.generate(PROMPTS, model=lm, key=jax.random.key(0), max_new_tokens=6, greedy=True, eos_token_id=eos,
                   pad_token_id=0, return_logits=True)
    for i, p in enumerate(PROMPTS):
        ref = _greedy_no_cache(lm, p, 6, eos=eos)
        n = len(ref)
        assert e.tokens[i, :n].tolist() == ref and e.tokens_mask[i, :n].all() and not e.tokens_mask[i, n:].any()
        assert np.all(e.tokens[i, n:] == 0)
        assert e.finished[i] == (ref[-1] == eos)
    ref0 = _greedy_no_cache(lm, PROMPTS[0], 6, eos=eos)
    assert e.finished[0] and e.sequences()[0].tolist() == list(PROMPTS[0]) + ref0


def test_cached_logits_equal_full_forward_logits(lm):
    out = S.generate(PROMPTS, model=lm, key=jax.random.key(3), max_new_tokens=6, top_p=0.9, temperature=1.2,
                     eos_token_id=None, return_logits=True)
    for i, p in enumerate(PROMPTS):
        seq = np.concatenate([p, out.tokens[i]])
        full = _full_logits(lm, seq)
        np.testing.assert_allclose(out.logits[i], full[len(p) - 1:len(p) - 1 + 6], atol=1e-4, rtol=1e-4)


def test_filters_respected_and_keys_reproducible(lm):
    kw = dict(max_new_tokens=6, top_k=3, temperature=1.5, eos_token_id=None, return_logits=True)
    a = S.generate(PROMPTS, model=lm, key=jax.random.key(11), **kw)
    b = S.generate(PROMPTS, model=lm, key=jax.random.key(11), **kw)
    c = S.generate(PROMPTS, model=lm, key=jax.random.key(12), **kw)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    assert not np.array_equal(a.tokens, c.tokens)
    top3 = np.argsort(-a.logits, axis=-1)[..., :3]
    assert np.all((top3 == a.tokens[..., None]).any(-1))


def test_no_retrace_for_new_temperature_or_top_p(lm):
    kw = dict(max_new_tokens=6, eos_token_id=None, return_logits=True)
    S.generate(PROMPTS, model=lm, key=jax.random.key(0), temperature=0.7, top_p=0.9, **kw)
    run = S._JITS[lm.model]
    n = run._cache_size()
    S.generate(PROMPTS, model=lm, key=jax.random.key(1), temperature=1.3, top_p=0.5, **kw)
    assert run._cache_size() == n


def test_llama_cached_sampling_matches_full_forward():
    import transformers as tf

    from jaxmetrics.models.llama import Llama

    torch.manual_seed(0)
    cfg = tf.LlamaConfig(vocab_size=61, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         initializer_range=0.3)
    tm = tf.LlamaForCausalLM(cfg).eval()
    from jaxmetrics.models import LoadedModel

    module = Llama.from_pretrained(cfg, {k: v.detach().numpy() for k, v in tm.state_dict().items()})
    model = LoadedModel(model=module, tokenizer=None, config=cfg, kind="llama", is_causal=True)
    prompts = [np.array([3, 4, 5]), np.array([7])]
    out = S.generate(prompts, model=model, key=jax.random.key(0), max_new_tokens=6, greedy=True, eos_token_id=None,
                     return_logits=True)
    for i, p in enumerate(prompts):
        seq = np.concatenate([p, out.tokens[i]])
        with torch.no_grad():
            ref = tm(torch.tensor(seq)[None]).logits[0].numpy()
        np.testing.assert_allclose(out.logits[i], ref[len(p) - 1:len(p) + 5], atol=1e-4, rtol=1e-4)
        assert out.tokens[i].tolist() == ref[len(p) - 1:len(p) + 5].argmax(-1).tolist()


def test_bad_input(lm, tmp_path):
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="^prompts"):
        S.generate([np.array([], dtype=int)], model=lm, key=key, max_new_tokens=2)
    with pytest.raises(ValueError, match="^prompts"):
        S.generate([], model=lm, key=key, max_new_tokens=2)
    with pytest.raises(ValueError, match="^max_new_tokens"):
        S.generate(PROMPTS, model=lm, key=key, max_new_tokens=0)
    with pytest.raises(ValueError, match="^max_new_tokens"):
        S.generate(PROMPTS, model=lm, key=key, max_new_tokens=CTX)
    with pytest.raises(ValueError, match="^temperature"):
        S.generate(PROMPTS, model=lm, key=key, max_new_tokens=2, temperature=0.0)
    with pytest.raises(ValueError, match="^top_p"):
        S.generate(PROMPTS, model=lm, key=key, max_new_tokens=2, top_p=1.5)
    with pytest.raises(ValueError, match="^top_k"):
        S.generate(PROMPTS, model=lm, key=key, max_new_tokens=2, top_k=0)
    with pytest.raises(TypeError, match="^key"):
        S.generate(PROMPTS, model=lm, key=0, max_new_tokens=2)
    with pytest.raises(TypeError, match="^model"):
        S.generate(PROMPTS, model=3, key=key, max_new_tokens=2)
    with pytest.raises(ValueError, match="^model"):
        S.generate(PROMPTS, model=str(tmp_path / "missing"), key=key, max_new_tokens=2)
    bert = load_model(tiny_checkpoint("bert", tmp_path / "bert"))
    with pytest.raises(ValueError, match="^model"):
        S.generate(PROMPTS, model=bert, key=key, max_new_tokens=2)
