"""Sliding-window perplexity: parity with the Hugging Face doc's PyTorch loop on a tiny random GPT-2."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from jaxmetrics.testing import hf_doc_perplexity_loop

from jaxmetrics.lm import generation_perplexity
from jaxmetrics.lm import windows as P
from jaxmetrics.models import load_model
from jaxmetrics.testing import tiny_checkpoint

CTX = 32


# peaked_gpt2 (a tiny GPT-2 with CTX positions, loaded by both libraries): tests/lm/conftest.py


@pytest.fixture(scope="module")
def stream():
    return np.random.default_rng(0).integers(0, 200, size=151)


@pytest.mark.parametrize("stride", [CTX, CTX // 2, 5])
def test_parity_with_document_loop(peaked_gpt2, stream, stride):
    lm, ref, _ = peaked_gpt2
    for convention, exact in (("exact", True), ("document", False)):
        res = P.perplexity(stream, model=lm, max_length=CTX, stride=stride, batch_size=4, convention=convention)
        nll, n = hf_doc_perplexity_loop(ref, stream, CTX, stride, exact=exact)
        assert res.num_tokens == n
        assert res.nll == pytest.approx(nll, rel=1e-5)
        assert res.perplexity == pytest.approx(np.exp(nll / n), rel=1e-5)
    # exact: every token after the first, exactly once
    ex = P.perplexity(stream, model=lm, max_length=CTX, stride=stride, batch_size=4)
    assert ex.num_tokens == stream.size - 1
    if stride == CTX:  # the doc's layout never scores the first token of each window
        doc = P.perplexity(stream, model=lm, max_length=CTX, stride=stride, batch_size=4, convention="document")
        assert doc.num_tokens == stream.size - doc.num_windows


def test_definition_single_window_equals_full_forward(peaked_gpt2):
    """With max_length >= N every stride gives the plain autoregressive perplexity of one forward pass."""
    lm, ref, _ = peaked_gpt2
    ids = np.random.default_rng(3).integers(0, 200, size=CTX)
    with torch.no_grad():
        loss = float(ref(torch.tensor(ids)[None], labels=torch.tensor(ids)[None]).loss)
    for stride in (1, 7, CTX):
        res = P.perplexity(ids, model=lm, max_length=CTX, stride=stride, batch_size=2)
        assert res.num_tokens == CTX - 1
        assert res.perplexity == pytest.approx(np.exp(loss), rel=1e-5)


def test_documents_per_document_values_and_reductions(peaked_gpt2):
    lm, ref, _ = peaked_gpt2
    rng = np.random.default_rng(5)
    docs = [rng.integers(0, 200, size=n) for n in (2, 17, 70, 40)]
    res = P.perplexity(docs, model=lm, max_length=CTX, stride=8, batch_size=3)
    for i, d in enumerate(docs):
        nll, n = hf_doc_perplexity_loop(ref, d, CTX, 8, exact=True)
        assert res.doc_tokens[i] == n == d.size - 1
        assert res.doc_nll[i] == pytest.approx(nll, rel=1e-5)
    assert res.nll == pytest.approx(res.doc_nll.sum(), rel=1e-12)
    assert res.perplexity == pytest.approx(np.exp(res.doc_nll.sum() / res.doc_tokens.sum()), rel=1e-12)
    seq = P.perplexity(docs, model=lm, max_length=CTX, stride=8, batch_size=3, reduction="sequence")
    assert seq.perplexity == pytest.approx(np.mean(np.exp(res.doc_nll / res.doc_tokens)), rel=1e-12)
    # a 2-D array = rows are documents; same numbers as the list
    two = P.perplexity(np.stack([docs[2][:40], docs[3]]), model=lm, max_length=CTX, stride=8, batch_size=3)
    sep = P.perplexity([docs[2][:40], docs[3]], model=lm, max_length=CTX, stride=8, batch_size=3)
    np.testing.assert_allclose(two.doc_nll, sep.doc_nll, rtol=1e-12)


def test_batch_size_invariance_and_no_retrace(peaked_gpt2, stream):
    lm = peaked_gpt2[0]
    a = P.perplexity(stream, model=lm, max_length=CTX, stride=10, batch_size=1)
    b = P.perplexity(stream, model=lm, max_length=CTX, stride=10, batch_size=5)
    assert a.nll == pytest.approx(b.nll, rel=1e-6)
    run, _ = P._scorer(lm)
    n = run._cache_size()
    P.perplexity(stream[::-1].copy(), model=lm, max_length=CTX, stride=10, batch_size=5)
    assert run._cache_size() == n


def test_window_layout_counts():
    for n in (2, 5, 31, 32, 33, 100):
        for L in (2, 4, 32):
            for s in sorted({1, max(1, L // 2), L}):
                lay = P.window_layout([n], L, s)
                assert lay.doc_count.sum() == n - 1
                assert np.all(lay.length <= L) and np.all(lay.score_from >= 1)
                # each target scored exactly once
                tg = np.concatenate([np.arange(st + f, st + ln) for st, f, ln in
                                     zip(lay.start, lay.score_from, lay.length)])
                np.testing.assert_array_equal(np.sort(tg), np.arange(1, n))


def test_document_convention_final_single_label_window_is_not_nan(peaked_gpt2):
    lm = peaked_gpt2[0]
    ids = np.random.default_rng(1).integers(0, 200, size=CTX + 1)  # doc loop: last window has trg_len 1
    res = P.perplexity(ids, model=lm, max_length=CTX, stride=CTX, convention="document")
    assert np.isfinite(res.perplexity) and res.num_tokens == CTX - 1


def test_generation_perplexity_mauve_convention(peaked_gpt2):
    lm, ref, _ = peaked_gpt2
    rng = np.random.default_rng(2)
    gens = [rng.integers(1, 200, size=n) for n in (5, 12, 50)]
    eos = lm.tokenizer.eos_token_id
    gens_eos = [np.concatenate([g, [eos]]) for g in gens]
    nll, n_all = 0.0, 0
    for g in gens:
        g = g[:CTX]
        with torch.no_grad():
            loss = float(ref(torch.tensor(g)[None], labels=torch.tensor(g)[None]).loss)
        nll += loss * (g.size - 1)
        n_all += g.size
    val = generation_perplexity(gens_eos, model=lm, max_length=None, remove_ids=[eos])
    assert val.perplexity == pytest.approx(np.exp(nll / n_all), rel=1e-5)
    assert val.denominator == n_all and val.num_predicted == n_all - 3 and val.nll == pytest.approx(nll, rel=1e-5)
    ex = generation_perplexity(gens, model=lm, max_length=None, convention="exact")
    assert ex.perplexity == pytest.approx(np.exp(nll / (n_all - 3)), rel=1e-5)


def test_text_input_is_tokenized(peaked_gpt2):
    lm = peaked_gpt2[0]
    text = "The quick brown fox jumps over the lazy dog. " * 3
    ids = np.asarray(lm.tokenizer(text, add_special_tokens=False)["input_ids"])
    a = P.perplexity(text, model=lm, max_length=CTX, stride=8)
    b = P.perplexity(ids, model=lm, max_length=CTX, stride=8)
    assert a.nll == pytest.approx(b.nll, rel=1e-12) and a.num_tokens == ids.size - 1


def test_bad_input(peaked_gpt2, tmp_path):
    lm = peaked_gpt2[0]
    ids = np.arange(10)
    with pytest.raises(ValueError, match="^token_ids"):
        P.perplexity([np.arange(5), np.array([3])], model=lm, stride=4)
    with pytest.raises(ValueError, match="^token_ids"):
        P.perplexity([], model=lm, stride=4)
    with pytest.raises(ValueError, match="^token_ids"):
        P.perplexity(np.array([], dtype=int), model=lm, stride=4)
    with pytest.raises(ValueError, match="^token_ids"):
        P.perplexity(np.array([1, 5000]), model=lm, stride=4)
    with pytest.raises(TypeError, match="^token_ids"):
        P.perplexity(np.array([1.0, 2.0]), model=lm, stride=4)
    with pytest.raises(ValueError, match="^stride"):
        P.perplexity(ids, model=lm, max_length=CTX, stride=0)
    with pytest.raises(ValueError, match="^stride"):
        P.perplexity(ids, model=lm, max_length=CTX, stride=CTX + 1)
    with pytest.raises(ValueError, match="^max_length"):
        P.perplexity(ids, model=lm, max_length=CTX * 2, stride=4)
    with pytest.raises(ValueError, match="^reduction"):
        P.perplexity(ids, model=lm, max_length=CTX, stride=4, reduction="mean")
    with pytest.raises(TypeError, match="^model"):
        P.perplexity(ids, model=object(), max_length=CTX, stride=4)
    bert = load_model(tiny_checkpoint("bert", tmp_path / "bert"))
    with pytest.raises(ValueError, match="^model.*causal"):
        P.perplexity(ids, model=bert, stride=4)
