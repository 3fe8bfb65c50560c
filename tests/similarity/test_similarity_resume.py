"""``score_texts(cache_dir=...)`` (``compute_similarity``'s pipeline) and ``jaxmetrics similarity
--cache-dir``: each streamed chunk's scores are saved as they are done, and a run that stopped
part-way resumes: it encodes only the chunks that were not finished and returns the scores of one
uninterrupted run. The cache is keyed by everything the scores depend on, and a damaged chunk file
is recomputed. The pairs are STS-style pairs of held-out Shakespeare sentences; the tiny random
encoder keeps the cases fast, and one runs through the real all-MiniLM-L6-v2."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jaxmetrics.models.encoding as engine
from jaxmetrics.similarity import SimilaritySettings, compute_similarity
from jaxmetrics.similarity import pipeline
from jaxmetrics.similarity.pipeline import score_texts

N, MAX_LEN, CHUNK = 26, 32, 7
NUM_CHUNKS = -(-N // CHUNK)       # without batch centering: pairs longest first, CHUNK a chunk
_ENCODE = engine.encode_packed
pytestmark = pytest.mark.filterwarnings("ignore:texts.*were truncated:UserWarning")


@pytest.fixture(scope="module")
def pairs():
    from jaxmetrics.data import synthetic_scored_pairs

    rows = synthetic_scored_pairs(N, seed=3)
    refs, cands, _, groups = (list(col) for col in zip(*rows))
    return refs, cands, groups


@pytest.fixture(scope="module")
def encoder(tiny_checkpoint_dir):
    from jaxmetrics.models import load_model

    return load_model(tiny_checkpoint_dir("bert"))


class _Encoder:
    """Counts the chunks the pipeline encodes; ``fail_after`` stops the run like an interruption."""

    def __init__(self, monkeypatch, fail_after: int | None = None):
        self.calls, self.fail_after = 0, fail_after
        real = _ENCODE

        def counting(*args, **kwargs):
            if self.fail_after is not None and self.calls >= self.fail_after:
                raise KeyboardInterrupt("stopped by the test")
            self.calls += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(engine, "encode_packed", counting)


def _chunk_files(root: Path) -> list[Path]:
    return sorted(root.glob("similarity-*/chunk-*.npz"))


def _equal(got, want):
    for name in ("precision", "recall", "f1"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    assert got.signature == want.signature


SETTINGS = [
    dict(metric="twmd", centering="batch", center_batch_size=4),
    dict(metric="bertscore", centering="none", idf=True),
]


@pytest.mark.parametrize("kw", SETTINGS, ids=[k["metric"] for k in SETTINGS])
def test_an_interrupted_run_resumes_where_it_stopped(pairs, encoder, monkeypatch, tmp_path, kw):
    refs, cands, _ = pairs
    settings = SimilaritySettings(layer=1, max_length=MAX_LEN, **kw)
    monkeypatch.setattr(pipeline, "STREAM_PAIRS", CHUNK)
    want = compute_similarity(references=refs, candidates=cands, model=encoder, settings=settings)
    monkeypatch.undo()
    monkeypatch.setattr(pipeline, "STREAM_PAIRS", CHUNK)

    stopped = _Encoder(monkeypatch, fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        score_texts(references=refs, candidates=cands, model=encoder, settings=settings, cache_dir=tmp_path)
    assert len(_chunk_files(tmp_path)) == 2
    assert not list(tmp_path.rglob(".tmp-*")), "a half-written file was left behind"

    again = _Encoder(monkeypatch)
    got = score_texts(references=refs, candidates=cands, model=encoder, settings=settings, cache_dir=tmp_path)
    num_chunks = len(_chunk_files(tmp_path))
    assert again.calls == num_chunks - 2 > 0, "the finished chunks were encoded again"
    _equal(got, want)

    done = _Encoder(monkeypatch)
    _equal(score_texts(references=refs, candidates=cands, model=encoder, settings=settings,
                              cache_dir=tmp_path), want)
    assert done.calls == 0


def test_the_real_encoder_resumes_to_the_same_bertscore(pairs, minilm, monkeypatch, tmp_path):
    refs, cands, _ = pairs
    settings = SimilaritySettings(metric="bertscore", layer=6, max_length=MAX_LEN)
    monkeypatch.setattr(pipeline, "STREAM_PAIRS", CHUNK)
    want = compute_similarity(references=refs, candidates=cands, model=minilm, settings=settings)
    _Encoder(monkeypatch, fail_after=1)
    with pytest.raises(KeyboardInterrupt):
        score_texts(references=refs, candidates=cands, model=minilm, settings=settings, cache_dir=tmp_path)
    again = _Encoder(monkeypatch)
    got = score_texts(references=refs, candidates=cands, model=minilm, settings=settings, cache_dir=tmp_path)
    assert again.calls == len(_chunk_files(tmp_path)) - 1 == NUM_CHUNKS - 1
    _equal(got, want)
    assert 0.3 < float(np.mean(got.f1)) < 1.0


def test_corpus_centering_keeps_its_first_pass(pairs, encoder, monkeypatch, tmp_path):
    """Corpus centering over a group larger than a chunk sums its means in a first pass: the means
    are cached too, so the resumed run does not encode the first-pass chunks again."""
    refs, cands, groups = pairs
    settings = SimilaritySettings(metric="rwmd", centering="corpus", layer=1, max_length=MAX_LEN)
    monkeypatch.setattr(pipeline, "STREAM_PAIRS", CHUNK)
    want = compute_similarity(references=refs, candidates=cands, model=encoder, settings=settings, groups=groups)
    first = _Encoder(monkeypatch)
    score_texts(references=refs, candidates=cands, model=encoder, settings=settings, groups=groups,
                       cache_dir=tmp_path)
    assert list(tmp_path.glob("similarity-*/first-pass-means.npz"))
    for f in _chunk_files(tmp_path)[1:]:
        f.unlink()
    resumed = _Encoder(monkeypatch)
    got = score_texts(references=refs, candidates=cands, model=encoder, settings=settings, groups=groups,
                             cache_dir=tmp_path)
    scored = len(_chunk_files(tmp_path))
    assert first.calls > scored, "the full run had no first pass"
    assert resumed.calls == scored - 1
    _equal(got, want)


def test_other_inputs_or_settings_never_read_the_files(pairs, encoder, monkeypatch, tmp_path):
    refs, cands, _ = pairs
    monkeypatch.setattr(pipeline, "STREAM_PAIRS", CHUNK)
    base = SimilaritySettings(metric="twmd", centering="batch", layer=1, max_length=MAX_LEN)
    score_texts(references=refs, candidates=cands, model=encoder, settings=base, cache_dir=tmp_path)
    for changed in (dict(settings=base.replace(temperature=0.2)), dict(settings=base.replace(layer=2)),
                    dict(settings=base, candidates=cands[::-1])):
        run = dict(references=refs, candidates=cands, model=encoder) | changed
        counter = _Encoder(monkeypatch)
        want = compute_similarity(**run)
        counter.calls = 0
        _equal(score_texts(**run, cache_dir=tmp_path), want)
        assert counter.calls > 0
    assert len(list(tmp_path.glob("similarity-*"))) == 4


def test_a_damaged_chunk_is_named_and_recomputed(pairs, encoder, monkeypatch, tmp_path):
    refs, cands, _ = pairs
    monkeypatch.setattr(pipeline, "STREAM_PAIRS", CHUNK)
    settings = SimilaritySettings(metric="twmd", centering="batch", layer=1, max_length=MAX_LEN)
    want = score_texts(references=refs, candidates=cands, model=encoder, settings=settings, cache_dir=tmp_path)
    bad = _chunk_files(tmp_path)[1]
    bad.write_bytes(bad.read_bytes()[:40])
    counter = _Encoder(monkeypatch)
    with pytest.warns(UserWarning, match=r"cache_dir: ignoring damaged cache file .*chunk-000001\.npz"):
        got = score_texts(references=refs, candidates=cands, model=encoder, settings=settings,
                                 cache_dir=tmp_path)
    assert counter.calls == 1
    _equal(got, want)


def test_bad_cache_dir_or_a_model_without_fingerprint_is_refused(encoder, tmp_path):
    import dataclasses

    f = tmp_path / "file"
    f.write_text("x")
    settings = SimilaritySettings(metric="twmd", layer=1)
    with pytest.raises(ValueError, match="^cache_dir: cannot create"):
        score_texts(references=["a b"], candidates=["a c"], model=encoder, settings=settings, cache_dir=f / "cache")
    with pytest.raises(ValueError, match="^cache_dir: the model has no fingerprint"):
        score_texts(references=["a b"], candidates=["a c"], model=dataclasses.replace(encoder, fingerprint=""),
                    settings=settings, cache_dir=tmp_path)


def test_cli_cache_dir_resumes(tmp_path, tiny_checkpoint_dir, pairs, monkeypatch, capsys):
    from jaxmetrics.cli import main

    refs, cands, _ = pairs
    (tmp_path / "r.txt").write_text("\n".join(refs) + "\n")
    (tmp_path / "c.txt").write_text("\n".join(cands) + "\n")
    monkeypatch.setattr(pipeline, "STREAM_PAIRS", CHUNK)
    args = ["similarity", "--references", str(tmp_path / "r.txt"), "--candidates", str(tmp_path / "c.txt"),
            "--model", tiny_checkpoint_dir("bert"), "--layer", "1", "--max-length", str(MAX_LEN)]
    assert main(args + ["--json", str(tmp_path / "a.json")]) == 0
    cache = tmp_path / "cache"
    assert main(args + ["--json", str(tmp_path / "b.json"), "--cache-dir", str(cache)]) == 0
    assert len(_chunk_files(cache)) >= 2
    counter = _Encoder(monkeypatch)
    assert main(args + ["--json", str(tmp_path / "c.json"), "--cache-dir", str(cache)]) == 0
    assert counter.calls == 0
    a, b, c = (json.loads((tmp_path / f"{x}.json").read_text()) for x in "abc")
    assert a == b == c
    capsys.readouterr()
    assert main(args + ["--alignments", str(tmp_path / "al"), "--cache-dir", str(cache)]) == 2
    assert "--cache-dir: --alignments" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    bad = [a if a != tiny_checkpoint_dir("bert") else str(tmp_path / "no-model") for a in args]
    assert main(bad + ["--cache-dir", str(tmp_path / "file" / "cache")]) == 2
    assert "--cache-dir: cannot create" in capsys.readouterr().err
