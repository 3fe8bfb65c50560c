"""BERTScore: parity with the bert_score package (MiniLM, idf off/on; the pipeline and the
``bert_score.score``-compatible ``bertscore``), its quirks in compat mode vs correct masking by
default, idf formula, baseline rescaling, bad input."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.similarity import (PRF, bertscore, bertscore_pair, bertscore_scores, idf_table,
                                   rescale_with_baseline)

CANDS = ["the cat sat on the mat", "a quick brown fox jumps over the lazy dog", "hello world",
         "it is raining today in the city", "we went to the market and bought some apples",
         "this is fine", "the weather is nice", "an unrelated sentence about quantum physics",
         "dogs bark", "the cat sat on the mat"]
REFS = ["a cat was sitting on a mat", "the fast brown fox leaped over a lazy dog", "hi there world",
        "today it rains in town", "we bought apples at the market", "everything is okay",
        "nice weather today", "a sentence on cooking pasta", "the dog is barking loudly", "cat"]


def _pair(x, y, mx, my, wx=None, wy=None, **kw):
    return bertscore_pair(candidate=x, reference=y, candidate_mask=mx, reference_mask=my,
                          candidate_weights=wx, reference_weights=wy, **kw)


def _scores(x, y, mx, my, **kw):
    return bertscore_scores(candidates=x, references=y, candidates_mask=mx, references_mask=my, **kw)


@pytest.mark.parametrize("idf", [False, True])
def test_matches_bert_score_package(minilm, minilm_dir, idf):
    bert_score = pytest.importorskip("bert_score")
    from jaxmetrics.similarity import compute_similarity

    # bert_score 0.3.13 runs offline on a local directory with transformers 5 (checked in
    # its source: AutoTokenizer/AutoModel.from_pretrained(model_type), num_layers truncates
    # encoder.layer); nthreads=0 avoids its multiprocessing pool for idf.
    want = bert_score.score(CANDS, REFS, model_type=minilm_dir, num_layers=6, idf=idf,
                            batch_size=4, nthreads=0, device="cpu")
    from jaxmetrics.similarity import SimilaritySettings

    compat = SimilaritySettings(layer=6, metric="bertscore", centering="none", idf=idf, bert_score_compat=True,
                                compat_batch_size=4)
    got = compute_similarity(references=REFS, candidates=CANDS, model=minilm, settings=compat)
    for w, g in zip(want, (got.precision, got.recall, got.f1)):
        np.testing.assert_allclose(g, w.numpy(), atol=1e-4, rtol=0)
    # the default (correct masking, special tokens dropped) is a different, defined number
    default = compute_similarity(references=REFS, candidates=CANDS, model=minilm, layer=6,
                                 metric="bertscore", centering="none", idf=idf)
    assert np.all(np.isfinite(default.f1)) and not np.allclose(default.f1, got.f1, atol=1e-4)


@pytest.mark.parametrize("idf", [False, True])
def test_bertscore_is_a_drop_in_for_bert_score_score(minilm, minilm_dir, idf):
    """The same call, argument for argument, gives bert_score's numbers (and unpacks alike)."""
    bert_score = pytest.importorskip("bert_score")
    kw = dict(model_type=minilm_dir, num_layers=6, idf=idf, batch_size=4, nthreads=0, device="cpu")
    want = bert_score.score(CANDS, REFS, **kw)
    P, R, F = bertscore(CANDS, REFS, **kw)
    for w, g in zip(want, (P, R, F)):
        np.testing.assert_allclose(g, w.numpy(), atol=1e-4, rtol=0)
    # model= (a loaded model) is the same encoder; positional arguments are bert_score's
    out = bertscore(CANDS, REFS, None, 6, False, idf, None, 4, model=minilm)
    assert isinstance(out, PRF)
    for w, g in zip(want, out):
        np.testing.assert_allclose(g, w.numpy(), atol=1e-4, rtol=0)


def test_bertscore_multiple_references_idf_dict_and_baseline(minilm, minilm_dir, tmp_path):
    bert_score = pytest.importorskip("bert_score")
    from collections import defaultdict

    refs = [[r, REFS[(i + 3) % len(REFS)]] for i, r in enumerate(REFS)]
    idf = defaultdict(lambda: 1.0, {101: 0.0, 102: 0.0, 1996: 0.5})  # [CLS], [SEP], "the"
    base = tmp_path / "baseline.tsv"
    base.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.{k}1,0.{k}2,0.{k}3\n" for k in range(7)))
    kw = dict(model_type=minilm_dir, num_layers=6, batch_size=3, nthreads=0, device="cpu",
              rescale_with_baseline=True, baseline_path=str(base))
    want = bert_score.score(CANDS, refs, idf=idf, lang="en", **kw)
    got = bertscore(CANDS, refs, idf=idf, **kw)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w.numpy(), atol=1e-4, rtol=0)


def test_bertscore_of_a_sentence_encoder_defaults_to_its_default_layer(minilm, tiny_checkpoint_dir):
    """``bertscore(cands, refs, model=<all-MiniLM-L6-v2>)`` -- the README's encoder -- runs: a
    sentence-transformers checkpoint without a bert_score-tuned layer gets the library's default
    layer (6 of 6), with the numbers of ``num_layers=6``; a plain encoder without a tuned layer is
    refused before any encoding, naming ``num_layers``."""
    from jaxmetrics.data import load_shakespeare
    from jaxmetrics.models import load_model

    lines = load_shakespeare("heldout", limit=8, min_words=8)
    cands, refs = lines[:4], lines[4:]
    got = bertscore(cands, refs, model=minilm)
    want = bertscore(cands, refs, model=minilm, num_layers=6)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-6, rtol=0)
    assert not np.allclose(got.f1, bertscore(cands, refs, model=minilm, num_layers=3).f1, atol=1e-3)
    tiny = load_model(tiny_checkpoint_dir("bert"))
    with pytest.raises(ValueError, match="^num_layers: bert_score has no default layer .*pass num_layers"):
        bertscore(cands, refs, model=tiny)


def test_bertscore_default_layers_and_bad_options(minilm, minilm_dir, tmp_path):
    from jaxmetrics.similarity.compat import _default_layer

    assert _default_layer("roberta-large") == 17
    assert _default_layer("FacebookAI/roberta-large") == 17
    assert _default_layer("/models/bert-base-uncased/") == 9
    assert _default_layer("microsoft/deberta-xlarge-mnli") == 40
    assert _default_layer("all-MiniLM-L6-v2") is None
    c, r = CANDS[:2], REFS[:2]
    with pytest.raises(ValueError, match="^model_type"):
        bertscore(c, r)
    with pytest.raises(ValueError, match="^lang"):
        bertscore(c, r, lang="de")
    with pytest.raises(ValueError, match="^all_layers"):
        bertscore(c, r, model=minilm, num_layers=6, all_layers=True)
    with pytest.raises(ValueError, match="^return_hash"):
        bertscore(c, r, model=minilm, num_layers=6, return_hash=True)
    with pytest.raises(ValueError, match="^baseline_path"):
        bertscore(c, r, model=minilm, num_layers=6, rescale_with_baseline=True)
    bad = tmp_path / "bad.csv"
    bad.write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n")
    with pytest.raises(ValueError, match="^baseline_path: .* no row for layer 6"):
        bertscore(c, r, model=minilm, num_layers=6, rescale_with_baseline=True, baseline_path=bad)
    with pytest.raises(ValueError, match="^refs"):
        bertscore(c, REFS[:3], model=minilm, num_layers=6)
    with pytest.raises(ValueError, match="^num_layers"):
        bertscore(c, r, model=minilm, num_layers=7)


def test_bertscore_signature_is_bert_score_score():
    import inspect

    bert_score = pytest.importorskip("bert_score")
    theirs = list(inspect.signature(bert_score.score).parameters.values())
    ours = list(inspect.signature(bertscore).parameters.values())
    assert [(p.name, p.kind, p.default) for p in ours[:len(theirs)]] == \
        [(p.name, p.kind, p.default) for p in theirs]
    kw_only = inspect.Parameter.KEYWORD_ONLY
    assert [(p.name, p.kind) for p in ours[len(theirs):]] == [("model", kw_only), ("max_length", kw_only),
                                                              ("dtype", kw_only)]


def _negative_case():
    # candidate token 0 is anti-aligned with every reference token
    x = jnp.array([[-1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    y = jnp.array([[1.0, 0.1], [1.0, -0.1], [9.0, 9.0]])
    return x, y


def test_compat_padding_scores_zero_quirk_vs_default():
    x, y = _negative_case()
    mx = jnp.array([True, True, False])
    my = jnp.array([True, True, False])  # the reference side holds padding
    yn = y[:2] / jnp.linalg.norm(y[:2], axis=1, keepdims=True)
    true_max0 = float(jnp.max(jnp.array([-1.0, 0.0]) @ yn.T))
    true_max1 = float(jnp.max(jnp.array([0.0, 1.0]) @ yn.T))
    assert true_max0 < 0
    default = _pair(x, y, mx, my)
    np.testing.assert_allclose(float(default.precision), (true_max0 + true_max1) / 2, atol=1e-6)
    compat = _pair(x, y, mx, my, bert_score_compat=True)
    np.testing.assert_allclose(float(compat.precision), (0.0 + true_max1) / 2, atol=1e-6)
    # without padding on the reference side, compat equals the default
    nopad = _pair(x, y, mx, my, bert_score_compat=True, reference_pad_zero=False)
    np.testing.assert_allclose(float(nopad.precision), float(default.precision), atol=1e-6)


def test_compat_special_tokens_match_with_zero_weight():
    x = jnp.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])   # [CLS], word, [SEP]
    y = jnp.array([[1.0, 0.0], [0.6, -0.8], [0.6, 0.8]])
    m = jnp.ones(3, bool)
    w = jnp.array([0.0, 1.0, 0.0])
    out = _pair(x, y, m, m, w, w, bert_score_compat=True)
    # the word token of x matches y's [SEP] (0.8); y's word token matches x's [CLS] (0.6)
    np.testing.assert_allclose(np.array([out.precision, out.recall]), [0.8, 0.6], atol=1e-6)


def test_idf_table_formula_and_weighted_definition():
    ids = np.array([[5, 7, 7, 0], [5, 8, 0, 0], [5, 9, 7, 0]])
    mask = ids > 0
    t = idf_table(ids, mask, 10)
    n = 3
    np.testing.assert_allclose(t[[5, 7, 8, 9, 1]], np.log((n + 1) / (np.array([3, 2, 1, 1, 0]) + 1)), rtol=1e-6)
    x = jnp.array([[1.0, 0.0], [0.0, 1.0]])
    y = jnp.array([[1.0, 0.0]])
    out = _pair(x, y, jnp.ones(2, bool), jnp.ones(1, bool), jnp.array([3.0, 1.0]), jnp.array([1.0]))
    np.testing.assert_allclose(float(out.precision), 0.75, atol=1e-6)  # (3*1 + 1*0)/4


def test_baseline_rescaling_and_batch_api():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 6)).astype(np.float32)
    y = rng.standard_normal((2, 5, 6)).astype(np.float32)
    m1, m2 = np.ones((2, 4), bool), np.ones((2, 5), bool)
    raw = _scores(x, y, m1, m2)
    b = [0.2, 0.3, 0.25]
    res = _scores(x, y, m1, m2, baseline=b)
    for k, (got, want) in enumerate(zip(res, raw)):
        np.testing.assert_allclose(np.array(got), (np.array(want) - b[k]) / (1 - b[k]), atol=1e-6)
    one = rescale_with_baseline(PRF(jnp.array(1.0), jnp.array(1.0), jnp.array(1.0)), b)
    np.testing.assert_allclose(np.array(list(one)), 1.0)


def test_bad_input():
    x = np.ones((1, 3, 4), np.float32)
    m = np.ones((1, 3), bool)
    with pytest.raises(ValueError, match="^baseline"):
        _scores(x, x, m, m, baseline=[0.1, 1.0, 0.2])
    with pytest.raises(ValueError, match="^references_mask"):
        _scores(x, x, m, np.zeros((1, 3), bool))
    bad = x.copy(); bad[0, 1, 1] = np.inf
    with pytest.raises(ValueError, match="^candidates"):
        _scores(bad, x, m, m)
    with pytest.raises(ValueError, match="^candidates_weights"):
        _scores(x, x, m, m, candidates_weights=-np.ones((1, 3)))
    # zero total weight inside the kernel: documented value 0, no NaN
    out = _pair(jnp.ones((2, 2)), jnp.ones((2, 2)), jnp.ones(2, bool), jnp.ones(2, bool),
                jnp.zeros(2), jnp.ones(2))
    assert [float(v) for v in out] == [0.0, 0.0, 0.0]
