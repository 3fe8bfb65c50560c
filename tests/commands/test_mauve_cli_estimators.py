"""``jaxmetrics mauve --estimator / --divergence`` (the MAUVE family) on small ``.npy`` features:
the printed line and ``--json`` equal ``compute_mauve_seeds(references=..., estimator=, divergence=)``, a
density-ratio estimator has no MAUVE* (``None`` in the JSON, not printed), and an option of the
k-means pipeline given with a density-ratio estimator exits 2 naming both options, before any
model is loaded."""
from __future__ import annotations

import json

import numpy as np
import pytest

from jaxmetrics.cli import main
from jaxmetrics.mauve import FrontierSettings, compute_mauve_seeds


@pytest.fixture(scope="module")
def feats(tmp_path_factory):
    d = tmp_path_factory.mktemp("mauve_cli_estimators")
    rng = np.random.default_rng(0)
    p = rng.normal(size=(60, 6)).astype(np.float32)
    q = (rng.normal(size=(60, 6)) + 0.3).astype(np.float32)
    np.save(d / "p.npy", p)
    np.save(d / "q.npy", q)
    np.save(d / "p_small.npy", p[:12])
    np.save(d / "q_small.npy", q[:12])
    return d, p, q


def _run(d, *extra):
    return main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"), "--quiet", *extra])


def test_choices_are_the_library_s():
    from jaxmetrics.commands.mauve import DIVERGENCES, ESTIMATORS
    from jaxmetrics.mauve.frontier.estimators import available_estimators
    from jaxmetrics.mauve.frontier.divergences import DIVERGENCES as LIB_DIVERGENCES

    assert list(ESTIMATORS) == available_estimators()   # read from the library when first needed
    assert DIVERGENCES == LIB_DIVERGENCES


def test_knn_with_js_over_seeds_equals_compute_mauve_seeds(feats, capsys):
    d, p, q = feats
    assert _run(d, "--estimator", "knn", "--divergence", "js", "--seeds", "1", "2", "--json", str(d / "knn.json")) == 0
    out = capsys.readouterr().out
    ref = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2), estimator="knn", frontier=FrontierSettings(divergence="js"))
    rec = json.loads((d / "knn.json").read_text())
    assert rec["mauve"] == pytest.approx(float(ref.mauve_mean), abs=1e-12)
    assert rec["frontier_integral"] == pytest.approx(float(ref.frontier_integral_mean), abs=1e-12)
    assert rec["mauve_per_seed"] == pytest.approx([float(v) for v in ref.mauve], abs=1e-12)
    assert rec["mauve_star"] is None and rec["mauve_star_std"] is None and rec["mauve_star_per_seed"] is None
    assert rec["frontier_integral_star"] is None and rec["num_buckets"] is None
    assert (rec["estimator"], rec["divergence"]) == ("knn", "js")
    conf = rec["settings"]
    assert (conf["estimator"], conf["divergence"]) == ("knn", "js")
    assert conf["num_buckets"] is None and conf["quantizer"] is None and conf["kmeans_num_redo"] is None
    assert "estimator:knn" in rec["signature"] and "divergence:js" in rec["signature"]
    assert out.startswith(f"MAUVE {float(ref.mauve_mean):.4f} +- ") and "MAUVE*" not in out
    assert "FI " in out and "estimator knn, divergence js" in out and "k = " not in out


def test_one_seed_gaussian_prints_mauve_and_fi_only(feats, capsys):
    d, p, q = feats
    assert _run(d, "--estimator", "gaussian", "--seeds", "3", "--json", str(d / "g.json")) == 0
    out = capsys.readouterr().out.strip()
    ref = compute_mauve_seeds(references=p, candidates=q, seeds=(3,), estimator="gaussian")
    rec = json.loads((d / "g.json").read_text())
    assert rec["mauve"] == pytest.approx(float(ref.mauve_mean), abs=1e-12) and rec["mauve_std"] is None
    assert out == (f"MAUVE {float(ref.mauve_mean):.4f}  FI {float(ref.frontier_integral_mean):.4f}  "
                   "(estimator gaussian, n = 60 / 60)")


def test_quantized_with_another_divergence_keeps_mauve_star(feats, capsys):
    d, p, q = feats
    assert _run(d, "--divergence", "hellinger", "--seeds", "1", "2", "--num-buckets", "4",
                "--json", str(d / "h.json")) == 0
    out = capsys.readouterr().out
    ref = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2), num_buckets=4, frontier=FrontierSettings(divergence="hellinger"))
    rec = json.loads((d / "h.json").read_text())
    assert rec["mauve"] == pytest.approx(float(ref.mauve_mean), abs=1e-12)
    assert rec["mauve_star"] == pytest.approx(float(ref.mauve_star_mean), abs=1e-12) and rec["num_buckets"] == 4
    assert (rec["estimator"], rec["divergence"]) == ("quantized", "hellinger")
    assert "MAUVE* " in out and "(k = 4, divergence hellinger, n = 60 / 60)" in out


def _fails(argv, capsys, *texts):
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own errors (choices) exit 2 too
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    assert "Traceback" not in err and "was loaded" not in err, err
    for text in texts:
        assert text in err, (argv, err)


@pytest.mark.parametrize("extra,option", [(["--num-buckets", "5"], "--num-buckets"),
                                          (["--kmeans-num-redo", "2"], "--kmeans-num-redo"),
                                          (["--kmeans-explained-var", "0.8"], "--kmeans-explained-var"),
                                          (["--pca-max-data", "50"], "--pca-max-data"),
                                          (["--explain", "2"], "--explain")])
def test_kmeans_options_with_a_ratio_estimator_name_both_options(feats, capsys, extra, option):
    d, _, _ = feats
    _fails(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"), "--estimator", "knn",
            *extra], capsys, f"error: {option}: ", "--estimator knn")


def test_other_bad_family_options_exit_2(feats, capsys, tmp_path, monkeypatch):
    d, _, _ = feats
    base = ["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy")]
    _fails(base + ["--explain", "2", "--divergence", "tv"], capsys, "--explain: ", "--divergence tv")
    _fails(base + ["--estimator", "histogram"], capsys, "--estimator", "invalid choice")
    _fails(base + ["--divergence", "renyi"], capsys, "--divergence", "invalid choice")
    # knn's 50 neighbours need more than 50 rows in all: 12 + 12 is refused, naming the estimator
    _fails(["mauve", "--references", str(d / "p_small.npy"), "--candidates", str(d / "q_small.npy"),
            "--estimator", "knn"], capsys, "--estimator knn: its 50 neighbours", "--references has 12")
    # text files: the sizes are checked before any model is loaded
    import jaxmetrics.models as MO

    def boom(*a, **k):
        raise AssertionError("a model was loaded before the options were checked")

    for name in ("load_model", "resolve_model", "encode"):
        monkeypatch.setattr(MO, name, boom)
    refs, cands = tmp_path / "r.txt", tmp_path / "c.txt"
    refs.write_text("".join(f"a human sentence {i}\n" for i in range(4)))
    cands.write_text("".join(f"a model sentence {i}\n" for i in range(4)))
    _fails(["mauve", "--references", str(refs), "--candidates", str(cands), "--model", str(tmp_path / "none"),
            "--estimator", "classifier"], capsys, "--estimator classifier: its 5 cross-fitting folds")
