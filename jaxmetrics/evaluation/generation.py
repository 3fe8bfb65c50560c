"""Prompt preparation and generation runs of :func:`~jaxmetrics.evaluation.evaluate_generation`.

* ``_read_dataset`` / ``_check_num_rows`` — the dataset read and its size checked before any
  model is loaded; ``_prepare_ids`` — prompt and human-continuation token ids (the split
  protocol cuts prompts from the human texts by tokens); ``_resolve_max_new_tokens`` — the
  generation length (by default what the model's positions leave, at most 128);
* ``_check_decodings`` / ``_check_seeds`` / ``_resolve_eos`` — the generation settings;
* :func:`generate_runs` — one generation per (setting, seed), cached in the run store as it is
  produced; ``_generate_run`` is one run (row ``i`` of seed ``s`` samples with
  ``fold_in(key(s), i)``).
"""
from __future__ import annotations

import sys
import time
import warnings
from typing import Any

import numpy as np

from jaxmetrics.evaluation.dataset import PromptDataset, load_prompt_dataset
from jaxmetrics.evaluation.decodings import Decoding, parse_decoding
from jaxmetrics.evaluation.store import RunStore, _has_keys, pack_ids, unpack_ids
from jaxmetrics.progress import progress_bar

__all__ = ["DEFAULT_MAX_NEW_TOKENS", "generate_runs"]


def _is_id_rows(col) -> bool:
    return bool(col) and all(isinstance(x, np.ndarray) or (isinstance(x, (list, tuple)) and x and all(
        isinstance(v, (int, np.integer)) for v in x)) for x in col)


def _tokenize(texts: list[str], lm) -> list[np.ndarray]:
    enc = lm.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]  # cut later
    return [np.asarray(e, np.int32) for e in enc]


#: Generated tokens per prompt when ``max_new_tokens=None`` and the model's positions allow it.
DEFAULT_MAX_NEW_TOKENS = 128


def _read_dataset(dataset: Any):
    """The dataset as read before any model is loaded: ``(prompt_ids, continuation_ids)`` lists of
    1-D int32 arrays for the token-id form, else a :class:`PromptDataset` of texts (one given as
    such is taken as it is; anything else is read by :func:`load_prompt_dataset` with its
    default fields)."""
    if isinstance(dataset, PromptDataset):
        return dataset
    if (isinstance(dataset, (tuple, list)) and len(dataset) == 2 and all(isinstance(c, (list, tuple)) for c in dataset)
            and _is_id_rows(dataset[0])):
        prompts = [np.asarray(p, np.int32).reshape(-1) for p in dataset[0]]
        refs = [np.asarray(r, np.int32).reshape(-1) for r in dataset[1]]
        if len(prompts) != len(refs):
            raise ValueError(f"dataset: {len(prompts)} prompts but {len(refs)} continuations")
        return prompts, refs
    return load_prompt_dataset(dataset)


def _min_rows(scoring) -> tuple[int, str]:
    """The fewest prompts a report is computed from, and why (``evaluate_generation``;
    ``scoring``: its :class:`~jaxmetrics.evaluation.ScoringSettings`):

    * 2: Self-BLEU scores each text against the others, and MAUVE quantizes into at least 2
      k-means buckets;
    * 4 with ``mark_evaluate``: ME-Petersen's k = 3 needs k + 1 samples in each set;
    * ``ceil(num_buckets / 2)`` for an explicit ``num_buckets`` (a point per bucket over the human
      and the model texts together);
    * with a density-ratio MAUVE ``estimator`` (its default settings): ``ceil((k + 1) / 2)`` for
      the k-NN estimator's ``k`` neighbours among the other rows of both sets, ``num_folds`` for a
      cross-fitted one (a row of each set in every fold).
    """
    from jaxmetrics.evaluation.scores import ME_K

    mauve = scoring.mauve
    need, why = 2, "Self-BLEU compares each text with the others and MAUVE quantizes into at least 2 buckets"
    if scoring.mark_evaluate:
        need, why = ME_K + 1, f"ME-Petersen's k = {ME_K} needs k + 1 texts per set"
    if not isinstance(mauve.num_buckets, str) and -(-int(mauve.num_buckets) // 2) > need:
        need, why = (-(-int(mauve.num_buckets) // 2),
                     f"scoring.mauve.num_buckets={mauve.num_buckets} needs a point per bucket over both sets")
    if mauve.estimator != "quantized":
        from jaxmetrics.mauve.frontier.estimators import get_estimator

        est = get_estimator(mauve.estimator)
        k, folds = getattr(est, "k", None), getattr(est, "num_folds", None)
        if isinstance(k, int) and -(-(k + 1) // 2) > need:
            need, why = (-(-(k + 1) // 2),
                         f"scoring.mauve.estimator {mauve.estimator}: its {k} neighbours are taken among both sets")
        if isinstance(folds, int) and folds > need:
            need, why = folds, (f"scoring.mauve.estimator {mauve.estimator}: its {folds} cross-fitting folds need "
                                "rows of each set")
    return need, why


def _check_num_rows(n: int, source: str, scoring, *, after: str = "") -> None:
    need, why = _min_rows(scoring)
    if n < need:
        raise ValueError(f"dataset: {source} has {n} prompt(s){after}; the report needs at least {need} ({why})")


def _check_split(prompt_tokens) -> None:
    """The split protocol (``prompt_field=None``) cuts prompts by ``prompt_tokens``: it is required."""
    if prompt_tokens is None:
        raise ValueError("prompt_tokens: with prompt_field=None the prompt is the first prompt_tokens "
                         "tokens of each human text; give prompt_tokens (the MAUVE paper: 35)")


def _prepare_ids(data, lm, *, prompt_tokens, notes):
    """``(prompt_ids, reference_ids, source)`` of the dataset read by :func:`_read_dataset`: lists
    of 1-D int32 arrays; prompts keep their last ``prompt_tokens`` tokens (the split protocol: the
    first ``prompt_tokens`` tokens of each human text). The references are not cut yet
    (:func:`_resolve_max_new_tokens` decides their length)."""
    if isinstance(data, tuple):
        (prompts, refs), source, split = data, "token ids", False
    else:
        ds: PromptDataset = data
        source, split = ds.source, ds.split
        if split:
            _check_split(prompt_tokens)
            full = _tokenize(ds.references, lm)
            keep = [i for i, t in enumerate(full) if len(t) > prompt_tokens]
            if len(keep) < len(full):
                msg = (f"{len(full) - len(keep)} of {len(full)} human texts have at most prompt_tokens="
                       f"{prompt_tokens} tokens and were dropped")
                notes.append(msg)
                warnings.warn(f"dataset: {msg}", stacklevel=4)
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
    return prompts, refs, source


def _resolve_max_new_tokens(lm, prompts: list[np.ndarray], max_new_tokens: int | None) -> int:
    """``max_new_tokens``, or for ``None`` ``min(128, positions − longest prompt)``; refuses a
    prompt plus ``max_new_tokens`` that does not fit the model's positions, naming both options."""
    n_pos = getattr(lm.config, "n_positions", None) or getattr(lm.config, "max_position_embeddings", None)
    P = max(p.size for p in prompts)
    if max_new_tokens is None:
        if n_pos is None:
            return DEFAULT_MAX_NEW_TOKENS
        if P >= n_pos:
            raise ValueError(f"prompt_tokens: the longest prompt ({P} tokens) leaves no room for new tokens in the "
                             f"model's {n_pos} positions; set prompt_tokens below {n_pos}")
        return min(DEFAULT_MAX_NEW_TOKENS, n_pos - P)
    if n_pos is not None and P + max_new_tokens > n_pos:
        raise ValueError(f"max_new_tokens: the longest prompt ({P} tokens) + {max_new_tokens} exceeds the model's "
                         f"{n_pos} positions; lower max_new_tokens (at most {max(n_pos - P, 0)}; None picks "
                         f"min(128, positions - longest prompt)) or set prompt_tokens")
    return max_new_tokens


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

    from jaxmetrics.lm import generate

    n = len(prompts)
    base = jax.random.key(seed)
    B = min(batch_size, n)
    conts: list[np.ndarray] = []
    finished: list[bool] = []
    bar = progress_bar(n, desc=desc, unit="prompt", enabled=progress)
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


def _stage(progress: bool, msg: str) -> float:
    """Print one stage message (with ``progress``); returns the stage's start time."""
    if progress:
        print(f"jaxmetrics: evaluate-generation: {msg}", file=sys.stderr, flush=True)
    return time.perf_counter()


def generate_runs(store: RunStore, lm: Any, prompts: list[np.ndarray], plan: list[tuple[Decoding, int]],
                  run_key: dict[tuple, tuple], *, max_new_tokens: int, eos_token_id: int | None, batch_size: int,
                  mesh: Any, progress: bool) -> dict[tuple, list[np.ndarray]]:
    """The continuations of every run of ``plan`` (``[(setting, seed)]``): loaded from ``store``
    when cached there, else generated (``_generate_run``) and saved at once, so a killed call
    keeps every finished run.

    Returns:
      ``{(setting name, seed): [N] 1-D int32 continuation ids}`` (EOS removed).
    """
    P = max(p.size for p in prompts)
    n = len(prompts)

    def check(got: dict) -> None:
        _has_keys(got, ("ids", "offsets", "finished"))
        off = got["offsets"]
        if off.shape != (n + 1,) or off[0] != 0 or off[-1] != got["ids"].size or (np.diff(off) < 0).any():
            raise ValueError(f"offsets do not split {got['ids'].size} ids into the {n} rows of the dataset")

    cached = {(d.name, s): store.load_arrays(run_key[(d.name, s)], "generation", check=check) for d, s in plan}
    todo = [(d, s) for d, s in plan if cached[(d.name, s)] is None]
    _stage(progress, f"generating {n} prompts x {max_new_tokens} tokens: {len(todo)} of {len(plan)} "
                     f"runs to do ({len(plan) - len(todo)} cached)")
    conts: dict[tuple, list[np.ndarray]] = {}
    for d, s in plan:
        rk = run_key[(d.name, s)]
        got = cached[(d.name, s)]
        if got is None:
            c, fin = _generate_run(lm, prompts, d, s, max_new_tokens=max_new_tokens, eos_token_id=eos_token_id,
                                   batch_size=batch_size, prompt_length=P, mesh=mesh, progress=progress,
                                   desc=f"generate {d.name} seed {s}" if d.stochastic else f"generate {d.name}")
            got = {**pack_ids(c), "finished": fin}
            store.save_arrays(rk, "generation", got)
        conts[(d.name, s)] = unpack_ids(got["ids"], got["offsets"])
    return conts
