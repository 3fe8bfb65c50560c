"""SimilaritySettings: the similarity settings as one object, validated once, passed down whole."""
from __future__ import annotations

import inspect

import jax
import numpy as np
import pytest

import jaxmetrics
from jaxmetrics.similarity import (SimilaritySettings, compute_similarity, correlation_sweep, score_encoded,
                                   token_alignments)

REFS = ["a cat was sitting on a mat", "it is raining today", "apples were bought at the market"]
CANDS = ["a cat sat on the mat", "the rain falls today", "we bought some apples"]


def test_defaults_are_filled_in_when_built_and_again_on_replace():
    s = SimilaritySettings()
    assert (s.metric, s.centering, s.temperature, s.special_tokens) == ("twmd", "batch", 0.1, "drop")
    assert s.replace(metric="bertscore") == SimilaritySettings(metric="bertscore")
    assert s.replace(metric="bertscore").centering == "none"
    assert s.replace(centering="none").temperature == 0.02
    assert SimilaritySettings(centering="batch").replace(metric="bertscore").centering == "batch"  # given: kept
    compat = SimilaritySettings(metric="bertscore", bert_score_compat=True)
    assert (compat.centering, compat.special_tokens) == ("none", "keep")
    assert SimilaritySettings(metric="trwmd", centering="corpus").temperature == 0.15
    assert SimilaritySettings(baseline=np.array([0.1, 0.2, 0.3], np.float32), metric="bertscore").baseline == \
        tuple(float(b) for b in np.array([0.1, 0.2, 0.3], np.float32))


def test_frozen_hashable_and_a_static_jit_argument():
    a, b = SimilaritySettings(metric="wmd", layer=3), SimilaritySettings(metric="wmd", layer=3, centering="batch")
    assert a == b and hash(a) == hash(b) and a.fingerprint() == b.fingerprint()
    assert a.fingerprint() != a.replace(layer=4).fingerprint()
    with pytest.raises(AttributeError):
        a.metric = "twmd"
    with pytest.raises(TypeError):
        SimilaritySettings("twmd")  # keyword-only
    f = jax.jit(lambda x, s: x * s.center_batch_size, static_argnames="s")
    assert int(f(2, s=a)) == 64
    assert a.to_dict()["metric"] == "wmd" and "batch_size" not in a.signature_fields()
    assert jaxmetrics.SimilaritySettings is SimilaritySettings


@pytest.mark.parametrize("kw,error,match", [
    (dict(metric="bleu"), ValueError, "^metric"),
    (dict(centering="global"), ValueError, "^centering"),
    (dict(temperature=0.0), ValueError, "^temperature"),
    (dict(num_iterations=0), ValueError, "^num_iterations"),
    (dict(center_batch_size=0), ValueError, "^center_batch_size"),
    (dict(special_tokens="all"), ValueError, "^special_tokens"),
    (dict(baseline=(0.1, 0.2, 0.3)), ValueError, "^baseline"),
    (dict(metric="bertscore", baseline=(0.1, 1.0, 0.3)), ValueError, "^baseline"),
    (dict(bert_score_compat=True), ValueError, "^bert_score_compat"),
    (dict(metric="bertscore", bert_score_compat=True, centering="batch"), ValueError, "^centering"),
    (dict(metric="bertscore", bert_score_compat=True, special_tokens="drop"), ValueError, "^special_tokens"),
    (dict(compat_batch_size=0), ValueError, "^compat_batch_size"),
    (dict(max_length=0), ValueError, "^max_length"),
    (dict(max_length="8"), TypeError, "^max_length"),
    (dict(layer=1.5), TypeError, "^layer"),
    (dict(batch_size=0), ValueError, "^batch_size"),
    (dict(pair_chunk=0), ValueError, "^pair_chunk"),
    (dict(idf="yes"), TypeError, "^idf"),
])
def test_bad_settings_name_the_argument(kw, error, match):
    with pytest.raises(error, match=match):
        SimilaritySettings(**kw)


def test_public_functions_have_at_most_16_parameters():
    for fn in (compute_similarity, token_alignments, correlation_sweep, score_encoded):
        assert len(inspect.signature(fn).parameters) <= 16, fn.__name__


@pytest.mark.filterwarnings("ignore:.*opposite signs")   # short random-ish pairs; the warning is tested elsewhere
def test_keywords_and_settings_give_the_same_result(minilm):
    kw = dict(metric="twmd", layer=5, centering="none", temperature=0.2, num_iterations=2, idf=True,
              special_tokens="cls", max_length=16)
    a = compute_similarity(references=REFS, candidates=CANDS, model=minilm, **kw)
    b = compute_similarity(references=REFS, candidates=CANDS, model=minilm,
                           settings=SimilaritySettings(pair_chunk=1, batch_size=2, **kw))
    assert a.signature == b.signature      # speed-only fields are not in the signature
    np.testing.assert_allclose(a.f1, b.f1, atol=1e-6)
    al = token_alignments(references=REFS, candidates=CANDS, model=minilm, indices=[0],
                          settings=SimilaritySettings(**kw))
    assert al.signature == a.signature and np.array_equal(al.scores.f1, a.f1)


def test_a_keyword_beside_settings_is_refused_and_unsupported_fields_too(minilm):
    s = SimilaritySettings(metric="bertscore")
    with pytest.raises(ValueError, match="^metric: given both"):
        compute_similarity(references=REFS, candidates=CANDS, model=minilm, settings=s, metric="wmd")
    with pytest.raises(TypeError, match="^settings"):
        compute_similarity(references=REFS, candidates=CANDS, model=minilm, settings={"metric": "wmd"})
    with pytest.raises(ValueError, match="^settings: bert_score_compat"):
        token_alignments(references=REFS, candidates=CANDS, model=minilm,
                         settings=s.replace(bert_score_compat=True, layer=6))
    with pytest.raises(ValueError, match="^metric"):
        token_alignments(references=REFS, candidates=CANDS, model=minilm, settings=SimilaritySettings(metric="cka"))
    human = [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="^settings: metric"):   # the sweep's grid is its keywords
        correlation_sweep(references=REFS, candidates=CANDS, human=human, model=minilm, settings=s)
    with pytest.raises(ValueError, match="^settings: idf"):
        correlation_sweep(references=REFS, candidates=CANDS, human=human, model=minilm,
                          settings=SimilaritySettings(idf=True))
