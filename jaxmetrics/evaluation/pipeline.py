"""``evaluate_generation``: the MAUVE paper's protocol for any causal LM and dataset.

Prompts → generations with several decoding settings and sampling seeds → features of the
human and the model texts → one report row per decoding setting:

========================  ==========================================================================
column                    definition (each run = one setting and one sampling seed)
========================  ==========================================================================
``mauve``                 MAUVE of the run's features against the human ones
                          (:func:`~jaxmetrics.mauve.compute_mauve_seeds`, k-means or the
                          ``MauveScoring.estimator``), mean over ``MauveScoring.seeds``; the row is the
                          mean over runs, ``mauve_std`` their sample s.d. (greedy: one run, the s.d. over
                          the seeds)
``frontier_integral``     the same for the frontier integral (lower = closer)
``gen_ppl``               :func:`~jaxmetrics.lm.generation_perplexity` of prompt + continuation
                          under the generating model (the MAUVE experiments' Gen. PPL)
``gen_ppl_gap``           ``|gen_ppl − gen_ppl(human)|``
``ppl_evaluate``          (``ScoringSettings(hf_perplexity=True)``) mean per-text perplexity in Hugging Face ``evaluate``'s convention
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
                          batch-centred, T = ``SimilarityScoring.temperature``); the texts are those
                          of the features (``FeatureSettings.include_prompt``)
``me_petersen``           Mark-Evaluate Petersen of the run's features against the human ones
========================  ==========================================================================

The human row has the text statistics (``gen_ppl``, ``ppl_evaluate``, ``zipf``, ``rep``,
``distinct_4``, ``self_bleu_4``, ``mean_length``).

Sampling keys are per prompt: row ``i`` of seed ``s`` draws with ``fold_in(key(s), i)``, so a
generation does not depend on the batch size, the batch it shares or the number of devices,
and two decoding settings with the same seed share their random numbers (common random
numbers make the comparison between settings less noisy).

The settings are one object per stage (:mod:`jaxmetrics.evaluation.settings`), checked when
built. The call runs in named stages: ``_setup`` (the models, the dataset, and the cache keys,
config and signature derived from the stage objects), :func:`~jaxmetrics.evaluation.generation.generate_runs`, ``_encode_runs`` (features and
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
from typing import Any

import numpy as np

from jaxmetrics.evaluation.decodings import Decoding, parse_decoding
from jaxmetrics.evaluation.generation import (_check_num_rows, _check_split, _prepare_ids, _read_dataset, _resolve_eos,
                                              _resolve_max_new_tokens, _stage, generate_runs)
from jaxmetrics.evaluation.report import HUMAN, GenerationReport, write_report
from jaxmetrics.evaluation.scores import score_runs, summarize_runs
from jaxmetrics.evaluation.settings import FeatureSettings, GenerationSettings, ScoringSettings, SimilarityScoring
from jaxmetrics.evaluation.store import RunStore, _has_keys, _rows, pack_ids, stable_hash
from jaxmetrics.evaluation.vectors import _encode, _similarity, _Vectors
from jaxmetrics.models.cache import check_writable_dir

__all__ = ["evaluate_generation"]


@dataclass
class _Setup:
    """Everything fixed before the first generation (``_setup``): the models, the token ids,
    the run plan, the store and its keys, the config and the signature."""

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
    signature: str


def _dtype_name(lm) -> str | None:
    """The compute dtype's name of a loaded model (``None`` for no model)."""
    return None if lm is None else np.dtype(lm.dtype).name


def _settings(generation, features, scoring) -> tuple[GenerationSettings, FeatureSettings, ScoringSettings]:
    """The three stage objects (``None``: the defaults); anything else is a ``TypeError`` naming
    the argument."""
    out = []
    for name, value, cls in (("generation", generation, GenerationSettings), ("features", features, FeatureSettings),
                             ("scoring", scoring, ScoringSettings)):
        if value is None:
            value = cls()
        elif not isinstance(value, cls):
            raise TypeError(f"{name}: expected a jaxmetrics.evaluation.{cls.__name__} (or None for its defaults), "
                            f"got {type(value).__name__}")
        out.append(value)
    return tuple(out)


def _open_store(cache_dir, enc) -> RunStore:
    """The run store; a cache's manifest records the featurizer, and another hidden size is
    refused (``ValueError`` naming ``featurizer``)."""
    store = RunStore(cache_dir)
    if cache_dir is None:
        return store
    manifest = store.load_json((), "manifest", check=lambda m: _has_keys(m, ("hidden_size",)))
    if manifest is not None and int(manifest["hidden_size"]) != int(enc.hidden_size):
        raise ValueError(f"featurizer: hidden size {enc.hidden_size} of {enc.name!r} differs from the "
                         f"{manifest['hidden_size']} of the features cached in {str(cache_dir)!r} (featurizer "
                         f"{manifest.get('featurizer')!r}); use another cache_dir for another featurizer")
    if manifest is None:
        store.save_json((), "manifest", {"featurizer": enc.name, "fingerprint": enc.fingerprint,
                                         "hidden_size": int(enc.hidden_size)})
    return store


def _ids_hash(seqs: list[np.ndarray]) -> str:
    packed = pack_ids(seqs)
    return stable_hash(packed["ids"].tobytes() + packed["offsets"].tobytes())


def _setup(*, model, data, featurizer, similarity_model, generation: GenerationSettings, features: FeatureSettings,
           scoring: ScoringSettings, cache_dir, mesh, notes, dtype) -> _Setup:
    """Resolve the models, tokenize the dataset (``data``: :func:`_read_dataset`'s), fix
    ``max_new_tokens``, compare the cache's manifest and derive the cache keys, the config and
    the signature from the stage objects; every problem is a ``ValueError`` raised before any
    generation."""
    from jaxmetrics.models import resolve_model, resolve_pooling
    from jaxmetrics.results import make_signature, model_id
    from jaxmetrics.similarity import default_layer

    lm = resolve_model(model, causal=True, purpose="generate continuations (evaluate_generation)", dtype=dtype)
    enc = resolve_model(featurizer, dtype=dtype)
    pooling = resolve_pooling(enc, features.pooling)
    if similarity_model == "auto":
        sim = None if enc.is_causal else enc
        if sim is None:
            notes.append("BERTScore / TWMD skipped: the featurizer is a causal LM; pass similarity_model= an encoder")
    else:
        sim = None if similarity_model is None else resolve_model(similarity_model, dtype=dtype)
    eos = _resolve_eos(lm, generation.eos_token_id)
    prompts, refs, source = _prepare_ids(data, lm, prompt_tokens=generation.prompt_tokens, notes=notes)
    _check_num_rows(len(prompts), source, scoring, after=" longer than prompt_tokens")
    max_new_tokens = _resolve_max_new_tokens(lm, prompts, generation.max_new_tokens)
    refs = [r[:max_new_tokens] for r in refs]   # human continuations as long as the generations
    store = _open_store(cache_dir, enc)

    # ---- keys of the cache, the config and the signature: from the stage objects
    dtypes = {"model": _dtype_name(lm), "featurizer": _dtype_name(enc), "similarity_model": _dtype_name(sim)}
    sim_fp = None if sim is None else sim.fingerprint
    protocol = stable_hash({"model": lm.fingerprint, "dtype": dtypes["model"], "prompts": _ids_hash(prompts),
                            "refs": _ids_hash(refs), "max_new_tokens": max_new_tokens, "eos": eos})
    fkey = "features-" + stable_hash({"fp": enc.fingerprint, "dtype": dtypes["featurizer"], "pooling": pooling,
                                      "len": features.max_length, "include_prompt": features.include_prompt})
    sim_key = "similarity-" + stable_hash({"fp": sim_fp, "dtype": dtypes["similarity_model"],
                                           "len": scoring.similarity.max_length, "flen": features.max_length,
                                           "T": scoring.similarity.temperature,
                                           "include_prompt": features.include_prompt, "scorer": "score_encoded",
                                           "layer": None if sim is None else default_layer(sim.num_layers)})
    skey = "scores-" + stable_hash({"pooling": pooling, **features.cache_fields(), **scoring.cache_fields(),
                                    "dtypes": dtypes, "featurizer": enc.fingerprint, "sim": sim_fp})
    config = {"model": lm.name, "featurizer": enc.name, "similarity_model": None if sim is None else sim.name,
              "dataset": source, "num_prompts": len(prompts), "max_new_tokens": max_new_tokens, "pooling": pooling,
              "eos_token_id": eos, "generation": generation.to_dict(), "features": features.to_dict(),
              "scoring": scoring.to_dict(), "cache_dir": None if cache_dir is None else str(cache_dir),
              "devices": 1 if mesh is None else int(mesh.devices.size), "dtypes": dtypes}
    sig = make_signature(
        "evaluate-generation", model=lm, featurizer=model_id(enc), featurizer_dtype=getattr(enc, "dtype", None),
        similarity_model=None if sim is None else model_id(sim), dtype=getattr(lm, "dtype", None),
        **{**generation.signature_fields(), **features.signature_fields(), **scoring.signature_fields(),
           "pooling": pooling, "eos_token_id": eos})   # both as resolved

    decodings = [parse_decoding(d) for d in generation.decodings]
    plan = [(d, s) for d in decodings for s in (generation.seeds if d.stochastic else generation.seeds[:1])]
    return _Setup(lm=lm, enc=enc, sim=sim, pooling=pooling, eos=eos,
                  bos=getattr(lm.tokenizer, "bos_token_id", None) is not None, max_new_tokens=max_new_tokens,
                  prompts=prompts, refs=refs, decodings=decodings, plan=plan,
                  run_key={(d.name, s): (protocol, d.name, f"seed{s}") for d, s in plan},
                  human_run=(protocol, HUMAN), store=store, config=config, feature_key=fkey, similarity_key=sim_key,
                  score_key=skey, signature=sig)


def _decode_texts(st: _Setup, conts: dict[tuple, list[np.ndarray]], include_prompt: bool) -> dict[Any, list[str]]:
    """``{'human' or (setting, seed): texts}`` that the encoders see (prompt included or not)."""
    def stat_ids(cs):
        return [np.concatenate([p, c]) for p, c in zip(st.prompts, cs)] if include_prompt else cs

    decode = st.lm.tokenizer.batch_decode
    texts = {HUMAN: decode([list(map(int, x)) for x in stat_ids(st.refs)])}
    for d, s in st.plan:
        texts[(d.name, s)] = decode([list(map(int, x)) for x in stat_ids(conts[(d.name, s)])])
    return texts


def _encode_runs(st: _Setup, texts: dict[Any, list[str]], *, features: FeatureSettings, similarity: SimilarityScoring,
                 feature_batch_size, mesh, progress, clock, notes) -> tuple[dict, dict]:
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
    featurize_max_length, similarity_max_length = features.max_length, similarity.max_length
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
    # each encoder pass names its texts in the progress log ("encode human", "encode pure seed 2")
    labels = {HUMAN: "human", **{(d.name, s): f"{d.name} seed {s}" if d.stochastic else d.name for d, s in st.plan}}

    def tokens(key) -> _Vectors:
        if key == HUMAN and human_tok:
            return human_tok[0]
        tok = _encode(texts[key], sim, layers=sim_layers, pooling="mean" if shared else None, tokens=True,
                      max_length=sim_len, desc=f"encode {labels[key]}", **kw)
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
                            max_length=featurize_max_length, desc=f"featurize {labels[key]}", **kw).features(0, normalize=pooling == "mean")
            store.save_array(rk, st.feature_key, f)
        if need_sim:
            t1 = time.perf_counter()
            sv = _similarity(tok if tok is not None else tokens(key), tokens(HUMAN), temperature=similarity.temperature)
            store.save_array(rk, st.similarity_key, sv)
            clock["similarity"] += time.perf_counter() - t1
        feats[key] = f
        if sv is not None:
            sims[key] = sv
    for L, k in truncated.items():
        notes.append(f"features: {k} text(s) longer than {L} encoder tokens were cut to their first {L} tokens "
                     "(features.max_length / scoring.similarity.max_length)")
    return feats, sims


def evaluate_generation(
    *,
    model: Any,
    dataset: Any,
    featurizer: Any,
    similarity_model: Any = "auto",
    generation: GenerationSettings | None = None,
    features: FeatureSettings | None = None,
    scoring: ScoringSettings | None = None,
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

    See the module docstring for the columns. The settings come as one object per stage
    (:class:`~jaxmetrics.evaluation.GenerationSettings`, :class:`~jaxmetrics.evaluation.FeatureSettings`,
    :class:`~jaxmetrics.evaluation.ScoringSettings`), each checked when it is built; the report's
    ``config`` holds their :meth:`~jaxmetrics.settings.Settings.to_dict`, its signature their
    fields, and the cache keys are derived from them. The dataset is read and its size checked,
    and ``cache_dir`` / ``out_dir`` checked, before any model is loaded; the prompt lengths
    against the model's positions and the cache's manifest before the first generation.

    Args:
      model: the causal LM that generates (a :class:`~jaxmetrics.models.LoadedModel`, hub id or
        local directory; GPT-2, Llama, Mistral, Qwen2). Its tokenizer defines the token ids of
        the text statistics, and it scores Gen. PPL.
      dataset: prompts and human continuations: a
        :class:`~jaxmetrics.evaluation.PromptDataset` (:func:`~jaxmetrics.evaluation.load_prompt_dataset`,
        which also chooses the JSONL / CSV fields and the split protocol), anything
        ``load_prompt_dataset`` reads with its default fields (a JSONL / CSV path, a pair of text
        files, a list of dicts, a pair of lists of strings), or a pair of lists of token-id
        arrays ``(prompt_ids, continuation_ids)``. It is read before any model is loaded and
        needs at least 2 rows (Self-BLEU compares each text with the others; MAUVE quantizes into
        at least 2 buckets), 4 with ``mark_evaluate`` (ME-Petersen's k = 3 needs k + 1 texts per
        set), ``ceil(num_buckets / 2)`` with an integer ``num_buckets``.
      featurizer: the model whose features MAUVE quantizes (a GPT-2 as in mauve-text, or an
        encoder such as all-MiniLM-L6-v2).
      similarity_model: encoder for BERTScore / TWMD F1; ``'auto'`` = the featurizer when it is
        an encoder (else the columns are skipped); ``None`` skips them.
      generation: :class:`~jaxmetrics.evaluation.GenerationSettings`: decodings, sampling
        seeds, ``max_new_tokens`` (``None``: what the model's positions leave after the longest
        prompt, at most 128; a value that does not fit is refused before anything is generated),
        ``prompt_tokens``, ``eos_token_id`` (``None``: the defaults).
      features: :class:`~jaxmetrics.evaluation.FeatureSettings`: pooling, the featurizer's
        ``max_length``, ``include_prompt`` (``None``: the defaults).
      scoring: :class:`~jaxmetrics.evaluation.ScoringSettings`: MAUVE's seeds, c, m, k, estimator,
        divergence and k-means settings (:class:`~jaxmetrics.evaluation.MauveScoring`),
        BERTScore / TWMD's (:class:`~jaxmetrics.evaluation.SimilarityScoring`), Self-BLEU's
        samples, the ME-Petersen and ``ppl_evaluate`` columns (``None``: the defaults).
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
      >>> from jaxmetrics.evaluation import GenerationSettings, MauveScoring, ScoringSettings
      >>> data = [{"prompt": "ROMEO:", "continuation": " But soft, what light"}] * 20
      >>> rep = jaxmetrics.evaluate_generation(model=demo_model_dir(), featurizer=demo_model_dir(), dataset=data,
      ...     generation=GenerationSettings(decodings=("greedy", "top_k=20"), seeds=(0, 1), max_new_tokens=8),
      ...     scoring=ScoringSettings(mauve=MauveScoring(seeds=(25, 26))), progress=False)  # doctest: +SKIP
      >>> list(rep.rows)                                                          # doctest: +SKIP
      ['human', 'greedy', 'top_k=20']
    """
    from jaxmetrics import _validation as V

    t_total = time.perf_counter()
    notes: list[str] = []
    # ---- every check before the first generation
    generation, features, scoring = _settings(generation, features, scoring)
    batch_size = V.check_int(batch_size, "batch_size", minimum=1)
    feature_batch_size = V.check_int(feature_batch_size, "feature_batch_size", minimum=1)
    if out_dir is not None:
        out_dir = check_writable_dir(out_dir, "out_dir")
    if cache_dir is not None:
        check_writable_dir(cache_dir, "cache_dir")
    # the dataset is read and its size checked before any model is loaded
    data = _read_dataset(dataset)
    if not isinstance(data, tuple) and data.split:
        _check_split(generation.prompt_tokens)
    _check_num_rows(len(data[0]) if isinstance(data, tuple) else len(data),
                    "token ids" if isinstance(data, tuple) else data.source, scoring)
    st = _setup(model=model, data=data, featurizer=featurizer, similarity_model=similarity_model,
                generation=generation, features=features, scoring=scoring, cache_dir=cache_dir, mesh=mesh,
                notes=notes, dtype=dtype)
    seconds = {"generate": 0.0, "featurize": 0.0, "quantize": 0.0, "perplexity": 0.0, "text_statistics": 0.0,
               "similarity": 0.0, "score": 0.0}

    # ---- generation (cached per run)
    t0 = time.perf_counter()
    conts = generate_runs(st.store, st.lm, st.prompts, st.plan, st.run_key, max_new_tokens=st.max_new_tokens,
                          eos_token_id=st.eos, batch_size=batch_size, mesh=mesh, progress=progress)
    seconds["generate"] = time.perf_counter() - t0

    # ---- features and similarity (cached per run)
    texts = _decode_texts(st, conts, features.include_prompt)
    t0 = _stage(progress, f"features ({st.enc.name}, {st.pooling} pooling)"
                + (f" and token embeddings ({st.sim.name})" if st.sim is not None else ""))
    feats, sims = _encode_runs(st, texts, features=features, similarity=scoring.similarity,
                               feature_batch_size=feature_batch_size, mesh=mesh, progress=progress, clock=seconds,
                               notes=notes)
    seconds["featurize"] = time.perf_counter() - t0 - seconds["similarity"]

    # ---- scores (cached per run), then one row per setting
    t0 = _stage(progress, "scores: MAUVE, perplexities, text statistics" + (", BERTScore / TWMD" if st.sim else "")
                + (", ME-Petersen" if scoring.mark_evaluate else ""))
    human_scores, run_scores = score_runs(st, conts, feats, sims, scoring=scoring, features=features,
                                          batch_size=batch_size, mesh=mesh, clock=seconds, progress=progress)
    seconds["score"] = time.perf_counter() - t0
    rows, runs, curves, lengths = summarize_runs(st.decodings, st.plan, human_scores, run_scores, conts, st.refs,
                                                 notes)
    seconds["total"] = time.perf_counter() - t_total

    generations = {d.name: [conts[(d.name, s)] for dd, s in st.plan if dd.name == d.name] for d in st.decodings}
    decode = st.lm.tokenizer.batch_decode
    report = GenerationReport(
        rows=rows, runs={k: [{kk: vv for kk, vv in r.items() if kk != "curve"} for r in v] for k, v in runs.items()},
        config=st.config, notes=notes, seconds={k: round(v, 2) for k, v in seconds.items()}, files=None,
        curves=curves, lengths=lengths, generations=generations,
        prompts=decode([list(map(int, p)) for p in st.prompts]),
        texts={k: [decode([list(map(int, c)) for c in run]) for run in v] for k, v in generations.items()},
        signature=st.signature)
    if out_dir is not None:
        report = report.replace(files=write_report(report, out_dir, labels=row_labels))
    return report
