"""Shared by the language-model tests: a tiny random GPT-2 with a peaked next-token distribution."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def peaked_gpt2(request, tmp_path_factory):
    """``(model, torch_model, path)``: a tiny random GPT-2 with ``request.module.CTX`` positions
    whose weights are re-drawn at a larger scale (so the distribution is far from uniform), saved
    with ``save_pretrained`` and loaded back by jaxmetrics and by transformers."""
    torch = pytest.importorskip("torch")
    from transformers import GPT2LMHeadModel

    from jaxmetrics.models import load_model
    from jaxmetrics.testing import tiny_checkpoint

    path, tm = tiny_checkpoint("gpt2", tmp_path_factory.mktemp("peaked_gpt2"), max_positions=request.module.CTX,
                               return_torch=True)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in tm.named_parameters():
            if "ln" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
    tm.save_pretrained(path)
    return load_model(path), GPT2LMHeadModel.from_pretrained(path).eval(), path
