"""The precision convention: every matrix product states ``precision=PRECISION`` (HIGHEST).

On a TPU a float32 product with no stated precision runs in bfloat16 passes (a GPU may use
TF32), so numbers would silently differ from the CPU where the parity tests pin them. The CPU
ignores the setting, so these tests cannot compare numbers: they check the programs instead.

* Statically, every product written in the package (``@``, ``jnp.dot`` / ``matmul`` /
  ``einsum`` / ..., ``lax.dot_general``, Flax ``nnx.Linear`` / ``nnx.Einsum``) names a precision.
* Dynamically, every ``dot_general`` that the headline paths trace -- including the ones inside
  ott-jax and Flax -- carries a precision (not the backend default), recorded while the public
  functions run.
"""
from __future__ import annotations

import ast
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxmetrics
from jaxmetrics._ops import PRECISION

_ROOT = Path(jaxmetrics.__file__).parent
_PRODUCTS = {"dot", "matmul", "einsum", "inner", "tensordot", "vdot", "dot_general", "matvec", "vecmat"}
_LAYERS = {"Linear", "LinearGeneral", "Einsum", "Conv", "ConvTranspose"}


def _static_offenders(files) -> list[str]:
    bad = []
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        name = path.relative_to(_ROOT.parent) if path.is_relative_to(_ROOT.parent) else path.name
        for node in ast.walk(tree):
            where = f"{name}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
                bad.append(f"{where}: '@' cannot state a precision; write jnp.matmul(..., precision=PRECISION)")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
                name = node.func.attr
                product = name in _PRODUCTS and owner_name in {"jnp", "numpy", "lax", "jax"}
                layer = name in _LAYERS and owner_name == "nnx"
                if (product or layer) and not any(k.arg == "precision" for k in node.keywords):
                    bad.append(f"{where}: {owner_name}.{name}(...) without precision=")
    return bad


def test_every_product_in_the_package_states_its_precision():
    files = sorted(p for p in _ROOT.rglob("*.py") if "__pycache__" not in p.parts)
    bad = _static_offenders(files)
    assert not bad, "state the precision of every product (jaxmetrics._ops.PRECISION, docs/sharp_edges.md):\n" + \
        "\n".join(bad)


def test_the_static_check_catches_each_form(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import jax.numpy as jnp\nfrom jax import lax\nfrom flax import nnx\n"
                   "a = x @ y\n"
                   "b = jnp.dot(x, y)\n"
                   "c = jnp.einsum('ij,jk->ik', x, y)\n"
                   "d = lax.dot_general(x, y, (((1,), (0,)), ((), ())))\n"
                   "e = nnx.Linear(2, 3, rngs=r)\n"
                   "ok = jnp.matmul(x, y, precision=P)\n"
                   "ok2 = nnx.Linear(2, 3, precision=P, rngs=r)\n")
    bad = _static_offenders([src])
    assert [b.split(":")[1] for b in bad] == ["4", "5", "6", "7", "8"], bad


@pytest.fixture
def dot_precisions(monkeypatch):
    """Record the ``precision`` of every ``dot_general`` traced while the test runs (JAX's
    caches are cleared first, so already-compiled functions trace again)."""
    seen: list = []
    prim = jax.lax.dot_general_p
    bind = prim.bind

    def recording_bind(*args, **params):
        seen.append(params.get("precision"))
        return bind(*args, **params)

    jax.clear_caches()
    monkeypatch.setattr(prim, "bind", recording_bind)
    yield seen
    monkeypatch.undo()
    jax.clear_caches()


def _all_highest(seen) -> bool:
    return bool(seen) and all(p is not None and tuple(p) == (PRECISION, PRECISION) for p in seen)


def test_the_recorder_sees_a_default_precision_product(dot_precisions):
    import jax.numpy as jnp

    x = jnp.ones((3, 3))
    jax.jit(lambda a: a @ a)(x).block_until_ready()
    assert dot_precisions and not _all_highest(dot_precisions)


@pytest.fixture(scope="module")
def features():
    rng = np.random.default_rng(0)
    return rng.normal(size=(48, 6)).astype(np.float32), (rng.normal(size=(48, 6)) + 0.5).astype(np.float32)


@pytest.mark.parametrize("quantizer", ["kmeans", "drmm", "lattice"])
def test_mauve_products_are_full_float32(dot_precisions, features, quantizer):
    from jaxmetrics.mauve import compute_mauve, fit_quantizer, mauve_loss

    p, q = features
    compute_mauve(p_features=p, q_features=q, num_buckets=4, kmeans_num_redo=1, kmeans_max_iter=20,
                  quantizer=quantizer)
    if quantizer == "kmeans":
        fitted = fit_quantizer([p, q], num_buckets=4, kmeans_num_redo=1, kmeans_max_iter=20)
        jax.grad(lambda a: mauve_loss(references=a, candidates=q, quantizer=fitted, temperature=1.0))(p)
    assert _all_highest(dot_precisions), {str(x) for x in dot_precisions}


def test_similarity_products_are_full_float32(dot_precisions):
    from jaxmetrics.similarity import bertscore_scores, similarity_scores

    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(2, 5, 4)).astype(np.float32), rng.normal(size=(2, 6, 4)).astype(np.float32)
    mx, my = np.ones((2, 5), bool), np.ones((2, 6), bool)
    bertscore_scores(candidates=x, references=y, candidates_mask=mx, references_mask=my)
    for backend in ("log", "ott"):
        similarity_scores(candidates=x, references=y, candidates_mask=mx, references_mask=my, metric="twmd",
                          num_iterations=3, backend=backend)
    assert _all_highest(dot_precisions), {str(x) for x in dot_precisions}


def test_mark_evaluate_and_fid_products_are_full_float32(dot_precisions, features):
    from jaxmetrics.mark_evaluate import FIDState, fid, improved_precision_recall, mark_evaluate_scores

    p, q = features
    mark_evaluate_scores(references=p, candidates=q)
    improved_precision_recall(references=p, candidates=q)
    fid(references=p, candidates=q, use_float64=False)
    FIDState.empty(6).update(references=p, candidates=q).compute()
    assert _all_highest(dot_precisions), {str(x) for x in dot_precisions}


def test_diversity_products_are_full_float32(dot_precisions):
    from jaxmetrics.diversity import embedding_cosine_diversity, ngram_cosine_diversity

    ngram_cosine_diversity([["a b c a", "b c d", "a b"], ["x y", "x y z", "z y x"]], n_max=2)
    embedding_cosine_diversity(np.random.default_rng(2).normal(size=(2, 3, 4)).astype(np.float32))
    assert _all_highest(dot_precisions), {str(x) for x in dot_precisions}


@pytest.mark.parametrize("kind", ["gpt2", "bert"])
def test_model_forward_passes_and_log_probs_are_full_float32(dot_precisions, tiny_checkpoint_dir, kind):
    from jaxmetrics.lm import perplexity
    from jaxmetrics.models import load_model, sentence_embeddings

    lm = load_model(tiny_checkpoint_dir(kind))
    sentence_embeddings(["To be, or not to be.", "The quick brown fox."], model=lm, progress=False)
    if kind == "gpt2":
        perplexity([np.arange(1, 40) % 50], model=lm, max_length=16, stride=8)
    assert _all_highest(dot_precisions), {str(x) for x in dot_precisions}
