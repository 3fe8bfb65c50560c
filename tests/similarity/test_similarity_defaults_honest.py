"""Honest defaults of the similarity family: BERTScore's F1 stays between P and R by default (no
centering; a warning counts the pairs whose P·R <= 0), centering batches restart at every group,
and ``--bert-score-compat`` is bert_score on its defaults."""
from __future__ import annotations

import csv
import warnings

import numpy as np
import pytest

from jaxmetrics.similarity import (SimilaritySettings, compute_similarity, correlation_sweep, default_centering,
                                   score_encoded)


def _short_pairs(num_pairs: int = 32):
    """Real text: the first short speeches (1-5 words) of the held-out plays, paired off in order
    (references = even, candidates = odd lines). With MiniLM's layer 6 and one 32-pair centering
    batch, two of the first 32 pairs (5 and 7) have P·R < 0 under batch centering."""
    from jaxmetrics.data import load_shakespeare

    lines = [t for t in load_shakespeare("heldout") if 1 <= len(t.split()) <= 5][:2 * num_pairs]
    return lines[0::2], lines[1::2]


def _encoding():
    """A hand-built Encoding (D = 3) of three pairs whose vectors share the offset c = 5·e3:
    uncentred every cosine is positive; batch centering (per side, over all three pairs) removes
    exactly c and leaves a = e1 against b1, b2 with cos(a, b1) = 0.2 and cos(a, b2) = -0.9 (pairs 0
    and 1, mirrored), so P = 0.2, R = (0.2 - 0.9)/2 = -0.35 and F = 2PR/(P+R) = 0.9333 > P; pair 2
    (d, -d against d, -d) scores 1."""
    from jaxmetrics.models import Encoding

    c = np.array([0.0, 0.0, 5.0])
    a = np.array([1.0, 0.0, 0.0])
    b1 = np.array([0.2, np.sqrt(1 - 0.04), 0.0])
    b2 = np.array([-0.9, np.sqrt(1 - 0.81), 0.0])
    d = np.array([0.0, 0.0, 1.0])
    texts = [[a], [b1, b2], [-a], [-b1, -b2], [d, -d], [d, -d]]
    flat = np.concatenate([np.stack(t) + c for t in texts]).astype(np.float32)
    lens = np.array([len(t) for t in texts])
    mask = np.arange(2)[None] < lens[:, None]
    enc = Encoding(flat[None], None, np.r_[0, np.cumsum(lens)].astype(np.int64), mask, np.zeros_like(mask),
                   np.where(mask, 7, 0).astype(np.int32), layers=(0,))
    return enc, np.array([0, 2, 4]), np.array([1, 3, 5])


def test_default_centering_per_metric():
    assert default_centering("bertscore") == "none"
    assert {default_centering(m) for m in ("twmd", "trwmd", "trwmd_lse", "wmd", "rwmd", "cka", "cosine")} == {"batch"}


def test_hand_built_opposite_signs_under_centering_are_counted_in_a_warning():
    enc, ci, ri = _encoding()
    with pytest.warns(UserWarning, match=r"^2 of 3 pairs have precision and recall of opposite signs "
                                         r"\(P·R <= 0\) under batch centering; their F1 is outside \[P, R\]"):
        out = score_encoded(enc, candidates=ci, references=ri,
                            settings=SimilaritySettings(metric="bertscore", centering="batch"))
    np.testing.assert_allclose(out.precision, [0.2, 0.2, 1.0], atol=1e-6)
    np.testing.assert_allclose(out.recall, [-0.35, -0.35, 1.0], atol=1e-6)
    np.testing.assert_allclose(out.f1[:2], 2 * 0.2 * -0.35 / (0.2 - 0.35), atol=1e-5)   # 0.933, above P and R
    # the count is of P and R before baseline rescaling (rescaled, pairs 0 and 1 have the same sign)
    with pytest.warns(UserWarning, match=r"^2 of 3 pairs"):
        score_encoded(enc, candidates=ci, references=ri,
                      settings=SimilaritySettings(metric="bertscore", centering="batch", baseline=(0.5, 0.5, 0.5)))
    # uncentred (the BERTScore default) every cosine is positive: no warning, F between P and R
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = score_encoded(enc, candidates=ci, references=ri, settings=SimilaritySettings(metric="bertscore"))
    assert plain.centering == "none"
    assert np.all(np.minimum(plain.precision, plain.recall) <= plain.f1 + 1e-7)
    assert np.all(plain.f1 <= np.maximum(plain.precision, plain.recall) + 1e-7)


def test_default_bertscore_on_real_text_keeps_f1_between_p_and_r(minilm):
    refs, cands = _short_pairs(32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = compute_similarity(references=refs, candidates=cands, model=minilm, metric="bertscore")
    p, r, f = res.precision, res.recall, res.f1
    assert res.centering == "none" and res.layer == 6
    assert np.all(np.minimum(p, r) - 1e-6 <= f) and np.all(f <= np.maximum(p, r) + 1e-6)
    assert np.all(np.abs(f) <= 1.0 + 1e-6)
    # the paper's batch-centred BERTScore is reachable by name, and says what it does to these pairs
    with pytest.warns(UserWarning, match=r"^2 of 32 pairs .* under batch centering"):
        bc = compute_similarity(references=refs, candidates=cands, model=minilm, metric="bertscore",
                                centering="batch")
    assert bc.centering == "batch"
    outside = (bc.f1 < np.minimum(bc.precision, bc.recall) - 1e-6) | (bc.f1 > np.maximum(bc.precision, bc.recall) + 1e-6)
    assert np.flatnonzero(outside).tolist() == [5, 7]


@pytest.mark.filterwarnings("ignore:.*opposite signs")
def test_each_group_is_centred_as_if_alone(minilm):
    """Centering batches restart at every group: 5 + 5 pairs in batches of 3 give each group the
    batches {0, 1, 2}, {3, 4} it has on its own (a batch never mixes groups; corpus centering is
    per group too), in the sweep and in compute_similarity."""
    refs, cands = _short_pairs(10)
    groups = ["a"] * 5 + ["b"] * 5
    human = np.linspace(0.0, 5.0, 10)
    kw = dict(model=minilm, metric=["twmd", "bertscore"], layers=[6], centering=["batch", "corpus"],
              temperatures=[0.1], settings=SimilaritySettings(center_batch_size=3, pair_chunk=4))
    both = correlation_sweep(references=refs, candidates=cands, human=human, groups=groups, **kw)
    for sel in (slice(0, 5), slice(5, 10)):
        alone = correlation_sweep(references=refs[sel], candidates=cands[sel], human=human[sel], **kw)
        assert alone.metric == both.metric and alone.centering == both.centering
        np.testing.assert_allclose(both.scores[:, sel], alone.scores, atol=1e-6)
    for i, row in enumerate(both.rows()):
        ref = compute_similarity(references=refs, candidates=cands, model=minilm, metric=row.metric,
                                 centering=row.centering, temperature=row.temperature, center_batch_size=3,
                                 groups=groups)
        np.testing.assert_allclose(both.scores[i], ref.f1, atol=1e-5, err_msg=str(row))


def test_sweep_default_centering_is_each_metrics_own(minilm):
    refs, cands = _short_pairs(6)
    res = correlation_sweep(references=refs, candidates=cands, human=np.arange(6.0), model=minilm,
                            metric=["twmd", "bertscore"], layers=[6], settings=SimilaritySettings(pair_chunk=4))
    assert list(zip(res.metric, res.centering, res.temperature)) == [("twmd", "batch", 0.1),
                                                                     ("bertscore", "none", None)]


def test_cli_bert_score_compat_is_bert_score(minilm_dir, tmp_path, capsys):
    """``jaxmetrics similarity --bert-score-compat`` gives bert_score.score's numbers on its defaults
    (MiniLM has no tuned layer in bert_score, so bert_score is given the layer; jaxmetrics defaults a
    sentence-transformers encoder to its default layer, 6 here)."""
    bert_score = pytest.importorskip("bert_score")
    from jaxmetrics.cli import main

    refs, cands = _short_pairs(12)
    refs[3] = "Enough; no more: 'Tis not so sweet now as it was before."   # lengths differ: padding
    r, c, out = tmp_path / "r.txt", tmp_path / "c.txt", tmp_path / "scores.csv"
    r.write_text("\n".join(refs) + "\n")
    c.write_text("\n".join(cands) + "\n")
    argv = ["similarity", "--references", str(r), "--candidates", str(c), "--model", minilm_dir,
            "--bert-score-compat", "--quiet"]
    assert main(argv + ["--layer", "6", "--batch-size", "5", "--csv", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "bertscore (layer 6, centering none, bert_score compat)" in printed
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(x["index"]) for x in rows] == list(range(12))
    want = bert_score.score(cands, refs, model_type=minilm_dir, num_layers=6, batch_size=5, nthreads=0,
                            device="cpu")
    for key, w in zip(("precision", "recall", "f1"), want):
        np.testing.assert_allclose([float(x[key]) for x in rows], w.numpy(), atol=1e-4, rtol=0)

    # no tuned layer for MiniLM in bert_score, but it is a sentence-transformers encoder: the
    # library's default layer (its last, 6) -- the same numbers as --layer 6
    out6 = tmp_path / "default.csv"
    assert main(argv + ["--batch-size", "5", "--csv", str(out6)]) == 0
    assert "bertscore (layer 6, centering none, bert_score compat)" in capsys.readouterr().out
    assert out6.read_text() == out.read_text()
    # options bert_score lacks: refused
    for extra in (["--centering", "batch"], ["--centering", "none"], ["--max-length", "128"],
                  ["--special-tokens", "drop"], ["--temperature", "0.1"], ["--metric", "twmd"]):
        assert main(argv + ["--layer", "6"] + extra) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"jaxmetrics similarity: error: {extra[0]}:"), err


def test_compat_library_follows_bert_score_defaults(minilm, tiny_checkpoint_dir):
    from jaxmetrics.models import load_model
    from jaxmetrics.similarity.compat import bert_score_layer, bert_score_max_length

    assert bert_score_max_length(minilm) == minilm.tokenizer.model_max_length == 512
    assert bert_score_layer(None, "roberta-base") == 10
    assert bert_score_layer(minilm) == 6     # a sentence-transformers encoder: the default layer
    refs, cands = _short_pairs(3)
    kw = dict(references=refs, candidates=cands, model=minilm)
    compat = dict(metric="bertscore", bert_score_compat=True)
    assert compute_similarity(settings=SimilaritySettings(**compat), **kw).layer == 6
    # a plain encoder with no tuned layer: refused as bert_score refuses it, naming the argument
    tiny = load_model(tiny_checkpoint_dir("bert"))
    with pytest.raises(ValueError, match="^layer: bert_score has no default layer"):
        compute_similarity(settings=SimilaritySettings(**compat), **{**kw, "model": tiny})
    with pytest.raises(ValueError, match="^centering: bert_score_compat"):
        SimilaritySettings(centering="batch", layer=6, **compat)
    with pytest.raises(ValueError, match="^special_tokens: bert_score_compat"):
        SimilaritySettings(special_tokens="drop", layer=6, **compat)
    assert compute_similarity(settings=SimilaritySettings(layer=6, **compat), **kw).centering == "none"


def test_cli_help_states_every_default(capsys):
    from jaxmetrics.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in ("similarity", "similarity-eval"):
        p = sub.choices[name]
        for action in p._actions:
            if not action.option_strings or action.required or action.dest == "help":
                continue
            text = p.formatter_class(prog=name)._get_help_string(action) or ""
            assert "default" in text, (name, action.option_strings)
    help_text = " ".join(sub.choices["similarity"].format_help().split())
    assert "default: none for bertscore, batch for the other metrics" in help_text
    assert "--output" not in help_text and "--csv" in help_text
