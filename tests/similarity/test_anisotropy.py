"""Anisotropy diagnostics (jaxmetrics.similarity.anisotropy; Chen et al. 2020 §5, Ethayarajh 2019).

* the kernel against a float64 numpy transcription of the definitions (every centering);
* the random pairs: different sentences, selected tokens, uniform over cross-sentence pairs;
* all-MiniLM-L6-v2 on 200 lines of the bundled text: raw baseline well above 0 in the upper
  layers, ~0 after corpus / batch / sentence centering (the paper's finding);
* the CLI: errors before work; a tiny random GPT-2 (a decoder) end to end, JSON + PNG.
"""
from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.cli import main
from jaxmetrics.similarity import (ANISOTROPY_STATISTICS, CENTERING_METHODS, AnisotropyResult,
                                   LayerSimilarities, compute_anisotropy, layer_similarities)
from jaxmetrics.similarity.anisotropy import _prepare, _random_token_pairs

# ----------------------------------------------------------------------------- numpy reference


def _np_center(w, sel, method, batch_size):
    """The paper's centerings on one layer ``w [N, T, D]`` (means over selected tokens)."""
    n = w.shape[0]
    if method == "none":
        return w.copy()
    if method == "dimension":
        return w - w.mean(axis=-1, keepdims=True)
    v = np.zeros_like(w)
    for s in range(n):
        if method == "sentence":
            rows = [s]
        elif method == "corpus":
            rows = list(range(n))
        else:
            rows = [r for r in range(n) if r // batch_size == s // batch_size]
        toks = np.concatenate([w[r][sel[r]] for r in rows])
        mean = toks.mean(axis=0) if len(toks) else np.zeros(w.shape[-1])
        v[s] = w[s] - mean
    return v


def _cos(a, b):
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return 0.0 if na == 0 or nb == 0 else float(a @ b / (na * nb))


def _np_statistics(h, sel, ids, pairs, method, batch_size):
    """Baseline / self / intra per layer, written out pair by pair."""
    n, t = sel.shape
    base, selfs, intra = [], [], []
    for w in h.astype(np.float64):
        v = _np_center(w, sel, method, batch_size)
        vf = v.reshape(n * t, -1)
        base.append(np.mean([_cos(vf[i], vf[j]) for i, j in zip(*pairs)]))
        occ = {}
        for s in range(n):
            for k in range(t):
                if sel[s, k]:
                    occ.setdefault(int(ids[s, k]), []).append((s, v[s, k]))
        per_type = []
        for lst in occ.values():
            cs = [_cos(a[1], b[1]) for x, a in enumerate(lst) for y, b in enumerate(lst)
                  if x != y and a[0] != b[0]]
            if cs:
                per_type.append(np.mean(cs))
        selfs.append(np.mean(per_type))
        per_sent = []
        for s in range(n):
            toks = v[s][sel[s]]
            if len(toks) < 2:
                continue
            mean = toks.mean(axis=0)
            # documented: a mean shorter than 1e-4 x the tokens' mean norm is the zero vector
            if np.linalg.norm(mean) <= 1e-4 * np.linalg.norm(toks, axis=1).mean():
                mean = np.zeros_like(mean)
            per_sent.append(np.mean([_cos(x, mean) for x in toks]))
        intra.append(np.mean(per_sent))
    return np.array(base), np.array(selfs), np.array(intra)


@pytest.fixture(scope="module")
def hand_case():
    """3 layers, 5 sentences of up to 6 tokens, D = 4; a shared offset makes the raw vectors
    anisotropic; padding and one 'special' slot per sentence are outside the mask."""
    rng = np.random.default_rng(7)
    h = rng.normal(size=(3, 5, 6, 4)).astype(np.float32)
    h += np.array([2.0, -1.0, 0.5, 1.0], np.float32) * np.arange(1, 4, dtype=np.float32)[:, None, None, None]
    lengths = [6, 4, 5, 2, 6]
    sel = np.zeros((5, 6), bool)
    for s, k in enumerate(lengths):
        sel[s, 1:k] = True            # slot 0 is a [CLS]-like special token; the tail is padding
    ids = rng.integers(0, 5, size=(5, 6)).astype(np.int32)
    ids[1, 1] = ids[1, 2] = 9         # type 9 occurs twice, in one sentence only: no cross pairs
    return h, sel, ids


@pytest.mark.parametrize("method", CENTERING_METHODS)
def test_kernel_matches_numpy_transcription(hand_case, method):
    h, sel, ids = hand_case
    key = jax.random.key(3)
    r = layer_similarities(h, sel, ids, key=key, centering=method, center_batch_size=2, num_pairs=50)
    assert isinstance(r, LayerSimilarities) and r.centering == method
    (i, j, ok), _ = _prepare(jnp.asarray(sel), jnp.asarray(ids), key, 50)   # the kernel's pairs
    assert bool(ok)
    base, selfs, intra = _np_statistics(h, sel, ids, (np.asarray(i), np.asarray(j)), method, 2)
    np.testing.assert_allclose(np.asarray(r.baseline), base, atol=2e-5)
    np.testing.assert_allclose(np.asarray(r.self_similarity), selfs, atol=2e-5)
    np.testing.assert_allclose(np.asarray(r.intra_similarity), intra, atol=2e-5)
    expected_types = sum(len({s for s in range(5) if (ids[s][sel[s]] == v).any()}) >= 2
                         for v in np.unique(ids[sel]))
    assert int(r.num_word_types) == expected_types
    assert int(r.num_sentences) == 4                     # sentence 3 keeps a single token
    if method == "sentence":
        np.testing.assert_allclose(np.asarray(r.intra_similarity), 0.0, atol=1e-6)
    if method == "none":   # the offset makes the raw vectors anisotropic, growing with the layer
        assert float(r.baseline[-1]) > 0.8 and np.all(np.diff(np.asarray(r.baseline)) > 0)
    if method == "corpus":
        assert abs(float(r.baseline[-1])) < 0.2


def test_random_pairs_are_uniform_over_cross_sentence_pairs():
    sel = np.zeros((3, 4), bool)
    sel[0, :1] = sel[1, 1:3] = sel[2, :3] = True      # 1, 2 and 3 tokens: 11 cross pairs
    sample = jax.jit(_random_token_pairs, static_argnums=2)
    i, j, ok = sample(jnp.asarray(sel), jax.random.key(1), 22_000)
    i, j = np.asarray(i), np.asarray(j)
    flat = sel.reshape(-1)
    assert bool(ok) and flat[i].all() and flat[j].all()
    assert np.all(i // 4 != j // 4)
    pairs = {}
    for a, b in zip(i, j):
        k = (min(a, b), max(a, b))
        pairs[k] = pairs.get(k, 0) + 1
    assert len(pairs) == 11
    counts = np.array(list(pairs.values()))
    # 2000 expected each; binomial sd ~43, so 6 sd
    assert np.all(np.abs(counts - 2000) < 260), counts


def test_one_sentence_gives_nan(hand_case):
    h, _, ids = hand_case
    sel = np.zeros((5, 6), bool)
    sel[0] = True
    r = layer_similarities(h, sel, ids, key=jax.random.key(3), centering="none", center_batch_size=2,
                           num_pairs=50)
    assert np.all(np.isnan(np.asarray(r.baseline))) and np.all(np.isnan(np.asarray(r.self_similarity)))
    assert np.all(np.isfinite(np.asarray(r.intra_similarity))) and int(r.num_word_types) == 0


def test_kernel_checks_and_jit(hand_case):
    h, sel, ids = hand_case
    with pytest.raises(TypeError, match="key"):
        layer_similarities(h, sel, ids, key=0)
    with pytest.raises(ValueError, match="hidden_states_mask"):
        layer_similarities(h, sel[:, :3], ids, key=jax.random.key(0))
    with pytest.raises(ValueError, match="centering"):
        layer_similarities(h, sel, ids, key=jax.random.key(0), centering="mean")
    with pytest.raises(ValueError, match="hidden_states"):
        layer_similarities(h[0], sel, ids, key=jax.random.key(0))
    kw = dict(centering="none", center_batch_size=2, num_pairs=50)
    eager = layer_similarities(h, sel, ids, key=jax.random.key(5), **kw)
    jitted = jax.jit(lambda a, k: layer_similarities(a, sel, ids, key=k, **kw))(h, jax.random.key(5))
    np.testing.assert_allclose(np.asarray(jitted.baseline), np.asarray(eager.baseline), atol=1e-6)
    assert jitted.num_pairs == 50 and "f32[3]" in repr(jitted)


# ----------------------------------------------------------------------------- real encoder


@pytest.fixture(scope="module")
def minilm_result(minilm_dir):
    from jaxmetrics.data import demo_data_dir

    lines = (demo_data_dir() / "data" / "heldout.txt").read_text(encoding="utf-8").splitlines()
    texts = [ln for ln in lines if len(ln.split()) >= 5][:200]     # sentences, not headings
    with pytest.warns(UserWarning, match="truncated"):
        return compute_anisotropy(texts, model=minilm_dir, seed=0, max_length=32, batch_size=50)


@pytest.mark.slow
def test_minilm_baseline_is_high_raw_and_near_zero_centered(minilm_result):
    r = minilm_result
    print("\n" + r.table())
    assert isinstance(r, AnisotropyResult) and r.centerings == CENTERING_METHODS
    assert r.num_layers == 6 and r.num_texts == 200 and r.num_word_types > 100
    assert 100 * 30 < r.num_tokens <= 200 * 30           # [CLS]/[SEP] dropped from <= 32 tokens
    raw = np.asarray(r.baseline["none"])
    assert raw.shape == (7,)
    # upper layers anisotropic (observed 0.17, 0.20, 0.26 in layers 3-5; the fine-tuned last
    # layer drops to 0.07), and centering brings the baseline to ~0 (observed <= 0.015)
    assert np.all(raw[3:6] > 0.12) and raw.max() > 0.2
    for c in ("corpus", "batch", "sentence"):
        assert np.all(np.abs(np.asarray(r.baseline[c])) < 0.03), (c, r.baseline[c])
    assert np.all(raw[1:6] > 5 * np.abs(np.asarray(r.baseline["corpus"]))[1:6])
    # self-similarity stays above the baseline after corpus centering (same words share more)
    assert np.all(np.asarray(r.self_similarity["corpus"]) > np.asarray(r.baseline["corpus"]) + 0.2)
    # sentence centering removes the sentence mean: intra-sentence similarity 0 (paper, Fig. 2)
    np.testing.assert_allclose(np.asarray(r.intra_similarity["sentence"]), 0.0, atol=1e-6)


@pytest.mark.slow
def test_minilm_result_to_dict_and_plot(minilm_result, tmp_path):
    r = minilm_result
    d = json.loads(json.dumps(r.to_dict()))
    assert set(d) >= set(ANISOTROPY_STATISTICS) | {"centerings", "num_pairs", "seed"}
    assert len(d["baseline"]["batch"]) == 7
    assert len(repr(r)) < 600 and "f32[7]" in repr(r)
    fig = r.plot(tmp_path / "a.png")
    assert [len(ax.lines) for ax in fig.axes] == [6, 6, 6]   # 5 centerings + the zero line
    assert (tmp_path / "a.png").stat().st_size > 1000


def test_pipeline_checks_inputs_before_loading(tmp_path):
    missing = str(tmp_path / "no-model")
    with pytest.raises(ValueError, match="at least 2"):
        compute_anisotropy(["only one"], model=missing)
    with pytest.raises(ValueError, match="centerings"):
        compute_anisotropy(["a", "b"], model=missing, centerings=("none", "mean"))
    with pytest.raises(ValueError, match="empty"):
        compute_anisotropy(["a", " "], model=missing)
    with pytest.raises(ValueError, match="num_pairs"):
        compute_anisotropy(["a", "b"], model=missing, num_pairs=0)


# ----------------------------------------------------------------------------- decoder and CLI


@pytest.fixture(scope="module")
def gpt2_dir(tiny_checkpoint_dir):
    return tiny_checkpoint_dir("gpt2", num_layers=2, hidden=16, heads=2)


TINY_TEXTS = ["The quick brown fox jumps over the lazy dog.", "To be, or not to be.",
              "It was the best of times.", "All that glitters is not gold.",
              "The dog sleeps in the night."]


def test_cli_rejects_bad_input_before_work(tmp_path, capsys):
    good = tmp_path / "t.txt"
    good.write_text("one sentence\nanother sentence\n")
    missing_model = str(tmp_path / "no-model")
    # every error below is raised before the (missing) model would be loaded
    cases = [
        ([str(tmp_path / "nope.txt"), "--model", missing_model], "does not exist"),
        ([str(good), "--model", missing_model, "--json", str(tmp_path / "no-dir" / "o.json")], "--json"),
        ([str(good), "--model", missing_model, "--plot", str(tmp_path / "p.xyz")], "--plot"),
        ([str(good), "--model", missing_model, "--num-pairs", "0"], "--num-pairs"),
    ]
    one = tmp_path / "one.txt"
    one.write_text("just one\n")
    cases.append(([str(one), "--model", missing_model], "at least 2"))
    blank = tmp_path / "blank.txt"
    blank.write_text("a\n\nb\n")
    cases.append(([str(blank), "--model", missing_model], "empty"))
    for argv, msg in cases:
        assert main(["anisotropy", *argv, "--quiet"]) == 2, argv
        err = capsys.readouterr().err
        assert msg in err and "no-model" not in err, (argv, err)
    assert main(["anisotropy", str(good), "--model", missing_model, "--quiet"]) == 2
    assert "no-model" in capsys.readouterr().err          # only now does the model matter


def test_cli_writes_json_and_png(tmp_path, gpt2_dir, capsys):
    src = tmp_path / "t.txt"
    src.write_text("\n".join(TINY_TEXTS) + "\n\n")
    out, png = tmp_path / "a.json", tmp_path / "a.png"
    rc = main(["anisotropy", str(src), "--model", gpt2_dir, "--centering", "none", "corpus",
               "--num-pairs", "64", "--drop-empty", "--json", str(out), "--plot", str(png)])
    assert rc == 0
    cap = capsys.readouterr()
    assert "baseline" in cap.out and "corpus" in cap.out and "dropped 1 empty" in cap.err
    d = json.loads(out.read_text())
    assert d["centerings"] == ["none", "corpus"] and d["num_texts"] == len(TINY_TEXTS)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gpt2_dir)
    assert d["num_tokens"] == sum(len(tok(t)["input_ids"]) for t in TINY_TEXTS)  # GPT-2: no specials
    for stat in ANISOTROPY_STATISTICS:
        for c in ("none", "corpus"):
            v = np.asarray(d[stat][c], float)
            assert v.shape == (3,) and np.all(np.isfinite(v)) and np.all(np.abs(v) <= 1 + 1e-5), (stat, c)
    assert png.read_bytes()[:4] == b"\x89PNG" and 1000 < os.path.getsize(png) < 100_000


def test_minilm_pipeline_layers_are_token_embeddings_of_every_layer(minilm, monkeypatch):
    """compute_anisotropy's layer vectors are token_embeddings(layer=l) of every layer l: the
    statistics of the public kernel on those equal the pipeline's, from one forward pass."""
    from jaxmetrics.data import load_shakespeare
    from jaxmetrics.models import encoding, token_embeddings

    texts = [t for t in load_shakespeare("heldout", limit=300, min_words=5) if len(t.split()) <= 25][:12]
    calls = []
    real = encoding.run_encoder
    monkeypatch.setattr(encoding, "run_encoder", lambda *a, **k: calls.append(k.get("layers")) or real(*a, **k))
    centerings = ("none", "sentence", "batch")
    r = compute_anisotropy(texts, model=minilm, seed=3, centerings=centerings, num_pairs=500,
                           center_batch_size=4)
    assert calls == [tuple(range(minilm.num_layers + 1))]   # every hidden state from one run
    per_layer = [token_embeddings(texts, model=minilm, layer=l, progress=False)
                 for l in range(minilm.num_layers + 1)]
    hidden = np.stack([t.embeddings for t in per_layer])
    mask = per_layer[0].tokens_mask & ~per_layer[0].special_mask
    assert r.num_tokens == int(mask.sum()) and r.num_texts == len(texts)
    for c in centerings:
        direct = layer_similarities(hidden, mask, per_layer[0].input_ids, key=jax.random.key(3), centering=c,
                                    center_batch_size=4, num_pairs=500)
        for stat in ANISOTROPY_STATISTICS:
            np.testing.assert_allclose(np.asarray(getattr(r, stat)[c]), np.asarray(getattr(direct, stat)),
                                       atol=1e-5, err_msg=f"{stat} {c}")
        assert int(direct.num_word_types) == r.num_word_types
