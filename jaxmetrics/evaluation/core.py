"""``evaluate_generation``: the MAUVE paper's protocol for any causal LM and dataset.

Prompts → generations with several decoding settings and sampling seeds → features of the
human and the model texts → one report row per decoding setting:

========================  ==========================================================================
column                    definition (each run = one setting and one sampling seed)
========================  ==========================================================================
``mauve``                 MAUVE of the run's features against the human ones
                          (:func:`~jaxmetrics.mauve.compute_mauve_seeds`, k-means), mean over
                          ``mauve_seeds`` k-means seeds; the row is the mean over runs, ``mauve_std``
                          their sample s.d. (greedy: one run, the s.d. over the k-means seeds)
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

Everything that is expensive is cached per (model, setting, seed) under ``cache_dir`` as it
is produced (:mod:`jaxmetrics.evaluation.store`): a killed run resumes where it stopped with
identical numbers, and changing one decoding setting recomputes only that setting.
"""
from __future__ import annotations

import csv
import io
import json
import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from jaxmetrics.evaluation.dataset import PromptDataset, load_prompt_dataset
from jaxmetrics.evaluation.decodings import Decoding, parse_decoding
from jaxmetrics.evaluation.store import RunStore, pack_ids, stable_hash, unpack_ids

__all__ = ["GenerationReport", "evaluate_generation", "COLUMNS", "HUMAN"]

HUMAN = "human"

# (key, header, format, shown with ± when the row has key_std)
COLUMNS = (
    ("mauve", "MAUVE ↑", "{:.3f}"),
    ("frontier_integral", "FI ↓", "{:.3f}"),
    ("gen_ppl", "Gen. PPL", "{:.2f}"),
    ("gen_ppl_gap", "|Gen. PPL − human|", "{:.2f}"),
    ("ppl_evaluate", "PPL (evaluate)", "{:.2f}"),
    ("zipf", "Zipf", "{:.3f}"),
    ("rep", "REP %", "{:.1f}"),
    ("distinct_4", "Distinct-4", "{:.3f}"),
    ("self_bleu_4", "Self-BLEU-4", "{:.3f}"),
    ("mean_length", "Mean length", "{:.1f}"),
    ("bertscore_f1", "BERTScore F1 ↑", "{:.3f}"),
    ("twmd_f1", "TWMD F1 ↑", "{:.3f}"),
    ("me_petersen", "ME-Petersen ↑", "{:.3f}"),
)
_PM = {"mauve", "frontier_integral"}  # shown as mean ± s.d. in the Markdown table
_TEXT_STATS = ("gen_ppl", "ppl_evaluate", "zipf", "rep", "distinct_4", "self_bleu_4", "mean_length")


@dataclass
class GenerationReport:
    """Result of :func:`evaluate_generation`.

    Attributes:
      rows: ``{row name: {column: value}}``; ``'human'`` first, then the decoding settings in
        the order given. Columns as in the module docstring, plus ``<column>_std`` (sample s.d.
        over runs) and ``<column>_runs`` (per-run values) where a setting has several runs.
      runs: ``{setting: [per-run dict]}`` with each run's seed, values and per-text
        ``ppl_evaluate_per_text``.
      config: the settings of the call (JSON-able).
      notes: what was dropped or skipped, in words.
      seconds: wall time per stage (``generate``, ``featurize``, ``score``, ``total``).
      files: paths written under ``out_dir`` (``markdown``, ``json``, ``csv``,
        ``divergence_curves``, ``lengths``).
      curves: ``{setting: [m + 2, 2]}`` divergence curve of its first run and first k-means seed.
      lengths: ``{row: [N] int}`` continuation lengths in tokens (first run).
      generations: ``{setting: [per run: N continuation id arrays]}`` (EOS removed; runs in seed
        order); not written to the JSON (the cache keeps them).
    """

    rows: dict[str, dict]
    runs: dict[str, list[dict]]
    config: dict
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    curves: dict[str, np.ndarray] = field(default_factory=dict)
    lengths: dict[str, np.ndarray] = field(default_factory=dict)
    generations: dict[str, list] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        """JSON-able dict (curves and lengths as lists)."""
        return {"rows": self.rows, "runs": self.runs, "config": self.config, "notes": self.notes,
                "seconds": self.seconds, "files": self.files,
                "curves": {k: np.asarray(v).tolist() for k, v in self.curves.items()},
                "lengths": {k: np.asarray(v).tolist() for k, v in self.lengths.items()}}

    def to_markdown(self, labels: dict[str, str] | None = None) -> str:
        """The table (one line per row) and a caption."""
        return format_markdown(self.rows, self.config, self.notes, labels=labels)

    def to_csv(self) -> str:
        """One line per row; every column, with ``_std`` columns after their value."""
        keys = [k for k, _, _ in COLUMNS]
        header = ["row"] + [c for k in keys for c in (k, k + "_std")]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        for r, vals in self.rows.items():
            w.writerow([r] + [_csv_cell(vals.get(c)) for c in header[1:]])
        return buf.getvalue()


def _csv_cell(v):
    return "" if v is None else repr(float(v))


def format_markdown(rows: dict[str, dict], config: dict, notes: Sequence[str] = (),
                    labels: dict[str, str] | None = None) -> str:
    """Markdown table of report rows: the columns some row has; missing values print as ``—``.

    Examples:
      >>> rows = {"human": {"gen_ppl": 9.5}, "greedy": {"mauve": 0.25, "gen_ppl": 2.0}}
      >>> print(format_markdown(rows, {}).splitlines()[2])
      | Human | — | 9.50 |
      >>> print(format_markdown(rows, {}).splitlines()[3])
      | greedy | 0.250 | 2.00 |
    """
    labels = labels or {}
    present = [c for c in COLUMNS if any(c[0] in v for v in rows.values())] or list(COLUMNS[:1])
    lines = ["| " + " | ".join(["Decoding"] + [c[1] for c in present]) + " |", "|" + "---|" * (len(present) + 1)]
    for r, vals in rows.items():
        cells = [labels.get(r, "Human" if r == HUMAN else r)]
        for k, _, fmt in present:
            cell = fmt.format(vals[k]) if vals.get(k) is not None else "—"
            if k in _PM and vals.get(k + "_std") is not None and vals.get(k) is not None:
                cell += " ± " + fmt.format(vals[k + "_std"])
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    if config:
        lines.append("")
        lines.append(
            f"{config.get('n_prompts')} prompts; up to {config.get('max_new_tokens')} new tokens; "
            f"sampling seeds {config.get('seeds')}; MAUVE over {config.get('mauve_seeds')} k-means seeds per run "
            f"({config.get('mauve_scoring')} scoring), ± = s.d. over sampling runs (greedy: over k-means seeds); "
            f"features: {config.get('featurizer')} ({config.get('pooling')} pooling).")
    for n in notes:
        lines.append(f"Note: {n}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ helpers


def _stage(progress: bool, msg: str) -> float:
    if progress:
        print(f"[evaluate-generation] {msg}", flush=True)
    return time.perf_counter()


def _is_id_rows(col) -> bool:
    return bool(col) and all(isinstance(x, np.ndarray) or (isinstance(x, (list, tuple)) and x and all(
        isinstance(v, (int, np.integer)) for v in x)) for x in col)


def _tokenize(texts: list[str], lm) -> list[np.ndarray]:
    enc = lm.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]  # cut later
    return [np.asarray(e, np.int32) for e in enc]


def _prepare_ids(dataset: Any, lm, *, prompt_field, reference_field, prompt_tokens, max_new_tokens, notes):
    """``(prompt_ids, reference_ids, source)``: lists of 1-D int32 arrays, references cut to
    ``max_new_tokens``; prompts truncated to their last ``prompt_tokens`` tokens (the split
    protocol: the first ``prompt_tokens`` tokens of each human text)."""
    if (isinstance(dataset, (tuple, list)) and len(dataset) == 2 and all(isinstance(c, (list, tuple)) for c in dataset)
            and _is_id_rows(dataset[0])):
        prompts = [np.asarray(p, np.int32).reshape(-1) for p in dataset[0]]
        refs = [np.asarray(r, np.int32).reshape(-1) for r in dataset[1]]
        if len(prompts) != len(refs):
            raise ValueError(f"dataset: {len(prompts)} prompts but {len(refs)} continuations")
        source, split = "token ids", False
    else:
        ds: PromptDataset = load_prompt_dataset(dataset, prompt_field=prompt_field, reference_field=reference_field)
        source, split = ds.source, ds.split
        if split:
            if prompt_tokens is None:
                raise ValueError("prompt_tokens: with prompt_field=None the prompt is the first prompt_tokens "
                                 "tokens of each human text; give prompt_tokens (the MAUVE paper: 35)")
            full = _tokenize(ds.references, lm)
            keep = [i for i, t in enumerate(full) if len(t) > prompt_tokens]
            if len(keep) < len(full):
                msg = (f"{len(full) - len(keep)} of {len(full)} human texts have at most prompt_tokens="
                       f"{prompt_tokens} tokens and were dropped")
                notes.append(msg)
                warnings.warn(f"dataset: {msg}", stacklevel=3)
            if not keep:
                raise ValueError(f"dataset: no human text in {source} is longer than prompt_tokens={prompt_tokens}")
            prompts = [full[i][:prompt_tokens] for i in keep]
            refs = [full[i][prompt_tokens:] for i in keep]
        else:
            prompts, refs = _tokenize(ds.prompts, lm), _tokenize(ds.references, lm)
    for name, col in (("prompt", prompts), ("continuation", refs)):
        for i, x in enumerate(col):
            if x.size == 0:
                raise ValueError(f"dataset: {source} row {i + 1}: the {name} has no tokens")
    vocab = getattr(lm.config, "vocab_size", None)
    if vocab:
        for i, x in enumerate(prompts + refs):
            if x.min() < 0 or x.max() >= vocab:
                raise ValueError(f"dataset: token ids of row {i % len(prompts) + 1} lie outside [0, {vocab})")
    if prompt_tokens is not None and not split:
        prompts = [p[-prompt_tokens:] for p in prompts]
    refs = [r[:max_new_tokens] for r in refs]
    return prompts, refs, source


def _check_seeds(seeds) -> tuple[int, ...]:
    if isinstance(seeds, (int, np.integer)):
        seeds = (int(seeds),)
    try:
        out = tuple(int(s) for s in seeds)
    except TypeError:
        raise ValueError(f"seeds: expected a list of integers, got {type(seeds).__name__}") from None
    if not out:
        raise ValueError("seeds: at least one sampling seed is needed")
    if len(set(out)) != len(out):
        raise ValueError(f"seeds: repeated seeds {list(out)}")
    return out


def _check_decodings(decodings) -> list[Decoding]:
    if isinstance(decodings, str):
        decodings = [decodings]
    decs = [d if isinstance(d, Decoding) else parse_decoding(d) for d in decodings]
    if not decs:
        raise ValueError("decodings: at least one decoding setting is needed")
    names = [d.name for d in decs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"decodings: settings given twice: {dup}")
    return decs


def _generate_run(lm, prompts: list[np.ndarray], dec: Decoding, seed: int, *, max_new_tokens: int,
                  eos_token_id, batch_size: int, prompt_length: int, mesh, progress: bool, desc: str):
    """Continuations ``[N]`` (1-D id arrays, EOS removed) and ``finished [N]`` of one run.

    Row ``i`` samples with ``fold_in(key(seed), i)``; batches are ``batch_size`` rows, the last
    one filled with copies of the first prompt (their outputs are dropped).
    """
    import jax
    import jax.numpy as jnp
    from tqdm.auto import tqdm

    from jaxmetrics.lm import generate

    n = len(prompts)
    base = jax.random.key(seed)
    B = min(batch_size, n)
    conts: list[np.ndarray] = []
    finished: list[bool] = []
    bar = tqdm(total=n, desc=desc, unit="prompt", disable=not progress, leave=False)
    try:
        for start in range(0, n, B):
            idx = list(range(start, min(start + B, n)))
            rows = [prompts[i] for i in idx] + [prompts[0]] * (B - len(idx))
            row_ids = jnp.asarray(idx + list(range(n, n + B - len(idx))), jnp.uint32)
            keys = jax.vmap(lambda i: jax.random.fold_in(base, i))(row_ids)
            out = generate(rows, model=lm, key=keys, max_new_tokens=max_new_tokens, eos_token_id=eos_token_id,
                           prompt_length=prompt_length, mesh=mesh, **dec.kwargs)
            for r in range(len(idx)):
                toks = out.tokens[r][out.tokens_mask[r]]
                done = bool(out.finished[r])
                if done and eos_token_id is not None:
                    toks = toks[:-1]  # the EOS token itself
                conts.append(np.asarray(toks, np.int32))
                finished.append(done)
            bar.update(len(idx))
    finally:
        bar.close()
    return conts, np.asarray(finished, bool)


def _resolve_eos(lm, eos_token_id):
    if eos_token_id == "default":
        eos = getattr(lm.config, "eos_token_id", None)
        if isinstance(eos, (list, tuple)):
            eos = eos[0] if eos else None
        return None if eos is None else int(eos)
    return None if eos_token_id is None else int(eos_token_id)


def _count_truncations(caught, truncated: dict[int, int]) -> None:
    """Turn the featurizers' "longer than max_length" warnings into counts per length in
    ``truncated`` (one note in the report); re-issue every other warning."""
    import re

    for w in caught:
        m = re.match(r"texts: (\d+) text\(s\) longer than max_length=(\d+)", str(w.message))
        if m:
            truncated[int(m.group(2))] = truncated.get(int(m.group(2)), 0) + int(m.group(1))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _features(texts: list[str], enc, *, pooling: str, max_length, batch_size: int, mesh, progress: bool, truncated):
    """Features of ``texts``; the featurizer's truncation warning becomes a count in
    ``truncated`` (one note in the report instead of one warning per run)."""
    from jaxmetrics.models import featurize, sentence_embeddings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if pooling == "last":
            f = featurize(texts, model=enc, max_length=max_length, batch_size=batch_size, progress=progress, mesh=mesh)
        else:
            f = sentence_embeddings(texts, model=enc, max_length=max_length, batch_size=batch_size, normalize=True,
                                    progress=progress, mesh=mesh)
    _count_truncations(caught, truncated)
    return f


class _Tokens:
    """Token embeddings of the non-empty texts of a list (``rows``: their positions)."""

    def __init__(self, emb, real, content, rows, n):
        self.emb, self.real, self.content, self.rows, self.n = emb, real, content, rows, n

    def mean_pooled(self) -> np.ndarray:
        """``[n, D]`` L2-normalised mean over all real tokens (special ones included, the
        sentence-transformers pooling); NaN rows for empty texts."""
        m = self.real[..., None].astype(np.float32)
        e = (self.emb * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        e = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
        out = np.full((self.n, self.emb.shape[-1]), np.nan, np.float32)
        out[self.rows] = e
        return out


def _token_embeddings(texts: list[str], enc, *, max_length, batch_size, mesh, progress, truncated) -> _Tokens:
    from jaxmetrics.models import token_embeddings

    rows = np.asarray([i for i, t in enumerate(texts) if t.strip()], np.int64)
    if rows.size == 0:
        d = enc.hidden_size
        return _Tokens(np.zeros((0, 1, d), np.float32), np.zeros((0, 1), bool), np.zeros((0, 1), bool), rows,
                       len(texts))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = token_embeddings([texts[i] for i in rows], model=enc, max_length=max_length, batch_size=batch_size,
                               progress=progress, mesh=mesh)
    _count_truncations(caught, truncated)
    return _Tokens(out.embeddings, out.embeddings_mask, out.embeddings_mask & ~out.special_mask, rows, len(texts))


def _pad_tokens(emb, mask, L):
    n, l, d = emb.shape
    if l == L:
        return emb, mask
    e = np.zeros((n, L, d), emb.dtype)
    m = np.zeros((n, L), bool)
    e[:, :l], m[:, :l] = emb, mask
    return e, m


def _similarity(cand: _Tokens, ref: _Tokens, *, temperature, mesh) -> np.ndarray:
    """``[2, N]``: per-pair BERTScore F1 and TWMD F1 of the model texts against the human text of
    the same prompt (content tokens: special tokens dropped); 0 where either text is empty.

    The human texts are batch-centred together, the model texts together (TWMD only)."""
    from jaxmetrics.similarity import bertscore_scores, center_embeddings, similarity_scores

    out = np.zeros((2, cand.n))
    pos = {int(r): j for j, r in enumerate(ref.rows)}
    pairs = [(j, pos[int(r)]) for j, r in enumerate(cand.rows) if int(r) in pos]
    if not pairs:
        return out
    ci, ri = np.asarray([p[0] for p in pairs]), np.asarray([p[1] for p in pairs])
    L = max(cand.emb.shape[1], ref.emb.shape[1])
    emb, mask = _pad_tokens(cand.emb, cand.content, L)
    r_emb, r_mask = _pad_tokens(ref.emb, ref.content, L)
    r_cent = np.asarray(center_embeddings(r_emb, r_mask, method="batch"))
    c_cent = np.asarray(center_embeddings(emb, mask, method="batch"))
    sel = cand.rows[ci]
    prf = bertscore_scores(candidates=emb[ci], references=r_emb[ri], candidates_mask=mask[ci],
                           references_mask=r_mask[ri], mesh=mesh)
    out[0, sel] = np.asarray(prf.f1)
    prf = similarity_scores(candidates=c_cent[ci], references=r_cent[ri], candidates_mask=mask[ci],
                            references_mask=r_mask[ri], metric="twmd", temperature=temperature, mesh=mesh)
    out[1, sel] = np.asarray(prf.f1)
    return out


def _text_scores(full_ids, stat_ids, cont_ids, lm, *, self_bleu_samples, batch_size, mesh, bos, hf, clock) -> dict:
    """Model- and n-gram-based statistics of one run (or of the human texts); stage times are
    added to ``clock``."""
    from jaxmetrics.diversity import distinct_n, repetition_fraction, self_bleu, zipf_coefficient
    from jaxmetrics.lm import generation_perplexity, text_perplexities

    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    scored = [x for x in full_ids if x.size >= 2]
    out["gen_ppl"] = float(generation_perplexity(scored, model=lm, max_length=None, batch_size=batch_size,
                                                 mesh=mesh).perplexity)
    if hf:
        texts = lm.tokenizer.batch_decode([list(map(int, x)) for x in full_ids])
        n_pos = getattr(lm.config, "n_positions", None) or getattr(lm.config, "max_position_embeddings", None)
        ev = text_perplexities(texts, model=lm, batch_size=batch_size, add_start_token=bos, max_length=n_pos)
        out["ppl_evaluate"] = float(ev.mean_perplexity)
        out["ppl_evaluate_per_text"] = [float(v) for v in np.asarray(ev.perplexities)]
    t1 = time.perf_counter()
    clock["perplexity"] += t1 - t0
    seqs = [np.asarray(x, np.int32) for x in stat_ids if x.size]
    out["distinct_4"] = float(distinct_n(seqs, 4))
    out["self_bleu_4"] = float(self_bleu(seqs, 4, n_samples=min(self_bleu_samples, len(seqs)), seed=1234))
    out["zipf"] = float(zipf_coefficient(seqs))
    out["rep"] = 100.0 * float(repetition_fraction(seqs))
    out["mean_length"] = float(np.mean([x.size for x in cont_ids]))
    clock["text_statistics"] += time.perf_counter() - t1
    return out


def _mean_std(values: list[float]) -> tuple[float, float]:
    v = np.asarray(values, np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


# ----------------------------------------------------------------------------- public API


def evaluate_generation(
    *,
    model: Any,
    dataset: Any,
    featurizer: Any,
    decodings: Sequence[str] = ("greedy", "sample", "top_p=0.9"),
    seeds: Sequence[int] = (0, 1, 2),
    max_new_tokens: int = 128,
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
    mauve_seeds: int = 5,
    mauve_seed: int = 25,
    mauve_scoring: str = "mauve-text",
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
) -> GenerationReport:
    """Generate with every decoding setting and seed, featurize, score, and report.

    See the module docstring for the columns. Every argument is checked (and the dataset read,
    the models loaded, the cache's manifest compared) before the first generation.

    Args:
      model: the causal LM that generates (a :class:`~jaxmetrics.models.LoadedModel`, hub id or
        local directory; GPT-2, Llama, Mistral, Qwen2). Its tokenizer defines the token ids of
        the text statistics, and it scores Gen. PPL.
      dataset: prompts and human continuations (:func:`~jaxmetrics.evaluation.load_prompt_dataset`:
        a JSONL / CSV path, a pair of text files, a list of dicts, a pair of lists of strings),
        or a pair of lists of token-id arrays ``(prompt_ids, continuation_ids)``.
      featurizer: the model whose features MAUVE quantizes (a GPT-2 as in mauve-text, or an
        encoder such as all-MiniLM-L6-v2).
      decodings: decoding names (:func:`~jaxmetrics.evaluation.parse_decoding`): ``greedy``,
        ``sample``, ``top_p=0.9``, ``top_k=40``, ``temperature=0.9``, ``typical_p=0.95``,
        ``entmax=1.2`` or comma-joined combinations.
      seeds: sampling seeds; each stochastic setting runs once per seed (greedy once).
      max_new_tokens: tokens generated per prompt (human continuations are cut to as many).
      prompt_tokens: prompts keep their last ``prompt_tokens`` tokens; with
        ``prompt_field=None`` the prompt is the first ``prompt_tokens`` tokens of each human
        text (the MAUVE paper: 35).
      prompt_field, reference_field: JSONL / CSV field names.
      include_prompt: MAUVE features, ME-Petersen, BERTScore / TWMD and the n-gram statistics see
        prompt + continuation (as the demo and the MAUVE experiments' full texts) or the
        continuation only.
      pooling: ``'auto'`` (last token for a causal featurizer, as mauve-text; L2-normalised
        mean for an encoder, as sentence-transformers), ``'last'`` or ``'mean'``.
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
      mauve_seeds, mauve_seed: k-means seeds per run: run ``j`` uses
        ``mauve_seed + mauve_seeds * j + i`` for ``i < mauve_seeds``.
      mauve_scoring: ``'mauve-text'`` (default) or ``'paper'`` (the NeurIPS 2021 code's angular
        grid and unsymmetrised area; see :func:`~jaxmetrics.mauve.compute_mauve`).
      num_buckets, kmeans_num_redo, kmeans_max_iter: as in :func:`~jaxmetrics.mauve.compute_mauve`.
      self_bleu_samples: hypotheses sampled for Self-BLEU.
      eos_token_id: stop token (``'default'``: the model config's; ``None``: never stop).
      batch_size: prompts per generation batch (and texts per scoring batch).
      feature_batch_size: texts per featurizer batch.
      cache_dir: directory of the resumable cache (``None``: nothing is kept between calls).
      out_dir: write ``report.md``, ``report.json``, ``report.csv``, ``divergence_curves.png``
        and ``lengths.png`` there.
      mesh: optional :class:`jax.sharding.Mesh`: generation, featurization, perplexities and the
        similarity kernels split their rows over its devices; the report equals the one-device one.
      progress: stage messages and progress bars (stderr) with ETA.
      row_labels: display names of the rows in the Markdown table and plots.

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
    from jaxmetrics._cli_util import resolve_pooling
    from jaxmetrics.models import resolve_model

    t_total = time.perf_counter()
    notes: list[str] = []
    # ---- every check before the first generation
    decs = _check_decodings(decodings)
    seeds = _check_seeds(seeds)
    max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", minimum=1)
    if prompt_tokens is not None:
        prompt_tokens = V.check_int(prompt_tokens, "prompt_tokens", minimum=1)
    mauve_seeds = V.check_int(mauve_seeds, "mauve_seeds", minimum=1)
    mauve_seed = V.check_int(mauve_seed, "mauve_seed", minimum=0)
    V.check_choice(mauve_scoring, "mauve_scoring", ("mauve-text", "paper"))
    V.check_choice(pooling, "pooling", ("auto", "last", "mean"))
    batch_size = V.check_int(batch_size, "batch_size", minimum=1)
    feature_batch_size = V.check_int(feature_batch_size, "feature_batch_size", minimum=1)
    self_bleu_samples = V.check_int(self_bleu_samples, "self_bleu_samples", minimum=1)
    V.check_positive(twmd_temperature, "twmd_temperature")
    if out_dir is not None:
        out_dir = Path(out_dir)
        if out_dir.exists() and not out_dir.is_dir():
            raise ValueError(f"out_dir: {str(out_dir)!r} exists and is not a directory")

    lm = resolve_model(model, causal=True, purpose="generate continuations (evaluate_generation)")
    enc = resolve_model(featurizer)
    pooling = resolve_pooling(enc, pooling)
    if similarity_model == "auto":
        sim = None if enc.is_causal else enc
        if sim is None:
            notes.append("BERTScore / TWMD skipped: the featurizer is a causal LM; pass similarity_model= an encoder")
    else:
        sim = None if similarity_model is None else resolve_model(similarity_model)
    eos = _resolve_eos(lm, eos_token_id)
    bos = getattr(lm.tokenizer, "bos_token_id", None) is not None
    prompts, refs, source = _prepare_ids(dataset, lm, prompt_field=prompt_field, reference_field=reference_field,
                                         prompt_tokens=prompt_tokens, max_new_tokens=max_new_tokens, notes=notes)
    n_pos = getattr(lm.config, "n_positions", None) or getattr(lm.config, "max_position_embeddings", None)
    P = max(p.size for p in prompts)
    if n_pos is not None and P + max_new_tokens > n_pos:
        raise ValueError(f"max_new_tokens: the longest prompt ({P} tokens) + {max_new_tokens} exceeds the model's "
                         f"{n_pos} positions; lower max_new_tokens or set prompt_tokens")

    store = RunStore(cache_dir)
    manifest = store.load_json((), "manifest") if cache_dir is not None else None
    feat_info = {"featurizer": enc.name, "fingerprint": enc.fingerprint, "hidden_size": int(enc.hidden_size)}
    if manifest is not None and int(manifest.get("hidden_size", enc.hidden_size)) != int(enc.hidden_size):
        raise ValueError(f"featurizer: hidden size {enc.hidden_size} of {enc.name!r} differs from the "
                         f"{manifest['hidden_size']} of the features cached in {str(cache_dir)!r} (featurizer "
                         f"{manifest.get('featurizer')!r}); use another cache_dir for another featurizer")
    if cache_dir is not None and manifest is None:
        store.save_json((), "manifest", feat_info)

    # ---- keys of the cache
    protocol = stable_hash({"model": lm.fingerprint, "prompts": stable_hash(pack_ids(prompts)["ids"].tobytes() +
                                                                          pack_ids(prompts)["offsets"].tobytes()),
                            "refs": stable_hash(pack_ids(refs)["ids"].tobytes() + pack_ids(refs)["offsets"].tobytes()),
                            "max_new_tokens": max_new_tokens, "eos": eos})
    fkey = "features-" + stable_hash({"fp": enc.fingerprint, "pooling": pooling, "len": featurize_max_length,
                                      "include_prompt": include_prompt})
    sim_key = "similarity-" + stable_hash({"fp": None if sim is None else sim.fingerprint, "len": similarity_max_length,
                                           "flen": featurize_max_length, "T": twmd_temperature,
                                           "include_prompt": include_prompt})
    config = {"model": lm.name, "featurizer": enc.name, "pooling": pooling, "dataset": source,
              "n_prompts": len(prompts), "max_new_tokens": max_new_tokens, "prompt_tokens": prompt_tokens,
              "decodings": [d.name for d in decs], "seeds": list(seeds), "mauve_seeds": mauve_seeds,
              "mauve_seed": mauve_seed, "mauve_scoring": mauve_scoring, "num_buckets": num_buckets,
              "kmeans_num_redo": kmeans_num_redo, "kmeans_max_iter": kmeans_max_iter,
              "include_prompt": include_prompt, "similarity_model": None if sim is None else sim.name,
              "twmd_temperature": twmd_temperature, "self_bleu_samples": self_bleu_samples, "eos_token_id": eos,
              "featurize_max_length": featurize_max_length, "similarity_max_length": similarity_max_length,
              "mark_evaluate": mark_evaluate, "hf_perplexity": hf_perplexity,
              "cache_dir": None if cache_dir is None else str(cache_dir),
              "devices": 1 if mesh is None else int(mesh.devices.size)}
    skey = "scores-" + stable_hash({k: config[k] for k in (
        "pooling", "mauve_seeds", "mauve_seed", "mauve_scoring", "num_buckets", "kmeans_num_redo", "kmeans_max_iter",
        "include_prompt", "twmd_temperature", "self_bleu_samples", "featurize_max_length", "similarity_max_length",
        "mark_evaluate", "hf_perplexity")} | {"featurizer": enc.fingerprint,
                                               "sim": None if sim is None else sim.fingerprint})

    plan = [(d, s) for d in decs for s in (seeds if d.stochastic else seeds[:1])]
    human_run = (protocol, HUMAN)
    run_key = {(d.name, s): (protocol, d.name, f"seed{s}") for d, s in plan}
    seconds = {"generate": 0.0, "featurize": 0.0, "quantize": 0.0, "perplexity": 0.0, "text_statistics": 0.0,
               "similarity": 0.0, "score": 0.0}

    # ---- generation (cached per run)
    conts: dict[tuple, list[np.ndarray]] = {}
    todo = [(d, s) for d, s in plan if store.load_arrays(run_key[(d.name, s)], "generation") is None]
    t0 = _stage(progress, f"generating {len(prompts)} prompts x {max_new_tokens} tokens: {len(todo)} of {len(plan)} "
                          f"runs to do ({len(plan) - len(todo)} cached)")
    for d, s in plan:
        rk = run_key[(d.name, s)]
        got = store.load_arrays(rk, "generation")
        if got is None:
            c, fin = _generate_run(lm, prompts, d, s, max_new_tokens=max_new_tokens, eos_token_id=eos,
                                   batch_size=batch_size, prompt_length=P, mesh=mesh, progress=progress,
                                   desc=f"generate {d.name} seed {s}")
            store.save_arrays(rk, "generation", {**pack_ids(c), "finished": fin})
            got = store.load_arrays(rk, "generation")
        conts[(d.name, s)] = unpack_ids(got["ids"], got["offsets"])
    seconds["generate"] = time.perf_counter() - t0

    def full(cs):
        return [np.concatenate([p, c]) for p, c in zip(prompts, cs)]

    def stat_ids(cs):
        return full(cs) if include_prompt else cs

    decode = lm.tokenizer.batch_decode
    human_full = full(refs)
    texts = {HUMAN: decode([list(map(int, x)) for x in stat_ids(refs)])}
    for d, s in plan:
        texts[(d.name, s)] = decode([list(map(int, x)) for x in stat_ids(conts[(d.name, s)])])

    # ---- features and similarity (cached per run). When the similarity model is the featurizer
    # with mean pooling and the same length, one encoder pass gives both: the features are the
    # mean of the same token states.
    t0 = _stage(progress, f"features ({enc.name}, {pooling} pooling)"
                + (f" and token embeddings ({sim.name})" if sim is not None else ""))
    shared = (sim is not None and sim.fingerprint == enc.fingerprint and pooling == "mean"
              and similarity_max_length == featurize_max_length)
    sim_len = featurize_max_length if shared else similarity_max_length
    feats: dict[Any, np.ndarray] = {}
    sims: dict[Any, np.ndarray] = {}
    truncated: dict[int, int] = {}
    human_tok: list[_Tokens] = []

    def encode(key) -> _Tokens:
        if key == HUMAN and human_tok:
            return human_tok[0]
        tok = _token_embeddings(texts[key], sim, max_length=sim_len, batch_size=feature_batch_size, mesh=mesh,
                                progress=progress, truncated=truncated)
        if key == HUMAN:
            human_tok.append(tok)
        return tok

    for key, rk in [(HUMAN, human_run)] + [((d.name, s), run_key[(d.name, s)]) for d, s in plan]:
        f = store.load_array(rk, fkey)
        sv = None if sim is None or key == HUMAN else store.load_array(rk, sim_key)
        need_sim = sim is not None and key != HUMAN and sv is None
        tok = None
        if f is None:
            if shared:
                tok = encode(key)
                f = tok.mean_pooled()
            else:
                ts = texts[key]
                valid = [i for i, t in enumerate(ts) if t.strip()]
                f = np.full((len(ts), enc.hidden_size), np.nan, np.float32)
                if valid:
                    f[valid] = _features([ts[i] for i in valid], enc, pooling=pooling,
                                         max_length=featurize_max_length, batch_size=feature_batch_size, mesh=mesh,
                                         progress=progress, truncated=truncated)
            store.save_array(rk, fkey, f)
        if need_sim:
            t1 = time.perf_counter()
            sv = _similarity(tok if tok is not None else encode(key), encode(HUMAN), temperature=twmd_temperature,
                             mesh=mesh)
            store.save_array(rk, sim_key, sv)
            seconds["similarity"] += time.perf_counter() - t1
        feats[key] = f
        if sv is not None:
            sims[key] = sv
    seconds["featurize"] = time.perf_counter() - t0 - seconds["similarity"]
    for L, k in truncated.items():
        notes.append(f"features: {k} text(s) longer than {L} encoder tokens were cut to their first {L} tokens "
                     "(featurize_max_length / similarity_max_length)")

    # ---- scores (cached per run)
    t0 = _stage(progress, "scores: MAUVE, perplexities, text statistics" + (", BERTScore / TWMD" if sim else "")
                + (", ME-Petersen" if mark_evaluate else ""))
    from tqdm.auto import tqdm

    from jaxmetrics.mauve import compute_mauve_seeds

    human_scores = store.load_json(human_run, skey)
    if human_scores is None:
        human_scores = _text_scores(human_full, stat_ids(refs), refs, lm, self_bleu_samples=self_bleu_samples,
                                    batch_size=batch_size, mesh=mesh, bos=bos, hf=hf_perplexity, clock=seconds)
        store.save_json(human_run, skey, human_scores)
    p_feat = feats[HUMAN]
    p_ok = ~np.isnan(p_feat).any(axis=1)
    run_scores: dict[tuple, dict] = {}
    bar = tqdm(total=len(plan), desc="score runs", unit="run", disable=not progress, leave=False)
    try:
        for d, s in plan:
            key, rk = (d.name, s), run_key[(d.name, s)]
            sc = store.load_json(rk, skey)
            if sc is None:
                sc = {"seed": s}
                sc.update(_text_scores(full(conts[key]), stat_ids(conts[key]), conts[key], lm,
                                       self_bleu_samples=self_bleu_samples, batch_size=batch_size, mesh=mesh, bos=bos,
                                       hf=hf_perplexity, clock=seconds))
                q = feats[key]
                q_ok = ~np.isnan(q).any(axis=1)
                if (~q_ok).any():
                    sc["empty_texts"] = int((~q_ok).sum())
                nth = [ss for dd, ss in plan if dd.name == d.name].index(s)  # run index within its setting
                kseeds = tuple(mauve_seed + mauve_seeds * nth + i for i in range(mauve_seeds))
                t1 = time.perf_counter()
                res = compute_mauve_seeds(p_features=p_feat[p_ok], q_features=q[q_ok], seeds=kseeds,
                                          num_buckets=num_buckets, kmeans_num_redo=kmeans_num_redo,
                                          kmeans_max_iter=kmeans_max_iter, scoring=mauve_scoring)
                sc.update(mauve=float(res.mauve_mean), mauve_seeds_std=float(res.mauve_std),
                          mauve_per_seed=[float(v) for v in np.asarray(res.mauve)],
                          frontier_integral=float(res.frontier_integral_mean),
                          frontier_integral_seeds_std=float(res.frontier_integral_std),
                          frontier_integral_per_seed=[float(v) for v in np.asarray(res.frontier_integral)],
                          kmeans_seeds=list(kseeds), curve=np.asarray(res.divergence_curve)[0].tolist())
                if mark_evaluate:
                    from jaxmetrics.mark_evaluate import me_petersen

                    sc["me_petersen"] = float(me_petersen(references=p_feat[p_ok], candidates=q[q_ok], k=3))
                seconds["quantize"] += time.perf_counter() - t1
                if sim is not None:
                    sc["bertscore_f1"], sc["twmd_f1"] = (float(v) for v in sims[key].mean(axis=1))
                store.save_json(rk, skey, sc)
            run_scores[key] = sc
            bar.update(1)
    finally:
        bar.close()
    seconds["score"] = time.perf_counter() - t0

    # ---- rows
    rows: dict[str, dict] = {HUMAN: {k: human_scores[k] for k in _TEXT_STATS if k in human_scores}}
    runs: dict[str, list[dict]] = {HUMAN: [dict(human_scores)]}
    curves, lengths = {}, {HUMAN: np.array([r.size for r in refs])}
    for d in decs:
        rs = [run_scores[(d.name, s)] for dd, s in plan if dd.name == d.name]
        runs[d.name] = rs
        row: dict[str, Any] = {}
        keys = [k for k, _, _ in COLUMNS if k != "gen_ppl_gap" and k in rs[0]]
        for k in keys:
            m, sd = _mean_std([r[k] for r in rs])
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
            row["gen_ppl_gap_std"] = _mean_std(gaps)[1]
        empties = sum(r.get("empty_texts", 0) for r in rs)
        if empties:
            notes.append(f"{d.name}: {empties} empty continuation(s) over {len(rs)} run(s) left out of MAUVE and "
                         "ME-Petersen (BERTScore / TWMD count them as 0)")
        rows[d.name] = row
        curves[d.name] = np.asarray(rs[0]["curve"])
        lengths[d.name] = np.array([c.size for c in conts[(d.name, rs[0]["seed"])]])
    seconds["total"] = time.perf_counter() - t_total
    report = GenerationReport(rows=rows, runs={k: [{kk: vv for kk, vv in r.items() if kk != "curve"} for r in v]
                                               for k, v in runs.items()},
                              config=config, notes=notes, seconds={k: round(v, 2) for k, v in seconds.items()},
                              curves=curves, lengths=lengths,
                              generations={d.name: [conts[(d.name, s)] for dd, s in plan if dd.name == d.name]
                                           for d in decs})
    if out_dir is not None:
        write_report(report, out_dir, labels=row_labels)
    return report


def write_report(report: GenerationReport, out_dir: str | os.PathLike, labels: dict[str, str] | None = None) -> dict:
    """Write ``report.md``, ``report.json``, ``report.csv``, ``divergence_curves.png`` and
    ``lengths.png`` under ``out_dir`` (created); returns ``{kind: path}`` (also stored in
    ``report.files``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"markdown": str(out / "report.md"), "json": str(out / "report.json"), "csv": str(out / "report.csv"),
             "divergence_curves": str(out / "divergence_curves.png"), "lengths": str(out / "lengths.png")}
    report.files.update(files)
    Path(files["markdown"]).write_text(report.to_markdown(labels) + "\n")
    Path(files["csv"]).write_text(report.to_csv())
    _plot_curves(report, files["divergence_curves"], labels or {})
    _plot_lengths(report, files["lengths"], labels or {})
    Path(files["json"]).write_text(json.dumps(report.to_dict(), indent=1) + "\n")
    return files


def _plot_curves(report: GenerationReport, path: str, labels: dict[str, str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxmetrics.mauve.plot import plot_divergence_curves

    names = list(report.curves)
    fig, ax = plt.subplots(figsize=(7, 6))
    plot_divergence_curves([report.curves[k] for k in names], labels=[labels.get(k, k) for k in names], ax=ax,
                           title="Divergence curves: human (P) vs model (Q), first run and k-means seed")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_lengths(report: GenerationReport, path: str, labels: dict[str, str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    hi = max(int(np.max(v)) for v in report.lengths.values() if len(v)) + 1
    bins = np.linspace(0, hi, min(hi, 40) + 1)
    for k, v in report.lengths.items():
        ax.hist(v, bins=bins, histtype="step", linewidth=1.5,
                label=f"{labels.get(k, 'Human' if k == HUMAN else k)} (mean {np.mean(v):.1f})")
    ax.set_xlabel("continuation length (tokens, EOS excluded)")
    ax.set_ylabel("texts")
    ax.set_title("Length distribution (first run of each setting)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
