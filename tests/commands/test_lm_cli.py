"""``jaxmetrics perplexity`` command line."""
from __future__ import annotations

import json

import pytest

from jaxmetrics.cli import main
from jaxmetrics.lm import perplexity
from jaxmetrics.models import load_model
from jaxmetrics.testing import tiny_checkpoint

TEXT = "The quick brown fox jumps over the lazy dog.\nTo be, or not to be, that is the question.\n" * 4


@pytest.fixture(scope="module")
def ckpt(tiny_checkpoint_dir):
    return tiny_checkpoint_dir("gpt2", max_positions=32)


def test_cli_prints_perplexity_matching_api(ckpt, tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT)
    out_json = tmp_path / "r.json"
    rc = main(["perplexity", str(corpus), "--model", ckpt, "--stride", "8", "--max-length", "16",
               "--batch-size", "4", "--json", str(out_json)])
    assert rc == 0
    printed = capsys.readouterr().out
    for word in ("perplexity", "nll", "tokens", "throughput"):
        assert word in printed
    lm = load_model(ckpt)
    ref = perplexity(TEXT, model=lm, max_length=16, stride=8, batch_size=4)
    data = json.loads(out_json.read_text())
    assert data["perplexity"] == pytest.approx(ref.perplexity, rel=1e-6)
    assert data["num_tokens"] == ref.num_tokens
    assert f"{ref.perplexity:.4f}" in printed
    rc = main(["perplexity", str(corpus), "--model", ckpt, "--stride", "8", "--per-line", "--no-progress",
               "--reduction", "sequence"])
    assert rc == 0
    assert "8 document(s)" in capsys.readouterr().out


def test_cli_errors(ckpt, tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    assert main(["perplexity", str(empty), "--model", ckpt]) == 2
    assert "corpus" in capsys.readouterr().err
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT)
    assert main(["perplexity", str(corpus), "--model", ckpt, "--stride", "40", "--max-length", "16"]) == 2
    assert "stride" in capsys.readouterr().err
    assert main(["perplexity", str(corpus), "--model", ckpt, "--stride", "0"]) == 2
    assert main(["perplexity", str(tmp_path / "missing.txt"), "--model", ckpt]) == 2
    bert = tiny_checkpoint("bert", tmp_path / "bert")
    assert main(["perplexity", str(corpus), "--model", bert, "--stride", "8"]) == 2
    assert "causal" in capsys.readouterr().err
