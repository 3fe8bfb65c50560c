"""Mixed precision by choice: ``dtype=`` on every function that takes a model, ``--dtype`` on the
command line, and bfloat16 within the deviation that docs/sharp_edges.md states, on real text
(the bundled Shakespeare sentences and the all-MiniLM-L6-v2 encoder).

The documented bounds (docs/sharp_edges.md, measured by benchmarks/mixed_precision.py):
sentence vectors 1 - cos <= 1e-3; BERTScore / TWMD F1 within 5e-3 of float32, and the
correlation of BERTScore with human scores (STS-style pairs) within 1e-3 of float32's; per-text
perplexity within 1 % (relative) and corpus perplexity within 0.1 %. bfloat16 token vectors
handed to the similarity kernels are scored in float32 (bfloat16 operands, float32 sums).
"""
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxmetrics import compute_similarity, perplexity, text_perplexities
from jaxmetrics.cli import main
from jaxmetrics.data import demo_model_dir, load_shakespeare
from jaxmetrics.models import load_model, resolve_model, sentence_embeddings
from jaxmetrics.models.loader import MODEL_DTYPES, check_dtype
from jaxmetrics.commands._util import DTYPE_CHOICES

VECTOR_COS_BOUND = 1e-3
F1_BOUND = 5e-3
TEXT_PPL_REL_BOUND = 1e-2
CORPUS_PPL_REL_BOUND = 1e-3
STS_PEARSON_BOUND = 1e-3


def _sentences(split: str, n: int) -> list[str]:
    out = []
    for speech in load_shakespeare(split):
        out += [s for s in re.split(r"(?<=[.!?])\s+", speech) if 8 <= len(s.split()) <= 30]
        if len(out) >= n:
            return out[:n]
    raise AssertionError("not enough sentences")


@pytest.fixture(scope="module")
def minilm_bf16(minilm_dir):
    return load_model(minilm_dir, dtype="bfloat16")


def test_the_cli_choices_are_the_model_dtypes():
    assert DTYPE_CHOICES == MODEL_DTYPES


@pytest.mark.parametrize("bad", ["float16", "int8", "bf16", 3])
def test_an_unknown_dtype_is_refused_naming_the_argument(bad, minilm_dir):
    with pytest.raises(ValueError, match=r"^dtype: expected one of 'float32', 'bfloat16'"):
        check_dtype(bad)
    with pytest.raises(ValueError, match=r"^dtype: "):
        load_model(minilm_dir, dtype=bad)
    with pytest.raises(ValueError, match=r"^dtype: "):
        compute_similarity(references=["a b"], candidates=["a b"], model=minilm_dir, dtype=bad)


def test_a_path_is_loaded_in_the_dtype_and_a_loaded_model_must_match(minilm, minilm_dir, minilm_bf16):
    lm = resolve_model(minilm_dir, dtype="bfloat16")
    leaves = jax.tree.leaves(nnx.state(lm.model))
    assert {x.dtype for x in leaves} == {jnp.dtype(jnp.bfloat16)}
    assert resolve_model(minilm_bf16) is minilm_bf16                  # None: the model's own
    assert resolve_model(minilm_bf16, dtype=jnp.bfloat16) is minilm_bf16
    assert resolve_model(minilm, dtype="float32") is minilm
    with pytest.raises(ValueError, match=r"^dtype: the model was loaded in float32, not bfloat16"):
        resolve_model(minilm, dtype="bfloat16")
    with pytest.raises(ValueError, match=r"^dtype: the model was loaded in bfloat16, not float32"):
        sentence_embeddings(["a b c"], model=minilm_bf16, dtype="float32", progress=False)


def test_bfloat16_vectors_and_scores_stay_float32_and_near_float32_on_real_text(minilm, minilm_bf16):
    refs = _sentences("train", 24)
    cands = refs[1:] + refs[:1]
    a = sentence_embeddings(refs, model=minilm, progress=False)
    b = sentence_embeddings(refs, model=minilm_bf16, progress=False)
    assert a.dtype == b.dtype == np.float32
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert float((1 - cos).max()) <= VECTOR_COS_BOUND
    assert not np.array_equal(a, b)          # bfloat16 really ran
    for metric in ("bertscore", "twmd"):
        f32 = compute_similarity(references=refs, candidates=cands, model=minilm, metric=metric).f1
        b16 = compute_similarity(references=refs, candidates=cands, model=minilm_bf16, metric=metric).f1
        assert np.abs(np.asarray(f32) - np.asarray(b16)).max() <= F1_BOUND, metric


@pytest.mark.real_model
def test_bfloat16_perplexities_of_real_text_within_the_documented_deviation():
    f32 = load_model(demo_model_dir())
    texts = _sentences("heldout", 16)
    a = text_perplexities(texts, model=f32).perplexities
    b = text_perplexities(texts, model=demo_model_dir(), dtype="bfloat16").perplexities
    assert np.abs(b / a - 1).max() <= TEXT_PPL_REL_BOUND
    ids = np.asarray(f32.tokenizer(" ".join(texts))["input_ids"])
    pa = perplexity(ids, model=f32, max_length=128, stride=64).perplexity
    pb = perplexity(ids, model=demo_model_dir(), max_length=128, stride=64, dtype="bfloat16").perplexity
    assert abs(pb / pa - 1) <= CORPUS_PPL_REL_BOUND


def test_cli_dtype_bfloat16_matches_float32_within_the_documented_deviation(minilm_dir, tmp_path, capsys):
    refs = _sentences("train", 12)
    (tmp_path / "r.txt").write_text("\n".join(refs) + "\n")
    (tmp_path / "c.txt").write_text("\n".join(refs[1:] + refs[:1]) + "\n")
    f1 = {}
    for dtype in ("float32", "bfloat16"):
        out = tmp_path / f"{dtype}.json"
        argv = ["similarity", "--references", str(tmp_path / "r.txt"), "--candidates", str(tmp_path / "c.txt"),
                "--model", str(minilm_dir), "--metric", "bertscore", "--json", str(out), "--no-progress"]
        assert main(argv + (["--dtype", dtype] if dtype == "bfloat16" else [])) == 0
        doc = json.loads(out.read_text())
        assert f"dtype:{dtype}" in doc["signature"]
        f1[dtype] = np.asarray(doc["f1"])
    capsys.readouterr()
    assert np.abs(f1["float32"] - f1["bfloat16"]).max() <= F1_BOUND
    assert not np.array_equal(f1["float32"], f1["bfloat16"])


def test_bfloat16_token_vectors_of_real_text_are_scored_in_float32(minilm):
    from jaxmetrics.models import encode
    from jaxmetrics.similarity import bertscore_scores, similarity_scores

    enc = encode(_sentences("train", 16), model=minilm, tokens=True, progress=False)
    v, m = enc.padded(0), enc.tokens_mask
    pairs = dict(candidates_mask=m[:8], references_mask=m[8:])
    for name, score in (("bertscore", bertscore_scores), ("twmd", similarity_scores)):
        f32 = score(candidates=v[:8], references=v[8:], **pairs)
        b16 = score(candidates=jnp.asarray(v[:8], jnp.bfloat16), references=jnp.asarray(v[8:], jnp.bfloat16), **pairs)
        assert {x.dtype for x in b16} == {jnp.dtype(jnp.float32)}, name   # not bfloat16 scores
        delta = np.abs(np.asarray(b16.f1) - np.asarray(f32.f1)).max()
        assert 0 < delta <= F1_BOUND, (name, delta)       # only the vectors' rounding moves them


def test_bfloat16_keeps_the_correlation_with_human_scores_on_real_pairs(minilm, minilm_bf16):
    from jaxmetrics.data import synthetic_scored_pairs

    rows = synthetic_scored_pairs(24)
    human = np.array([r[2] for r in rows])
    f1, r = {}, {}
    for name, lm in (("float32", minilm), ("bfloat16", minilm_bf16)):
        f1[name] = np.asarray(compute_similarity(references=[x[0] for x in rows], candidates=[x[1] for x in rows],
                                                 model=lm, metric="bertscore").f1)
        r[name] = float(np.corrcoef(f1[name], human)[0, 1])
    assert r["float32"] > 0.5                             # the task is one BERTScore can rank
    assert abs(r["float32"] - r["bfloat16"]) <= STS_PEARSON_BOUND, r
    assert 0 < np.abs(f1["float32"] - f1["bfloat16"]).max() <= F1_BOUND
