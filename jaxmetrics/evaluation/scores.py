"""Scores of :func:`~jaxmetrics.evaluation.evaluate_generation`: per run, then per setting.

* ``_text_scores`` — Gen. PPL (and ``ppl_evaluate``), Distinct-4, Self-BLEU-4, Zipf, REP and
  mean length of one run's token ids (or of the human texts);
* :func:`run_seeds` — the k-means seeds of each run;
* :func:`score_runs` — those plus MAUVE / FI over the seeds of
  :class:`~jaxmetrics.evaluation.MauveScoring` (k-means, or the keys of a density-ratio
  ``estimator``), ME-Petersen
  and the mean BERTScore / TWMD F1 of every run, cached in the run store;
* :func:`summarize_runs` — one report row per setting: the mean over its runs with their sample
  s.d. (greedy: the s.d. over its k-means seeds), ``|Gen. PPL − human|``.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from jaxmetrics.evaluation.decodings import Decoding
from jaxmetrics.evaluation.report import COLUMNS, HUMAN
from jaxmetrics.evaluation.settings import FeatureSettings, ScoringSettings
from jaxmetrics.evaluation.store import _has_keys
from jaxmetrics.numerics import mean_std
from jaxmetrics.progress import progress_bar

__all__ = ["ME_K", "run_seeds", "score_runs", "summarize_runs"]

_TEXT_STATS = ("gen_ppl", "ppl_evaluate", "zipf", "rep", "distinct_4", "self_bleu_4", "mean_length")

#: k of the report's ME-Petersen column.
ME_K = 3

def run_seeds(first: tuple[int, ...], nth: int) -> tuple[int, ...]:
    """The k-means seeds of run ``nth`` of a setting, from those of its first run
    (:attr:`MauveScoring.seeds <jaxmetrics.evaluation.MauveScoring>`): shifted by ``nth`` times
    their span (``max - min + 1``), so runs never share a k-means seed: with the default
    ``25..29``, run ``j`` uses ``25 + 5j, ..., 29 + 5j``.

    Examples:
      >>> run_seeds((25, 26), 1), run_seeds((0, 7), 2)
      ((27, 28), (16, 23))
    """
    span = max(first) - min(first) + 1
    return tuple(s + span * nth for s in first)


def _text_scores(full_ids, stat_ids, cont_ids, lm, *, scoring: ScoringSettings, batch_size, mesh, bos, clock) -> dict:
    """Model- and n-gram-based statistics of one run (or of the human texts); stage times are
    added to ``clock``."""
    from jaxmetrics.diversity import distinct_n, repetition_fraction, self_bleu, zipf_coefficient
    from jaxmetrics.lm import generation_perplexity, text_perplexities

    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    scored = [x for x in full_ids if x.size >= 2]
    out["gen_ppl"] = float(generation_perplexity(scored, model=lm, max_length=None, batch_size=batch_size,
                                                 mesh=mesh).perplexity)
    if scoring.hf_perplexity:
        texts = lm.tokenizer.batch_decode([list(map(int, x)) for x in full_ids])
        n_pos = getattr(lm.config, "n_positions", None) or getattr(lm.config, "max_position_embeddings", None)
        ev = text_perplexities(texts, model=lm, batch_size=batch_size, add_start_token=bos, max_length=n_pos)
        out["ppl_evaluate"] = float(ev.mean_perplexity)
        out["ppl_evaluate_per_text"] = [float(v) for v in np.asarray(ev.perplexities)]
    t1 = time.perf_counter()
    clock["perplexity"] += t1 - t0
    seqs = [np.asarray(x, np.int32) for x in stat_ids if x.size]
    out["distinct_4"] = float(distinct_n(seqs, 4))
    out["self_bleu_4"] = float(self_bleu(seqs, 4, num_samples=min(scoring.self_bleu_samples, len(seqs)), seed=1234))
    out["zipf"] = float(zipf_coefficient(seqs))
    out["rep"] = 100.0 * float(repetition_fraction(seqs))
    out["mean_length"] = float(np.mean([x.size for x in cont_ids]))
    clock["text_statistics"] += time.perf_counter() - t1
    return out



def _with_prompts(prompts: list[np.ndarray], conts: list[np.ndarray]) -> list[np.ndarray]:
    return [np.concatenate([p, c]) for p, c in zip(prompts, conts)]


def score_runs(st: Any, conts: dict[tuple, list[np.ndarray]], feats: dict[Any, np.ndarray],
               sims: dict[Any, np.ndarray], *, scoring: ScoringSettings, features: FeatureSettings, batch_size: int,
               mesh: Any, clock: dict[str, float], progress: bool) -> tuple[dict, dict[tuple, dict]]:
    """Scores of the human texts and of every run of the evaluation's plan, loaded from its store
    under its score key when cached, else computed and saved at once.

    ``st`` is the evaluation's setup (its ``store``, ``score_key``, ``human_run``, ``run_key``,
    ``plan``, ``prompts``, ``refs``, ``lm``, ``bos``); ``conts`` the continuations, ``feats`` the
    features and ``sims`` the per-pair similarities of every run. Run ``j`` of a setting uses
    the k-means seeds ``run_seeds(scoring.mauve.seeds, j)`` (with a density-ratio estimator, the
    estimator's keys: its result has no ``mauve_star``, which no score reads). The texts scored
    include the prompts with ``features.include_prompt``. Rows whose features are NaN (empty
    texts) are left out of MAUVE and ME-Petersen and counted in ``empty_texts``. Stage times are
    added to ``clock`` (``quantize``, ``perplexity``, ``text_statistics``).

    Returns:
      ``(human scores, {(setting name, seed): run scores})``.
    """
    from jaxmetrics.mauve import compute_mauve_seeds

    store, score_key, plan, prompts = st.store, st.score_key, st.plan, st.prompts
    mauve = scoring.mauve

    def stat_ids(cs):
        return _with_prompts(prompts, cs) if features.include_prompt else cs

    def text_scores(cs):
        return _text_scores(_with_prompts(prompts, cs), stat_ids(cs), cs, st.lm, scoring=scoring,
                            batch_size=batch_size, mesh=mesh, bos=st.bos, clock=clock)

    def check(keys):
        return lambda sc: _has_keys(sc, keys)

    human_scores = store.load_json(st.human_run, score_key, check=check(("gen_ppl",)))
    if human_scores is None:
        human_scores = text_scores(st.refs)
        store.save_json(st.human_run, score_key, human_scores)
    p_feat = feats[HUMAN]
    p_ok = ~np.isnan(p_feat).any(axis=1)
    run_scores: dict[tuple, dict] = {}
    bar = progress_bar(len(plan), desc="score runs", unit="run", enabled=progress)
    try:
        for d, s in plan:
            key, rk = (d.name, s), st.run_key[(d.name, s)]
            sc = store.load_json(rk, score_key, check=check(("seed", "gen_ppl", "mauve", "curve")))
            if sc is None:
                sc = {"seed": s}
                sc.update(text_scores(conts[key]))
                q = feats[key]
                q_ok = ~np.isnan(q).any(axis=1)
                if (~q_ok).any():
                    sc["empty_texts"] = int((~q_ok).sum())
                nth = [ss for dd, ss in plan if dd.name == d.name].index(s)  # run index within its setting
                kseeds = run_seeds(mauve.seeds, nth)
                t1 = time.perf_counter()
                res = compute_mauve_seeds(references=p_feat[p_ok], candidates=q[q_ok], seeds=kseeds,
                                          **mauve.options())
                sc.update(mauve=float(res.mauve_mean), mauve_seeds_std=float(res.mauve_std),
                          mauve_per_seed=[float(v) for v in np.asarray(res.mauve)],
                          frontier_integral=float(res.frontier_integral_mean),
                          frontier_integral_seeds_std=float(res.frontier_integral_std),
                          frontier_integral_per_seed=[float(v) for v in np.asarray(res.frontier_integral)],
                          kmeans_seeds=list(kseeds), curve=np.asarray(res.divergence_curve)[0].tolist())
                if scoring.mark_evaluate:
                    from jaxmetrics.mark_evaluate import me_petersen

                    sc["me_petersen"] = float(me_petersen(references=p_feat[p_ok], candidates=q[q_ok], k=ME_K))
                clock["quantize"] += time.perf_counter() - t1
                if key in sims:
                    sc["bertscore_f1"], sc["twmd_f1"] = (float(v) for v in sims[key].mean(axis=1))
                store.save_json(rk, score_key, sc)
            run_scores[key] = sc
            bar.update(1)
    finally:
        bar.close()
    return human_scores, run_scores


def summarize_runs(decodings: list[Decoding], plan: list[tuple[Decoding, int]], human_scores: dict,
                   run_scores: dict[tuple, dict], conts: dict[tuple, list[np.ndarray]], refs: list[np.ndarray],
                   notes: list[str]) -> tuple[dict, dict, dict, dict]:
    """One report row per setting from its runs' scores (notes about empty continuations are
    appended to ``notes``).

    Returns:
      ``(rows, runs, curves, lengths)`` as in :class:`~jaxmetrics.evaluation.GenerationReport`
      (``runs`` still with each run's ``curve``).
    """
    rows: dict[str, dict] = {HUMAN: {k: human_scores[k] for k in _TEXT_STATS if k in human_scores}}
    runs: dict[str, list[dict]] = {HUMAN: [dict(human_scores)]}
    curves, lengths = {}, {HUMAN: np.array([r.size for r in refs])}
    for d in decodings:
        seeds = [s for dd, s in plan if dd.name == d.name]
        rs = [run_scores[(d.name, s)] for s in seeds]
        # a deterministic setting (greedy) has no sampling seed: its one run shows seed None
        runs[d.name] = rs if d.stochastic else [{**r, "seed": None} for r in rs]
        row: dict[str, Any] = {}
        keys = [k for k, _, _ in COLUMNS if k != "gen_ppl_gap" and k in rs[0]]
        for k in keys:
            m, sd = mean_std([r[k] for r in rs])
            row[k] = m
            if len(rs) > 1:
                row[k + "_std"] = sd
                row[k + "_runs"] = [float(r[k]) for r in rs]
        if len(rs) == 1:  # one run (greedy): the spread over its k-means seeds
            row["mauve_std"] = rs[0]["mauve_seeds_std"]
            row["frontier_integral_std"] = rs[0]["frontier_integral_seeds_std"]
        gaps = [abs(r["gen_ppl"] - human_scores["gen_ppl"]) for r in rs]
        row["gen_ppl_gap"] = float(np.mean(gaps))
        if len(rs) > 1:
            row["gen_ppl_gap_std"] = mean_std(gaps)[1]
        empties = sum(r.get("empty_texts", 0) for r in rs)
        if empties:
            notes.append(f"{d.name}: {empties} empty continuation(s) over {len(rs)} run(s) left out of MAUVE and "
                         "ME-Petersen (BERTScore / TWMD count them as 0)")
        rows[d.name] = row
        curves[d.name] = np.asarray(rs[0]["curve"])
        lengths[d.name] = np.array([c.size for c in conts[(d.name, seeds[0])]])
    return rows, runs, curves, lengths
