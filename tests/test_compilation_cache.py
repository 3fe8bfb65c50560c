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


# A fresh process with the library's default: nothing asked for, the cache folder from
# XDG_CACHE_HOME. Prints cache hits, the folder jaxmetrics chose (or None), the result and JAX's
# cache folder.
DEFAULT = r"""
import jax
import jax.numpy as jnp
from jax import monitoring

hits = []
monitoring.register_event_listener(lambda name, **kw: hits.append(name) if name.endswith("/cache_hits") else None)
from jaxmetrics.compilation import apply_default_compilation_cache
from jaxmetrics.similarity import batch_bertscore
x = jax.random.normal(jax.random.key(0), (2, 5, 8)); m = jnp.ones((2, 5), bool)
f1 = batch_bertscore(candidates=x, references=x, candidates_mask=m, references_mask=m).f1
print(len(hits), apply_default_compilation_cache(), round(float(f1.sum()), 5), jax.config.jax_compilation_cache_dir)
"""


def _default_env(tmp_path, **extra):
    return {"JAXMETRICS_COMPILATION_CACHE": "", "XDG_CACHE_HOME": str(tmp_path / "xdg"), **extra}


def test_cache_is_on_by_default_in_the_users_cache_folder(tmp_path):
    folder = tmp_path / "xdg" / "jaxmetrics" / "xla"
    first = _run("-c", DEFAULT, env=_default_env(tmp_path)).stdout.split()
    assert first[1] == str(folder.resolve()) and any(folder.iterdir())
    second = _run("-c", DEFAULT, env=_default_env(tmp_path)).stdout.split()
    assert first[0] == "0" and int(second[0]) >= 1      # the second process loads, not compiles
    assert first[2] == second[2] == "2.0"


def test_environment_variable_turns_the_default_off_or_moves_it(tmp_path):
    off = _run("-c", DEFAULT, env=_default_env(tmp_path, JAXMETRICS_COMPILATION_CACHE="off")).stdout.split()
    assert off[1] == "None" and not (tmp_path / "xdg").exists()
    moved = _run("-c", DEFAULT, env=_default_env(tmp_path, JAXMETRICS_COMPILATION_CACHE=str(tmp_path / "mine")))
    assert moved.stdout.split()[1] == str((tmp_path / "mine").resolve()) and any((tmp_path / "mine").iterdir())


def test_jax_settings_of_the_user_are_left_alone(tmp_path):
    own = tmp_path / "own"
    out = _run("-c", DEFAULT, env=_default_env(tmp_path, JAX_COMPILATION_CACHE_DIR=str(own))).stdout.split()
    assert out[1] == "None" and out[3] == str(own) and not (tmp_path / "xdg").exists()
    out = _run("-c", DEFAULT, env=_default_env(tmp_path, JAX_ENABLE_COMPILATION_CACHE="false")).stdout.split()
    assert out[1] == "None" and not (tmp_path / "xdg").exists()


def test_an_unusable_default_folder_means_one_warning_and_no_cache(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder's parent should be")
    out = _run("-c", DEFAULT, env={"JAXMETRICS_COMPILATION_CACHE": "", "XDG_CACHE_HOME": str(blocker)})
    assert out.stdout.split()[1:] == ["None", "2.0", "None"]        # the metric still runs
    assert out.stderr.count("running without a compilation cache") == 1, out.stderr
    assert str(blocker) in out.stderr and "JAXMETRICS_COMPILATION_CACHE" in out.stderr


def test_a_nearly_full_disk_is_refused_before_jax_is_touched(tmp_path, monkeypatch):
    from collections import namedtuple

    import jax

    from jaxmetrics import compilation

    before = jax.config.jax_compilation_cache_dir
    monkeypatch.setattr(compilation.shutil, "disk_usage",
                        lambda path: namedtuple("usage", "total used free")(10 * 2**30, 10 * 2**30 - 2**20, 2**20))
    with pytest.raises(ValueError, match="only 1 MiB free"):
        compilation.enable_compilation_cache(tmp_path / "full")
    assert jax.config.jax_compilation_cache_dir == before


def test_cli_option_off_or_a_folder_replaces_the_default(tmp_path, minilm_dir):
    c = tmp_path / "c.txt"
    c.write_text("the cat sat on the mat\nit rains\n")
    argv = ["similarity", "--references", str(c), "--candidates", str(c), "--model", minilm_dir,
            "--metric", "bertscore", "--quiet"]
    out = _run("-c", CLI, "--compilation-cache", "off", *argv, env=_default_env(tmp_path))
    assert out.stdout.strip() and not (tmp_path / "xdg").exists()
    out = _run("-c", CLI, "--compilation-cache", str(tmp_path / "cli"), *argv, env=_default_env(tmp_path))
    assert any((tmp_path / "cli").iterdir()) and not (tmp_path / "xdg").exists()
    out = _run("-c", CLI, *argv, env=_default_env(tmp_path))      # no option: the default folder
    assert any((tmp_path / "xdg" / "jaxmetrics" / "xla").iterdir())
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    out = _run("-c", CLI, *argv, env={"JAXMETRICS_COMPILATION_CACHE": "", "XDG_CACHE_HOME": str(blocker)})
    warning = [line for line in out.stderr.splitlines() if "compilation cache" in line]
    assert warning == [line for line in warning if line.startswith("jaxmetrics: warning: running without")]
    assert len(warning) == 1 and out.stdout.strip(), out.stderr
