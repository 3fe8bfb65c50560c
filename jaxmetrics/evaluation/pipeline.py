"""``evaluate_generation``: the MAUVE paper's protocol for any causal LM and dataset.

Prompts → generations with several decoding settings and sampling seeds → features of the
human and the model texts → one report row per decoding setting:

========================  ==========================================================================
column                    definition (each run = one setting and one sampling seed)
========================  ==========================================================================
``mauve``                 MAUVE of the run's features against the human ones
                          (:func:`~jaxmetrics.mauve.compute_mauve_seeds`, k-means or the
                          ``mauve_estimator``), mean over ``mauve_seeds`` seeds; the row is the mean
                          over runs, ``mauve_std`` their sample s.d. (greedy: one run, the s.d. over
                          the seeds)
``frontier_integral``     the same for the frontier integral (lower = closer)
``gen_ppl``               :func:`~jaxmetrics.lm.generation_perplexity` of prompt + continuation
                          under the generating model (the MAUVE experiments' Gen. PPL)
``gen_ppl_gap``           ``|gen_ppl − gen_ppl(human)|``
``ppl_evaluate``          (``hf_perplexity=True``) mean per-text perplexity in Hugging Face ``evaluate``'s convention
                          (:func:`~jaxmetrics.lm.text_perplexities`, ``add_start_token`` when the
                          tokenizer has a BOS, ``max_length`` = the model's positions); the
                          per-text values are in the JSON
``zipf``, ``rep``,        :func:`~jaxmetrics.diversity.zipf_coefficient`,
``distinct_4``,           :func:`~jaxmetrics.diversity.repetition_fraction` (in %),
``self_bleu_4``           :func:`~jaxmetrics.diversity.distinct_n` (n = 4),
                          :func:`~jaxmetrics.diversity.self_bleu` (n = 4, ``self_bleu_samples``
                          hypotheses), over the generating model's token ids
``mean_length``           mean continuation length in tokens (EOS excluded)
``bertscore_f1``,         mean F1 of each model text against the human text of the same prompt
``twmd_f1``               (token embeddings of ``similarity_model``, special tokens dropped; TWMD:
                          batch-centred, T = 0.1); the texts are those of the features
                          (``include_prompt``)
``me_petersen``           Mark-Evaluate Petersen of the run's features against the human ones
========================  ==========================================================================

The human row has the text statistics (``gen_ppl``, ``ppl_evaluate``, ``zipf``, ``rep``,
``distinct_4``, ``self_bleu_4``, ``mean_length``).

Sampling keys are per prompt: row ``i`` of seed ``s`` draws with ``fold_in(key(s), i)``, so a
generation does not depend on the batch size, the batch it shares or the number of devices,
and two decoding settings with the same seed share their random numbers (common random
numbers make the comparison between settings less noisy).

The call runs in named stages: ``_setup`` (every check, the models, the dataset, the cache
keys), :func:`~jaxmetrics.evaluation.generation.generate_runs`, ``_encode_runs`` (features and
token-level similarities), :func:`~jaxmetrics.evaluation.scores.score_runs`,
:func:`~jaxmetrics.evaluation.scores.summarize_runs`, then the report
(:mod:`jaxmetrics.evaluation.report`).

Everything that is expensive is cached per (model, setting, seed) under ``cache_dir`` as it
is produced (:mod:`jaxmetrics.evaluation.store`): a killed run resumes where it stopped with
identical numbers, and changing one decoding setting recomputes only that setting.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from jaxmetrics.evaluation.decodings import Decoding
from jaxmetrics.evaluation.generation import (_check_decodings, _check_num_rows, _check_seeds, _check_split,
                                              _prepare_ids, _read_dataset, _resolve_eos, _resolve_max_new_tokens,
                                              _stage, generate_runs)
from jaxmetrics.evaluation.report import HUMAN, GenerationReport, write_report
from jaxmetrics.evaluation.scores import kmeans_seeds, score_runs, summarize_runs
from jaxmetrics.evaluation.store import RunStore, _has_keys, _rows, pack_ids, stable_hash
from jaxmetrics.evaluation.vectors import _encode, _similarity, _Vectors
from jaxmetrics.models.cache import check_writable_dir
from jaxmetrics.models.pooling import POOLINGS

__all__ = ["evaluate_generation"]


@dataclass
class _Setup:
    """Everything fixed before the first generation (``_setup``)."""

    lm: Any
    enc: Any
    sim: Any
    pooling: str
    eos: int | None
    bos: bool
    max_new_tokens: int
    prompts: list[np.ndarray]
    refs: list[np.ndarray]
    decodings: list[Decoding]
    plan: list[tuple[Decoding, int]]
    run_key: dict[tuple, tuple]
    human_run: tuple
    store: RunStore
    config: dict
    feature_key: str
    similarity_key: str
    score_key: str


def _dtype_name(lm) -> str | None:
    """The compute dtype's name of a loaded model (``None`` for no model)."""
    return None if lm is None else np.dtype(lm.dtype).name


def _setup(*, model, data, featurizer, decodings, seeds, max_new_tokens, prompt_tokens, include_prompt, pooling,
           featurize_max_length, similarity_model, similarity_max_length, twmd_temperature, mark_evaluate,
           hf_perplexity, first_kmeans_seeds, mauve_scoring, num_buckets, kmeans_num_redo, kmeans_max_iter,
           self_bleu_samples, eos_token_id, cache_dir, mesh, notes, dtype, mauve_estimator="quantized",
           mauve_divergence="kl") -> _Setup:
    """Resolve the models, tokenize the dataset (``data``: :func:`_read_dataset`'s), fix
    ``max_new_tokens``, compare the cache's manifest and derive the cache keys and the config;
    every problem is a ``ValueError`` raised before any generation."""
    from jaxmetrics.models import resolve_model, resolve_pooling
    from jaxmetrics.similarity import default_layer

    lm = resolve_model(model, causal=True, purpose="generate continuations (evaluate_generation)", dtype=dtype)
    enc = resolve_model(featurizer, dtype=dtype)
    pooling = resolve_pooling(enc, pooling)
    if similarity_model == "auto":
        sim = None if enc.is_causal else enc
        if sim is None:
            notes.append("BERTScore / TWMD skipped: the featurizer is a causal LM; pass similarity_model= an encoder")
    else:
        sim = None if similarity_model is None else resolve_model(similarity_model, dtype=dtype)
    eos = _resolve_eos(lm, eos_token_id)
    bos = getattr(lm.tokenizer, "bos_token_id", None) is not None
    prompts, refs, source = _prepare_ids(data, lm, prompt_tokens=prompt_tokens, notes=notes)
    _check_num_rows(len(prompts), source, mark_evaluate=mark_evaluate, num_buckets=num_buckets,
                    after=" longer than prompt_tokens", mauve_estimator=mauve_estimator)
    max_new_tokens = _resolve_max_new_tokens(lm, prompts, max_new_tokens)
    refs = [r[:max_new_tokens] for r in refs]   # human continuations as long as the generations

    store = RunStore(cache_dir)
    manifest = (store.load_json((), "manifest", check=lambda m: _has_keys(m, ("hidden_size",)))
                if cache_dir is not None else None)
    feat_info = {"featurizer": enc.name, "fingerprint": enc.fingerprint, "hidden_size": int(enc.hidden_size)}
    if manifest is not None and int(manifest["hidden_size"]) != int(enc.hidden_size):
        raise ValueError(f"featurizer: hidden size {enc.hidden_size} of {enc.name!r} differs from the "
                         f"{manifest['hidden_size']} of the features cached in {str(cache_dir)!r} (featurizer "
                         f"{manifest.get('featurizer')!r}); use another cache_dir for another featurizer")
    if cache_dir is not None and manifest is None:
        store.save_json((), "manifest", feat_info)

    # ---- keys of the cache
    dtypes = {"model": _dtype_name(lm), "featurizer": _dtype_name(enc), "similarity_model": _dtype_name(sim)}
    protocol = stable_hash({"model": lm.fingerprint, "dtype": dtypes["model"], "prompts": stable_hash(pack_ids(prompts)["ids"].tobytes() +
                                                                          pack_ids(prompts)["offsets"].tobytes()),
                            "refs": stable_hash(pack_ids(refs)["ids"].tobytes() + pack_ids(refs)["offsets"].tobytes()),
                            "max_new_tokens": max_new_tokens, "eos": eos})
    fkey = "features-" + stable_hash({"fp": enc.fingerprint, "dtype": dtypes["featurizer"], "pooling": pooling, "len": featurize_max_length,
                                      "include_prompt": include_prompt})
    sim_key = "similarity-" + stable_hash({"fp": None if sim is None else sim.fingerprint,
                                           "dtype": dtypes["similarity_model"], "len": similarity_max_length,
                                           "flen": featurize_max_length, "T": twmd_temperature,
                                           "include_prompt": include_prompt, "scorer": "score_encoded",
                                           "layer": None if sim is None else default_layer(sim.num_layers)})
    config = {"model": lm.name, "featurizer": enc.name, "pooling": pooling, "dataset": source,
              "num_prompts": len(prompts), "max_new_tokens": max_new_tokens, "prompt_tokens": prompt_tokens,
              "decodings": [d.name for d in decodings], "seeds": list(seeds), "mauve_seeds": len(first_kmeans_seeds),
              "mauve_seed": first_kmeans_seeds[0], "kmeans_seeds": list(first_kmeans_seeds),
              "mauve_scoring": mauve_scoring, "num_buckets": num_buckets,
              "mauve_estimator": mauve_estimator, "mauve_divergence": mauve_divergence,
              "kmeans_num_redo": kmeans_num_redo, "kmeans_max_iter": kmeans_max_iter,
              "include_prompt": include_prompt, "similarity_model": None if sim is None else sim.name,
              "twmd_temperature": twmd_temperature, "self_bleu_samples": self_bleu_samples, "eos_token_id": eos,
              "featurize_max_length": featurize_max_length, "similarity_max_length": similarity_max_length,
              "mark_evaluate": mark_evaluate, "hf_perplexity": hf_perplexity,
              "cache_dir": None if cache_dir is None else str(cache_dir),
              "devices": 1 if mesh is None else int(mesh.devices.size), "dtypes": dtypes}
    skey = "scores-" + stable_hash({k: config[k] for k in (
        "pooling", "mauve_seeds", "mauve_seed", "mauve_scoring", "num_buckets", "kmeans_num_redo", "kmeans_max_iter",
        "include_prompt", "twmd_temperature", "self_bleu_samples", "featurize_max_length", "similarity_max_length",
        "mark_evaluate", "hf_perplexity", "dtypes")} | {"featurizer": enc.fingerprint,
                                               "sim": None if sim is None else sim.fingerprint} | (
        {} if _contiguous(first_kmeans_seeds) else {"kmeans_seeds": list(first_kmeans_seeds)}) | (
        # another estimator or divergence never reuses the scores (the defaults keep older caches' keys)
        {} if (mauve_estimator, mauve_divergence) == ("quantized", "kl")
        else {"mauve_estimator": mauve_estimator, "mauve_divergence": mauve_divergence}))

    plan = [(d, s) for d in decodings for s in (seeds if d.stochastic else seeds[:1])]
    return _Setup(lm=lm, enc=enc, sim=sim, pooling=pooling, eos=eos, bos=bos, max_new_tokens=max_new_tokens,
                  prompts=prompts, refs=refs,
                  decodings=decodings, plan=plan,
                  run_key={(d.name, s): (protocol, d.name, f"seed{s}") for d, s in plan},
                  human_run=(protocol, HUMAN), store=store, config=config, feature_key=fkey, similarity_key=sim_key,
                  score_key=skey)


def _check_mauve_family(mauve_estimator, mauve_divergence, num_buckets) -> None:
    """``mauve_estimator`` / ``mauve_divergence`` name an estimator and an f-divergence, and an
    explicit ``num_buckets`` goes with the quantized estimator only: ``ValueError`` naming the argument."""
    from jaxmetrics import _validation as V
    from jaxmetrics.mauve.frontier.estimators import available_estimators
    from jaxmetrics.mauve.frontier.divergences import DIVERGENCES

    V.check_choice(mauve_estimator, "mauve_estimator", available_estimators())
    V.check_choice(mauve_divergence, "mauve_divergence", DIVERGENCES)
    if mauve_estimator != "quantized" and num_buckets != "auto":
        raise ValueError(f"num_buckets: applies to mauve_estimator='quantized' only, not to "
                         f"mauve_estimator={mauve_estimator!r} (a density-ratio estimator has no buckets)")


def _contiguous(seeds: tuple[int, ...]) -> bool:
    """k-means seeds ``a, a + 1, ..., a + m - 1``: the cache keys of a count ``mauve_seeds=m``."""
    return seeds == tuple(range(seeds[0], seeds[0] + len(seeds)))


def _decode_texts(st: _Setup, conts: dict[tuple, list[np.ndarray]], include_prompt: bool) -> dict[Any, list[str]]:
    """``{'human' or (setting, seed): texts}`` that the encoders see (prompt included or not)."""
    def stat_ids(cs):
        return [np.concatenate([p, c]) for p, c in zip(st.prompts, cs)] if include_prompt else cs

    decode = st.lm.tokenizer.batch_decode
    texts = {HUMAN: decode([list(map(int, x)) for x in stat_ids(st.refs)])}
    for d, s in st.plan:
        texts[(d.name, s)] = decode([list(map(int, x)) for x in stat_ids(conts[(d.name, s)])])
    return texts


def _encode_runs(st: _Setup, texts: dict[Any, list[str]], *, featurize_max_length, similarity_max_length,
                 twmd_temperature, feature_batch_size, mesh, progress, clock, notes) -> tuple[dict, dict]:
    """Features of every run (and of the human texts) and, with a similarity model, the per-pair
    BERTScore / TWMD F1 of every run, cached in the run store; every pass goes through the
    encoding engine.

    When the similarity model is the featurizer with mean pooling and the same length, one
    encoder pass gives both: the features are the engine's mean pooling of the same pass whose
    token vectors are scored (both layers, if they differ, from that one pass).

    Returns:
      ``(features, similarities)``: ``{'human' or (setting, seed): [N, D]}`` and
      ``{(setting, seed): [2, N]}``.
    """
    from jaxmetrics.models import resolve_layers
    from jaxmetrics.similarity import default_layer

    enc, sim, pooling, store = st.enc, st.sim, st.pooling, st.store
    shared = (sim is not None and sim.fingerprint == enc.fingerprint and pooling == "mean"
              and similarity_max_length == featurize_max_length)
    sim_len = featurize_max_length if shared else similarity_max_length
    last = resolve_layers(enc, -1)
    sim_layers = None if sim is None else resolve_layers(sim, default_layer(sim.num_layers))
    if shared:   # the scored layer first (the similarity scores the first encoded layer)
        sim_layers = tuple(sim_layers) + tuple(k for k in last if k not in sim_layers)
    feats: dict[Any, np.ndarray] = {}
    sims: dict[Any, np.ndarray] = {}
    truncated: dict[int, int] = {}
    human_tok: list[_Vectors] = []
    kw = dict(batch_size=feature_batch_size, mesh=mesh, progress=progress, truncated=truncated)

    def tokens(key) -> _Vectors:
        if key == HUMAN and human_tok:
            return human_tok[0]
        tok = _encode(texts[key], sim, layers=sim_layers, pooling="mean" if shared else None, tokens=True,
                      max_length=sim_len, **kw)
        if key == HUMAN:
            human_tok.append(tok)
        return tok

    for key, rk in [(HUMAN, st.human_run)] + [((d.name, s), st.run_key[(d.name, s)]) for d, s in st.plan]:
        n = len(texts[key])
        f = store.load_array(rk, st.feature_key, check=lambda a: _rows(a, n))
        sv = None if sim is None or key == HUMAN else store.load_array(rk, st.similarity_key,
                                                                      check=lambda a: _rows(a, n, axis=1))
        need_sim = sim is not None and key != HUMAN and sv is None
        tok = None
        if f is None:
            if shared:
                tok = tokens(key)
                f = tok.features(sim_layers.index(last[0]), normalize=True)
            else:
                f = _encode(texts[key], enc, layers=last, pooling=pooling, tokens=False,
                            max_length=featurize_max_length, **kw).features(0, normalize=pooling == "mean")
            store.save_array(rk, st.feature_key, f)
        if need_sim:
            t1 = time.perf_counter()
            sv = _similarity(tok if tok is not None else tokens(key), tokens(HUMAN), temperature=twmd_temperature)
            store.save_array(rk, st.similarity_key, sv)
            clock["similarity"] += time.perf_counter() - t1
        feats[key] = f
        if sv is not None:
            sims[key] = sv
    for L, k in truncated.items():
        notes.append(f"features: {k} text(s) longer than {L} encoder tokens were cut to their first {L} tokens "
                     "(featurize_max_length / similarity_max_length)")
    return feats, sims


def evaluate_generation(
    *,
    model: Any,
    dataset: Any,
    featurizer: Any,
    decodings: Sequence[str] = ("greedy", "sample", "top_p=0.9"),
    seeds: Sequence[int] = (0, 1, 2),
    max_new_tokens: int | None = None,
    prompt_tokens: int | None = None,
    prompt_field: str | None = "prompt",
    reference_field: str = "continuation",
    include_prompt: bool = True,
    pooling: str = "auto",
    featurize_max_length: int | None = None,
    similarity_model: Any = "auto",
    similarity_max_length: int | None = None,
    twmd_temperature: float = 0.1,
    mark_evaluate: bool = True,
    hf_perplexity: bool = False,
    mauve_seeds: int | Sequence[int] = 5,
    mauve_seed: int | None = None,
    mauve_scoring: str = "mauve-text",
    mauve_estimator: str = "quantized",
    mauve_divergence: str = "kl",
    num_buckets: int | str = "auto",
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    self_bleu_samples: int = 500,
    eos_token_id: int | None | str = "default",
    batch_size: int = 64,
    feature_batch_size: int = 32,
    cache_dir: str | os.PathLike | None = None,
    out_dir: str | os.PathLike | None = None,
    mesh: Any = None,
    progress: bool = True,
    row_labels: dict[str, str] | None = None,
    dtype: Any = None,
) -> GenerationReport:
    """Generate with every decoding setting and seed, featurize, score, and report.

    See the module docstring for the columns. Every argument is checked, the dataset read and
    its size checked, and ``cache_dir`` / ``out_dir`` checked before any model is loaded; the
    prompt lengths against the model's positions and the cache's manifest before the first
    generation.

    Args:
      model: the causal LM that generates (a :class:`~jaxmetrics.models.LoadedModel`, hub id or
        local directory; GPT-2, Llama, Mistral, Qwen2). Its tokenizer defines the token ids of
        the text statistics, and it scores Gen. PPL.
      dataset: prompts and human continuations (:func:`~jaxmetrics.evaluation.load_prompt_dataset`:
        a JSONL / CSV path, a pair of text files, a list of dicts, a pair of lists of strings),
        or a pair of lists of token-id arrays ``(prompt_ids, continuation_ids)``. It is read
        before any model is loaded and needs at least 2 rows (Self-BLEU compares each text with
        the others; MAUVE quantizes into at least 2 buckets), 4 with ``mark_evaluate`` (ME-Petersen's
        k = 3 needs k + 1 texts per set), ``ceil(num_buckets / 2)`` with an integer ``num_buckets``.
      featurizer: the model whose features MAUVE quantizes (a GPT-2 as in mauve-text, or an
        encoder such as all-MiniLM-L6-v2).
      decodings: decoding names (:func:`~jaxmetrics.evaluation.parse_decoding`): ``greedy``,
        ``sample``, ``top_p=0.9``, ``top_k=40``, ``temperature=0.9``, ``typical_p=0.95``,
        ``entmax=1.2`` or comma-joined combinations.
      seeds: sampling seeds; each stochastic setting runs once per seed (greedy once).
      max_new_tokens: tokens generated per prompt (human continuations are cut to as many);
        ``None``: ``min(128, positions − longest prompt)``, what the model's positions leave
        after the longest prompt, at most 128. A value that does not fit is refused before
        anything is generated, naming ``max_new_tokens`` and ``prompt_tokens``.
      prompt_tokens: prompts keep their last ``prompt_tokens`` tokens; with
        ``prompt_field=None`` the prompt is the first ``prompt_tokens`` tokens of each human
        text (the MAUVE paper: 35).
      prompt_field, reference_field: JSONL / CSV field names.
      include_prompt: MAUVE features, ME-Petersen, BERTScore / TWMD and the n-gram statistics see
        prompt + continuation (as the demo and the MAUVE experiments' full texts) or the
        continuation only.
      pooling: ``'auto'`` (last token for a causal featurizer, as mauve-text; L2-normalised
        mean for an encoder, as sentence-transformers), or a name of
        :data:`~jaxmetrics.models.POOLINGS`: ``'last'``, ``'mean'`` (L2-normalised) or ``'cls'``.
      featurize_max_length: featurizer truncation (``None``: 1024 capped by its positions).
      similarity_model: encoder for BERTScore / TWMD F1; ``'auto'`` = the featurizer when it is
        an encoder (else the columns are skipped); ``None`` skips them.
      similarity_max_length: its truncation (``None``: 512 capped by its positions). When the
        similarity model is the featurizer with mean pooling and the same length, one encoder
        pass serves both (the features are the normalised mean of the same token states).
      twmd_temperature: TWMD temperature.
      mark_evaluate: add the ME-Petersen column (k = 3).
      hf_perplexity: add the ``ppl_evaluate`` column (Hugging Face ``evaluate``'s per-text
        perplexity, to compare with numbers computed with it; one more forward pass per run).
      mauve_seeds, mauve_seed: k-means seeds of a setting's first run: a count ``m`` (seeds
        ``mauve_seed, ..., mauve_seed + m - 1``; ``mauve_seed`` defaults to 25) or an explicit
        list (``mauve_seed`` then stays ``None``). Run ``j`` shifts them by ``j`` times their span
        (``max - min + 1``), so runs never share a k-means seed: the default ``5`` is the seeds
        25..29 for the first run, 30..34 for the second (:func:`~jaxmetrics.evaluation.scores.kmeans_seeds`).
      mauve_scoring: ``'mauve-text'`` (default) or ``'paper'`` (the NeurIPS 2021 code's angular
        grid and unsymmetrised area; see :func:`~jaxmetrics.mauve.compute_mauve`).
      mauve_estimator: how MAUVE's divergence frontier is estimated (``estimator=`` of
        :func:`~jaxmetrics.mauve.compute_mauve_seeds`): ``'quantized'`` (default: k-means
        histograms, mauve-text's numbers) or a density-ratio estimator, ``'knn'``,
        ``'classifier'`` or ``'gaussian'``, keyed by each of the ``mauve_seeds`` (``num_buckets``
        and the k-means settings then do not apply). Part of the config and of the scores' cache key.
      mauve_divergence: the f-divergence whose frontier MAUVE summarises (``divergence=``):
        ``'kl'`` (default), ``'chi2'``, ``'hellinger'``, ``'tv'``, ``'js'``; the frontier integral
        stays KL-based. Part of the config and of the scores' cache key.
      num_buckets, kmeans_num_redo, kmeans_max_iter: as in :func:`~jaxmetrics.mauve.compute_mauve`
        (``mauve_estimator='quantized'`` only).
      self_bleu_samples: hypotheses sampled for Self-BLEU.
      eos_token_id: stop token (``'default'``: the model config's; ``None``: never stop).
      batch_size: prompts per generation batch (and texts per scoring batch).
      feature_batch_size: texts per featurizer batch.
      cache_dir: directory of the resumable cache (``None``: nothing is kept between calls); it
        must exist or be creatable, and be writable (checked before any model is loaded). A
        damaged file in it is named in a warning and recomputed.
      out_dir: write ``report.md``, ``report.json``, ``report.csv``, ``generations.jsonl`` (every
        generated text with its prompt, setting and seed), ``divergence_curves.png`` and
        ``lengths.png`` there (checked like ``cache_dir``).
      mesh: optional :class:`jax.sharding.Mesh`: generation, the encoder passes and perplexities
        split their rows over its devices; the report equals the one-device one.
      progress: stage messages and progress bars (stderr) with ETA.
      row_labels: display names of the rows in the Markdown table and plots.
      dtype: compute dtype of the three models, ``'float32'`` or ``'bfloat16'``; ``None``:
        float32 for a path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).
        Part of the cache keys: a bfloat16 run never reuses float32 generations or vectors.

    Returns:
      :class:`GenerationReport`.

    Examples:
      >>> import jaxmetrics, tempfile
      >>> from jaxmetrics.data import demo_model_dir
      >>> data = [{"prompt": "ROMEO:", "continuation": " But soft, what light"}] * 20
      >>> rep = jaxmetrics.evaluate_generation(model=demo_model_dir(), featurizer=demo_model_dir(),
      ...     dataset=data, decodings=["greedy", "top_k=20"], seeds=[0, 1], max_new_tokens=8,
      ...     mauve_seeds=2, progress=False)                                      # doctest: +SKIP
      >>> list(rep.rows)                                                          # doctest: +SKIP
      ['human', 'greedy', 'top_k=20']
    """
    from jaxmetrics import _validation as V

    t_total = time.perf_counter()
    notes: list[str] = []
    # ---- every check before the first generation
    decs = _check_decodings(decodings)
    seeds = _check_seeds(seeds)
    if max_new_tokens is not None:
        max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", minimum=1)
    if prompt_tokens is not None:
        prompt_tokens = V.check_int(prompt_tokens, "prompt_tokens", minimum=1)
    first_kmeans_seeds = kmeans_seeds(mauve_seeds, mauve_seed)
    for name, value in (("featurize_max_length", featurize_max_length),
                        ("similarity_max_length", similarity_max_length)):
        if value is not None:
            V.check_int(value, name, minimum=1)
    if num_buckets != "auto":
        V.check_int(num_buckets, "num_buckets", minimum=1)
    V.check_int(kmeans_num_redo, "kmeans_num_redo", minimum=1)
    V.check_int(kmeans_max_iter, "kmeans_max_iter", minimum=1)
    V.check_choice(mauve_scoring, "mauve_scoring", ("mauve-text", "paper"))
    _check_mauve_family(mauve_estimator, mauve_divergence, num_buckets)
    V.check_choice(pooling, "pooling", ("auto", *POOLINGS))
    batch_size = V.check_int(batch_size, "batch_size", minimum=1)
    feature_batch_size = V.check_int(feature_batch_size, "feature_batch_size", minimum=1)
    self_bleu_samples = V.check_int(self_bleu_samples, "self_bleu_samples", minimum=1)
    V.check_positive(twmd_temperature, "twmd_temperature")
    if out_dir is not None:
        out_dir = check_writable_dir(out_dir, "out_dir")
    if cache_dir is not None:
        check_writable_dir(cache_dir, "cache_dir")
    # the dataset is read and its size checked before any model is loaded
    data = _read_dataset(dataset, prompt_field=prompt_field, reference_field=reference_field)
    if not isinstance(data, tuple) and data.split:
        _check_split(prompt_tokens)
    _check_num_rows(len(data[0]) if isinstance(data, tuple) else len(data),
                    "token ids" if isinstance(data, tuple) else data.source, mark_evaluate=mark_evaluate,
                    num_buckets=num_buckets, mauve_estimator=mauve_estimator)
    st = _setup(model=model, data=data, featurizer=featurizer, decodings=decs, seeds=seeds,
                max_new_tokens=max_new_tokens, prompt_tokens=prompt_tokens, include_prompt=include_prompt,
                pooling=pooling, featurize_max_length=featurize_max_length, similarity_model=similarity_model,
                similarity_max_length=similarity_max_length, twmd_temperature=twmd_temperature,
                mark_evaluate=mark_evaluate, hf_perplexity=hf_perplexity, first_kmeans_seeds=first_kmeans_seeds,
                mauve_scoring=mauve_scoring, num_buckets=num_buckets, kmeans_num_redo=kmeans_num_redo,
                kmeans_max_iter=kmeans_max_iter, self_bleu_samples=self_bleu_samples, eos_token_id=eos_token_id,
                cache_dir=cache_dir, mesh=mesh, notes=notes, dtype=dtype, mauve_estimator=mauve_estimator,
                mauve_divergence=mauve_divergence)
    max_new_tokens_given, max_new_tokens = max_new_tokens, st.max_new_tokens
    seconds = {"generate": 0.0, "featurize": 0.0, "quantize": 0.0, "perplexity": 0.0, "text_statistics": 0.0,
               "similarity": 0.0, "score": 0.0}

    # ---- generation (cached per run)
    t0 = time.perf_counter()
    conts = generate_runs(st.store, st.lm, st.prompts, st.plan, st.run_key, max_new_tokens=max_new_tokens,
                          eos_token_id=st.eos, batch_size=batch_size, mesh=mesh, progress=progress)
    seconds["generate"] = time.perf_counter() - t0

    # ---- features and similarity (cached per run)
    texts = _decode_texts(st, conts, include_prompt)
    t0 = _stage(progress, f"features ({st.enc.name}, {st.pooling} pooling)"
                + (f" and token embeddings ({st.sim.name})" if st.sim is not None else ""))
    feats, sims = _encode_runs(st, texts, featurize_max_length=featurize_max_length,
                               similarity_max_length=similarity_max_length, twmd_temperature=twmd_temperature,
                               feature_batch_size=feature_batch_size, mesh=mesh, progress=progress, clock=seconds,
                               notes=notes)
    seconds["featurize"] = time.perf_counter() - t0 - seconds["similarity"]

    # ---- scores (cached per run), then one row per setting
    t0 = _stage(progress, "scores: MAUVE, perplexities, text statistics" + (", BERTScore / TWMD" if st.sim else "")
                + (", ME-Petersen" if mark_evaluate else ""))
    human_scores, run_scores = score_runs(
        st.store, st.score_key, human_run=st.human_run, run_key=st.run_key, plan=st.plan, prompts=st.prompts,
        refs=st.refs, conts=conts, include_prompt=include_prompt, feats=feats, sims=sims, lm=st.lm,
        first_kmeans_seeds=first_kmeans_seeds,
        mauve_options=dict(num_buckets=num_buckets, kmeans_num_redo=kmeans_num_redo, kmeans_max_iter=kmeans_max_iter,
                           scoring=mauve_scoring, estimator=mauve_estimator, divergence=mauve_divergence),
        mark_evaluate=mark_evaluate, self_bleu_samples=self_bleu_samples, batch_size=batch_size, mesh=mesh,
        bos=st.bos, hf=hf_perplexity, clock=seconds, progress=progress)
    seconds["score"] = time.perf_counter() - t0
    rows, runs, curves, lengths = summarize_runs(decs, st.plan, human_scores, run_scores, conts, st.refs, notes)
    seconds["total"] = time.perf_counter() - t_total

    generations = {d.name: [conts[(d.name, s)] for dd, s in st.plan if dd.name == d.name] for d in decs}
    from jaxmetrics.signature import make_signature, model_id

    cfg = st.config
    sig = make_signature(
        "evaluate-generation", model=st.lm, featurizer=model_id(st.enc), featurizer_dtype=getattr(st.enc, "dtype", None),
        similarity_model=None if st.sim is None else model_id(st.sim), dtype=getattr(st.lm, "dtype", None),
        max_new_tokens="auto" if max_new_tokens_given is None else max_new_tokens,
        **{k: cfg[k] for k in ("pooling", "prompt_tokens", "decodings", "seeds", "kmeans_seeds", "mauve_scoring",
                               "mauve_estimator", "mauve_divergence", "num_buckets", "kmeans_num_redo",
                               "kmeans_max_iter", "include_prompt",
                               "twmd_temperature", "self_bleu_samples", "eos_token_id", "featurize_max_length",
                               "similarity_max_length", "mark_evaluate", "hf_perplexity")})
    decode = st.lm.tokenizer.batch_decode
    report = GenerationReport(
        rows=rows, runs={k: [{kk: vv for kk, vv in r.items() if kk != "curve"} for r in v] for k, v in runs.items()},
        config=st.config, notes=notes, seconds={k: round(v, 2) for k, v in seconds.items()}, files=None,
        curves=curves, lengths=lengths, generations=generations,
        prompts=decode([list(map(int, p)) for p in st.prompts]),
        texts={k: [decode([list(map(int, c)) for c in run]) for run in v] for k, v in generations.items()},
        signature=sig)
    if out_dir is not None:
        report = report.replace(files=write_report(report, out_dir, labels=row_labels))
    return report
