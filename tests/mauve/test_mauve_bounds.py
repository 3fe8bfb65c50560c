"""Lower (and upper) bounds of the numeric options: a value that would give a meaningless number
silently is refused before any work, with a ``ValueError`` naming the argument, in Python and on the
command line alike (jaxmetrics/_validation.py, FrontierSettings, KMeansQuantizer, mauve/sizes.py)."""
from __future__ import annotations

import re

import jax
import numpy as np
import pytest

from jaxmetrics.cli import main
from jaxmetrics.confidence import compare_systems, confidence_interval
from jaxmetrics.mauve import (KMeansQuantizer, compare_mauve, compute_mauve, compute_mauve_seeds, estimate_mauve,
                              fit_quantizer, mauve_from_histograms, mauve_sweep)
from jaxmetrics.mauve.quantize.pca import fit_pca

PQ = dict(n=40, d=6, shift=0.5)  # the pq fixture (tests/conftest.py): 80 rows of dimension 6 stacked


def _cases(p, q):
    """(label, call, argument named by the error): every degenerate value the library used to accept
    (the first block) and the ones it already refused, which must keep their argument's name."""
    key = jax.random.key(0)
    x = np.concatenate([q, p])
    f1 = np.random.default_rng(1).normal(size=60)
    return [
        # PCA subsample: 1 row projects every text to one point (MAUVE 1); 2..d rows span too few directions
        ("pca_max_data=1", lambda: compute_mauve(p_features=p, q_features=q, pca_max_data=1), "pca_max_data"),
        ("pca_max_data=2", lambda: compute_mauve(p_features=p, q_features=q, pca_max_data=2), "pca_max_data"),
        ("pca_max_data=d", lambda: compute_mauve(p_features=p, q_features=q, pca_max_data=6), "pca_max_data"),
        ("seeds pca", lambda: compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2),
                                                  quantizer=KMeansQuantizer("auto", pca_max_data=3)), "pca_max_data"),
        ("sweep pca", lambda: mauve_sweep(references=p, candidates={"a": q}, over="k", values=(4,), seeds=(1,),
                                          pca_max_data=2), "pca_max_data"),
        ("codebook pca", lambda: fit_quantizer([p, q], num_buckets=4, pca_max_data=2), "pca_max_data"),
        ("quantizer pca", lambda: KMeansQuantizer(4, pca_max_data=1), "pca_max_data"),
        ("fit pca", lambda: KMeansQuantizer(4, pca_max_data=5).fit(x, key=key), "pca_max_data"),
        ("fit_pca max_data", lambda: fit_pca(x, key=key, max_data=3), "max_data"),
        # one bucket: both histograms [1], MAUVE 1 whatever the texts
        ("num_bins=1", lambda: KMeansQuantizer(1), "num_bins"),
        ("quantizer k=1", lambda: compute_mauve_seeds(references=p, candidates=q, quantizer=KMeansQuantizer(1)),
         "num_bins"),
        # c < 1: disjoint texts score above 1/2 (0.986 at c = 0.1)
        ("c=0.5", lambda: compute_mauve(p_features=p, q_features=q, mauve_scaling_factor=0.5), "mauve_scaling_factor"),
        ("c=0.1 seeds", lambda: compute_mauve_seeds(references=p, candidates=q, scaling=0.1), "scaling"),
        ("c=0.5 estimate", lambda: estimate_mauve(references=p, candidates=q, key=key, scaling=0.5), "scaling"),
        ("c=0.5 histograms", lambda: mauve_from_histograms([0.5, 0.5], [0.9, 0.1], scaling=0.5), "scaling"),
        ("c=0.5 sweep", lambda: mauve_sweep(references=p, candidates={"a": q}, over="c", values=(0.5, 5.0),
                                            seeds=(1,)), "values"),
        # m <= 2: only end-point weights, the curve is its two end segments
        ("m=2", lambda: compute_mauve(p_features=p, q_features=q, divergence_curve_discretization_size=2),
         "divergence_curve_discretization_size"),
        ("m=1 seeds", lambda: compute_mauve_seeds(references=p, candidates=q, num_points=1), "num_points"),
        ("m=2 histograms", lambda: mauve_from_histograms([0.5, 0.5], [0.9, 0.1], num_points=2), "num_points"),
        # intervals: fewer resamples than (1 + c) / (1 - c) make the end points the extreme resamples
        ("B=20 seeds", lambda: compute_mauve_seeds(references=p, candidates=q, confidence=0.95, num_resamples=20),
         "num_resamples"),
        ("conf=0.3 seeds", lambda: compute_mauve_seeds(references=p, candidates=q, confidence=0.3), "confidence"),
        ("B=10 compare", lambda: compare_mauve(references=p, systems={"a": q, "b": p}, key=key, num_resamples=10),
         "num_resamples"),
        ("B=30 interval", lambda: confidence_interval(np.mean, f1, key=key, num_resamples=30), "num_resamples"),
        ("B=150 at 0.99", lambda: confidence_interval(np.mean, f1, key=key, num_resamples=150, confidence=0.99),
         "num_resamples"),
        ("conf=0.2 interval", lambda: confidence_interval(np.mean, f1, key=key, confidence=0.2), "confidence"),
        ("B=5 systems", lambda: compare_systems(np.mean, {"a": f1, "b": f1 + 0.1}, key=key, num_resamples=5),
         "num_resamples"),
        # already refused: keep naming the argument
        ("pca_max_data=0", lambda: compute_mauve(p_features=p, q_features=q, pca_max_data=0), "pca_max_data"),
        ("pca_max_data=-5", lambda: compute_mauve(p_features=p, q_features=q, pca_max_data=-5), "pca_max_data"),
        ("c=0", lambda: compute_mauve(p_features=p, q_features=q, mauve_scaling_factor=0.0), "mauve_scaling_factor"),
        ("num_buckets=1", lambda: compute_mauve(p_features=p, q_features=q, num_buckets=1), "num_buckets"),
        ("explained_var=1", lambda: compute_mauve(p_features=p, q_features=q, kmeans_explained_var=1.0),
         "kmeans_explained_var"),
        ("num_redo=0", lambda: compute_mauve(p_features=p, q_features=q, kmeans_num_redo=0), "kmeans_num_redo"),
        ("max_iter=0", lambda: compute_mauve(p_features=p, q_features=q, kmeans_max_iter=0), "kmeans_max_iter"),
    ]


_LABELS = [c[0] for c in _cases(np.zeros((1, 1)), np.zeros((1, 1)))]


@pytest.mark.parametrize("label", _LABELS)
def test_degenerate_values_are_refused_naming_the_argument(pq, label):
    p, q = pq
    (call, name), = [(c, n) for lab, c, n in _cases(p, q) if lab == label]
    with pytest.raises(ValueError, match=rf"^{re.escape(name)}: "):
        call()


@pytest.mark.filterwarnings("ignore:num_buckets")  # 3 rows a side: the few-points warning
def test_the_pca_subsample_bound_is_the_feature_dimension(pq):
    """d + 1 rows (or all of them) are accepted: the bound refuses only subsamples that cannot span
    the features, and a value at least the number of rows means all rows."""
    p, q = pq
    want = compute_mauve(p_features=p, q_features=q, num_buckets=4).mauve
    assert compute_mauve(p_features=p, q_features=q, num_buckets=4, pca_max_data=80).mauve == want
    assert compute_mauve(p_features=p, q_features=q, num_buckets=4, pca_max_data=500).mauve == want
    assert 0.0 < compute_mauve(p_features=p, q_features=q, num_buckets=4, pca_max_data=7).mauve <= 1.0
    # fewer rows than d + 1 in all: a subsample must then be all of them
    with pytest.raises(ValueError, match=r"^pca_max_data: .* at least 6 rows \(all rows\)"):
        compute_mauve(p_features=p[:3, :], q_features=q[:3, :], num_buckets=2, pca_max_data=5)
    assert compute_mauve(p_features=p[:3], q_features=q[:3], num_buckets=2, pca_max_data=6).mauve > 0


def _cli_error(argv, capsys) -> str:
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    return err


def test_the_command_line_refuses_the_same_values_with_the_same_message(tmp_path, pq, capsys):
    """`jaxmetrics mauve` on .npy features: each degenerate value exits 2 with the library's message,
    the option in place of the argument's name."""
    p, q = pq
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "q.npy", q)
    base = ["mauve", "--references", str(tmp_path / "p.npy"), "--candidates", str(tmp_path / "q.npy"), "--quiet"]
    for extra, option, kwargs in (
        (["--pca-max-data", "1"], "--pca-max-data", dict(pca_max_data=1)),
        (["--pca-max-data", "2"], "--pca-max-data", dict(pca_max_data=2)),
        (["--mauve-scaling-factor", "0.5"], "--mauve-scaling-factor", dict(mauve_scaling_factor=0.5)),
        (["--divergence-curve-discretization-size", "2"], "--divergence-curve-discretization-size",
         dict(divergence_curve_discretization_size=2)),
        (["--num-buckets", "1"], "--num-buckets", dict(num_buckets=1)),
    ):
        with pytest.raises(ValueError) as e:
            compute_mauve(p_features=p, q_features=q, **kwargs)
        name, _, message = str(e.value).partition(": ")
        assert name == next(iter(kwargs)) or name in ("scaling", "num_points"), str(e.value)
        err = _cli_error(base + extra, capsys)
        assert f"{option}: {message}" in err, (extra, err)


def test_the_compare_command_uses_the_library_bounds(tmp_path, capsys):
    err = _cli_error(["compare", "--references", str(tmp_path / "r.txt"), "--candidates", "a", "b", "--model", "x",
                      "--num-resamples", "30", "--confidence", "0.95"], capsys)
    assert "--num-resamples: a 95% interval needs at least 39 resamples, got 30" in err


def test_real_text_pca_max_data_one_is_refused_where_main_returned_one(minilm):
    """all-MiniLM-L6-v2 features of held-out Shakespeare against the same sentences degraded (each
    one looping over its first third): MAUVE is well below 1 with the PCA on all rows, and
    pca_max_data=1, which made it 1.0000 (every text projected to one point), is refused, naming
    the argument, as is 2, which spans one direction of 384."""
    from jaxmetrics.data import load_shakespeare
    from jaxmetrics.models import sentence_embeddings

    sents = [s for sp in load_shakespeare("heldout") for s in re.split(r"(?<=[.!?])\s+", sp)
             if 8 <= len(s.split()) <= 30][:120]

    def loop(s):
        w = s.split()
        head = w[: max(3, len(w) // 3)]
        return " ".join((head * (len(w) // len(head) + 1))[: len(w)])

    human = np.asarray(sentence_embeddings(sents[:60], model=minilm))
    degraded = np.asarray(sentence_embeddings([loop(s) for s in sents[60:]], model=minilm))
    full = compute_mauve(p_features=human, q_features=degraded, num_buckets=4)
    assert full.mauve < 0.9
    with pytest.raises(ValueError, match=r"^pca_max_data: must be -1 \(all rows\) or at least 2 rows"):
        compute_mauve(p_features=human, q_features=degraded, num_buckets=4, pca_max_data=1)
    with pytest.raises(ValueError, match=r"^pca_max_data: .* spans at most 1 of the 384 .* at least 120 rows"):
        compute_mauve(p_features=human, q_features=degraded, num_buckets=4, pca_max_data=2)
    assert compute_mauve(p_features=human, q_features=degraded, num_buckets=4, pca_max_data=120).mauve == full.mauve
