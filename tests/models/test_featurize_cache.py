"""Feature cache: keys, atomic chunks, and resume after a killed featurizing process."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from jaxmetrics.models import featurize, load_model
from jaxmetrics.models.cache import FeatureCache  # noqa: E402
from jaxmetrics.models.cache import text_hash  # noqa: E402

TEXTS = [f"text number {i}: " + "the quick brown fox " * (1 + i % 5) for i in range(20)]


def _chunks(cache_root: Path):
    """{text hash: row} of every complete chunk under cache_root (and the chunk count)."""
    rows, n = {}, 0
    for f in cache_root.rglob("chunk-*.npz"):
        n += 1
        with np.load(f) as z:
            for h, r in zip(z["hashes"].tolist(), z["features"]):
                rows[h] = r
    return rows, n


@pytest.fixture
def padded_batches(monkeypatch):
    """Every text through padded batches of ``batch_size`` rows (no packing), so the batches,
    and the cache chunks written per batch, are counted in texts."""
    from jaxmetrics.models import batching

    monkeypatch.setattr(batching, "PACK_LENGTH", 0)


def test_cache_roundtrip_and_keys(tmp_path, gpt2, padded_batches):
    plain = featurize(TEXTS[:6], model=gpt2, max_length=32, batch_size=4, progress=False)
    first = featurize(TEXTS[:6], model=gpt2, max_length=32, batch_size=4, cache_dir=tmp_path, progress=False)
    np.testing.assert_array_equal(first, plain)
    rows, _ = _chunks(tmp_path)
    assert set(rows) == {text_hash(t) for t in TEXTS[:6]}
    # a second call reads everything from disk: nothing new is written
    second = featurize(TEXTS[:6][::-1], model=gpt2, max_length=32, batch_size=4, cache_dir=tmp_path, progress=False)
    np.testing.assert_array_equal(second, plain[::-1])
    assert _chunks(tmp_path)[1] == 2
    # another layer or max_length is another key: recomputed, stored separately
    featurize(TEXTS[:6], model=gpt2, max_length=16, batch_size=4, cache_dir=tmp_path, progress=False)
    featurize(TEXTS[:6], model=gpt2, max_length=32, layer=1, batch_size=4, cache_dir=tmp_path, progress=False)
    keys = sorted(p.name for p in tmp_path.iterdir())
    assert len(keys) == 3 and any("len16" in k for k in keys) and any("layer1" in k for k in keys)
    assert not list(tmp_path.rglob(".tmp-*"))  # writes are atomic renames


def test_cache_counters_and_unreadable_file(tmp_path):
    c = FeatureCache(tmp_path, "k")
    c.put(["a", "b"], np.ones((2, 3), np.float32))
    (c.dir / "chunk-broken.npz").write_bytes(b"not a zip")
    c2 = FeatureCache(tmp_path, "k")
    with pytest.warns(UserWarning, match="^cache_dir: ignoring unreadable cache file"):
        found = c2.get_many(["b", "x", "a"])
    assert sorted(found) == [0, 2] and c2.hits == 2 and c2.computed == 0
    with pytest.raises(TypeError, match="^cache_dir"):
        FeatureCache(3, "k")


SCRIPT = textwrap.dedent("""
    import sys, time
    from jaxmetrics.models import batching, featurize, load_model
    batching.PACK_LENGTH = 0  # padded batches of batch_size texts (see padded_batches)
    model_dir, cache_dir, texts_file = sys.argv[1:4]
    lm = load_model(model_dir)
    reduction = lm.reduction
    def slow(key, fn, **kw):  # slow each forward pass down so the parent can kill us midway
        f = reduction(key, fn, **kw)
        def g(ids, mask):
            time.sleep(0.4)
            return f(ids, mask)
        return g
    lm.reduction = slow
    texts = open(texts_file).read().split("\\n")
    featurize(texts, model=lm, max_length=32, batch_size=2, cache_dir=cache_dir, progress=False)
    print("FINISHED")
""")


@pytest.mark.integration
def test_killed_run_resumes_and_recomputes_only_missing(tmp_path, gpt2_dir, gpt2, padded_batches):
    cache_dir = tmp_path / "cache"
    texts_file = tmp_path / "texts.txt"
    texts_file.write_text("\n".join(TEXTS))
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, HF_HUB_OFFLINE="1", JAX_PLATFORMS="cpu")
    proc = subprocess.Popen([sys.executable, str(script), gpt2_dir, str(cache_dir), str(texts_file)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(Path(__file__).parents[2]))
    deadline = time.time() + 240
    try:
        while _chunks(cache_dir)[1] < 3:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.time() < deadline, "featurizing subprocess made no progress"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done, _ = _chunks(cache_dir)
    assert 0 < len(done) < len(TEXTS)  # killed midway: some, not all, features on disk

    calls = []
    reduction = gpt2.reduction

    def counting(key, fn, **kw):
        f = reduction(key, fn, **kw)
        return lambda ids, mask: calls.append(ids.shape[0]) or f(ids, mask)

    gpt2.reduction = counting
    try:
        resumed = featurize(TEXTS, model=gpt2, max_length=32, batch_size=2, cache_dir=cache_dir, progress=False)
    finally:
        del gpt2.reduction
    after, _ = _chunks(cache_dir)
    missing = len(TEXTS) - len(done)
    assert len(after) == len(TEXTS)
    assert len(calls) == -(-missing // 2)  # only the missing texts went through the model
    new = set(after) - set(done)
    assert new == {text_hash(t) for t in TEXTS} - set(done)
    fresh = featurize(TEXTS, model=gpt2, max_length=32, batch_size=2, progress=False)
    np.testing.assert_allclose(resumed, fresh, atol=1e-5)
