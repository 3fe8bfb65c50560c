"""MAUVE's minimum sizes and the few-points warning (jaxmetrics/mauve/sizes.py), on synthetic
features and on real text (all-MiniLM-L6-v2 features of the bundled held-out Shakespeare)."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from jaxmetrics.mauve import compute_mauve, compute_mauve_seeds, fit_quantizer, mauve_sweep
from jaxmetrics.mauve.sizes import MEASURED_SPREAD, check_sample_sizes, resolve_num_buckets


def _sentences(n: int, seed: int = 0) -> list[str]:
    """``n`` sentences of 8 to 30 words of the bundled held-out plays, drawn with ``seed``."""
    from jaxmetrics.data import load_shakespeare

    sents = [s for sp in load_shakespeare("heldout") for s in re.split(r"(?<=[.!?])\s+", sp)
             if 8 <= len(s.split()) <= 30]
    idx = np.random.default_rng(seed).choice(len(sents), n, replace=False)
    return [sents[i] for i in idx]


def _no_warning(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*a, **kw)


PQ = dict(n=40, d=6, shift=0.0)  # the pq fixture: tests/conftest.py; q drawn like p


def test_one_bucket_is_refused(pq):
    """One bucket makes both histograms [1]: MAUVE would be 1 whatever the inputs."""
    p, q = pq
    with pytest.raises(ValueError, match="^num_buckets: MAUVE needs at least 2 buckets"):
        compute_mauve(p_features=p, q_features=q + 10, num_buckets=1)
    with pytest.raises(ValueError, match="^num_buckets"):
        compute_mauve_seeds(references=p, candidates=q, num_buckets=1, seeds=(1, 2))
    with pytest.raises(ValueError, match="^num_buckets"):
        fit_quantizer([p, q], num_buckets=1)


def test_a_side_with_fewer_points_than_buckets_is_refused(pq):
    """One line against one line ('auto': 2 buckets) and any side smaller than k raise, naming the side."""
    p, q = pq
    with pytest.raises(ValueError, match=r"^p_features: 1 point\(s\) for 2 buckets"):
        compute_mauve(p_features=p[:1], q_features=q[:1])
    with pytest.raises(ValueError, match=r"^q_features: 1 point\(s\) for 2 buckets"):
        compute_mauve(p_features=p, q_features=q[:1])
    # an explicit k that a side cannot fill names num_buckets and the side
    with pytest.raises(ValueError, match=r"^num_buckets: 8 buckets but q_features has only 5 point"):
        compute_mauve(p_features=p, q_features=q[:5], num_buckets=8)
    with pytest.raises(ValueError, match=r"^num_buckets: 4 buckets but feature_sets\[1\] has only 3 point"):
        fit_quantizer([p, q[:3]], num_buckets=4)
    with pytest.raises(ValueError, match=r"^num_buckets: 12 buckets but candidates\['a'\] at k=12 has only 10"):
        mauve_sweep(references=p, candidates={"a": q[:10]}, over="k", values=(2, 12), seeds=(1,))
    with pytest.raises(ValueError, match=r"^q_text: 1 point"):  # checked before any model is loaded
        compute_mauve(p_text=["a b", "c d"], q_text=["e f", ""], featurize_model_name="/no/such/model")
    check_sample_sizes((2, 2), 2)  # the smallest MAUVE allowed (it warns, below)


def test_few_points_per_bucket_warn_with_the_measured_spread(pq):
    """5 against 5 warns (one line quoting the measured spread); 'auto' on 15 or more per side does not."""
    p, q = pq
    with pytest.warns(UserWarning) as rec:
        out = compute_mauve(p_features=p[:5], q_features=q[:5])
    msgs = [str(w.message) for w in rec if "buckets but one side" in str(w.message)]
    assert len(msgs) == 1 and "\n" not in msgs[0] and 0 <= out.mauve <= 1
    assert msgs[0].startswith("num_buckets: 2 buckets but one side has only 5 points (2.5 per bucket")
    mean, sd = MEASURED_SPREAD[(5, 2)]
    assert f"{mean:.2f} ± {sd:.2f} at 5 vs 5" in msgs[0]
    assert rec[0].filename == __file__  # attributed to the caller's line, not to library source
    with pytest.warns(UserWarning, match=r"^num_buckets: 20 buckets but one side has only 40 points"):
        compute_mauve(p_features=p, q_features=q, num_buckets=20)
    for n in (15, 16, 25, 35, 55, 95, 150, 1000):  # the 'auto' rule keeps >= 7.5 points per bucket
        _no_warning(resolve_num_buckets, "auto", (n, n + 3))
    _no_warning(compute_mauve, p_features=p[:15], q_features=q[:20])
    with pytest.warns(UserWarning, match="buckets but one side has only 14 points"):
        resolve_num_buckets("auto", (14, 100))


def test_sweep_warns_once_for_thin_settings(pq):
    p, q = pq
    with pytest.warns(UserWarning) as rec:
        mauve_sweep(references=p, candidates={"a": q, "b": q + 0.1}, over="n", values=(6, 40), seeds=(1,))
    msgs = [str(w.message) for w in rec if "buckets but one side" in str(w.message)]
    assert len(msgs) == 1 and msgs[0].startswith("num_buckets at n=6 ('a'): 2 buckets") and "1 more" in msgs[0]


def test_real_text_one_against_one_and_five_against_five(minilm):
    """On real sentences: one against one is refused, five against five warns."""
    texts = _sentences(12, seed=1)
    with pytest.raises(ValueError, match="^p_text: 1 point"):
        compute_mauve(p_text=texts[:1], q_text=texts[1:2], model=minilm)
    with pytest.warns(UserWarning, match="only 5 points"):
        out = compute_mauve(p_text=texts[:5], q_text=texts[5:10], model=minilm, pooling="mean")
    assert 0 <= out.mauve <= 1 and out.num_buckets == 2


def _spread(features: np.ndarray, n: int, k: int, draws: int = 20) -> tuple[float, float]:
    vals = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for d in range(draws):
            perm = np.random.default_rng(d).permutation(features.shape[0])
            vals.append(compute_mauve(p_features=features[perm[:n]], q_features=features[perm[n:2 * n]],
                                      num_buckets=k, seed=25 + d).mauve)
    return float(np.mean(vals)), float(np.std(vals, ddof=1))


def test_measured_spread_matches_the_quoted_figures(minilm):
    """The figures the warning quotes (MEASURED_SPREAD): two disjoint samples of the same 400
    sentences, MiniLM mean-pooled, 20 draws each with its own k-means seed."""
    from jaxmetrics.models import encode

    feats = encode(_sentences(400), model=minilm, pooling="mean", progress=False).pooled[0]
    for (n, k), (mean, sd) in MEASURED_SPREAD.items():
        got = _spread(feats, n, k)
        print(f"n = {n} per side, k = {k}: {got[0]:.3f} ± {got[1]:.3f}")
        assert got[0] == pytest.approx(mean, abs=0.02) and got[1] == pytest.approx(sd, abs=0.02), (n, k, got)
