"""``evaluate_generation(scoring=ScoringSettings(mauve=MauveScoring(estimator=, divergence=)))`` and ``--mauve-estimator`` /
``--mauve-divergence``: the MAUVE column equals ``compute_mauve_seeds(estimator=, frontier=FrontierSettings(divergence=))`` on
the cached features, the choice is in the config, the signature and the caption, and a cached
run scored with another estimator or divergence is not reused (its generations and features are).

Small size: 32 held-out Shakespeare speeches, the bundled GPT-2 as generator and featurizer,
greedy only, 8 new tokens, two seeds per run, no ME-Petersen."""
from __future__ import annotations

import json

import numpy as np
import pytest

from generation_records import shakespeare_records
from jaxmetrics.data import demo_model_dir
from jaxmetrics.evaluation import GenerationSettings, MauveScoring, ScoringSettings, evaluate_generation, generation

SCORING = ScoringSettings(mauve=MauveScoring(seeds=(25, 26)), mark_evaluate=False, self_bleu_samples=4)
SMALL = dict(generation=GenerationSettings(decodings=("greedy",), seeds=(0,), max_new_tokens=8), scoring=SCORING,
             progress=False)


def _mauve(**changes) -> ScoringSettings:
    """The tests' scoring with some MAUVE settings changed."""
    return SCORING.replace(mauve=SCORING.mauve.replace(**changes))



def _records(n=32):
    return shakespeare_records(n)



@pytest.fixture(scope="module")
def quantized(lm, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    return evaluate_generation(model=lm, featurizer=lm, dataset=_records(), cache_dir=cache, **SMALL), cache


def _features(cache):
    (hum,) = [np.load(p) for p in cache.glob("*/human/features-*.npy")]
    (q,) = [np.load(p) for p in cache.glob("*/greedy/seed0/features-*.npy")]
    return hum, q


class _Calls:
    """compute_mauve_seeds, counting its calls and the estimators they asked for."""

    def __init__(self):
        import jaxmetrics.mauve as M

        self.real, self.estimators = M.compute_mauve_seeds, []

    def __call__(self, *a, **k):
        frontier = k.get("frontier")
        self.estimators.append((k.get("estimator", "quantized"), "kl" if frontier is None else frontier.divergence))
        return self.real(*a, **k)


def _never(*a, **k):
    raise AssertionError("a generation ran: the cached one should have been reused")


def test_gaussian_estimator_is_scored_recorded_and_not_reused(quantized, lm, monkeypatch):
    import jaxmetrics.mauve as M
    from jaxmetrics.mauve import FrontierSettings, compute_mauve_seeds

    base, cache = quantized
    calls = _Calls()
    monkeypatch.setattr(M, "compute_mauve_seeds", calls)
    monkeypatch.setattr(generation, "_generate_run", _never)   # generations and features come from the cache
    kw = dict(model=lm, featurizer=lm, dataset=_records(), cache_dir=cache, **SMALL)
    gauss = evaluate_generation(**dict(kw, scoring=_mauve(estimator="gaussian")))
    assert calls.estimators == [("gaussian", "kl")]                 # scored anew, not the quantized run's scores
    hum, q = _features(cache)
    ref = compute_mauve_seeds(references=hum, candidates=q, seeds=(25, 26), estimator="gaussian")
    run = gauss.runs["greedy"][0]
    assert run["mauve"] == pytest.approx(float(ref.mauve_mean), abs=1e-9)
    assert run["frontier_integral"] == pytest.approx(float(ref.frontier_integral_mean), abs=1e-9)
    assert run["mauve"] != base.runs["greedy"][0]["mauve"]
    mauve = {name: rep.config["scoring"]["mauve"] for name, rep in (("gauss", gauss), ("base", base))}
    assert (mauve["gauss"]["estimator"], mauve["gauss"]["divergence"]) == ("gaussian", "kl")
    assert (mauve["base"]["estimator"], mauve["base"]["divergence"]) == ("quantized", "kl")
    assert "mauve_estimator:gaussian" in gauss.signature and "mauve_estimator:quantized" in base.signature
    assert "MAUVE over 2 gaussian-estimator seeds per run" in gauss.to_markdown()
    assert "MAUVE over 2 k-means seeds per run" in base.to_markdown()
    # another divergence is scored anew too; the same settings again reuse the cached scores
    js = evaluate_generation(**dict(kw, scoring=_mauve(estimator="gaussian", divergence="js")))
    ref_js = compute_mauve_seeds(references=hum, candidates=q, seeds=(25, 26), estimator="gaussian",
                                 frontier=FrontierSettings(divergence="js"))
    assert js.runs["greedy"][0]["mauve"] == pytest.approx(float(ref_js.mauve_mean), abs=1e-9)
    assert js.config["scoring"]["mauve"]["divergence"] == "js" and "gaussian-estimator seeds per run (mauve-text scoring, js " \
        "frontier)" in js.to_markdown()
    again = evaluate_generation(**kw)
    assert again.rows == base.rows and calls.estimators == [("gaussian", "kl"), ("gaussian", "js")]


def test_bad_family_arguments_fail_before_any_generation(lm, monkeypatch):
    monkeypatch.setattr(generation, "_generate_run", _never)
    kw = dict(model=lm, featurizer=lm, dataset=_records(8), **SMALL)
    for extra, match in ((dict(estimator="histogram"), "estimator: expected one of"),
                         (dict(divergence="renyi"), "divergence: expected one of"),
                         (dict(estimator="knn", num_buckets=4), "num_buckets: applies to estimator="),
                         (dict(estimator="knn"), r"dataset: .* 8 prompt\(s\); the report needs at least 26 "
                                                 r"\(scoring.mauve.estimator knn: its 50 neighbours")):
        with pytest.raises(ValueError, match=match):   # the first three when MauveScoring is built
            evaluate_generation(**dict(kw, scoring=_mauve(**extra)))


def test_cli_mauve_estimator_reaches_the_report(quantized, tmp_path, monkeypatch, capsys):
    from jaxmetrics.cli import main
    from jaxmetrics.mauve import FrontierSettings, compute_mauve_seeds

    _, cache = quantized
    monkeypatch.setattr(generation, "_generate_run", _never)   # the library run's generations are reused
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    out = tmp_path / "out"
    assert main(["evaluate-generation", str(data), "--model", str(demo_model_dir()), "--featurizer",
                 str(demo_model_dir()), "--decodings", "greedy", "--seeds", "0", "--max-new-tokens", "8",
                 "--mauve-seeds", "25", "26", "--self-bleu-samples", "4", "--mauve-estimator", "gaussian",
                 "--mauve-divergence", "tv", "--cache-dir", str(cache), "--out", str(out), "--quiet"]) == 0
    js = json.loads((out / "report.json").read_text())
    assert (js["config"]["scoring"]["mauve"]["estimator"], js["config"]["scoring"]["mauve"]["divergence"]) == (
        "gaussian", "tv")
    hum, q = _features(cache)
    ref = compute_mauve_seeds(references=hum, candidates=q, seeds=(25, 26), estimator="gaussian", frontier=FrontierSettings(divergence="tv"))
    assert js["runs"]["greedy"][0]["mauve"] == pytest.approx(float(ref.mauve_mean), abs=1e-9)
    capsys.readouterr()
    # a size the estimator cannot take exits 2 naming the option, before any model is loaded
    small = tmp_path / "s.jsonl"
    small.write_text("".join(json.dumps(r) + "\n" for r in _records(8)))
    assert main(["evaluate-generation", str(small), "--model", str(tmp_path / "none"), "--featurizer",
                 str(tmp_path / "none"), "--mauve-estimator", "knn", "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err
    assert "--mauve-estimator knn: its 50 neighbours" in err and "Traceback" not in err, err
