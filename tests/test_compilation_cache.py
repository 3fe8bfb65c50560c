"""The persistent compilation cache: a second process loads what the first compiled.

Each run is a fresh interpreter (the setting lasts for a whole process, and JAX reads its cache
state once), so these tests start subprocesses.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

# A jaxmetrics kernel compiled in a fresh process with the cache on; prints how many compiled
# programs came from the cache (JAX records one event per hit) and the result.
SCRIPT = r"""
import sys
import jax
import jax.numpy as jnp
from jax import monitoring

hits = []
monitoring.register_event_listener(lambda name, **kw: hits.append(name) if name.endswith("/cache_hits") else None)
import jaxmetrics
d = jaxmetrics.enable_compilation_cache(sys.argv[1])
from jaxmetrics.similarity import batch_bertscore
x = jax.random.normal(jax.random.key(0), (2, 5, 8)); m = jnp.ones((2, 5), bool)
f1 = batch_bertscore(candidates=x, references=x, candidates_mask=m, references_mask=m).f1
print(len(hits), round(float(f1.sum()), 5))
"""


def _run(*args, env=None):
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})})
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def test_second_process_loads_compiled_programs(tmp_path):
    cache = tmp_path / "xla"
    first = _run("-c", SCRIPT, str(cache)).stdout.split()
    written = list(cache.iterdir())
    assert written, "nothing was written to the cache"
    second = _run("-c", SCRIPT, str(cache)).stdout.split()
    assert first[0] == "0"                   # nothing to load the first time
    assert int(second[0]) >= 1               # the kernel came from disk
    assert second[1] == first[1] == "2.0"    # self-similarity F1 = 1 per pair, same result


def test_default_directory_and_bad_directory(tmp_path, monkeypatch):
    from jaxmetrics.compilation import default_compilation_cache_dir, enable_compilation_cache

    monkeypatch.setenv("JAXMETRICS_COMPILATION_CACHE", str(tmp_path / "here"))
    assert default_compilation_cache_dir() == tmp_path / "here"
    monkeypatch.delenv("JAXMETRICS_COMPILATION_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_compilation_cache_dir() == tmp_path / "xdg" / "jaxmetrics" / "xla"
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="^directory: .* not a directory"):
        enable_compilation_cache(f)   # fails before touching JAX's settings


CLI = "import sys; from jaxmetrics.cli import main; sys.exit(main(sys.argv[1:]))"


def test_cli_option_turns_the_cache_on(tmp_path, minilm_dir):
    cache = tmp_path / "cli-cache"
    c, r = tmp_path / "c.txt", tmp_path / "r.txt"
    c.write_text("the cat sat on the mat\nit rains\n")
    r.write_text("a cat was on a mat\nit is raining\n")
    argv = ["similarity", "--references", str(r), "--candidates", str(c), "--model", minilm_dir,
            "--metric", "bertscore", "--quiet"]
    out = _run("-c", CLI, "--compilation-cache", str(cache), *argv)
    assert any(cache.iterdir()), out.stderr[-2000:]
    bad = subprocess.run([sys.executable, "-c", CLI, "--compilation-cache", str(c), *argv],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.startswith("jaxmetrics similarity: error: --compilation-cache:"), bad.stderr


# tests/conftest.py relies on these to keep a long-lived xdist worker under the kernel's limit
# on memory maps: each compiled program JAX keeps holds a few maps until its caches are dropped.
MAPS = r"""
import gc
import jax
import jax.numpy as jnp

compiled = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, secs, **kw: compiled.append(1) if event == "/jax/core/compile/backend_compile_duration" else None)

def maps():
    with open("/proc/self/maps", "rb") as f:
        return sum(1 for _ in f)

f = jax.jit(lambda x: jnp.tanh(x @ x.T).sum())
before = maps()
for n in range(1, 101):
    f(jnp.ones((n, 3)))
compiled_maps = maps()
jax.clear_caches()
gc.collect()
print(before, compiled_maps, maps(), len(compiled))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="memory maps are read from Linux's /proc")
def test_compiled_programs_hold_memory_maps_until_jax_caches_are_cleared():
    before, compiled, cleared, events = map(int, _run("-c", MAPS).stdout.split())
    assert events >= 100, events     # JAX reports each compilation (tests/conftest.py counts them)
    assert compiled - before >= 200, (before, compiled)     # 100 programs, a few maps each
    assert cleared - before < (compiled - before) / 4, (before, compiled, cleared)
