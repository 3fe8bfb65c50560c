"""decTest end to end: generate response sets over a sweep of a decoding parameter, then test.

:func:`self_decoding_test` calls a *tester* ``generate(contexts, d, key) -> sets`` once per
parameter value ``d`` (softmax temperature, top-p), scores all sets with every metric and
correlates them with ``d``. Testers: :func:`lm_generator` (a causal LM sampled with
:func:`jaxmetrics.lm.generate`) and :func:`unigram_generator` (a toy with a known ordering).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_choice, check_int, check_key
from jaxmetrics.diversity.report import DiversityTestReport, run_diversity_test
from jaxmetrics.diversity.set_metrics import SetMetricValues, compute_set_metrics
from jaxmetrics.results import Result, extend_signature, key_id, static_field

__all__ = ["SelfDecodingTestResult", "self_decoding_test", "lm_generator", "unigram_generator"]


class SelfDecodingTestResult(Result):
    """A decTest on generated response sets (:func:`self_decoding_test`).

    Attributes:
      report: the :class:`DiversityTestReport` (``test="dec"``).
      params: float64 ``[S]`` the parameter each set was generated with.
      values: :class:`SetMetricValues` of the sets.
      response_sets: the ``S = P * C`` generated sets (tuples of texts), parameter-major.
      signature: what the numbers depend on (static, not in the repr; :mod:`jaxmetrics.results`):
        ``metric:self-decoding-test``, the values' (``metrics``, the encoder), the ``key``, the
        ``params`` and the generator by its name.

    Examples:
      >>> import jax
      >>> gen = unigram_generator(vocab_size=30, length=8, n_responses=4)
      >>> self_decoding_test(gen, ["c"] * 6, [0.5, 2.0, 8.0], ["distinct-1"], key=jax.random.key(0))
      SelfDecodingTestResult(report=DiversityTestReport(rows=tuple[1], test='dec', num_sets=18), params=f64[18], values=SetMetricValues(names=('distinct-1',), values=f64[1,18]), response_sets=tuple[18])
    """

    report: DiversityTestReport
    params: np.ndarray
    values: SetMetricValues
    response_sets: tuple = static_field()
    signature: str = static_field(default="", repr=False)


def self_decoding_test(generate: Callable, contexts: Sequence[str], params: Sequence[float],
                       metrics: Sequence[str], *, key: jax.Array, model: Any = None, dtype: Any = None
                       ) -> SelfDecodingTestResult:
    """Generate response sets over a sweep of a decoding parameter and run decTest.

    For every parameter value ``d`` (e.g. temperature) ``generate(contexts, d, key)`` must
    return one response set (list of texts) per context; all sets are scored by every
    metric and correlated with ``d`` (Spearman, Pearson).

    Args:
      generate: ``(contexts, d, key) -> list[list[str]]``; e.g. :func:`lm_generator` (a causal
        LM sampler) or :func:`unigram_generator`.
      contexts: ``C`` prompts.
      params: ``P >= 2`` parameter values.
      metrics: metric names (see :func:`compute_set_metrics`).
      key: ``jax.random`` key (split once per parameter value).
      model: encoder for the neural metrics.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`SelfDecodingTestResult` (the report, the ``P * C`` sets, their parameters and
      metric values).

    Examples:
      >>> gen = unigram_generator(vocab_size=30, length=8, n_responses=4)
      >>> res = self_decoding_test(gen, ["c"] * 6, [0.5, 2.0, 8.0], ["distinct-1"],
      ...                          key=jax.random.key(0))
      >>> res.report["distinct-1"].spearman > 0.8
      True
    """
    check_key(key)
    if isinstance(contexts, str):
        raise TypeError("contexts: expected a list of strings, got str")
    contexts = list(contexts)
    if not contexts:
        raise ValueError("contexts: empty")
    params = [float(p) for p in params]
    if len(params) < 2:
        raise ValueError(f"params: need at least 2 parameter values, got {len(params)}")
    sets, labels = [], []
    for p, k in zip(params, jax.random.split(key, len(params))):
        out = generate(contexts, p, k)
        if len(out) != len(contexts):
            raise ValueError(f"generate: returned {len(out)} sets for {len(contexts)} contexts")
        sets.extend([tuple(s) for s in out])
        labels.extend([p] * len(out))
    values = compute_set_metrics(sets, metrics, model=model, dtype=dtype)
    report = run_diversity_test(None, labels, metrics, test="dec", values=values)
    generator = getattr(generate, "__qualname__", None) or type(generate).__name__
    sig = extend_signature(values.signature, metric="self-decoding-test", key=key_id(key), params=tuple(params),
                           generator=generator.replace("<", "").replace(">", ""))
    return SelfDecodingTestResult(report=report, params=np.asarray(labels, np.float64),
                                  values=values, response_sets=tuple(sets), signature=sig)


def lm_generator(*, model: Any, n_responses: int = 5, max_new_tokens: int = 20,
                 parameter: str = "temperature", output: str = "text", dtype: Any = None,
                 **sampling_kw) -> Callable:
    """A decTest tester backed by a causal LM and :func:`jaxmetrics.lm.generate`.

    Returns ``generate(contexts, d, key) -> list[list[str]]``: every context is tokenized,
    repeated ``n_responses`` times and sampled in one batch with ``temperature = d`` (or
    ``top_p = d`` with ``parameter="top_p"``); responses are the generated continuations only
    (prompt excluded), decoded to text (``output="text"``) or written as space-separated
    token ids (``output="ids"``, for n-gram metrics on model tokens as in the MAUVE paper).

    Args:
      model: a causal LM: a loaded model, a hub id or a local checkpoint directory (resolved
        with :func:`jaxmetrics.models.resolve_model`).
      n_responses: responses per set (>= 2).
      max_new_tokens: tokens sampled per response.
      parameter: ``"temperature"`` or ``"top_p"``.
      output: ``"text"`` or ``"ids"``.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).
      **sampling_kw: passed to :func:`jaxmetrics.lm.generate` (e.g. ``top_k``,
        ``eos_token_id``).

    Returns:
      the tester ``(contexts, d, key) -> list[list[str]]``.

    Examples:
      >>> import tempfile
      >>> from jaxmetrics.models import load_model
      >>> from jaxmetrics.testing import tiny_checkpoint
      >>> lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
      >>> gen = lm_generator(model=lm, n_responses=2, max_new_tokens=3, output="ids", eos_token_id=None)
      >>> sets = gen(["hello there"], 1.0, jax.random.key(0))
      >>> len(sets), len(sets[0]), len(sets[0][0].split())
      (1, 2, 3)
    """
    from jaxmetrics.lm import generate
    from jaxmetrics.models import resolve_model

    check_int(n_responses, "n_responses", minimum=2)
    check_int(max_new_tokens, "max_new_tokens", minimum=1)
    check_choice(parameter, "parameter", ("temperature", "top_p"))
    check_choice(output, "output", ("text", "ids"))
    lm = resolve_model(model, causal=True, purpose="lm_generator", dtype=dtype)

    def sample_sets(contexts, d, key):
        prompts = [np.asarray(lm.tokenizer(c)["input_ids"], np.int32) for c in contexts]
        batch = [p for p in prompts for _ in range(n_responses)]
        out = generate(batch, model=lm, key=key, max_new_tokens=max_new_tokens,
                       **{parameter: float(d)}, **sampling_kw)
        seqs = out.sequences(include_prompt=False)
        if output == "ids":
            texts = [" ".join(str(int(t)) for t in s) for s in seqs]
        else:
            texts = [lm.tokenizer.decode(s, skip_special_tokens=True) for s in seqs]
        return [texts[i * n_responses:(i + 1) * n_responses] for i in range(len(contexts))]

    return sample_sets


def unigram_generator(vocab_size: int = 50, length: int = 12, n_responses: int = 5) -> Callable:
    """A toy tester: responses are words drawn from ``softmax(-rank / d)`` over a vocabulary.

    Higher ``d`` (temperature) flattens the distribution, so sets get more diverse — a
    known-ordering generator for checking the decoding-test wiring without a language
    model. The draws come from the ``key`` the tester is called with.

    Args:
      vocab_size: number of words ``w0 .. w{V-1}``.
      length: words per response.
      n_responses: responses per set (>= 2).

    Returns:
      the tester ``(contexts, d, key) -> list[list[str]]``.

    Examples:
      >>> g = unigram_generator(vocab_size=5, length=3, n_responses=2)
      >>> sets = g(["x"], 1.0, jax.random.key(0))
      >>> len(sets), len(sets[0]), len(sets[0][0].split())
      (1, 2, 3)
    """
    check_int(vocab_size, "vocab_size", minimum=2)
    check_int(length, "length", minimum=1)
    check_int(n_responses, "n_responses", minimum=2)
    words = np.array([f"w{i}" for i in range(vocab_size)])
    logits = -jnp.arange(vocab_size, dtype=jnp.float32)

    def sample_sets(contexts, temperature, key):
        draw = jax.random.categorical(key, logits / temperature,
                                      shape=(len(contexts), n_responses, length))
        draw = np.asarray(draw)
        return [[" ".join(words[r]) for r in s] for s in draw]

    return sample_sets
