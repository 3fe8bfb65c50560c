"""Centering definitions, the text pipeline (wiring, defaults, self-similarity) and the CLI."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.similarity import (PRF, SimilarityResult, SimilaritySettings, bertscore_scores,
                                   center_embeddings, compute_similarity, default_layer, default_temperature,
                                   similarity_scores)


def _batch(rng, n=7, l=5, d=4):
    emb = rng.standard_normal((n, l, d)) + 3.0  # anisotropic: a common offset
    lens = rng.integers(1, l + 1, size=n)
    mask = np.arange(l)[None] < lens[:, None]
    return emb, mask


def test_batch_centering_mean_zero_per_batch(rng):
    emb, mask = _batch(rng)
    v = np.asarray(center_embeddings(emb, mask, centering="batch", center_batch_size=3, normalize=False))
    for s in range(0, 7, 3):
        tok = v[s:s + 3][mask[s:s + 3]]
        np.testing.assert_allclose(tok.mean(axis=0), 0.0, atol=1e-5)
    assert np.all(v[~mask] == 0)
    # a batch covering everything is corpus centering
    a = center_embeddings(emb, mask, centering="batch", center_batch_size=100)
    b = center_embeddings(emb, mask, centering="corpus")
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)


def test_sentence_and_dimension_centering(rng):
    emb, mask = _batch(rng)
    v = np.asarray(center_embeddings(emb, mask, centering="sentence", normalize=False))
    for i in range(7):
        np.testing.assert_allclose(v[i][mask[i]].mean(0), 0.0, atol=1e-5)
    u = np.asarray(center_embeddings(emb, mask, centering="dimension"))
    np.testing.assert_allclose(u[mask].mean(-1), 0.0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(u[mask], axis=-1), 1.0, atol=1e-5)


def test_centered_cosine_is_pearson_correlation(x64, rng):
    emb, mask = _batch(rng)
    w = emb[mask]  # [tokens, D]
    # corpus-mean centering: cosine between coordinates (over the corpus of tokens) is the
    # Pearson correlation of those coordinates; per-vector the paper's statement holds with
    # the corpus mean as the expectation.
    v = np.asarray(center_embeddings(emb, mask, centering="corpus", normalize=False))[mask]
    cos = (v.T @ v) / np.outer(np.linalg.norm(v, axis=0), np.linalg.norm(v, axis=0))
    np.testing.assert_allclose(cos, np.corrcoef(w.T), atol=1e-10)
    # dimension-mean centering + L2 normalisation: the cosine of two token vectors is the
    # Pearson correlation of their coordinates.
    u = np.asarray(center_embeddings(emb, mask, centering="dimension"))[mask]
    np.testing.assert_allclose(u[0] @ u[1], np.corrcoef(w[0], w[1])[0, 1], atol=1e-10)


def test_single_token_batch_is_zero_not_nan():
    emb = np.ones((1, 3, 4))
    mask = np.array([[True, False, False]])
    v = np.asarray(center_embeddings(emb, mask, centering="batch"))
    assert np.all(v == 0) and np.all(np.isfinite(v))


def test_defaults():
    assert [default_layer(n) for n in (12, 24, 6, 4)] == [10, 19, 6, 4]
    assert default_temperature("twmd", "batch") == 0.10
    assert default_temperature("trwmd", "corpus") == 0.15
    assert default_temperature("trwmd_lse", "none") == 0.02
    assert default_temperature("bertscore", "batch") is None


CANDS = ["the cat sat on the mat", "it rains", "we bought apples at the market today",
         "hello there", "dogs bark at night"]
REFS = ["a cat was sitting on a mat", "it is raining", "apples were bought at the market",
        "hi", "the dog barks loudly in the night"]


def test_pipeline_equals_manual_composition(minilm):
    from jaxmetrics.models import token_embeddings

    got = compute_similarity(references=REFS, candidates=CANDS, model=minilm,
                             settings=SimilaritySettings(metric="twmd", num_iterations=2, center_batch_size=2,
                                                         pair_chunk=2))
    assert isinstance(got, SimilarityResult)
    assert got.layer == 6 and got.temperature == 0.10
    c = token_embeddings(CANDS, model=minilm, layer=6, progress=False)
    r = token_embeddings(REFS, model=minilm, layer=6, progress=False)
    cm, rm = c.tokens_mask & ~c.special_mask, r.tokens_mask & ~r.special_mask
    xc = center_embeddings(c.embeddings, cm, centering="batch", center_batch_size=2)
    yc = center_embeddings(r.embeddings, rm, centering="batch", center_batch_size=2)
    want = similarity_scores(candidates=xc, references=yc, candidates_mask=cm, references_mask=rm,
                             metric="twmd", temperature=0.1, num_iterations=2)
    for g, w in zip((got.precision, got.recall, got.f1), want):
        np.testing.assert_allclose(g, np.asarray(w), atol=1e-5)


@pytest.mark.parametrize("centering", ["none", "dimension", "sentence", "corpus", "batch"])
def test_pipeline_chunks_in_length_order_equal_input_order_composition(minilm, centering):
    """The pipeline scores pairs longest first, from unpadded token vectors, with each pair's
    centering mean fixed beforehand: the scores are those of centering the padded arrays in
    input order and scoring every pair at once (a repeated text included)."""
    from jaxmetrics.models import token_embeddings

    cands, refs = CANDS + [CANDS[0]], REFS + [REFS[2]]
    got = compute_similarity(references=refs, candidates=cands, model=minilm,
                             settings=SimilaritySettings(metric="bertscore", centering=centering,
                                                         center_batch_size=2, pair_chunk=2))
    c = token_embeddings(cands, model=minilm, layer=6, progress=False)
    r = token_embeddings(refs, model=minilm, layer=6, progress=False)
    cm, rm = c.tokens_mask & ~c.special_mask, r.tokens_mask & ~r.special_mask
    xc = center_embeddings(c.embeddings, cm, centering=centering, center_batch_size=2)
    yc = center_embeddings(r.embeddings, rm, centering=centering, center_batch_size=2)
    want = bertscore_scores(candidates=xc, references=yc, candidates_mask=cm, references_mask=rm)
    for g, w in zip((got.precision, got.recall, got.f1), want):
        np.testing.assert_allclose(g, np.asarray(w), atol=1e-5)


def test_pipeline_self_similarity_is_one(minilm):
    for metric in ("twmd", "trwmd_lse", "cka", "wmd"):
        out = compute_similarity(references=CANDS, candidates=CANDS, model=minilm, metric=metric)
        np.testing.assert_allclose(out.f1, 1.0, atol=1e-5)
    m = out.mean()
    assert isinstance(m, PRF) and all(isinstance(v, float) for v in m)
    assert m.f1 == pytest.approx(float(np.mean(out.f1)))
    assert repr(out) == ("SimilarityResult(precision=f32[5], recall=f32[5], f1=f32[5], metric='wmd', "
                         "layer=6, centering='batch', temperature=None, centering_batches='consecutive')")
    assert out.to_dict()["metric"] == "wmd" and len(out.to_dict()["f1"]) == 5


def test_pipeline_bad_input(minilm):
    with pytest.raises(ValueError, match="^references"):
        compute_similarity(references=REFS[:2], candidates=CANDS, model=minilm)
    with pytest.raises(ValueError, match="^temperature"):
        compute_similarity(references=REFS, candidates=CANDS, model=minilm, temperature=0.0)
    with pytest.raises(ValueError, match="^metric"):
        compute_similarity(references=REFS, candidates=CANDS, model=minilm, metric="bleu")
    with pytest.raises(ValueError, match="^candidates: all 2 texts are empty"):   # one empty one scores 0
        compute_similarity(references=["a", "b"], candidates=["", "   "], model=minilm)
    with pytest.raises(ValueError, match="^centering"):
        compute_similarity(references=REFS, candidates=CANDS, model=minilm, centering="global")
    with pytest.raises(TypeError, match="^model"):
        compute_similarity(references=REFS, candidates=CANDS, model=3)
    with pytest.raises(TypeError):  # the two sets are keyword-only
        compute_similarity(REFS, CANDS, model=minilm)


def test_cli_writes_scores_and_mean(minilm_dir, tmp_path, capsys):
    from jaxmetrics.cli import main

    c, r, o = tmp_path / "c.txt", tmp_path / "r.txt", tmp_path / "out.csv"
    c.write_text("\n".join(CANDS[:3]) + "\n")
    r.write_text("\n".join(REFS[:3]) + "\n")
    j = tmp_path / "out.json"
    rc = main(["similarity", "--references", str(r), "--candidates", str(c), "--metric", "twmd",
               "--num-iterations", "2", "--model", minilm_dir, "--csv", str(o), "--json", str(j)])
    assert rc == 0
    lines = o.read_text().strip().split("\n")
    assert lines[0] == "index,precision,recall,f1" and len(lines) == 4
    f1 = np.array([float(x.split(",")[3]) for x in lines[1:]])
    printed = capsys.readouterr().out
    assert f"F1={f1.mean():.6f}"[:-1] in printed  # corpus mean of the per-pair values
    import json

    res = json.loads(j.read_text())
    assert res["metric"] == "twmd" and res["mean"]["f1"] == pytest.approx(f1.mean(), abs=1e-6)
    assert res["f1"] == pytest.approx(f1.tolist(), abs=1e-6)
    # the same pairs through the Python API
    want = compute_similarity(references=REFS[:3], candidates=CANDS[:3], model=minilm_dir,
                              metric="twmd", num_iterations=2)
    np.testing.assert_allclose(f1, want.f1, atol=1e-6)
    assert main(["similarity", "--references", str(tmp_path / "missing.txt"), "--candidates", str(c),
                 "--model", minilm_dir]) == 2
