"""Decoding-transform scores of reference text: pipeline == kernels on transformers logits."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from jaxmetrics.lm import lm_scores
from jaxmetrics.lm.scores import decoding_scores
from jaxmetrics.models import load_model
from jaxmetrics.testing import tiny_checkpoint


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    path, tm = tiny_checkpoint("gpt2", tmp_path_factory.mktemp("gpt2sc"), max_positions=32, return_torch=True)
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for name, p in tm.named_parameters():
            p.copy_((1.0 if ("ln" in name and name.endswith("weight")) else 0.0) + 0.3 * torch.randn(p.shape, generator=g))
    tm.save_pretrained(path)
    from transformers import GPT2LMHeadModel

    return load_model(path), GPT2LMHeadModel.from_pretrained(path).eval()


def _reference(tm, docs, **kw):
    logits, targets = [], []
    for d in docs:
        with torch.no_grad():
            z = tm(torch.tensor(d)[None]).logits[0, :-1].double().numpy()
        logits.append(z)
        targets.append(d[1:])
    return lm_scores(np.concatenate(logits)[None], np.concatenate(targets)[None], **kw)


@pytest.mark.parametrize("kw", [dict(), dict(temperature=0.8, top_k=5), dict(top_p=0.7, temperature=1.2)])
def test_pipeline_matches_kernels_on_torch_logits(models, kw):
    lm, tm = models
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 200, size=n) for n in (5, 32, 40, 2)]  # 40 is truncated to 32
    out = decoding_scores(docs, model=lm, epsilon=[0.0, 1e-3, 0.1], max_length=None, batch_size=3, **kw)
    trunc = [d[:32] for d in docs]
    assert out.num_tokens == sum(d.size - 1 for d in trunc)
    for i, e in enumerate([0.0, 1e-3, 0.1]):
        ref = _reference(tm, trunc, epsilon=e, **kw)
        assert out.epsilon_perplexity[i] == pytest.approx(ref.epsilon_perplexity, rel=1e-4)
    ref = _reference(tm, trunc, epsilon=0.0, **kw)
    assert out.sparsemax_score == pytest.approx(ref.sparsemax_score, rel=1e-4)
    assert out.js == pytest.approx(ref.js, rel=1e-4)
    if np.isfinite(ref.perplexity):
        assert out.perplexity == pytest.approx(ref.perplexity, rel=1e-4)
        assert out.num_filtered == 0
    else:
        assert out.perplexity == np.inf and out.num_filtered > 0


def test_bad_input(models):
    lm, _ = models
    docs = [np.arange(5), np.arange(6)]
    with pytest.raises(ValueError, match="^texts"):
        decoding_scores([np.arange(5), np.array([1])], model=lm)
    with pytest.raises(ValueError, match="^epsilon"):
        decoding_scores(docs, model=lm, epsilon=-1.0)
    with pytest.raises(ValueError, match="^top_p"):
        decoding_scores(docs, model=lm, top_p=2.0)
    with pytest.raises(ValueError, match="^top_k"):
        decoding_scores(docs, model=lm, top_k=10**6)
    with pytest.raises(ValueError, match="^temperature"):
        decoding_scores(docs, model=lm, temperature=0)
