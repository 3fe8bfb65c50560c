"""Mark-Evaluate from text with the real all-MiniLM-L6-v2 encoder, and the CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest

from jaxmetrics.cli import main
from jaxmetrics.mark_evaluate import MarkEvaluateResult, compute_mark_evaluate, embed_texts, mark_evaluate_scores

REFS = [
    "The cat sat on the warm mat.",
    "A dog barked at the mailman.",
    "Rain fell over the quiet town.",
    "She cooked pasta for dinner.",
    "The train left the station late.",
    "Children played in the park.",
]
CANDS = [
    "A cat slept on the rug.",
    "The dog chased the postman.",
    "It rained in the small village.",
    "He made spaghetti tonight.",
    "Stock prices fell sharply today.",
    "Quantum computers use qubits.",
]


@pytest.fixture(scope="module")
def lm(minilm):
    return minilm


def test_sentence_mode_matches_kernel_on_embeddings(lm):
    from jaxmetrics.models import sentence_embeddings

    out = compute_mark_evaluate(references=REFS, candidates=CANDS, model=lm, k=2)
    assert isinstance(out, MarkEvaluateResult)
    e_r = sentence_embeddings(REFS, model=lm, progress=False)
    e_c = sentence_embeddings(CANDS, model=lm, progress=False)
    want = mark_evaluate_scores(references=e_r, candidates=e_c, k=2)
    got = out.to_dict()
    for name, v in want.to_dict().items():
        assert got[name] == pytest.approx(v, abs=1e-6), name
        assert isinstance(got[name], float)
    assert out.num_references == 6 and out.num_candidates == 6
    assert 0.0 <= out.impar_precision <= 1.0 and out.fid > 0.0
    same = compute_mark_evaluate(references=REFS, candidates=REFS, model=lm, k=2, baselines=False)
    assert (same.petersen, same.capture, same.schnabel_quality, same.schnabel_diversity) == (
        1.0, 1.0, 1.0, 1.0)
    assert (same.impar_precision, same.impar_recall, same.fid) == (None, None, None)


def test_token_mode_uses_every_token_of_last_five_layers(lm, monkeypatch):
    from jaxmetrics.models import encoding, token_embeddings

    texts = REFS[:3]
    calls = []
    real = encoding.run_encoder
    monkeypatch.setattr(encoding, "run_encoder", lambda *a, **k: calls.append(k["layers"]) or real(*a, **k))
    x = embed_texts(texts, model=lm, token_level=True)
    assert calls == [(2, 3, 4, 5, 6)]                  # the last five of 6 layers, one forward pass
    monkeypatch.undo()
    rows = []
    for layer in (-5, -4, -3, -2, -1):
        t = token_embeddings(texts, model=lm, layer=layer, progress=False)
        mask, special = np.asarray(t.tokens_mask), np.asarray(t.special_mask)
        rows.append(np.asarray(t.embeddings)[mask & ~special])
    want = np.concatenate(rows)
    assert x.shape == want.shape and x.shape[0] == 5 * int((mask & ~special).sum())
    np.testing.assert_allclose(x, want, atol=1e-6)
    out = compute_mark_evaluate(references=texts, candidates=texts, model=lm, k=3, token_level=True,
                                baselines=False)
    assert out.petersen == 1.0 and out.num_references == x.shape[0]


def test_cli_mark_evaluate(tmp_path, capsys, minilm_dir):
    r, c = tmp_path / "refs.txt", tmp_path / "cands.txt"
    r.write_text("\n".join(REFS) + "\n")
    c.write_text("\n".join(CANDS) + "\n")
    files = ["--references", str(r), "--candidates", str(c), "--model", minilm_dir]
    assert main(["mark-evaluate", *files, "--k", "2", "--no-baselines"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"petersen", "schnabel_quality", "schnabel_diversity", "capture",
                        "num_references", "num_candidates"}
    assert all(0.0 <= out[k] <= 1.0 for k in ("petersen", "capture"))
    assert out["fid"] is None and out["num_references"] == 6
    # k too large for 6 sentences -> a clean error naming k
    assert main(["mark-evaluate", *files, "--k", "6"]) == 2
    assert "k:" in capsys.readouterr().err
    # the files are named options, never positional
    with pytest.raises(SystemExit):
        main(["mark-evaluate", str(r), str(c), "--model", minilm_dir])


def test_pipeline_bad_input(lm):
    with pytest.raises(ValueError, match="^candidates:"):
        compute_mark_evaluate(references=REFS, candidates=[], model=lm)
    with pytest.raises(TypeError, match="^references:"):
        compute_mark_evaluate(references="just one string", candidates=CANDS, model=lm)
    with pytest.raises(TypeError, match="^model:"):
        compute_mark_evaluate(references=REFS, candidates=CANDS, model=3)
    with pytest.raises(ValueError, match="^occasions:"):
        compute_mark_evaluate(references=REFS, candidates=CANDS, model=lm, occasions="bogus")
    with pytest.raises(ValueError, match="^layers: empty"):
        embed_texts(REFS, model=lm, token_level=True, layers=())
    with pytest.raises(ValueError, match="^layers: must be in"):
        embed_texts(REFS, model=lm, token_level=True, layers=(lm.num_layers + 1,))


def test_sentence_mode_scores_exactly_the_models_sentence_embeddings(lm, monkeypatch):
    """compute_mark_evaluate's vectors are sentence_embeddings(...) of the same texts (real
    demo text): recorded at the models' function and at the kernel's input, compared exactly."""
    import jaxmetrics.mark_evaluate.pipeline as pipeline
    import jaxmetrics.models as models
    from jaxmetrics.data import load_shakespeare

    speeches = [s[:300] for s in load_shakespeare("heldout", limit=16, min_words=10)]
    refs, cands = speeches[:8], speeches[8:]
    want_r = np.asarray(models.sentence_embeddings(refs, model=lm, progress=False))
    want_c = np.asarray(models.sentence_embeddings(cands, model=lm, progress=False))
    calls, kernel_inputs = [], []
    real_embed, real_scores = models.sentence_embeddings, pipeline.mark_evaluate_scores

    def embed(texts, **kw):
        calls.append(list(texts))
        return real_embed(texts, **kw)

    def scores(**kw):
        kernel_inputs.append((np.asarray(kw["references"]), np.asarray(kw["candidates"])))
        return real_scores(**kw)

    monkeypatch.setattr(models, "sentence_embeddings", embed)
    monkeypatch.setattr(pipeline, "mark_evaluate_scores", scores)
    out = compute_mark_evaluate(references=refs, candidates=cands, model=lm, k=2, baselines=False)
    assert calls == [refs, cands]
    (got_r, got_c), = kernel_inputs
    np.testing.assert_array_equal(got_r, want_r)
    np.testing.assert_array_equal(got_c, want_c)
    np.testing.assert_array_equal(embed_texts(refs, model=lm), want_r)
    direct = real_scores(references=want_r, candidates=want_c, k=2)
    assert out.petersen == float(direct.petersen) and out.capture == float(direct.capture)
