"""MAUVE sweeps: MAUVE (mean ± s.d. over k-means seeds) as a function of one setting.

The MAUVE paper studies its score along several axes; each is one call here:

* ``over="n"`` (Figure 4): sample size. For seed ``s`` and size ``n``, ``n`` rows of P and ``n`` rows
  of each Q are drawn without replacement (nested: the first ``n`` of one random permutation per
  side and seed, kept in their original order) and quantized with ``k = max(2, round(n / 10))``
  clusters (``num_buckets='auto'``; an integer fixes ``k``).
* ``over="k"`` and ``over="c"`` (Table 6): the number of clusters and the scaling constant.
* ``over="quantizer"`` (Table 5): k-means, DRMM, lattice (names of
  :func:`~jaxmetrics.mauve.quantize.quantizers.get_quantizer`, or :class:`Quantizer` instances).
* :func:`mauve_length_sweep` (Figure 3): texts truncated to each maximum length, features
  recomputed, with the token length distribution of each side next to the scores.

**How it is computed** (the stages of :mod:`.engine`). Per system, the features are stacked
``[Q; P]`` and projected as :func:`~jaxmetrics.mauve.compute_mauve` projects them
(:func:`~jaxmetrics.mauve.engine.project_features` on all rows with ``key(s)``: one PCA per
system, or one per system and seed when ``pca_max_data`` subsamples; the PCA is not refitted per
subset of an ``over="n"`` sweep). Every (setting, system, seed) is then one k-means problem on a
subset of those rows: the subsets are padded to one row count and the cluster counts to one
number of centroid slots, and all problems run as **one** vmapped, jitted call of
:func:`~jaxmetrics.mauve.kmeans` in its masked mode
(:func:`~jaxmetrics.mauve.engine.masked_kmeans_counts`), followed by the float64 scores
(:func:`~jaxmetrics.mauve.engine.mauve_scores`, once per ``c``). Shapes depend only on the
largest subset, the largest ``k``, the feature width and the number of problems (padded up to a
multiple of 8), so a sweep compiles once and a rerun with new values of the same shapes does
not retrace. Memory: about ``problems x rows x k_max`` floats per restart;
``mauve_sweep(batch_size=...)`` splits the problems into chunks of one compiled shape when that
is too much.

**Keys.** Seed ``s`` gives the k-means key ``fold_in(key(s), 2)`` (compute_mauve's convention) and
the subset permutations ``fold_in(key(s), 11)`` (P) and ``fold_in(key(s), 13)`` (Q); a subset of
all rows is all rows, in order. Keys do not depend on the system, so for one seed all systems
share P's subset, Q row indices (for equal sizes) and k-means draws: the seeds pair the systems
(see :func:`paired_mauve_difference`). The masked k-means draws the same random stream as the
unmasked one over the valid rows, so a problem on all rows gives exactly the value of
``compute_mauve(seed=s)``: ``over="n"`` at ``n`` = all rows, ``over="k"`` at ``k`` = the
automatic count, ``over="c"`` at ``c = 5``.

Reports: :func:`rank_agreement` (Spearman correlation of the systems' ranking between the
settings: Table 5 across quantizers, Table 6 across ``k`` or ``c``) and
:func:`paired_mauve_difference` (is a MAUVE gap larger than the seed noise?).
"""
from __future__ import annotations

import warnings
from typing import Any, Mapping, Sequence

import jax
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics.mauve.pipeline.compute import _check_common
from jaxmetrics.mauve.engine import fit_labels, split_counts
from jaxmetrics.mauve.frontier.estimate import estimator_settings, is_quantized
from jaxmetrics.mauve.frontier.estimators import get_estimator
from jaxmetrics.mauve.frontier.divergences import mauve_from_log_ratios
from jaxmetrics.mauve.frontier.settings import FrontierSettings
from jaxmetrics.mauve.pipeline.inputs import check_pooling
from jaxmetrics.mauve.quantize.quantizers import KMeansQuantizer, _quantizer_settings, get_quantizer
from jaxmetrics.mauve.analysis.sweep_results import MauveSweepResult
from jaxmetrics.mauve.analysis.sweep_stages import (
    DEFAULT_SEEDS,
    SWEEP_AXES,
    check_systems,
    check_values,
    Problems,
    resolve_k,
    sweep_result,
    warn_thin,
    score_problems,
    Stacks,
    subset_rows,
)

__all__ = ["mauve_sweep", "mauve_length_sweep"]

_QUANTILES = (0.1, 0.5, 0.9)


def mauve_sweep(
    *,
    references: Any,
    candidates: Mapping[str, Any],
    over: str,
    values: Sequence[Any] | None = None,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    num_buckets: int | str = "auto",
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    pca_max_data: int = -1,
    frontier: FrontierSettings | None = None,
    scaling: float | None = None,
    num_points: int | None = None,
    quantizer_options: Mapping[str, Mapping[str, Any]] | None = None,
    batch_size: int | None = None,
    estimator: Any = "quantized",
) -> MauveSweepResult:
    """MAUVE of several candidate systems against one reference set, along one setting.

    For every value ``v`` of the setting ``over``, system ``m`` and seed ``s``:
    ``MAUVE(P_s, Q_{m,s})`` with the setting set to ``v`` (P = references = human text, Q =
    candidates); the result reports mean ± s.d. over the seeds. See the module doc for how
    the problems share one compiled computation and how keys are derived (``jax.random.key(s)``).

    * ``over="n"``: ``values`` are sample sizes per side (default: ``n_min / 8, / 4, / 2, n_min``,
      at least 20); P and every Q are subsampled to ``n`` rows per seed; ``k`` follows
      ``num_buckets`` (``'auto'``: ``max(2, round(n / 10))``, the paper's Figure 4).
    * ``over="k"``: ``values`` are cluster counts (ints, or ``'auto'``), all rows.
    * ``over="c"``: ``values`` are scaling constants (one quantization per seed, scored for every
      ``c``).
    * ``over="quantizer"``: ``values`` are quantizer names (``'kmeans'``, ``'drmm'``, ``'lattice'``
      or any registered name) or :class:`~jaxmetrics.mauve.quantize.quantizers.Quantizer` instances.
      k-means runs in the shared computation; the others are fitted on each ``[Q; P]`` with key
      ``jax.random.key(s)``, as ``compute_mauve_seeds(quantizer=...)`` does (DRMM and lattice train
      networks: minutes on a CPU). ``quantizer_options={name: kwargs}`` go to
      :func:`~jaxmetrics.mauve.quantize.quantizers.get_quantizer`.

    Args:
      references: ``[n_p, d]`` features of the human text (P).
      candidates: ``{system name: [n_m, d] features}`` of the model texts (Q).
      over: ``"n"``, ``"k"``, ``"c"`` or ``"quantizer"``.
      values: the setting's values (defaults above).
      seeds: integer seeds (default ``(25, ..., 29)``); the keys are ``jax.random.key(s)``.
      num_buckets: ``k`` where ``over`` is not ``"k"``: ``'auto'`` (``max(2, round(min(n_p, n_q) / 10))``
        of the rows used) or an integer.
      kmeans_explained_var, kmeans_num_redo, kmeans_max_iter, pca_max_data: as in
        :func:`~jaxmetrics.mauve.compute_mauve`.
      frontier: a :class:`~jaxmetrics.mauve.FrontierSettings` (KL, mauve-text's scoring), or its
        ``scaling`` (``c`` where ``over`` is not ``"c"``, default 5) and ``num_points`` (``m``,
        default 25) as keywords.
      quantizer_options: extra keyword arguments per quantizer name (``over="quantizer"``).
      batch_size: k-means problems per compiled call; ``None`` (default) runs them all in one call.
        Set it when ``problems x kmeans_num_redo x rows x k_max`` floats do not fit in memory
        (the chunks share one compiled program).
      estimator: ``'quantized'`` (default: the k-means histograms above) or a density-ratio
        estimator of the MAUVE family (``'knn'``, ``'classifier'``, ``'gaussian'`` or an instance;
        :mod:`jaxmetrics.mauve.frontier.estimators`), which sweeps ``over="n"`` or ``"c"``: each (size,
        system, seed) problem estimates the log ratios on the same row subsets as k-means would
        get, with key ``jax.random.key(s)``, so at ``n`` = all rows it equals
        ``compute_mauve(estimator=..., seed=s)``; ``mauve_star`` and ``num_buckets`` are then ``None``.

    Returns:
      :class:`MauveSweepResult` (arrays ``[V, M, S]`` and ``[V, M]``; ``rows()``, ``to_csv()``,
      ``plot()``).

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.mauve import mauve_sweep, rank_agreement
      >>> rng = np.random.default_rng(0)
      >>> human = rng.normal(size=(100, 8))
      >>> systems = {f"shift {s}": rng.normal(size=(100, 8)) + s for s in (0.0, 0.5, 1.5)}
      >>> res = mauve_sweep(references=human, candidates=systems, over="k", values=(5, 10), seeds=(1, 2, 3, 4))
      >>> res.mauve.shape, res.mauve_mean.shape
      ((2, 3, 4), (2, 3))
      >>> bool(np.all(res.mauve_mean[:, 0] > res.mauve_mean[:, 2]))
      True
      >>> round(rank_agreement(res).min_spearman, 6)
      1.0
      >>> res.rows()[0]  # doctest: +ELLIPSIS
      MauveSweepRow(setting='k', value=5, system='shift 0.0', mauve_mean=..., num_buckets=5, ...)
    """
    if over not in SWEEP_AXES:
        raise ValueError(f"over: expected one of {SWEEP_AXES} (text length: mauve_length_sweep), got {over!r}")
    given_values = values
    p, systems = check_systems(references, candidates)
    seeds = V.check_seeds(seeds)
    _check_common(kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
                  kmeans_max_iter=kmeans_max_iter, pca_max_data=pca_max_data)
    frontier = _sweep_frontier(frontier, scaling, num_points)
    n_min = min([p.shape[0]] + [q.shape[0] for q in systems.values()])
    values = check_values(over, values, n_min)
    sig_values = values if given_values is not None or over != "n" else "default"
    if not is_quantized(estimator):
        if over not in ("n", "c"):
            raise ValueError(f"over: a density-ratio estimator ({estimator!r}) is swept over 'n' or 'c', not {over!r}")
        if not (isinstance(num_buckets, str) and num_buckets == "auto"):
            raise ValueError(f"num_buckets: applies to estimator='quantized' only, not to estimator={estimator!r}")
        sig = _sweep_signature(over, sig_values, seeds, kmeans=False,
                               divergence_curve_discretization_size=frontier.num_points,
                               **estimator_settings(estimator),
                               **({} if over == "c" else dict(mauve_scaling_factor=frontier.scaling)))
        return _ratio_sweep(over, values, p, systems, seeds, get_estimator(estimator), sig=sig,
                            scaling=frontier.scaling, num_points=frontier.num_points)
    if batch_size is not None:
        V.check_int(batch_size, "batch_size", minimum=1)
    if quantizer_options is not None and not isinstance(quantizer_options, Mapping):
        raise TypeError("quantizer_options: expected a mapping {quantizer name: keyword arguments}")
    for v in (values if over in ("n", "k") else (None,)):  # MAUVE's minimum sizes, before any work
        for m, q in systems.items():
            n_p, n_q = (v, v) if over == "n" else (p.shape[0], q.shape[0])
            resolve_k(v if over == "k" else num_buckets, n_p, n_q, m, where=f" at {over}={v}" if v else "")
    names = list(systems)
    fixed = dict(num_buckets=num_buckets, mauve_scaling_factor=frontier.scaling)
    fixed.pop({"k": "num_buckets", "c": "mauve_scaling_factor"}.get(over, ""), None)
    if over == "quantizer":
        fixed["quantizer_options"] = sorted(f"{q}.{k}={v}" for q, kw in (quantizer_options or {}).items()
                                            for k, v in kw.items()) or None
    sig = _sweep_signature(over, sig_values, seeds, kmeans_explained_var=kmeans_explained_var,
                           kmeans_num_redo=kmeans_num_redo, kmeans_max_iter=kmeans_max_iter, pca_max_data=pca_max_data,
                           divergence_curve_discretization_size=frontier.num_points, **fixed)
    stacks = Stacks([(p, systems[m]) for m in names], seeds, explained_var=kmeans_explained_var,
                     pca_max_data=pca_max_data)
    common = dict(num_redo=kmeans_num_redo, max_iter=kmeans_max_iter, batch_size=batch_size)
    if over == "quantizer":
        return _quantizer_sweep(values, p, systems, seeds, stacks, num_buckets=num_buckets,
                                options=dict(quantizer_options or {}), common=common, frontier=frontier, sig=sig)
    thin: list = []
    probs, n_ref, n_cand = Problems(), [], []
    settings = values if over != "c" else (None,)
    for v in settings:
        for i, m in enumerate(names):
            n_p, n_q = p.shape[0], systems[m].shape[0]
            if over == "n":
                n_p = n_q = v
            k = resolve_k(v if over == "k" else num_buckets, n_p, n_q, m, thin,
                           f" at {over}={v}" if over != "c" else "")
            for s in seeds:
                q_rows = subset_rows(s, 13, systems[m].shape[0], n_q) if over == "n" else np.arange(n_q)
                p_rows = subset_rows(s, 11, p.shape[0], n_p) if over == "n" else np.arange(n_p)
                probs.add(stacks.index[(i, s)], q_rows, p_rows, k, s)
            n_ref.append(n_p)
            n_cand.append(n_q)
    warn_thin(thin)
    pc, qc = probs.counts(stacks, **common)
    m_, fi, ms = score_problems(pc, qc, probs.k, values if over == "c" else (frontier.scaling,), frontier.num_points)
    ks = np.asarray(probs.k).reshape(len(settings), len(names), len(seeds))[:, :, 0]
    if over == "c":  # one quantization scored for every c: [C, M*S] -> [V, M, S]
        ks = np.broadcast_to(ks, (len(values), len(names)))
        n_ref, n_cand = n_ref * len(values), n_cand * len(values)
    return sweep_result(over, values, names, seeds, m_, ms, fi, ks, n_ref, n_cand, signature=sig)


def _sweep_frontier(frontier: FrontierSettings | None, scaling: Any, num_points: Any) -> FrontierSettings:
    """The frontier of a sweep: KL MAUVE with mauve-text's scoring (what the sweeps compute)."""
    frontier = FrontierSettings.resolve(frontier, scaling=scaling, num_points=num_points)
    if frontier.divergence != "kl" or frontier.scoring != "mauve-text":
        raise ValueError("frontier: the sweeps score KL MAUVE with scoring='mauve-text', not "
                         f"divergence={frontier.divergence!r}, scoring={frontier.scoring!r}")
    return frontier


def _quantizer_sweep(values, p, systems, seeds, stacks, *, num_buckets, options, common, frontier,
                     sig) -> MauveSweepResult:
    """``mauve_sweep(over="quantizer")``: k-means in the shared computation, any other quantizer
    fitted on each ``[Q; P]`` with key ``jax.random.key(s)``."""
    names = list(systems)
    pcs, qcs, kact, ks, labels, thin = [], [], [], [], [], []
    for v in values:
        label = v if isinstance(v, str) else type(v).__name__
        labels.append(label)
        for i, m in enumerate(names):
            q = systems[m]
            k = resolve_k(num_buckets, p.shape[0], q.shape[0], m, thin if not labels[:-1] else None)
            if isinstance(v, str) and v == "kmeans" and not options.get("kmeans"):
                probs = Problems()
                for s in seeds:
                    probs.add(stacks.index[(i, s)], np.arange(q.shape[0]), np.arange(p.shape[0]), k, s)
                pc, qc = probs.counts(stacks, **common)
                nb = k
            else:
                quant = get_quantizer(v, k, **options.get(label, {})) if isinstance(v, str) else get_quantizer(v, k)
                stacked = np.concatenate([q, p], axis=0)
                pc, qc = [], []
                for s in seeds:
                    fit = fit_labels(quant, stacked, key=jax.random.key(s))
                    nb = int(fit.fitted.num_bins)
                    qc_s, pc_s = split_counts(fit.labels, (q.shape[0], p.shape[0]), nb)
                    qc.append(qc_s)
                    pc.append(pc_s)
            for a, b in zip(pc, qc):
                pcs.append(np.asarray(a))
                qcs.append(np.asarray(b))
                kact.append(nb)
            ks.append(nb)
    warn_thin(thin)
    width = max(kact)
    pad = lambda c: np.pad(c, (0, width - c.shape[0]))
    m_, fi, ms = score_problems(np.stack([pad(c) for c in pcs]), np.stack([pad(c) for c in qcs]), kact,
                         (frontier.scaling,), frontier.num_points)
    n_ref = [p.shape[0]] * (len(values) * len(names))
    n_cand = [systems[m].shape[0] for _ in values for m in names]
    return sweep_result("quantizer", labels, names, seeds, m_, ms, fi, ks, n_ref, n_cand, signature=sig)


def _ratio_sweep(over, values, p, systems, seeds, est, *, sig, scaling, num_points) -> MauveSweepResult:
    """``mauve_sweep`` with a density-ratio estimator: one ``log_ratios`` per (size, system, seed) on
    the rows the k-means sweep would use, scored for every ``c`` (float64)."""
    names = list(systems)
    settings = values if over == "n" else (None,)
    cs = tuple(float(c) for c in values) if over == "c" else (scaling,)
    ratios, n_ref, n_cand = [], [], []
    for v in settings:
        for m in names:
            q = systems[m]
            n_p, n_q = (v, v) if over == "n" else (p.shape[0], q.shape[0])
            for s in seeds:
                lr = est.log_ratios(references=p[subset_rows(s, 11, p.shape[0], n_p)],
                                    candidates=q[subset_rows(s, 13, q.shape[0], n_q)], key=jax.random.key(s))
                ratios.append((np.asarray(lr.p_log_ratio, np.float64), np.asarray(lr.q_log_ratio, np.float64)))
            n_ref.append(n_p)
            n_cand.append(n_q)
    m_ = np.zeros((len(cs), len(ratios)))
    fi = np.zeros_like(m_)
    with jax.enable_x64(True):
        for j, (lp, lq) in enumerate(ratios):
            for i, c in enumerate(cs):
                r = mauve_from_log_ratios(lp, lq, scaling=c, num_points=num_points)
                m_[i, j], fi[i, j] = float(r.mauve), float(r.frontier_integral)
    if over == "c":
        n_ref, n_cand = n_ref * len(values), n_cand * len(values)
    ks = np.zeros(len(values) * len(names), np.int64)
    out = sweep_result(over, values, names, seeds, m_, m_, fi, ks, n_ref, n_cand, signature=sig)
    return out.replace(mauve_star=None, num_buckets=None, estimator=estimator_settings(est)["estimator"])


def _sweep_signature(over: str, values: Any, seeds: tuple, *, kmeans_explained_var=None, kmeans_num_redo=None,
                     kmeans_max_iter=None, pca_max_data=None, model: Any = None, kmeans: bool = True,
                     **settings: Any) -> str:
    """The signature of a sweep (see :class:`MauveSweepResult`); a quantizer among ``values``
    is written as its name and settings; ``kmeans=False`` (a density-ratio estimator's sweep)
    leaves the k-means settings out."""
    from jaxmetrics.results import make_signature

    def label(v):
        if isinstance(v, (str, int, float)):
            return v
        q = _quantizer_settings(v)
        name = q.pop("quantizer")
        return name + "(" + " ".join(f"{k[len(name) + 1:]}={x}" for k, x in q.items()) + ")"

    vals = values if isinstance(values, str) else tuple(label(v) for v in values)
    if not kmeans:
        return make_signature("mauve-sweep", model=model, over=over, values=vals, seeds=tuple(seeds), **settings)
    kmeans = _quantizer_settings(KMeansQuantizer(2, explained_var=kmeans_explained_var, num_redo=kmeans_num_redo,
                                                 max_iter=kmeans_max_iter, pca_max_data=pca_max_data))
    if over == "quantizer":
        kmeans = {k: v for k, v in kmeans.items() if k != "quantizer"}
    return make_signature("mauve-sweep", model=model, over=over, values=vals, seeds=tuple(seeds), **kmeans,
                          **settings)


def _token_lengths(texts: list[str], lm: Any) -> np.ndarray:
    enc = lm.tokenizer(texts, truncation=False, return_attention_mask=False, return_token_type_ids=False,
                       verbose=False)
    return np.asarray([len(x) for x in enc["input_ids"]], np.int64)


def _capped_lengths(lm: Any, lengths: tuple[int, ...]) -> tuple[int, ...]:
    """Each of ``lengths`` by the library's one rule (:func:`jaxmetrics.models.check_max_length`:
    a length above the model's positions is capped at them, with a warning); two lengths that
    the cap makes equal would be one point twice, so they raise."""
    from jaxmetrics.models import check_max_length

    capped = tuple(check_max_length(lm, v, v, name="lengths") for v in lengths)
    if len(set(capped)) != len(capped):
        raise ValueError(f"lengths: {lengths} capped at the model's positions repeat a value: {capped}")
    return capped


def mauve_length_sweep(
    *,
    references: Sequence[str],
    candidates: Mapping[str, Sequence[str]],
    model: Any,
    lengths: Sequence[int],
    seeds: Sequence[int] = DEFAULT_SEEDS,
    pooling: str = "auto",
    batch_size: int = 8,
    num_buckets: int | str = "auto",
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    frontier: FrontierSettings | None = None,
    scaling: float | None = None,
    num_points: int | None = None,
    progress: bool = False,
    dtype: Any = None,
) -> MauveSweepResult:
    """MAUVE against the maximum text length (the paper's Figure 3), from texts.

    For every length ``L``, every text is truncated to its first ``L`` tokens and featurized
    again (a decoder: its last token's hidden state, mauve-text's convention; an encoder: the
    mean over its tokens; ``pooling`` chooses, as ``jaxmetrics mauve --pooling``); then MAUVE of
    each system is computed as in :func:`mauve_sweep` (all lengths, systems and seeds in one
    compiled k-means call). Next to the scores the result holds each side's token length
    distribution after truncation (mean and 10 / 50 / 90 % quantiles): when a side's texts are
    shorter than ``L`` the setting no longer changes them.

    Args:
      references: human texts (P).
      candidates: ``{system name: model texts}`` (Q).
      model: featurizer: a loaded model, a hub id or a local checkpoint directory
        (:func:`jaxmetrics.models.resolve_model`).
      lengths: maximum lengths in tokens; one above the model's positions is capped at them with a
        warning (:func:`jaxmetrics.models.check_max_length`), and two that the cap makes equal raise.
      seeds: integer seeds; keys ``jax.random.key(s)``.
      pooling: ``'auto'`` (mean for encoders, last token for decoders), ``'last'``, ``'mean'`` or
        ``'cls'`` (the pooling table of :mod:`jaxmetrics.models.pooling`); the result records the
        one used.
      batch_size: texts per forward pass.
      num_buckets, kmeans_explained_var, kmeans_num_redo, kmeans_max_iter, frontier, scaling,
      num_points: as in :func:`mauve_sweep`.
      progress: show the featurizer's progress bars.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`MauveSweepResult` with ``setting='length'`` and the length fields filled.

    Examples:
      >>> from jaxmetrics.data import demo_model_dir, load_shakespeare
      >>> from jaxmetrics.mauve import mauve_length_sweep
      >>> texts = load_shakespeare("heldout", min_words=12)
      >>> res = mauve_length_sweep(references=texts[:40], candidates={"other": texts[40:80]},
      ...                          model=demo_model_dir(), lengths=(8, 32), seeds=(1, 2))
      >>> res.mauve.shape, bool(res.references_length_mean[0] <= 8)
      ((2, 1, 2), True)
    """
    from jaxmetrics.models import encode, resolve_model, resolve_pooling

    refs = V.check_texts(references, "references", drop_empty=True)
    if not isinstance(candidates, Mapping) or not candidates:
        raise TypeError("candidates: expected a non-empty mapping {system name: list of texts}")
    cands = {}
    for name, texts in candidates.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"candidates: system names must be non-empty strings, got {name!r}")
        cands[name] = V.check_texts(texts, f"candidates[{name!r}]", drop_empty=True)
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__") or not len(tuple(lengths)):
        raise TypeError("lengths: expected a non-empty sequence of token counts")
    lengths = tuple(V.check_int(v, "lengths", minimum=1) for v in lengths)
    if len(set(lengths)) != len(lengths):
        raise ValueError(f"lengths: repeated values in {lengths}")
    check_pooling(pooling)
    seeds = V.check_seeds(seeds)
    V.check_int(batch_size, "batch_size", minimum=1)
    _check_common(kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
                  kmeans_max_iter=kmeans_max_iter, pca_max_data=-1)
    frontier = _sweep_frontier(frontier, scaling, num_points)
    for m, texts in cands.items():  # MAUVE's minimum sizes, before the model is loaded
        resolve_k(num_buckets, len(refs), len(texts), m)
    lm = resolve_model(model, dtype=dtype)
    lengths = _capped_lengths(lm, lengths)
    kind = resolve_pooling(lm, pooling)
    names = list(cands)
    raw = {"references": _token_lengths(refs, lm)} | {m: _token_lengths(t, lm) for m, t in cands.items()}

    def feats(texts, length):
        with warnings.catch_warnings():  # truncation is the point of the sweep
            warnings.filterwarnings("ignore", message=r".*longer than max_length")
            return np.asarray(encode(texts, model=lm, layers=-1, pooling=kind, max_length=length, batch_size=batch_size,
                                     progress=progress, desc="featurize").pooled[0])

    pairs = []
    for length in lengths:
        p = feats(refs, length)
        for m in names:
            pairs.append((p, feats(cands[m], length)))
    stacks = Stacks(pairs, seeds, explained_var=kmeans_explained_var, pca_max_data=-1)
    probs, n_ref, n_cand, thin = Problems(), [], [], []
    for j, (p, q) in enumerate(pairs):
        k = resolve_k(num_buckets, p.shape[0], q.shape[0], names[j % len(names)], thin,
                       f" at length={lengths[j // len(names)]}")
        for s in seeds:
            probs.add(stacks.index[(j, s)], np.arange(q.shape[0]), np.arange(p.shape[0]), k, s)
        n_ref.append(p.shape[0])
        n_cand.append(q.shape[0])
    warn_thin(thin)
    pc, qc = probs.counts(stacks, num_redo=kmeans_num_redo, max_iter=kmeans_max_iter)
    m_, fi, ms = score_problems(pc, qc, probs.k, (frontier.scaling,), frontier.num_points)
    ks = np.asarray(probs.k).reshape(len(lengths), len(names), len(seeds))[:, :, 0]

    def stats(n_tokens, length):
        cut = np.minimum(n_tokens, length).astype(np.float64)
        return cut.mean(), np.quantile(cut, _QUANTILES)

    ref_stats = [stats(raw["references"], L) for L in lengths]
    cand_stats = [[stats(raw[m], L) for m in names] for L in lengths]
    return sweep_result(
        "length", lengths, names, seeds, m_, ms, fi, ks, n_ref, n_cand,
        references_length_mean=np.asarray([a for a, _ in ref_stats]),
        references_length_quantiles=np.asarray([b for _, b in ref_stats]),
        candidates_length_mean=np.asarray([[a for a, _ in row] for row in cand_stats]),
        candidates_length_quantiles=np.asarray([[b for _, b in row] for row in cand_stats]), pooling=kind,
        signature=_sweep_signature("length", lengths, seeds, kmeans_explained_var=kmeans_explained_var,
                                   kmeans_num_redo=kmeans_num_redo, kmeans_max_iter=kmeans_max_iter, pca_max_data=-1,
                                   model=lm, num_buckets=num_buckets, mauve_scaling_factor=frontier.scaling,
                                   divergence_curve_discretization_size=frontier.num_points,
                                   layer=-1, pooling=kind, dtype=getattr(lm, "dtype", None)))
