"""The precision convention: every matrix product states ``precision=PRECISION`` (HIGHEST).

On a TPU a float32 product with no stated precision runs in bfloat16 passes (a GPU may use
TF32), so numbers would silently differ from the CPU where the parity tests pin them. The CPU
ignores the setting, so these tests cannot compare numbers: they check the programs instead.

* Statically, every product written in the package (``@``, ``jnp.dot`` / ``matmul`` /
  ``einsum`` / ..., ``lax.dot_general``, Flax ``nnx.Linear`` / ``nnx.Einsum``) names a precision.
* Dynamically, every ``dot_general`` that the headline paths trace -- including the ones inside
  ott-jax and Flax -- carries a precision (not the backend default), recorded while the public
  functions run.
* Mixed precision: in a ``dtype=bfloat16`` model (BERT, GPT-2, Llama; full forward and cached
  decode step) and in the similarity and distance kernels given bfloat16 vectors, every product
  takes bfloat16 operands and accumulates in float32 (``preferred_element_type``), and no sum,
  max, exponential or root reads a bfloat16 value (layer norms, softmax, vector norms are
  float32); float32 programs stay float32 throughout. Read from the traced programs.
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
                func = node.func.attr
                product = func in _PRODUCTS and owner_name in {"jnp", "numpy", "lax", "jax"}
                layer = func in _LAYERS and owner_name == "nnx"
                if (product or layer) and not any(k.arg == "precision" for k in node.keywords):
                    bad.append(f"{where}: {owner_name}.{func}(...) without precision=")
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


# ------------------------------------------------------------------ mixed precision (bfloat16)
# A dtype=bfloat16 model and bfloat16 vectors follow the mixed-precision contract: every product
# takes bfloat16 operands and accumulates in float32 (``preferred_element_type``), and the
# reductions around the products (layer norms, softmax, vector norms) run in float32. These tests
# read the traced programs (``jax.make_jaxpr``: tracing only, nothing is compiled).

_FLOAT_REDUCTIONS = {"reduce_sum", "reduce_max", "reduce_min", "exp", "log", "rsqrt", "sqrt", "cumsum"}


def _equations(jaxpr):
    """Every equation of ``jaxpr`` and of the programs nested in it (jit, custom_jvp, scan, ...)."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if hasattr(sub, "eqns"):
                    yield from _equations(sub)
                elif hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    yield from _equations(sub.jaxpr)


def _dtypes(variables) -> list[str]:
    return [str(getattr(v.aval, "dtype", "")) for v in variables]


def _products(jaxpr) -> list[tuple]:
    """``(operand dtypes, preferred_element_type, result dtype)`` of every ``dot_general``."""
    return [(tuple(_dtypes(e.invars)), str(e.params.get("preferred_element_type")), _dtypes(e.outvars)[0])
            for e in _equations(jaxpr) if e.primitive.name == "dot_general"]


def _half_precision_reductions(jaxpr) -> list[str]:
    """Reductions, exponentials and roots that read a bfloat16 operand (each should be float32)."""
    return [f"{e.primitive.name}{_dtypes(e.invars)}" for e in _equations(jaxpr)
            if e.primitive.name in _FLOAT_REDUCTIONS and "bfloat16" in _dtypes(e.invars)]


def _assert_mixed_precision(jaxpr, *, operands: str = "bfloat16"):
    products = _products(jaxpr)
    assert products, "no product traced"
    # float32 operands: an unstated preferred_element_type (None) is float32 accumulation as well
    accumulations = {"float32", "None"} if operands == "float32" else {"float32"}
    wrong = [p for p in products if p[0] != (operands, operands) or p[1] not in accumulations or p[2] != "float32"]
    assert not wrong, f"products not ({operands} x {operands} -> float32): {sorted(set(wrong))}"
    assert not _half_precision_reductions(jaxpr), sorted(set(_half_precision_reductions(jaxpr)))


def _tiny_module(kind: str, dtype):
    import jax.numpy as jnp
    import transformers as tf
    from flax import nnx

    from jaxmetrics.models.bert import Bert
    from jaxmetrics.models.gpt2 import GPT2
    from jaxmetrics.models.llama import Llama

    if kind == "bert":
        cfg = tf.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=32, max_position_embeddings=16)
        return Bert(cfg, dtype=jnp.dtype(dtype), rngs=nnx.Rngs(0))
    if kind == "gpt2":
        cfg = tf.GPT2Config(vocab_size=40, n_positions=16, n_embd=16, n_layer=2, n_head=2)
        return GPT2(cfg, dtype=jnp.dtype(dtype), rngs=nnx.Rngs(0))
    cfg = tf.LlamaConfig(vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
    return Llama(cfg, dtype=jnp.dtype(dtype), rngs=nnx.Rngs(0))


def _forward_jaxpr(module, *, cached: bool = False):
    """The traced program of ``module``'s forward pass on a ``[2, 6]`` batch (hidden states and
    logits), or of one cached decode step."""
    import jax.numpy as jnp
    from flax import nnx

    graphdef, state = nnx.split(module)
    ids, mask = jnp.ones((2, 6), jnp.int32), jnp.ones((2, 6), bool)

    def run(state, ids, mask):
        model = nnx.merge(graphdef, state)
        if cached:
            cache = model.init_cache(2, 8)
            return model.decode_step(ids[:, :1], jnp.zeros((2, 1), jnp.int32), jnp.ones((2, 8), bool), cache, 0)
        return model(ids, mask, output_hidden_states=True)

    return jax.make_jaxpr(run, return_shape=True)(state, ids, mask)


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_a_bfloat16_forward_pass_multiplies_bfloat16_and_accumulates_in_float32(kind):
    jaxpr, out = _forward_jaxpr(_tiny_module(kind, "bfloat16"))
    _assert_mixed_precision(jaxpr)                        # dense layers, attention, LM head
    names = {e.primitive.name for e in _equations(jaxpr)}
    assert {"exp", "reduce_max", "reduce_sum", "rsqrt"} <= names   # softmax and norms were traced (in float32)
    assert str(out.last_hidden_state.dtype) == "bfloat16"          # activations in the compute dtype
    if kind != "bert":
        assert str(out.logits.dtype) == "float32"


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_a_bfloat16_decode_step_multiplies_bfloat16_and_accumulates_in_float32(kind):
    jaxpr, (logits, _) = _forward_jaxpr(_tiny_module(kind, "bfloat16"), cached=True)
    _assert_mixed_precision(jaxpr)                        # incl. the one-query attention's float32 sums
    assert str(logits.dtype) == "float32"


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_a_float32_forward_pass_stays_float32(kind):
    jaxpr, out = _forward_jaxpr(_tiny_module(kind, "float32"))
    _assert_mixed_precision(jaxpr, operands="float32")
    assert {str(h.dtype) for h in out.hidden_states} == {"float32"}


def _bf16_pairs():
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.normal(size=(2, 5, 8)), jnp.bfloat16)
    y = jnp.asarray(rng.normal(size=(2, 6, 8)), jnp.bfloat16)
    return x, y, jnp.ones((2, 5), bool), jnp.ones((2, 6), bool)


@pytest.mark.parametrize("metric", ["bertscore", "cosine", "cka", "rwmd", "twmd", "trwmd"])
def test_the_similarity_product_of_bfloat16_vectors_accumulates_in_float32(metric):
    from jaxmetrics.similarity import batch_bertscore, batch_similarity

    x, y, mx, my = _bf16_pairs()
    if metric == "bertscore":
        fn = lambda x, y: batch_bertscore(candidates=x, references=y, candidates_mask=mx, references_mask=my)  # noqa: E731
    else:
        fn = lambda x, y: batch_similarity(candidates=x, references=y, candidates_mask=mx,  # noqa: E731
                                           references_mask=my, metric=metric, num_iterations=2)
    jaxpr = jax.make_jaxpr(fn)(x, y)
    _assert_mixed_precision(jaxpr)
    assert {str(a.dtype) for a in jaxpr.out_avals} == {"float32"}    # P, R, F


def test_squared_distances_of_bfloat16_rows_accumulate_in_float32():
    from jaxmetrics._ops import squared_distances

    x, y, _, _ = _bf16_pairs()
    jaxpr = jax.make_jaxpr(lambda a, b: squared_distances(a, b))(x[0], y[0])
    _assert_mixed_precision(jaxpr)
    assert str(jaxpr.out_avals[0].dtype) == "float32"


def test_the_mixed_precision_check_catches_a_bfloat16_product_and_a_bfloat16_sum():
    import jax.numpy as jnp

    x = jnp.ones((3, 3), jnp.bfloat16)
    with pytest.raises(AssertionError, match="products not"):
        _assert_mixed_precision(jax.make_jaxpr(lambda a: jnp.matmul(a, a, precision=PRECISION))(x))
    ok = lambda a: jnp.matmul(a, a, precision=PRECISION, preferred_element_type=jnp.float32)  # noqa: E731
    _assert_mixed_precision(jax.make_jaxpr(ok)(x))
    with pytest.raises(AssertionError, match="exp"):          # a softmax in bfloat16
        _assert_mixed_precision(jax.make_jaxpr(lambda a: ok(a) + jax.nn.softmax(a))(x))
