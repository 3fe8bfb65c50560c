"""The stage objects of ``evaluate_generation``: validated once when built (the error names the
field), hashable and equal by value, and the source of the run's config, signature and cache
keys; a default run keeps the cache keys of the time before the objects.

Small size: 8 held-out speeches, the bundled GPT-2 as generator and featurizer, greedy, 4 tokens."""
from __future__ import annotations

import inspect

import pytest

from generation_records import shakespeare_records
from jaxmetrics.evaluation import (FeatureSettings, GenerationSettings, MauveScoring, ScoringSettings,
                                   SimilarityScoring, evaluate_generation)
from jaxmetrics.evaluation.store import stable_hash


def test_objects_are_normalised_hashable_and_equal_by_value():
    a = GenerationSettings(decodings=["pure", "temperature=0.70,top_k=40"], seeds=[0, 1])
    b = GenerationSettings(decodings=("sample", "top_k=40,temperature=0.7"), seeds=(0, 1))
    assert a == b and hash(a) == hash(b) and a.fingerprint() == b.fingerprint()
    assert a.decodings == ("sample", "temperature=0.7,top_k=40") and a.seeds == (0, 1)
    assert {ScoringSettings(): 1}[ScoringSettings(mauve=MauveScoring())] == 1
    assert ScoringSettings().to_dict()["mauve"]["seeds"] == [25, 26, 27, 28, 29]
    assert a.replace(seeds=(3,)).seeds == (3,) and GenerationSettings().signature_fields()["max_new_tokens"] == "auto"


@pytest.mark.parametrize("build,error,match", [
    (lambda: GenerationSettings(decodings=["beam=4"]), ValueError, "^decodings: unknown setting 'beam'"),
    (lambda: GenerationSettings(seeds=[1, 1]), ValueError, r"^seeds: repeated seeds \[1, 1\]"),
    (lambda: GenerationSettings(max_new_tokens=0), ValueError, "^max_new_tokens: must be >= 1"),
    (lambda: GenerationSettings(prompt_tokens=1.5), TypeError, "^prompt_tokens: expected an integer"),
    (lambda: FeatureSettings(pooling="max"), ValueError, "^pooling: expected one of"),
    (lambda: FeatureSettings(max_length=0), ValueError, "^max_length: must be >= 1"),
    (lambda: MauveScoring(seeds=(3, 3)), ValueError, r"^seeds: repeated seeds \[3, 3\]"),
    (lambda: MauveScoring(seeds=5), TypeError, r"^seeds: expected a sequence of seeds.*tuple\(range\(25, 25 \+ m\)\)"),
    (lambda: MauveScoring(seeds=(-1,)), ValueError, "^seeds: must be >= 0"),
    (lambda: MauveScoring(scaling=0), ValueError, "^scaling: "),
    (lambda: MauveScoring(num_points=0), ValueError, "^num_points: must be at least 3, got 0"),
    (lambda: MauveScoring(scoring="x"), ValueError, "^scoring: expected one of"),
    (lambda: MauveScoring(estimator="knn", num_buckets=4), ValueError, "^num_buckets: applies to estimator="),
    (lambda: SimilarityScoring(temperature=-1.0), ValueError, "^temperature: "),
    (lambda: ScoringSettings(self_bleu_samples=0), ValueError, "^self_bleu_samples: must be >= 1"),
    (lambda: ScoringSettings(mauve={"seeds": (1,)}), TypeError, "^mauve: expected a MauveScoring"),
])
def test_a_bad_setting_fails_when_built_naming_the_field(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_evaluate_generation_takes_the_objects():
    params = inspect.signature(evaluate_generation).parameters
    assert len(params) <= 16
    assert not {"eval_seed", "mauve_seed", "mauve_seeds", "decodings", "num_buckets"} & set(params)
    with pytest.raises(TypeError, match="^generation: expected a jaxmetrics.evaluation.GenerationSettings"):
        evaluate_generation(model="no/such/model", featurizer="no/such/model", dataset=shakespeare_records(4),
                            generation={"seeds": (0,)})


def test_default_run_keeps_the_cache_keys_and_derives_config_and_signature(lm, tmp_path):
    """The keys a default run wrote before the settings were objects (their dicts written out
    here as they were), so existing caches are reused."""
    gen = GenerationSettings(decodings=("greedy",), max_new_tokens=4)
    rep = evaluate_generation(model=lm, featurizer=lm, dataset=shakespeare_records(8), generation=gen,
                              cache_dir=tmp_path, progress=False)
    dtypes = {"model": "float32", "featurizer": "float32", "similarity_model": None}
    features = stable_hash({"fp": lm.fingerprint, "dtype": "float32", "pooling": "last", "len": None,
                            "include_prompt": True})
    scores = stable_hash({"pooling": "last", "mauve_seeds": 5, "mauve_seed": 25, "mauve_scoring": "mauve-text",
                          "num_buckets": "auto", "kmeans_num_redo": 5, "kmeans_max_iter": 500, "include_prompt": True,
                          "twmd_temperature": 0.1, "self_bleu_samples": 500, "featurize_max_length": None,
                          "similarity_max_length": None, "mark_evaluate": True, "hf_perplexity": False,
                          "dtypes": dtypes, "featurizer": lm.fingerprint, "sim": None})
    for run in ("human", "greedy/seed0"):
        assert len(list(tmp_path.glob(f"*/{run}/features-{features}.npy"))) == 1, run
        assert len(list(tmp_path.glob(f"*/{run}/scores-{scores}.json"))) == 1, run
    # the config holds the objects' to_dict(), the signature their signature_fields()
    assert rep.config["generation"] == gen.to_dict() and rep.config["scoring"] == ScoringSettings().to_dict()
    assert rep.config["features"] == FeatureSettings().to_dict() and rep.config["pooling"] == "last"
    for field in ("kmeans_seeds:25,26,27,28,29", "mauve_scaling:5.0", "mauve_num_points:25", "max_new_tokens:4",
                  "decodings:greedy", "twmd_temperature:0.1", "pooling:last"):
        assert f"|{field}|" in rep.signature + "|", field
