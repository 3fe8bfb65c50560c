"""Which vector a text becomes in compute_mauve: mauve-text's last token for a featurizer named by
mauve-text's featurize_model_name (every model, encoders included), the library's pooling table
(mean for a sentence encoder) for model= -- the same as the command line's --model, so Python and
the CLI give one number --, any pooling one argument away, and the pooling recorded in the result.
Real text: all-MiniLM-L6-v2 on sentences of the bundled held-out Shakespeare vs their
word-shuffled versions."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from jaxmetrics.mauve import compute_mauve, compute_mauve_seeds
from jaxmetrics.mauve.pipeline.inputs import get_features
from jaxmetrics.models import encode

N, MAX_LEN = 24, 64


@pytest.fixture(scope="module")
def texts():
    from jaxmetrics.data import load_shakespeare

    sents = [s for sp in load_shakespeare("heldout") for s in re.split(r"(?<=[.!?])\s+", sp)
             if 8 <= len(s.split()) <= 30]
    rng = np.random.default_rng(3)
    idx = rng.choice(len(sents), 2 * N, replace=False)
    p = [sents[i] for i in idx[:N]]
    q = [" ".join(rng.permutation(sents[i].split())) for i in idx[N:]]  # other sentences, words shuffled
    return p, q


def _pooled(texts, lm, pooling):
    return encode(texts, model=lm, pooling=pooling, max_length=MAX_LEN, progress=False).pooled[0]


def test_mauve_text_call_featurizes_with_the_last_token(texts, minilm, minilm_dir):
    """compute_mauve(p_text=, q_text=, featurize_model_name=<encoder>) is mauve-text's call: the
    final hidden state at the last token ([SEP]), not the mean over tokens."""
    p, q = texts
    last_p, last_q = _pooled(p, minilm, "last"), _pooled(q, minilm, "last")
    got = get_features(None, None, None, None, p, q, model=None, featurize_model_name=minilm_dir,
                       max_length=MAX_LEN, batch_size=8, verbose=False)
    assert got.pooling == "last" and (got.p_source, got.q_source) == ("p_text", "q_text")
    np.testing.assert_allclose(got.p_features, last_p, atol=1e-5)
    np.testing.assert_allclose(got.q_features, last_q, atol=1e-5)
    assert not np.allclose(got.p_features, _pooled(p, minilm, "mean"), atol=1e-2)
    out = compute_mauve(p_text=p, q_text=q, featurize_model_name=minilm_dir, max_text_length=MAX_LEN)
    want = compute_mauve(p_features=last_p, q_features=last_q)
    assert out.pooling == "last" and want.pooling is None
    assert out.mauve == pytest.approx(want.mauve, abs=1e-9)
    np.testing.assert_array_equal(out.p_counts, want.p_counts)
    # the library's model= follows the pooling table instead (mean for an encoder); pooling='last' asks for mauve-text's
    assert compute_mauve(p_text=p, q_text=q, model=minilm, max_text_length=MAX_LEN).pooling == "mean"
    out2 = compute_mauve(p_text=p, q_text=q, model=minilm, max_text_length=MAX_LEN, pooling="last")
    assert out2.pooling == "last" and out2.mauve == pytest.approx(want.mauve, abs=1e-9)


def test_pooling_mean_is_one_argument_away_and_recorded(texts, minilm):
    p, q = texts
    mean_p, mean_q = _pooled(p, minilm, "mean"), _pooled(q, minilm, "mean")
    for pooling in ("mean", "auto", None):  # auto, and model='s default: mean for an encoder
        out = compute_mauve(p_text=p, q_text=q, model=minilm, max_text_length=MAX_LEN, pooling=pooling)
        want = compute_mauve(p_features=mean_p, q_features=mean_q)
        assert out.pooling == "mean" and out.mauve == pytest.approx(want.mauve, abs=1e-9)
        np.testing.assert_array_equal(out.q_counts, want.q_counts)
    seeds = compute_mauve_seeds(references=p, candidates=q, model=minilm, max_length=MAX_LEN, seeds=(1, 2),
                                pooling="mean")
    assert seeds.pooling == "mean" and "pooling='mean'" in repr(seeds)
    default = compute_mauve_seeds(references=p, candidates=q, model=minilm, max_length=MAX_LEN, seeds=(1, 2))
    assert default.pooling == "mean" and np.array_equal(default.mauve, seeds.mauve)
    with pytest.raises(ValueError, match="^pooling"):
        compute_mauve(p_text=p, q_text=q, model=minilm, pooling="max")


def test_python_and_cli_give_one_number_for_one_model(texts, minilm, minilm_dir, tmp_path, capsys):
    """The same texts and the same encoder through compute_mauve(model=...) and `jaxmetrics mauve
    --model` (both with their own defaults otherwise) give the same MAUVE, pooling and signature; the
    CLI prints the pooling and the table it came from."""
    from jaxmetrics.cli import main

    p, q = texts
    ref, cand, out = tmp_path / "human.txt", tmp_path / "model.txt", tmp_path / "out.json"
    ref.write_text("\n".join(p) + "\n", encoding="utf-8")
    cand.write_text("\n".join(q) + "\n", encoding="utf-8")
    py = compute_mauve(p_text=p, q_text=q, model=minilm, max_text_length=MAX_LEN)
    assert main(["mauve", "--references", str(ref), "--candidates", str(cand), "--model", minilm_dir,
                 "--max-length", str(MAX_LEN), "--quiet", "--json", str(out)]) == 0
    printed = capsys.readouterr()
    assert "mean pooling (--pooling auto)" in printed.err and "mean for a sentence encoder" in printed.err
    cli = json.loads(out.read_text())
    assert py.pooling == cli["settings"]["pooling"] == "mean"
    assert cli["mauve"] == pytest.approx(py.mauve, abs=1e-6)
    assert cli["mauve_star"] == pytest.approx(py.mauve_star, abs=1e-6)
    assert cli["signature"] == py.signature and "pooling:mean" in py.signature
    # mauve-text's own argument keeps mauve-text's featurization, and says so in its signature
    mt = compute_mauve(p_text=p, q_text=q, featurize_model_name=minilm_dir, max_text_length=MAX_LEN)
    assert mt.pooling == "last" and "pooling:last" in mt.signature and mt.signature != py.signature


def test_last_token_features_equal_mauve_texts(texts, minilm_dir, tmp_path):
    """mauve-text featurizes a model whose name contains 'bert' with its last token; on the
    same texts its features equal those compute_mauve uses."""
    pytest.importorskip("torch")
    pytest.importorskip("mauve")
    from mauve.compute_mauve import get_features_from_input

    p, _ = texts
    bert_named = tmp_path / "minilm-bert"  # mauve-text accepts only names with 'gpt2' or 'bert'
    os.symlink(minilm_dir, bert_named)
    ref = get_features_from_input(None, None, p[:8], str(bert_named), MAX_LEN, -1, name="p", batch_size=4)
    got = get_features(None, None, None, None, p[:8], p[:8], model=None, featurize_model_name=str(bert_named),
                       max_length=MAX_LEN, batch_size=8, verbose=False)
    np.testing.assert_allclose(got.p_features, np.asarray(ref), atol=1e-4)
