"""KV-cache sampling: greedy == argmax decoding without cache, top-k=1 == greedy, cached logits ==
full-forward logits (GPT-2 and Llama), filters respected, reproducible keys, bad input; typical_p
parity with transformers, sampling frequencies of typical / entmax decoding, per-row keys
(a row independent of its batch), a one-device mesh. 8-device parity: tests/sharding_worker.py."""
from __future__ import annotations

import jax
import jax.numpy as jnp
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


# ----------------------------------------------------------------------------- typical and entmax sampling
from jaxmetrics.lm.kernels import decoding_log_probs, entmax  # noqa: E402


def _hf_chain(z, temperature=1.0, top_k=None, top_p=None, typical_p=None):
    """transformers' warpers in generate's order; typical_p = 1 is not applied (as in generate)."""
    from transformers.generation.logits_process import (
        TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, TypicalLogitsWarper,
    )

    t = torch.tensor(z.reshape(-1, z.shape[-1]))
    t = TemperatureLogitsWarper(temperature)(None, t)
    if top_k is not None:
        t = TopKLogitsWarper(top_k)(None, t)
    if top_p is not None:
        t = TopPLogitsWarper(top_p)(None, t)
    if typical_p is not None and typical_p < 1.0:
        t = TypicalLogitsWarper(typical_p)(None, t)
    return torch.log_softmax(t, -1).numpy().reshape(z.shape)


@pytest.mark.parametrize("shape", [(1, 5), (4, 11), (3, 2, 64)])
@pytest.mark.parametrize("typical_p", [1.0, 0.95, 0.5, 0.2, 1e-3])
def test_typical_p_matches_transformers(x64, shape, typical_p):
    z = np.random.default_rng(sum(shape)).normal(size=shape) * 2.5
    ours = np.asarray(decoding_log_probs(z, typical_p=typical_p))
    ref = _hf_chain(z, typical_p=typical_p)
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(ref))
    np.testing.assert_allclose(ours[np.isfinite(ref)], ref[np.isfinite(ref)], atol=1e-10)
    if typical_p == 1.0:
        assert np.isfinite(ours).all()


def test_typical_p_after_other_filters_and_ties_matches_transformers(x64):
    rng = np.random.default_rng(5)
    z = rng.normal(size=(6, 40)) * 2.0
    tied = z.copy()
    tied[:, 10:20] = tied[:, :1]  # ties in the typicality score: kept or removed together, as transformers
    # (top_p is not combined with ties: transformers' nucleus filter may split a tie group, ours keeps it whole)
    for z, kw in ((tied, dict(typical_p=0.5)), (tied, dict(temperature=0.7, top_k=25, typical_p=0.6)),
                  (z, dict(temperature=1.3, top_p=0.9, typical_p=0.3)), (z, dict(top_k=30, top_p=0.8, typical_p=0.9))):
        ours = np.asarray(decoding_log_probs(z, **kw))
        ref = _hf_chain(z, **kw)
        np.testing.assert_array_equal(np.isinf(ours), np.isinf(ref), err_msg=str(kw))
        np.testing.assert_allclose(ours[np.isfinite(ref)], ref[np.isfinite(ref)], atol=1e-10)


def test_entmax_decoding_and_bad_combinations():
    z = jnp.asarray(np.random.default_rng(6).normal(size=(3, 9)), jnp.float32)
    lp = decoding_log_probs(z, temperature=0.8, entmax_alpha=1.5)
    np.testing.assert_allclose(np.exp(lp), entmax(z / 0.8, 1.5), atol=1e-6)
    assert np.isneginf(np.asarray(lp)).any()  # sparse
    np.testing.assert_allclose(decoding_log_probs(z, entmax_alpha=1.0), jax.nn.log_softmax(z), atol=1e-6)
    for kw in (dict(top_k=3), dict(top_p=0.9), dict(typical_p=0.9)):
        with pytest.raises(ValueError, match="^entmax_alpha"):
            decoding_log_probs(z, entmax_alpha=1.5, **kw)


def _frequencies_match(tokens, probs, n):
    counts = np.bincount(np.asarray(tokens).ravel(), minlength=probs.size)
    assert counts[probs == 0].sum() == 0, "a token off the support was drawn"
    sd = np.sqrt(n * probs * (1 - probs))
    assert np.all(np.abs(counts - n * probs) <= 5 * sd + 1e-9), (counts, n * probs)


@pytest.mark.parametrize("kw", [dict(typical_p=0.6), dict(temperature=0.7, top_k=6, typical_p=0.8),
                                dict(entmax_alpha=1.5), dict(temperature=2.0, entmax_alpha=2.0)])
def test_sampling_frequencies_match_transformed_distribution(kw):
    n = 20000
    z = jnp.asarray(np.random.default_rng(7).normal(size=8) * 1.5, jnp.float32)
    lp = decoding_log_probs(z, **kw)
    probs = np.asarray(jnp.exp(lp), np.float64)
    assert 0 < (probs == 0).sum() < 7  # the transform removed some tokens, not all
    keys = jax.random.split(jax.random.key(0), n)
    tokens = jax.vmap(lambda k: jax.random.categorical(k, lp))(keys)
    _frequencies_match(tokens, probs, n)


def test_generate_entmax_frequencies_with_per_row_keys(lm):
    n, T = 6000, 2.0
    out = S.generate([np.array([5, 6])] * n, model=lm, key=jax.random.split(jax.random.key(2), n), max_new_tokens=1,
                     temperature=T, entmax_alpha=1.5, eos_token_id=None, return_logits=True)
    probs = np.asarray(entmax(jnp.asarray(out.logits[0, 0]) / T, 1.5), np.float64)
    np.testing.assert_allclose(out.logits[:, 0], np.broadcast_to(out.logits[0, 0], out.logits[:, 0].shape),
                               atol=1e-5)
    assert 1 < (probs > 0).sum() < probs.size
    _frequencies_match(out.tokens[:, 0], probs, n)


def test_typical_and_entmax_generate_reproducible_no_retrace(lm):
    kw = dict(max_new_tokens=5, eos_token_id=None, return_logits=True)
    for method in (dict(typical_p=0.8), dict(entmax_alpha=1.5, temperature=0.9)):
        a = S.generate(PROMPTS, model=lm, key=jax.random.key(4), **method, **kw)
        b = S.generate(PROMPTS, model=lm, key=jax.random.key(4), **method, **kw)
        c = S.generate(PROMPTS, model=lm, key=jax.random.key(5), **method, **kw)
        np.testing.assert_array_equal(a.tokens, b.tokens)
        assert not np.array_equal(a.tokens, c.tokens)
        lp = np.asarray(decoding_log_probs(jnp.asarray(a.logits), **method))
        assert np.isfinite(np.take_along_axis(lp, a.tokens[..., None], -1)).all()  # drawn on the support
    run = S._JITS[lm.model]
    n = run._cache_size()
    S.generate(PROMPTS, model=lm, key=jax.random.key(4), typical_p=0.3, **kw)
    S.generate(PROMPTS, model=lm, key=jax.random.key(4), entmax_alpha=2.0, temperature=1.1, **kw)
    assert run._cache_size() == n


def test_per_row_keys_make_rows_independent_of_their_batch(lm):
    keys = jax.random.split(jax.random.key(9), 3)
    kw = dict(max_new_tokens=6, eos_token_id=None, top_k=20, temperature=1.3)
    batch = S.generate(PROMPTS, model=lm, key=keys, **kw)
    alone = S.generate([PROMPTS[1]], model=lm, key=keys[1:2], **kw)
    other = np.array([3, 1, 4, 1, 5, 9])
    k_other = jax.random.fold_in(jax.random.key(9), 99)
    mixed = S.generate([other, PROMPTS[1], PROMPTS[0], PROMPTS[2]], model=lm,  # raw uint32[B, 2] keys
                       key=jax.random.key_data(jnp.stack([k_other, keys[1], keys[0], keys[2]])), **kw)
    np.testing.assert_array_equal(alone.tokens[0], batch.tokens[1])
    np.testing.assert_array_equal(mixed.tokens[1:], batch.tokens[[1, 0, 2]])
    # another key gives another row
    assert not np.array_equal(alone.tokens, S.generate([PROMPTS[1]], model=lm, key=keys[:1], **kw).tokens)


def test_mesh_of_one_device_equals_plain_run(lm):
    from jaxmetrics.sharding import make_mesh

    keys = jax.random.split(jax.random.key(3), 3)
    kw = dict(max_new_tokens=4, eos_token_id=None, typical_p=0.9)
    a = S.generate(PROMPTS, model=lm, key=keys, **kw)
    b = S.generate(PROMPTS, model=lm, key=keys, mesh=make_mesh(), **kw)
    assert isinstance(b.tokens, np.ndarray) and b.tokens.shape == (3, 4)
    np.testing.assert_array_equal(a.tokens, b.tokens)


def test_bad_decoding_arguments(lm):
    from jaxmetrics.sharding import make_mesh

    key = jax.random.key(0)
    kw = dict(model=lm, max_new_tokens=2)
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="^typical_p"):
            S.generate(PROMPTS, key=key, typical_p=bad, **kw)
    for bad in (0.5, float("nan"), -2.0):
        with pytest.raises(ValueError, match="^entmax_alpha"):
            S.generate(PROMPTS, key=key, entmax_alpha=bad, **kw)
    for other in (dict(top_k=5), dict(top_p=0.9), dict(typical_p=0.9)):
        with pytest.raises(ValueError, match="^entmax_alpha"):
            S.generate(PROMPTS, key=key, entmax_alpha=1.5, **other, **kw)
    with pytest.raises(ValueError, match="^key"):
        S.generate(PROMPTS, key=jax.random.split(key, 2), **kw)  # 2 keys for 3 prompts
    with pytest.raises(ValueError, match="^key"):
        S.generate(PROMPTS, key=jax.random.split(key, (3, 2)), **kw)
    with pytest.raises(ValueError, match="^key"):
        S.generate(PROMPTS, key=key, mesh=make_mesh(), **kw)  # sampling on a mesh needs per-row keys
    with pytest.raises(TypeError, match="^mesh"):
        S.generate(PROMPTS, key=jax.random.split(key, 3), mesh="data", **kw)
