"""Tevet & Berant's framework for evaluating diversity metrics.

A *diversity parameter* ``d`` controls some aspect of diversity of generated response sets
(softmax temperature in the decoding test, a binary low/high content-diversity label in
the content test). A metric is good for that aspect when its values on the sets correlate
with ``d``:

* **decTest**: Spearman ρ and Pearson r of (metric, d) over all sets of one task;
* **conTest**: Spearman ρ and the optimal 1-D classification accuracy (OCA)
  ``max_θ max(acc_θ, 1 - acc_θ)``, ``acc_θ = (#{x ∈ G1: x <= θ + 1e-5} +
  #{x ∈ G0: x > θ + 1e-5}) / N`` over thresholds θ ∈ metric values (G1: label 1).

Data: McDiv CSVs (``sample_id, context, resp_0..resp_{n-1}, label_value, label_name``).
Metrics on sets: see :data:`SET_METRICS`; neural ones take a loaded encoder.
"""
from __future__ import annotations

import csv
import dataclasses
import re
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_int
from jaxmetrics.diversity import reduction as _red

__all__ = [
    "McDivData",
    "read_mcdiv_csv",
    "optimal_classification_accuracy",
    "correlations",
    "decoding_test",
    "content_test",
    "SET_METRICS",
    "compute_set_metrics",
    "run_diversity_test",
    "self_decoding_test",
    "unigram_generator",
    "lm_generator",
    "plot_metric_vs_parameter",
    "format_table",
]


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------

@dataclasses.dataclass
class McDivData:
    """One McDiv-format file: ``S`` response sets with their diversity parameter."""

    sample_ids: list[str]
    contexts: list[str]
    response_sets: list[list[str]]
    label_values: np.ndarray  # [S] float
    label_name: str


def read_mcdiv_csv(path: str) -> McDivData:
    """Read a McDiv-format CSV: ``sample_id, context, resp_0..resp_{n-1}, label_value, label_name``.

    ``resp_*`` columns must be contiguous from 0; extra columns (e.g. ``metric_*``) are
    ignored. Every response must be a non-empty string.

    Examples:
      >>> import tempfile, os
      >>> p = os.path.join(tempfile.mkdtemp(), "d.csv")
      >>> _ = open(p, "w").write("sample_id,context,resp_0,resp_1,label_value,label_name\\n"
      ...                        "0,hi,a b,a c,0.5,temp\\n")
      >>> d = read_mcdiv_csv(p)
      >>> d.response_sets, d.label_values.tolist(), d.label_name
      ([['a b', 'a c']], [0.5], 'temp')
    """
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        rows = list(reader)
    resp = sorted((int(m.group(1)), c) for c in cols if (m := re.fullmatch(r"resp_(\d+)", c)))
    missing = [c for c in ("sample_id", "context", "label_value", "label_name") if c not in cols]
    if missing:
        raise ValueError(f"path: {path} lacks column(s) {missing}")
    if len(resp) < 2 or [i for i, _ in resp] != list(range(len(resp))):
        raise ValueError(f"path: {path} needs contiguous columns resp_0..resp_(n-1), n >= 2; "
                         f"got {[c for _, c in resp]}")
    if not rows:
        raise ValueError(f"path: {path} has no rows")
    sets, labels = [], []
    for k, r in enumerate(rows):
        s = [r[c] if r[c] is not None else "" for _, c in resp]
        for j, t in enumerate(s):
            if not t.strip():
                raise ValueError(f"path: row {k} (sample_id {r['sample_id']}) has an empty resp_{j}")
        sets.append(s)
        try:
            labels.append(float(r["label_value"]))
        except (TypeError, ValueError):
            raise ValueError(f"path: row {k} has a non-numeric label_value {r['label_value']!r}") from None
    return McDivData([r["sample_id"] for r in rows], [r["context"] for r in rows], sets,
                     np.asarray(labels, np.float64), rows[0]["label_name"])


# --------------------------------------------------------------------------------------
# Test statistics
# --------------------------------------------------------------------------------------

@jax.jit
def _oca_kernel(values, labels, tol):
    inf = jnp.asarray(jnp.inf, values.dtype)
    g1 = jnp.sort(jnp.where(labels, values, inf))
    g0 = jnp.sort(jnp.where(labels, inf, values))
    n = values.shape[0]
    n1 = jnp.sum(labels)
    th = values + tol
    c1 = jnp.searchsorted(g1, th, side="right")  # G1 values <= θ + tol
    c0 = (n - n1) - jnp.searchsorted(g0, th, side="right")  # G0 values > θ + tol
    acc = (c1 + c0) / n
    return jnp.max(jnp.maximum(acc, 1.0 - acc))


def _check_pair(values: Any, params: Any, vname: str, pname: str):
    v = np.asarray(values)
    p = np.asarray(params)
    if v.dtype == object or not np.issubdtype(v.dtype, np.number):
        raise TypeError(f"{vname}: expected numbers, got dtype {v.dtype}")
    if p.dtype == object or not (np.issubdtype(p.dtype, np.number) or p.dtype == np.bool_):
        raise TypeError(f"{pname}: expected numbers, got dtype {p.dtype}")
    if v.ndim != 1 or v.shape != p.shape:
        raise ValueError(f"{vname}: expected a 1-D array matching {pname} {p.shape}, got {v.shape}")
    if v.size < 3:
        raise ValueError(f"{vname}: need at least 3 sets, got {v.size}")
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(p.astype(np.float64)))):
        raise ValueError(f"{vname}: contains NaN or infinite values")
    return v.astype(np.float64), p.astype(np.float64)


def optimal_classification_accuracy(values: Any, labels: Any, tol: float = 1e-5) -> float:
    """OCA: best accuracy of a 1-D threshold classifier of ``labels`` from ``values``.

    ``OCA = max_{θ ∈ values} max(acc_θ, 1 - acc_θ)``,
    ``acc_θ = (#{i: y_i = 1, x_i <= θ + tol} + #{i: y_i = 0, x_i > θ + tol}) / N``.
    Direction-agnostic; 1 = perfectly separable.

    Args:
      values: ``[N]`` metric values; labels: ``[N]`` in {0, 1} (1 = diverse class).

    Examples:
      >>> optimal_classification_accuracy([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1])
      1.0
      >>> optimal_classification_accuracy([0.1, 0.9, 0.2, 0.8], [0, 0, 1, 1])
      0.75
    """
    v, y = _check_pair(values, labels, "values", "labels")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("labels: expected binary labels 0/1")
    return float(_oca_kernel(jnp.asarray(v), jnp.asarray(y == 1), tol))


def correlations(values: Any, params: Any) -> dict:
    """Spearman ρ and Pearson r of metric ``values [S]`` with the diversity ``params [S]``.

    Raises ``ValueError`` when either input is constant (correlation undefined).

    Examples:
      >>> c = correlations([1., 2., 4., 3.], [0.1, 0.2, 0.3, 0.4])
      >>> round(c["spearman"], 3), round(c["pearson"], 3)
      (0.8, 0.8)
    """
    from scipy import stats
    v, p = _check_pair(values, params, "values", "params")
    if np.ptp(v) == 0:
        raise ValueError("values: constant over all sets, correlation undefined")
    if np.ptp(p) == 0:
        raise ValueError("params: constant over all sets, correlation undefined")
    return {"spearman": float(stats.spearmanr(p, v).statistic),
            "pearson": float(stats.pearsonr(p, v).statistic)}


def decoding_test(values: Any, params: Any) -> dict:
    """decTest: ``{"spearman", "pearson"}`` of a metric against a decoding parameter.

    Examples:
      >>> round(decoding_test([0.2, 0.5, 0.4, 0.9], [0.2, 0.5, 0.8, 1.1])["spearman"], 3)
      0.8
    """
    return correlations(values, params)


def content_test(values: Any, labels: Any) -> dict:
    """conTest: ``{"spearman", "pearson", "oca"}`` of a metric against binary content labels.

    Examples:
      >>> r = content_test([0.1, 0.3, 0.2, 0.9, 0.7, 0.8], [0, 0, 0, 1, 1, 1])
      >>> round(r["spearman"], 3), r["oca"]
      (0.878, 1.0)
    """
    out = correlations(values, labels)
    out["oca"] = optimal_classification_accuracy(values, labels)
    return out


# --------------------------------------------------------------------------------------
# Metrics on response sets
# --------------------------------------------------------------------------------------

def _chunks(n: int, size: int):
    for i in range(0, n, size):
        yield slice(i, min(n, i + size))


def _neural_embeddings(sets, model, kind: str):
    from jaxmetrics.models import load_model, sentence_embeddings, token_embeddings
    lm = load_model(model) if isinstance(model, str) else model
    flat = [t for s in sets for t in s]
    R = max(len(s) for s in sets)
    mask = np.zeros((len(sets), R), bool)
    index = np.zeros((len(sets), R), np.int64)
    k = 0
    for i, s in enumerate(sets):
        mask[i, :len(s)] = True
        index[i, :len(s)] = np.arange(k, k + len(s))
        k += len(s)
    if kind == "sentence":
        e = sentence_embeddings(flat, lm, progress=False)
        return e[index], mask
    emb, tmask, special, _ = token_embeddings(flat, lm, progress=False)
    return (emb[index], (tmask & ~special)[index]), mask


def _sent_bert(sets, model=None, **_):
    e, mask = _neural_embeddings(sets, model, "sentence")
    return _red.embedding_cosine_diversity(e, mask)


def _token_sim_metric(metric: str, **kw):
    def sim(a, b):
        from jaxmetrics.similarity import pair_similarity
        return pair_similarity(a[0], b[0], a[1], b[1], metric=metric, **kw).f1
    sim.__name__ = f"{metric}_f1"
    return sim


_TOKEN_SIMS: dict = {}


def _token_metric(name: str, metric: str, **kw):
    def fn(sets, model=None, chunk: int = 16, **_):
        if name not in _TOKEN_SIMS:  # one function object → one compilation
            _TOKEN_SIMS[name] = _token_sim_metric(metric, **kw)
        (emb, tmask), mask = _neural_embeddings(sets, model, "tokens")
        out = [np.asarray(_red.batched_set_diversity((jnp.asarray(emb[sl]), jnp.asarray(tmask[sl])),
                                                     _TOKEN_SIMS[name], jnp.asarray(mask[sl])))
               for sl in _chunks(len(sets), chunk)]
        return np.concatenate(out)
    return fn


SET_METRICS: dict[str, tuple[Callable, bool, str]] = {
    # name: (function(sets, model=...) -> [S], needs_model, description)
    "distinct": (lambda s, **_: _red.distinct_n_sets(s, 1, 5), False,
                 "averaged distinct-n, n=1..5 (Tevet & Berant)"),
    "cosine": (lambda s, **_: _red.ngram_cosine_diversity(s, 1, 5), False,
               "-mean pairwise n-gram count cosine, averaged n=1..5"),
    "entropy": (lambda s, **_: _red.ngram_entropy_sets(s, 2), False, "bigram entropy (nats)"),
    "self-bleu": (lambda s, **_: -_red.self_bleu_sets(s, 4), False,
                  "-(mean Self-BLEU-4 within the set)"),
    "sent-bert": (_sent_bert, True, "-mean pairwise cosine of mean-pooled sentence embeddings"),
    "bertscore": (_token_metric("bertscore", "rwmd", normalize=False), True,
                  "-mean pairwise BERTScore F1 (greedy token matching, no idf/rescaling)"),
    "twmd": (_token_metric("twmd", "twmd", temperature=0.02), True,
             "-mean pairwise tempered WMD F1 (T=0.02, 1 Sinkhorn iteration)"),
}


def _resolve_metric(name: str):
    if name in SET_METRICS:
        return SET_METRICS[name]
    m = re.fullmatch(r"(distinct|cosine|entropy|self-bleu)-(\d+)", name)
    if m:
        n = int(m.group(2))
        if n < 1:
            raise ValueError(f"metrics: order must be >= 1 in {name!r}")
        fn = {"distinct": lambda s, **_: _red.distinct_n_sets(s, n, n),
              "cosine": lambda s, **_: _red.ngram_cosine_diversity(s, n, n),
              "entropy": lambda s, **_: _red.ngram_entropy_sets(s, n),
              "self-bleu": lambda s, **_: -_red.self_bleu_sets(s, n)}[m.group(1)]
        return fn, False, f"{m.group(1)} with n={n}"
    known = sorted(SET_METRICS) + ["distinct-N", "cosine-N", "entropy-N", "self-bleu-N"]
    raise ValueError(f"metrics: unknown metric {name!r}; known: {', '.join(known)}")


def compute_set_metrics(response_sets: Sequence[Sequence[str]], metrics: Sequence[str], *,
                        model: Any = None) -> dict[str, np.ndarray]:
    """Diversity of every response set under each named metric (higher = more diverse).

    Args:
      response_sets: ``S`` sets of >= 2 non-empty texts.
      metrics: names from :data:`SET_METRICS` or ``distinct-N / cosine-N / entropy-N /
        self-bleu-N``.
      model: encoder (path or loaded model) for neural metrics (``sent-bert``,
        ``bertscore``, ``twmd``).

    Returns:
      ``{name: [S] float array}``.

    Examples:
      >>> sets = [["a b c", "a b c"], ["a b c", "d e f"]]
      >>> {k: v.tolist() for k, v in compute_set_metrics(sets, ["distinct-1"]).items()}
      {'distinct-1': [0.5, 1.0]}
    """
    if isinstance(metrics, str):
        metrics = [m for m in metrics.split(",") if m]
    if not metrics:
        raise ValueError("metrics: no metric names given")
    from jaxmetrics.diversity.ngrams import encode_sets
    encode_sets(response_sets)  # validates: >= 2 responses per set, no empty / non-str items
    for s in response_sets:
        for i, t in enumerate(s):
            if not isinstance(t, str):
                raise TypeError(f"response_sets: item {i} is {type(t).__name__}, expected str")
    out = {}
    for name in metrics:
        fn, needs_model, _ = _resolve_metric(name)
        if needs_model and model is None:
            raise ValueError(f"model: metric {name!r} needs an encoder (give model=PATH)")
        out[name] = np.asarray(fn(response_sets, model=model), np.float64)
    return out


def run_diversity_test(response_sets, params, metrics, *, test: str = "auto", model=None,
                       values: dict | None = None) -> list[dict]:
    """Run decTest or conTest for each metric; returns one result row per metric.

    ``test="auto"`` picks conTest when ``params`` are all 0/1, else decTest. Rows hold
    ``metric, spearman, pearson`` (and ``oca`` for conTest); a metric that is constant
    over the sets gets ``None`` and an ``error`` message.

    Examples:
      >>> sets = [["a a a", "a a a"], ["a b a", "a a b"], ["a b c", "c d e"], ["x y z", "u v w"]]
      >>> rows = run_diversity_test(sets, [0.2, 0.5, 0.8, 1.1], ["distinct-1"])
      >>> rows[0]["metric"], rows[0]["test"], rows[0]["spearman"]
      ('distinct-1', 'dec', 1.0)
    """
    p = np.asarray(params, np.float64)
    if test not in ("auto", "dec", "con"):
        raise ValueError(f"test: expected 'auto', 'dec' or 'con', got {test!r}")
    if test == "auto":
        test = "con" if np.all((p == 0) | (p == 1)) else "dec"
    vals = values if values is not None else compute_set_metrics(response_sets, metrics, model=model)
    rows = []
    for name in (metrics if not isinstance(metrics, str) else metrics.split(",")):
        row = {"metric": name, "test": test, "n_sets": int(len(p))}
        try:
            row.update(content_test(vals[name], p) if test == "con" else decoding_test(vals[name], p))
        except ValueError as e:
            row.update(spearman=None, pearson=None, error=str(e))
            if test == "con":
                row["oca"] = None
        rows.append(row)
    return rows


def format_table(rows: list[dict]) -> str:
    """Markdown table of :func:`run_diversity_test` rows.

    Examples:
      >>> print(format_table([{"metric": "m", "test": "dec", "n_sets": 4, "spearman": 1.0, "pearson": 0.5}]))
      | metric | test | sets | spearman | pearson |
      |---|---|---|---|---|
      | m | dec | 4 | 1.000 | 0.500 |
    """
    has_oca = any("oca" in r for r in rows)
    cols = ["spearman", "pearson"] + (["oca"] if has_oca else [])
    f = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
    lines = ["| metric | test | sets | " + " | ".join(cols) + " |",
             "|" + "---|" * (3 + len(cols))]
    for r in rows:
        lines.append(f"| {r['metric']} | {r['test']} | {r['n_sets']} | "
                     + " | ".join(f(r.get(c)) for c in cols) + " |")
    return "\n".join(lines)


def plot_metric_vs_parameter(params, values: dict, path: str, *, label_name: str = "parameter") -> str:
    """Save a scatter plot of every metric against the diversity parameter to ``path``.

    Each metric is z-scored so they share one axis. Returns ``path``.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    p = np.asarray(params, np.float64)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, v in values.items():
        v = np.asarray(v, np.float64)
        z = (v - v.mean()) / (v.std() if v.std() > 0 else 1.0)
        order = np.argsort(p, kind="stable")
        ax.plot(p[order], z[order], ".", alpha=0.6, label=name)
    ax.set_xlabel(label_name)
    ax.set_ylabel("metric (z-score)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------
# Self-generating decoding test (decTest end to end)
# --------------------------------------------------------------------------------------

def self_decoding_test(generate: Callable, contexts: Sequence[str], params: Sequence[float],
                       metrics: Sequence[str], *, key: jax.Array, model: Any = None
                       ) -> tuple[list[dict], dict]:
    """Generate response sets over a sweep of a decoding parameter and run decTest.

    For every parameter value ``d`` (e.g. temperature) ``generate(contexts, d, key)`` must
    return one response set (list of texts) per context; all sets are scored by every
    metric and correlated with ``d`` (Spearman, Pearson).

    Args:
      generate: ``(contexts, d, key) -> list[list[str]]``; e.g. a wrapper around a causal
        LM sampler, or :func:`unigram_generator`.
      contexts: ``C`` prompts; params: ``P >= 2`` parameter values.
      metrics: metric names (see :func:`compute_set_metrics`).
      key: ``jax.random`` key (split once per parameter value).

    Returns:
      ``(rows, data)`` — result rows as in :func:`run_diversity_test`, and
      ``{"response_sets", "params", "values"}``.

    Examples:
      >>> gen = unigram_generator(vocab_size=30, length=8, n_responses=4)
      >>> rows, _ = self_decoding_test(gen, ["c"] * 6, [0.5, 2.0, 8.0], ["distinct-1"],
      ...                              key=jax.random.key(0))
      >>> rows[0]["spearman"] > 0.8
      True
    """
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
        sets.extend([list(s) for s in out])
        labels.extend([p] * len(out))
    values = compute_set_metrics(sets, metrics, model=model)
    rows = run_diversity_test(sets, labels, metrics, test="dec", values=values)
    return rows, {"response_sets": sets, "params": np.asarray(labels), "values": values}


def lm_generator(model: Any, *, n_responses: int = 5, max_new_tokens: int = 20,
                 parameter: str = "temperature", output: str = "text", **sampling_kw) -> Callable:
    """A decTest tester backed by a causal LM and :func:`jaxmetrics.lm.sampling.generate`.

    Returns ``generate(contexts, d, key) -> list[list[str]]``: every context is tokenized,
    repeated ``n_responses`` times and sampled in one batch with ``temperature = d`` (or
    ``top_p = d`` with ``parameter="top_p"``); responses are the generated continuations only
    (prompt excluded), decoded to text (``output="text"``) or written as space-separated
    token ids (``output="ids"``, for n-gram metrics on model tokens as in the MAUVE paper).

    Args:
      model: a causal :class:`~jaxmetrics.models.LoadedModel` (or a path for ``load_model``).
      n_responses: responses per set; max_new_tokens: tokens sampled per response.
      parameter: ``"temperature"`` or ``"top_p"``.
      **sampling_kw: passed to ``generate`` (e.g. ``top_k``, ``eos_token_id``).

    Examples:
      >>> import tempfile
      >>> from jaxmetrics.models import load_model
      >>> from jaxmetrics.models.testing import tiny_checkpoint
      >>> lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
      >>> gen = lm_generator(lm, n_responses=2, max_new_tokens=3, output="ids", eos_token_id=None)
      >>> sets = gen(["hello there"], 1.0, jax.random.key(0))
      >>> len(sets), len(sets[0]), len(sets[0][0].split())
      (1, 2, 3)
    """
    from jaxmetrics.lm.sampling import generate as sample
    from jaxmetrics.models import load_model

    lm = load_model(model) if isinstance(model, str) else model
    check_int(n_responses, "n_responses", minimum=2)
    check_int(max_new_tokens, "max_new_tokens", minimum=1)
    if parameter not in ("temperature", "top_p"):
        raise ValueError(f"parameter: expected 'temperature' or 'top_p', got {parameter!r}")
    if output not in ("text", "ids"):
        raise ValueError(f"output: expected 'text' or 'ids', got {output!r}")

    def generate(contexts, d, key):
        prompts = [np.asarray(lm.tokenizer(c)["input_ids"], np.int32) for c in contexts]
        batch = [p for p in prompts for _ in range(n_responses)]
        out = sample(lm, batch, key=key, max_new_tokens=max_new_tokens, **{parameter: float(d)},
                     **sampling_kw)
        seqs = out.sequences(include_prompt=False)
        if output == "ids":
            texts = [" ".join(str(int(t)) for t in s) for s in seqs]
        else:
            texts = [lm.tokenizer.decode(s, skip_special_tokens=True) for s in seqs]
        return [texts[i * n_responses:(i + 1) * n_responses] for i in range(len(contexts))]

    return generate


def unigram_generator(vocab_size: int = 50, length: int = 12, n_responses: int = 5) -> Callable:
    """A toy tester: responses are words drawn from ``softmax(-rank / d)`` over a vocabulary.

    Higher ``d`` (temperature) flattens the distribution, so sets get more diverse — a
    known-ordering generator for checking the decoding-test wiring without a language
    model. Returns ``generate(contexts, d, key) -> list[list[str]]``.

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

    def generate(contexts, temperature, key):
        draw = jax.random.categorical(key, logits / temperature,
                                      shape=(len(contexts), n_responses, length))
        draw = np.asarray(draw)
        return [[" ".join(words[r]) for r in s] for s in draw]

    return generate
