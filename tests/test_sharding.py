"""1 device vs 8 simulated devices for every kernel (run in a separate process, see
``tests/sharding_worker.py``), plus the mesh helpers on this process's device(s)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.sharding import (host_readable, make_mesh, pad_and_shard, pad_to_multiple, place_rows,
                                 replicate_global, shard, spans_processes, to_host)

WORKER = Path(__file__).with_name("sharding_worker.py")

# every kernel and pipeline the worker must report (1 device vs 8)
KERNELS = [
    "kmeans_labels", "kmeans_centroids", "kmeans_assign", "pca_eigenvalues", "pca_transform",
    "perplexity_stats_nll", "perplexity_stats_count", "lm_score_stats", "perplexity_state",
    "score_windows_nll", "score_windows_count",
    "similarity_cosine", "similarity_cka", "similarity_rwmd", "similarity_twmd", "similarity_trwmd",
    "bertscore", "ngram_unique_total", "ngram_entropy", "zipf_stats", "ngram_state_counts",
    "impar_state", "gaussian_moments", "per_device_merge_perplexity", "per_device_merge_count",
    "per_device_merge_ngrams", "pad_and_shard", "pad_and_shard_edge", "place_rows_uneven",
    "perplexity_pipeline", "compute_mauve_hist", "similarity_scores_mesh", "bertscore_mesh", "mark_evaluate_mesh",
    "generate_mesh_greedy", "generate_mesh_sampled",
]


@pytest.fixture(scope="module")
def eight_devices():
    env = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, str(WORKER)], capture_output=True, text=True, env=env,
                         timeout=600, cwd=root)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_worker_covers_every_kernel(eight_devices):
    missing = [k for k in KERNELS if k not in eight_devices]
    assert not missing, missing


@pytest.mark.parametrize("name", KERNELS)
def test_one_device_equals_eight(eight_devices, name):
    rec = eight_devices[name]
    assert len(rec["one"]) == len(rec["eight"]) > 0
    for one, eight in zip(rec["one"], rec["eight"]):
        one, eight = np.asarray(one), np.asarray(eight)
        assert one.shape == eight.shape
        if rec["exact"]:
            np.testing.assert_array_equal(eight, one)  # integer counts and labels: exact
        else:
            np.testing.assert_allclose(eight, one, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- helpers, in process
def test_make_mesh_and_shard_place_rows():
    mesh = make_mesh()
    assert mesh.axis_names == ("data",) and mesh.size == len(jax.devices())
    tree = shard({"a": jnp.arange(8.0).reshape(8, 1), "b": jnp.ones(8, bool)}, mesh)
    assert tree["a"].sharding.spec == jax.sharding.PartitionSpec("data", None)
    np.testing.assert_array_equal(tree["a"][:, 0], np.arange(8.0))
    rep = shard(jnp.ones((3, 2)), mesh, replicate=True)
    assert rep.sharding.spec == jax.sharding.PartitionSpec()


def test_shard_bad_input():
    mesh = make_mesh(jax.devices()[:1])
    if len(jax.devices()) > 1:  # only meaningful with more than one device
        with pytest.raises(ValueError, match="^x:.*multiple"):
            shard(jnp.ones((len(jax.devices()) + 1, 2)))
    with pytest.raises(ValueError, match="^devices:"):
        make_mesh([])
    assert shard(jnp.ones(5), mesh).shape == (5,)


def test_pad_to_multiple_mask():
    out = pad_to_multiple(np.arange(10).reshape(5, 2), 4, value=-1)
    p, m = out.values, out.rows_mask
    assert p.shape == (8, 2) and m.tolist() == [True] * 5 + [False] * 3
    assert (p[5:] == -1).all()
    out = pad_to_multiple(np.ones((8, 3)), 4)
    assert out.values.shape == (8, 3) and out.rows_mask.all()


def test_pad_and_shard_and_place_rows():
    mesh = make_mesh()
    out = pad_and_shard((np.arange(6.0).reshape(3, 2), None), mesh)
    (a, w), mask = out.values, out.rows_mask
    assert w is None and int(mask.sum()) == 3 and a.shape[0] % mesh.size == 0
    np.testing.assert_array_equal(np.asarray(a)[:3], np.arange(6.0).reshape(3, 2))
    assert not np.asarray(a)[3:].any()
    with pytest.raises(ValueError, match="^x:"):
        pad_and_shard((np.ones(3), np.ones(4)), mesh)
    assert isinstance(place_rows(np.ones((4, 2)), None), jax.Array)
    np.testing.assert_array_equal(place_rows(np.ones((8, 2)), mesh), np.ones((8, 2)))


def test_host_helpers_on_one_process():
    """``host_readable`` / ``spans_processes`` / ``to_host`` / ``replicate_global`` on arrays of this
    process (the multi-process side runs in tests/test_multiprocess.py)."""
    mesh = make_mesh()
    a = shard(jnp.arange(8.0).reshape(8, 1), mesh)
    assert not spans_processes(a) and not spans_processes(np.ones(2)) and not spans_processes(None)
    assert host_readable(a, np.ones(2), 1.0)
    assert not jax.jit(lambda x: jnp.asarray(host_readable(x)))(a)
    out = to_host({"a": a, "b": jnp.ones(3, bool)})
    assert isinstance(out["a"], np.ndarray) and isinstance(out["b"], np.ndarray)
    np.testing.assert_array_equal(out["a"][:, 0], np.arange(8.0))
    assert replicate_global(a, mesh) is a  # arrays of this process keep their placement
