"""Meta-evaluation: which metric agrees with people, and is the difference real?

* :func:`meta_evaluate` — per-item scores of several metrics and human scores (optional groups
  and systems) → :class:`MetaEvaluation`: Pearson, Spearman, Kendall τ-b and WMT's τ-like at the
  pooled, group-averaged, per-group and system levels, each with a bootstrap interval; for every
  pair of metrics the significance of the difference of their correlations (paired permutation
  test or paired bootstrap, Williams' test for Pearson), Holm-adjusted; significance clusters.
* the closed forms it uses: :func:`kendall_tau_b`, :func:`tau_like`, :func:`williams_test`,
  :func:`significance_clusters` (Holm's correction: :func:`jaxmetrics.confidence.holm_adjust`);
* items from a file for ``jaxmetrics meta-eval``: :func:`read_meta_items`, :func:`score_items`.

``docs/meta_evaluation.md`` says which correlation and which test answer which question.
"""
from jaxmetrics.meta.evaluate import CORRELATIONS, LEVELS, MetaEvaluation, meta_evaluate
from jaxmetrics.meta.items import ITEM_METRICS, MetaItems, read_meta_items, score_items
from jaxmetrics.meta.statistics import WilliamsTest, kendall_tau_b, significance_clusters, tau_like, williams_test

__all__ = ["CORRELATIONS", "ITEM_METRICS", "LEVELS", "MetaEvaluation", "MetaItems", "WilliamsTest", "kendall_tau_b", "meta_evaluate", "read_meta_items", "score_items", "significance_clusters", "tau_like",
           "williams_test"]
