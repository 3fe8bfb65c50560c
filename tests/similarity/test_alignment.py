"""Token alignments (jaxmetrics.similarity.token_alignments) on the real MiniLM encoder and real
text (short speeches of the bundled held-out Shakespeare): the scores are compute_similarity's,
the greedy matches make BERTScore's P and R, the transport plans make TWMD's and have the token
weights as marginals, identical sentences align token to token, bad input names its argument,
and the figures and the CLI's --alignments folder are written."""
from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from jaxmetrics.similarity import (PairAlignment, TokenAlignments, compute_similarity, token_alignments)
from jaxmetrics.similarity.alignment import AlignedTokens
from jaxmetrics.similarity.plot import plot_token_alignment


@pytest.fixture(scope="module")
def texts():
    from jaxmetrics.data import load_shakespeare

    short = [s for s in load_shakespeare("heldout", limit=40) if 6 <= len(s.split()) <= 20][:8]
    assert len(short) == 8
    return short[:4], short[4:]  # references, candidates: 4 pairs of 8 to 28 tokens


@pytest.fixture(scope="module")
def aligned(minilm, texts):
    """token_alignments of the 4 pairs, one run per metric (computed when first asked for)."""
    refs, cands = texts
    cache = {}

    def get(metric, **kw):
        key = (metric, tuple(sorted(kw.items())))
        if key not in cache:
            cache[key] = token_alignments(references=refs, candidates=cands, model=minilm, metric=metric, **kw)
        return cache[key]

    return get


def _pairs(al):
    return [al.pair(k) for k in range(len(al))]


@pytest.mark.parametrize("metric", ["bertscore", "twmd", "rwmd", "wmd"])
def test_scores_equal_compute_similarity(minilm, texts, aligned, metric):
    refs, cands = texts
    al = aligned(metric)
    want = compute_similarity(references=refs, candidates=cands, model=minilm, metric=metric)
    assert isinstance(al, TokenAlignments) and al.signature == want.signature
    for name in ("precision", "recall", "f1"):
        np.testing.assert_allclose(getattr(al.scores, name), getattr(want, name), rtol=0, atol=1e-6)
        np.testing.assert_array_equal(getattr(al, name), getattr(want, name))  # all pairs aligned
        assert [getattr(p, name) for p in _pairs(al)] == pytest.approx(getattr(want, name).tolist(), abs=1e-6)
    assert al.scores.centering == want.centering == ("none" if metric == "bertscore" else "batch")


@pytest.mark.parametrize("idf", [False, True])
def test_greedy_matches_make_bertscore(minilm, texts, aligned, idf):
    """P and R recomputed from the returned matches and weights are compute_similarity's."""
    refs, cands = texts
    al = aligned("bertscore", idf=idf)
    want = compute_similarity(references=refs, candidates=cands, model=minilm, metric="bertscore", idf=idf)
    p = np.sum(al.candidates.weights * al.candidates.match_similarity, axis=1)
    r = np.sum(al.references.weights * al.references.match_similarity, axis=1)
    np.testing.assert_allclose(p, want.precision, rtol=0, atol=1e-6)
    np.testing.assert_allclose(r, want.recall, rtol=0, atol=1e-6)
    np.testing.assert_allclose(2 * p * r / (p + r), want.f1, rtol=0, atol=1e-6)
    for pa in _pairs(al):  # each match is the row / column maximum of the similarity matrix
        s = pa.similarity
        assert s.shape == (len(pa.candidate.tokens), len(pa.reference.tokens))
        np.testing.assert_array_equal(pa.candidate.match, s.argmax(axis=1))
        np.testing.assert_array_equal(pa.candidate.match_similarity, s.max(axis=1))
        np.testing.assert_array_equal(pa.reference.match, s.argmax(axis=0))
        np.testing.assert_array_equal(pa.reference.match_similarity, s.max(axis=0))
        np.testing.assert_allclose(pa.candidate.weights.sum(), 1.0, atol=1e-6)
        assert idf or np.ptp(pa.candidate.weights) == 0  # uniform without idf
    # padding: no match, no weight
    assert np.all(al.candidates.match[~al.candidates.mask] == -1)
    assert np.all(al.references.weights[~al.references.mask] == 0)


def test_greedy_matches_make_batch_centred_rwmd(minilm, texts, aligned):
    """RWMD is the greedy matching normalised by the self-scores, which are 1 for unit vectors
    (every token matches itself), so under the default batch centering P = sum_i a_i max_j S_ij
    too: the returned similarity matrix is the batch-centred one the score uses."""
    refs, cands = texts
    al = aligned("rwmd")
    want = compute_similarity(references=refs, candidates=cands, model=minilm, metric="rwmd")
    assert want.centering == "batch"
    p = np.sum(al.candidates.weights * al.candidates.match_similarity, axis=1)
    r = np.sum(al.references.weights * al.references.match_similarity, axis=1)
    np.testing.assert_allclose(p, want.precision, rtol=0, atol=1e-6)
    np.testing.assert_allclose(r, want.recall, rtol=0, atol=1e-6)
    np.testing.assert_allclose(2 * p * r / (p + r), want.f1, rtol=0, atol=1e-6)


def _marginal_errors(al):
    """max abs error of the exact marginals, and the largest per-pair L1 error of the others."""
    a, b = al.candidates.weights, al.references.weights
    pp, rp = al.precision_plan, al.recall_plan
    exact = max(np.abs(pp.sum(2) - a).max(), np.abs(rp.sum(1) - b).max())
    other = max(np.abs(pp.sum(1) - b).sum(1).max(), np.abs(rp.sum(2) - a).sum(1).max())
    return exact, other


def test_transport_plan_marginals(aligned):
    """Tolerances from the iteration count: the marginal the plan's last half-iteration rescales
    (rows of the precision plan, columns of the recall plan) is exact to float32 rounding (1e-6)
    after any number of iterations; the other one is met only as Sinkhorn converges. Measured on
    these pairs at T = 0.1 (batch centred): L1 error 0.23 after 1 iteration (the paper's TWMD, so it
    is *not* a coupling), 5e-3 after 5, 8e-5 after 10, the float32 floor (3e-7) from 20 on; asserted:
    > 1e-2, < 2e-2, < 1e-5 after 1, 5, 30. WMD's exact plan meets both to 1e-6."""
    errors = {}
    for m in (1, 5, 30):
        al = aligned("twmd", num_iterations=m)
        assert al.num_iterations == m and al.temperature == pytest.approx(0.1)
        exact, other = _marginal_errors(al)
        assert exact < 1e-6, (m, exact)
        errors[m] = other
        assert np.all(al.precision_plan >= 0) and np.all(al.precision_plan[~al.candidates.mask] == 0)
    assert errors[1] > 1e-2 and errors[5] < 2e-2 and errors[30] < 1e-5, errors
    assert errors[1] > errors[5] > errors[30]
    exact, other = _marginal_errors(aligned("wmd"))
    assert exact < 1e-6 and other < 1e-6


@pytest.mark.parametrize("num_iterations", [1, 3])
def test_plans_make_the_twmd_score(minilm, texts, num_iterations):
    """P = <precision_plan, S> / sqrt(P11 P22), with P11, P22 the same quantity on the candidate
    (reference) paired with itself: sentence centering makes each text's vectors its own, so the
    self pairs see the same vectors."""
    refs, cands = texts
    kw = dict(model=minilm, metric="twmd", centering="sentence", num_iterations=num_iterations)
    al = token_alignments(references=refs, candidates=cands, **kw)
    cc = token_alignments(references=cands, candidates=cands, **kw)
    rr = token_alignments(references=refs, candidates=refs, **kw)

    def raw(a, plan):
        return np.sum(getattr(a, plan) * a.similarity, axis=(1, 2), dtype=np.float64)

    for plan, want in (("precision_plan", al.precision), ("recall_plan", al.recall)):
        got = raw(al, plan) / np.sqrt(raw(cc, plan) * raw(rr, plan))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("metric", ["bertscore", "twmd"])
def test_identical_sentences_align_token_to_token(minilm, texts, metric):
    refs, _ = texts
    al = token_alignments(references=refs, candidates=refs, model=minilm, metric=metric)
    np.testing.assert_allclose(al.f1, 1.0, atol=1e-5)
    for pa in _pairs(al):
        n = len(pa.candidate.tokens)
        assert pa.candidate.tokens == pa.reference.tokens
        np.testing.assert_array_equal(pa.candidate.match, np.arange(n))
        np.testing.assert_array_equal(pa.reference.match, np.arange(n))
        np.testing.assert_allclose(np.diag(pa.similarity), 1.0, atol=1e-5)
        if metric == "twmd":  # each token sends most of its mass to itself
            np.testing.assert_array_equal(pa.precision_plan.argmax(axis=1), np.arange(n))
            np.testing.assert_array_equal(pa.recall_plan.argmax(axis=0), np.arange(n))


def test_tokens_are_the_tokenizers_and_special_tokens_follow_the_metric(minilm, texts, aligned):
    refs, cands = texts
    al = aligned("bertscore")
    for k, pa in enumerate(_pairs(al)):
        assert list(pa.candidate.tokens) == minilm.tokenizer.tokenize(cands[k])
        assert list(pa.reference.tokens) == minilm.tokenizer.tokenize(refs[k])
    kept = aligned("bertscore", special_tokens="keep").pair(0)
    assert kept.candidate.tokens == ("[CLS]",) + al.pair(0).candidate.tokens + ("[SEP]",)
    assert kept.similarity.shape == (len(kept.candidate.tokens), len(kept.reference.tokens))


def test_indices_align_some_pairs_with_all_pairs_centering(minilm, texts, aligned):
    refs, cands = texts
    full = aligned("twmd")
    some = token_alignments(references=refs, candidates=cands, model=minilm, metric="twmd", indices=[2, 0])
    assert some.indices.tolist() == [2, 0] and len(some) == 2
    np.testing.assert_array_equal(some.scores.f1, full.scores.f1)
    for k, i in enumerate((2, 0)):
        a, b = some.pair(k), full.pair(i)
        assert a.index == b.index == i and a.candidate.tokens == b.candidate.tokens
        np.testing.assert_allclose(a.similarity, b.similarity, atol=1e-6)
        np.testing.assert_allclose(a.precision_plan, b.precision_plan, atol=1e-6)


def test_result_is_a_frozen_pytree_with_json(aligned):
    import dataclasses

    al = aligned("twmd")
    with pytest.raises(dataclasses.FrozenInstanceError):
        al.metric = "x"
    leaves = jax.tree.leaves(al)
    assert any(getattr(x, "shape", None) == al.similarity.shape for x in leaves)
    pa = al.pair(1)  # each side is one AlignedTokens, unpadded in the pair
    assert isinstance(pa.candidate, AlignedTokens) and isinstance(al.references, AlignedTokens)
    assert pa.candidate.mask.all() and pa.reference.mask.shape == (len(pa.reference.tokens),)
    np.testing.assert_array_equal(pa.reference.weights, al.references.weights[1][al.references.mask[1]])
    d = json.loads(json.dumps(pa.to_dict()))
    assert d["index"] == 1 and len(d["precision_plan"]) == len(d["candidate"]["tokens"])
    assert "similarity=f32[4," in repr(al) and "0.1" in repr(al.pair(0))


def test_bad_input_names_the_argument(minilm, texts, aligned):
    refs, cands = texts
    with pytest.raises(ValueError, match="^references"):
        token_alignments(references=refs[:3], candidates=cands, model=minilm)
    with pytest.raises(ValueError, match="^candidates"):
        token_alignments(references=refs, candidates=[], model=minilm)
    with pytest.raises(ValueError, match="^references"):
        token_alignments(references=[], candidates=cands, model=minilm)
    for metric in ("cosine", "trwmd", "nope"):
        with pytest.raises(ValueError, match="^metric"):
            token_alignments(references=refs, candidates=cands, model=minilm, metric=metric)
    for bad in ([4], [], [-1], [[0]], [0.5]):
        with pytest.raises(ValueError, match="^indices"):
            token_alignments(references=refs, candidates=cands, model=minilm, indices=bad)
    with pytest.raises(ValueError, match="^temperature"):
        token_alignments(references=refs, candidates=cands, model=minilm, temperature=-1.0)
    with pytest.raises(TypeError):  # the two sets are keyword-only
        token_alignments(refs, cands, model=minilm)
    with pytest.raises(ValueError, match="^k"):
        aligned("twmd").pair(4)


def test_plots_draw_and_save(tmp_path, aligned):
    import matplotlib

    matplotlib.use("Agg")
    tw = aligned("twmd")
    fig = tw.plot(1, tmp_path / "twmd.png")
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == 3  # similarity, precision plan, recall plan
    assert len(heatmaps[0].collections) == 2  # the two sets of greedy matches
    labels = [t.get_text() for t in heatmaps[0].get_yticklabels()]
    assert labels == list(tw.pair(1).candidate.tokens)
    assert (tmp_path / "twmd.png").stat().st_size > 1000
    fig = plot_token_alignment(aligned("bertscore"), tmp_path / "bert.pdf", index=2, title="pair 2")
    assert len([ax for ax in fig.axes if ax.images]) == 1 and fig._suptitle.get_text() == "pair 2"
    assert (tmp_path / "bert.pdf").stat().st_size > 1000
    assert len([ax for ax in aligned("wmd").pair(0).plot().axes if ax.images]) == 2  # one plan
    assert isinstance(tw.pair(0), PairAlignment)


def test_cli_alignments_folder(minilm_dir, texts, tmp_path, capsys, monkeypatch):
    import jaxmetrics.similarity as S
    from jaxmetrics.cli import main

    refs, cands = texts
    r, c = tmp_path / "r.txt", tmp_path / "c.txt"
    r.write_text("\n".join(refs) + "\n")
    c.write_text("\n".join(cands) + "\n")
    out, j = tmp_path / "al", tmp_path / "scores.json"
    rc = main(["similarity", "--references", str(r), "--candidates", str(c), "--model", minilm_dir,
               "--metric", "bertscore", "--alignments", str(out), "--alignments-pairs", "2", "--json", str(j)])
    assert rc == 0
    assert sorted(p.name for p in out.iterdir()) == ["alignments.json", "pair_0.png", "pair_1.png"]
    data = json.loads((out / "alignments.json").read_text())
    scores = json.loads(j.read_text())
    assert data["signature"] == scores["signature"] and len(data["pairs"]) == 2
    want = compute_similarity(references=refs, candidates=cands, model=minilm_dir, metric="bertscore")
    np.testing.assert_allclose(scores["f1"], want.f1, atol=1e-6)  # all 4 pairs scored
    p0 = data["pairs"][0]
    assert p0["f1"] == pytest.approx(float(want.f1[0]), abs=1e-6)
    assert np.mean(p0["candidate"]["match_similarity"]) == pytest.approx(float(want.precision[0]), abs=1e-6)
    capsys.readouterr()
    # refused before any work, naming the option

    def forbid(**_):
        raise AssertionError("scored before the options were checked")

    monkeypatch.setattr(S, "token_alignments", forbid)
    monkeypatch.setattr(S, "compute_similarity", forbid)
    base = ["similarity", "--references", str(r), "--candidates", str(c), "--model", minilm_dir]
    for extra, option in ((["--alignments", str(out), "--metric", "cosine"], "--alignments"),
                          (["--alignments", str(out), "--bert-score-compat", "--layer", "6"], "--alignments"),
                          (["--alignments", str(out), "--metric", "bertscore", "--baseline", "0.1", "0.1", "0.1"],
                           "--alignments"),
                          (["--alignments", str(out), "--alignments-pairs", "0"], "--alignments-pairs"),
                          (["--alignments-pairs", "3"], "--alignments-pairs"),
                          (["--alignments", str(r / "x")], "--alignments")):
        assert main(base + extra) == 2, extra
        assert option in capsys.readouterr().err, extra
