"""Paired significance between systems (``jaxmetrics.compare_systems``).

* definition: approximate randomization against the exact permutation test (all 2^n swaps) on a
  small case; the paired bootstrap's interval against ``scipy.stats.bootstrap(paired=True)``;
* error rates on real text (all-MiniLM-L6-v2 BERTScore F1 against Shakespeare references):
  two systems from the same pool (each reference with one random word dropped, drawn twice)
  give p < 0.05 in at most 8 % of 200 repetitions (measured: 0.5 % bootstrap, 1 %
  randomization); a system with 30 % of its rows degraded (the sentence's first third repeated)
  gives p < 0.05 in at least 80 % at n = 500 (measured: 100 % with both methods);
* bad input names the argument.
"""
import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics import compare_systems
from jaxmetrics.confidence import holm_adjust
from realtext_family import realtext_family  # noqa: F401 (fixture)


def test_randomization_matches_the_exact_permutation_test():
    rng = np.random.default_rng(0)
    a = rng.normal(size=10) + 0.5
    b = rng.normal(size=10)
    d = a - b
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=10)))
    exact = np.mean(np.abs((signs * d).mean(1)) >= abs(d.mean()) - 1e-12)
    out = compare_systems(jnp.mean, {"a": jnp.asarray(a, jnp.float32), "b": jnp.asarray(b, jnp.float32)},
                          key=jax.random.key(0), num_resamples=20_000, method="randomization")
    assert float(out.p_value[0, 1]) == pytest.approx(exact, abs=0.01)
    assert float(out.p_value[0, 1]) == float(out.p_value[1, 0]) and float(out.p_value[0, 0]) == 1.0
    assert float(out.difference[0, 1]) == pytest.approx(d.mean(), rel=1e-5)


def test_paired_bootstrap_interval_matches_scipy():
    from scipy.stats import bootstrap

    rng = np.random.default_rng(1)
    b = rng.lognormal(size=60)
    a = b + rng.normal(0.2, 0.5, size=60)
    out = compare_systems(jnp.mean, [jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)],
                          key=jax.random.key(2), num_resamples=20_000)
    ref = bootstrap((a, b), lambda x, y: np.mean(x) - np.mean(y), paired=True, n_resamples=20_000,
                    method="percentile", random_state=np.random.default_rng(0)).confidence_interval
    width = ref.high - ref.low
    assert abs(float(out.low[0, 1]) - ref.low) < 0.03 * width and abs(float(out.high[0, 1]) - ref.high) < 0.03 * width
    assert out.names == ("system0", "system1")
    # antisymmetric
    assert float(out.low[1, 0]) == pytest.approx(-float(out.high[0, 1]), abs=1e-5)


def test_pytree_items_and_three_systems():
    nll = jnp.asarray(np.random.default_rng(3).gamma(5.0, size=(40,)), jnp.float32)
    count = jnp.full(40, 10.0)
    ppl = lambda d: jnp.exp(d["nll"].sum() / d["count"].sum())
    systems = {"x": {"nll": nll, "count": count}, "y": {"nll": nll * 1.5, "count": count},
               "z": {"nll": nll, "count": count}}
    out = compare_systems(ppl, systems, key=jax.random.key(0), num_resamples=500)
    assert out.scores.shape == (3,) and out.p_value.shape == (3, 3)
    assert float(out.p_value[0, 2]) == 1.0                 # identical systems
    assert [(d.better, d.worse) for d in out.significant()] == [("y", "x"), ("y", "z")]


@pytest.mark.parametrize("systems,kw,match", [
    ({"a": jnp.ones(5)}, {}, "systems: need at least 2"),
    ({"a": jnp.ones(5), "b": jnp.ones(6)}, {}, "systems['b']: every system needs the same items"),
    ({"a": jnp.ones(5), "b": jnp.ones(5)}, {"method": "sign"}, "method"),
    ({"a": jnp.ones(5), "b": jnp.ones(5)}, {"num_resamples": 1}, "num_resamples"),
    ({"a": jnp.ones((5, 2)), "b": jnp.ones((5, 2))}, {"statistic": lambda x: x.mean(0)}, "statistic: must return a scalar"),
])
def test_bad_input_names_the_argument(systems, kw, match):
    stat = kw.pop("statistic", jnp.mean)
    with pytest.raises(ValueError, match=re.escape(match)):
        compare_systems(stat, systems, key=jax.random.key(0), **kw)
    with pytest.raises(TypeError, match="systems: expected a dict"):
        compare_systems(jnp.mean, jnp.ones(3), key=jax.random.key(0))


# ------------------------------------------------------------------ Holm's correction of a leaderboard
def test_holm_adjust_is_the_step_down_definition():
    """Worked by hand: m = 5 p-values sorted 0.005 < 0.01 < 0.03 < 0.04 < 0.2 are multiplied by
    5, 4, 3, 2, 1 (0.025, 0.04, 0.09, 0.08, 0.2), made non-decreasing (0.025, 0.04, 0.09, 0.09,
    0.2) and put back in the input's order; a product above 1 is capped."""
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    np.testing.assert_allclose(holm_adjust(p), [0.04, 0.09, 0.09, 0.025, 0.2], rtol=1e-12)
    np.testing.assert_allclose(holm_adjust([0.3, 0.6, 0.01]), [0.6, 0.6, 0.03], rtol=1e-12)   # 0.01·3, 0.3·2, 0.6·1
    np.testing.assert_allclose(holm_adjust([0.5, 0.5, 0.5]), [1.0, 1.0, 1.0])                  # 1.5 capped at 1
    assert holm_adjust([0.02]).tolist() == [0.02]                                              # one test: itself
    # the [S, S] matrix of a comparison: its pairs above the diagonal are the family
    matrix = np.array([[1.0, 0.01, 0.04, 0.2], [0.01, 1.0, 0.03, 0.005], [0.04, 0.03, 1.0, 0.5],
                       [0.2, 0.005, 0.5, 1.0]])
    out = holm_adjust(matrix)
    pairs = np.triu_indices(4, 1)
    np.testing.assert_allclose(out[pairs], holm_adjust(matrix[pairs]), rtol=1e-12)
    np.testing.assert_array_equal(out, out.T)
    assert np.all(np.diag(out) == 1.0)
    # JAX in, JAX out (traceable), the same numbers
    as_jax = jax.jit(holm_adjust)(jnp.asarray(matrix, jnp.float32))
    assert isinstance(as_jax, jax.Array)
    np.testing.assert_allclose(np.asarray(as_jax), out, rtol=1e-6)


@pytest.mark.parametrize("p_values,match", [
    ([], "p_values: expected a non-empty 1-D family"),
    (np.ones((2, 3)), "p_values: expected a non-empty 1-D family or a square"),
    ([0.1, 1.5], "p_values: every p-value must be in [0, 1]"),
    ([0.1, float("nan")], "p_values: every p-value must be in [0, 1]"),
])
def test_holm_adjust_bad_input_names_the_argument(p_values, match):
    with pytest.raises(ValueError, match=re.escape(match)):
        holm_adjust(p_values)


def test_leaderboards_of_more_than_two_systems_are_holm_adjusted(realtext_family):
    """Four systems scored on the same 60 real sentences (all-MiniLM-L6-v2 features of the plays:
    each system's cosine with human sentence i): the six pairwise p-values are Holm-adjusted, the
    raw ones kept, and the adjusted ones decide what is significant. Two systems: no correction."""
    fam = realtext_family(60, members=("human", "shuffle25", "shuffle50", "repeated"))
    p = fam["human"][0] / np.linalg.norm(fam["human"][0], axis=1, keepdims=True)
    scores = {name: jnp.asarray(np.sum(p * (q / np.linalg.norm(q, axis=1, keepdims=True)), axis=1), jnp.float32)
              for name, (_, q) in fam.items()}
    for method in ("bootstrap", "randomization"):
        out = compare_systems(jnp.mean, scores, key=jax.random.key(0), num_resamples=400, method=method)
        assert out.correction == "holm" and out.adjusted_p_value.shape == (4, 4)
        np.testing.assert_allclose(out.adjusted_p_value, holm_adjust(np.asarray(out.p_value, np.float64)), rtol=1e-6)
        assert np.all(np.asarray(out.adjusted_p_value) >= np.asarray(out.p_value))
        # the pair with the smallest raw p-value is multiplied by 6: at a level between the two
        # it is significant raw but not after the correction
        raw = np.where(np.eye(4, dtype=bool), np.inf, np.asarray(out.p_value))
        i, j = np.unravel_index(np.argmin(raw), raw.shape)
        level = (float(out.p_value[i, j]) + float(out.adjusted_p_value[i, j])) / 2
        assert float(out.p_value[i, j]) < level < float(out.adjusted_p_value[i, j])
        pairs = {frozenset((d.better, d.worse)) for d in out.significant(level)}
        assert frozenset((out.names[i], out.names[j])) not in pairs
        assert all(d.p_value <= d.adjusted_p_value < 0.05 for d in out.significant(0.05))
        assert parse_correction(out.signature) == "holm"
    two = compare_systems(jnp.mean, {k: scores[k] for k in ("human", "repeated")}, key=jax.random.key(0),
                          num_resamples=400)
    assert two.correction == "none" and parse_correction(two.signature) == "none"
    np.testing.assert_array_equal(two.adjusted_p_value, two.p_value)


def parse_correction(signature: str) -> str:
    from jaxmetrics.results import parse_signature

    return parse_signature(signature)["correction"]


# ------------------------------------------------------------------ error rates on real text
def _repeat(s: str) -> str:
    w = s.split()
    head = w[: max(3, len(w) // 3)]
    return " ".join((head * (len(w) // len(head) + 1))[: len(w)])


@pytest.fixture(scope="module")
def real_scores(minilm):
    """BERTScore F1 of 500 Shakespeare references against: two candidates each with one random
    word dropped (two draws: the same system twice), and the degraded version."""
    from jaxmetrics import compute_similarity
    from jaxmetrics.data import load_shakespeare

    sents = []
    for speech in load_shakespeare("train"):
        sents += [s for s in re.split(r"(?<=[.!?])\s+", speech) if 8 <= len(s.split()) <= 30]
    refs = sents[:500]
    rng = np.random.default_rng(0)

    def drop_one(s):
        w = s.split()
        k = int(rng.integers(len(w)))
        return " ".join(w[:k] + w[k + 1:])

    out = {}
    for name, cands in (("a", [drop_one(s) for s in refs]), ("b", [drop_one(s) for s in refs]),
                        ("degraded", [_repeat(s) for s in refs])):
        out[name] = np.asarray(compute_similarity(references=refs, candidates=cands, model=minilm,
                                                  metric="bertscore").f1, np.float32)
    return out


def _rejections(pairs_of_systems, method):
    run = jax.jit(lambda a, b, k: compare_systems(jnp.mean, {"a": a, "b": b}, key=k, num_resamples=1000,
                                                  method=method).p_value[0, 1])
    keys = jax.random.split(jax.random.key(7), len(pairs_of_systems))
    return np.mean([float(run(a, b, k)) < 0.05 for (a, b), k in zip(pairs_of_systems, keys)])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["bootstrap", "randomization"])
def test_error_rates_on_real_text(real_scores, method):
    """Type I and power of the paired tests on real BERTScore F1 (200 draws of n = 250 of the 500):
    ``slow`` (``make test-all``); the tests' other behaviour is tested above."""
    rng = np.random.default_rng(1)
    n, reps = 250, 200
    same, worse = [], []
    for _ in range(reps):
        rows = rng.choice(500, n, replace=False)
        a, b = real_scores["a"][rows], real_scores["b"][rows]
        degraded = np.where(rng.random(n) < 0.3, real_scores["degraded"][rows], b)
        same.append((a, b))
        worse.append((a, degraded))
    type_one = _rejections(same, method)
    power = _rejections(worse, method)
    assert type_one <= 0.08, type_one
    assert power >= 0.8, power
