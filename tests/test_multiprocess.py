"""A real two-process run of the README's "Running across hosts" recipe on this machine.

Two Python processes (``tests/multiprocess_worker.py``) join one JAX cluster through
``jax.distributed.initialize`` with a localhost coordinator and CPU collectives over gloo
(``jax_cpu_collectives_implementation='gloo'``), build one global mesh over both processes'
devices, each keep half of the data, and compute perplexity, BERTScore and MAUVE; process 0
also computes each metric alone on all the data. The two must agree.

Also ``perplexity(..., mesh=)`` over the mesh spanning both processes, and ``bertscore_scores`` /
``similarity_scores`` on global arrays made from process-local data (recipe step 5), whose
outputs come back replicated (``np.asarray`` works on every process), and
``mark_evaluate_scores`` on global feature rows. ``compute_mauve`` takes host arrays (every
process passes all rows).

Marked slow: two fresh JAX processes that compile a GPT-2 forward pass, BERTScore and k-means
take about a minute on an idle 2-core machine (several minutes on a loaded one).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("multiprocess_worker.py")
NPROC = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    pytest.importorskip("torch")
    from jaxmetrics.testing import tiny_checkpoint

    d = tmp_path_factory.mktemp("multiprocess")
    gpt2 = tiny_checkpoint("gpt2", d / "gpt2", max_positions=32)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(i), str(NPROC), str(port), gpt2,
                               str(d / f"out{i}.json")], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for i in range(NPROC)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=900)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for i, p in enumerate(procs):
        assert p.returncode == 0, f"process {i} failed:\n{logs[i][-4000:]}"
    return [json.loads((d / f"out{i}.json").read_text()) for i in range(NPROC)]


def _values(results, name):
    for r in results:
        v = r[name]
        assert "error" not in v, f"process {r['process']}: {name}: {v['error']}\n{v['traceback']}"
    return [r[name] for r in results]


def test_two_processes_one_mesh(results):
    assert [r["process"] for r in results] == [0, 1]
    assert all(r["devices"] == NPROC for r in results)  # each process sees the devices of both


def test_perplexity_states_merged_across_processes(results):
    """Per-process perplexity states, gathered with process_allgather and merged (recipe step 6)."""
    v = _values(results, "perplexity")
    assert v[0]["tokens"] == v[1]["tokens"] == v[0]["one_tokens"]
    assert v[0]["two"] == v[1]["two"]
    assert v[0]["two"] == pytest.approx(v[0]["one"], rel=1e-5)


def test_perplexity_windows_split_over_processes(results):
    """``perplexity(..., mesh=mesh)`` with the mesh spanning both processes: every process gets
    the full result (each batch's per-window sums are gathered)."""
    v = _values(results, "perplexity_mesh")
    assert v[0]["two"] == v[1]["two"]
    assert v[0]["two"] == pytest.approx(v[0]["one"], rel=1e-5)


def test_bertscore_pairs_split_over_processes(results):
    """``bertscore_scores(..., mesh=mesh)``: the library pads the pairs and splits them over both
    processes' devices."""
    v = _values(results, "bertscore")
    np.testing.assert_array_equal(v[0]["two"], v[1]["two"])
    np.testing.assert_allclose(v[0]["two"], v[0]["one"], atol=1e-5)


def test_bertscore_from_process_local_pairs(results):
    """Recipe step 5: each process holds only its pairs, made one global array with
    ``jax.make_array_from_process_local_data``, then ``bertscore_scores(..., mesh=mesh)``; the
    outputs are replicated, so ``np.asarray`` reads them on every process."""
    v = _values(results, "bertscore_global")
    np.testing.assert_array_equal(v[0]["two"], v[1]["two"])
    np.testing.assert_array_equal(v[0]["direct"], v[0]["two"])
    np.testing.assert_array_equal(v[1]["direct"], v[1]["two"])
    np.testing.assert_allclose(v[0]["two"], v[0]["one"], atol=1e-5)


def test_similarity_from_process_local_pairs(results):
    """Recipe step 5 with ``similarity_scores(..., mesh=mesh)`` (TWMD) on global arrays."""
    v = _values(results, "similarity_global")
    assert v[0]["global_input"] and v[1]["global_input"]
    np.testing.assert_array_equal(v[0]["two"], v[1]["two"])
    np.testing.assert_allclose(v[0]["two"], v[0]["one"], atol=1e-5)


def test_mauve_rows_split_over_processes(results):
    """Host-local feature rows gathered with process_allgather; ``compute_mauve(..., mesh=mesh)``
    shards them over both processes for the PCA and k-means."""
    v = _values(results, "mauve")
    assert v[0]["gathered_equal"] and v[1]["gathered_equal"]
    assert v[0]["two"] == v[1]["two"]
    assert v[0]["two"] == pytest.approx(v[0]["one"], abs=1e-6)


def test_mark_evaluate_from_process_local_rows(results):
    """Recipe step 5 for feature rows: each process holds half of each set as one global array;
    ``mark_evaluate_scores(..., mesh=mesh)`` gives every process the one-process scores."""
    v = _values(results, "mark_evaluate_global")
    assert v[0]["global_input"] and v[1]["global_input"]
    assert v[0]["two"] == v[1]["two"]
    assert v[0]["two"] == pytest.approx(v[0]["one"], abs=1e-6)


def test_evaluate_generation_over_processes(results):
    """``evaluate_generation(..., mesh=mesh)`` run by both processes (a multi-host run): each
    process gets the one-process report."""
    v = _values(results, "evaluate_generation")
    assert v[0]["two"] == v[1]["two"]
    one, two = v[0]["one"], v[0]["two"]
    assert list(one) == list(two) == ["human", "greedy", "top_k=5"]
    for row in one:
        for k, val in one[row].items():
            if isinstance(val, float):
                assert two[row][k] == pytest.approx(val, rel=1e-5, abs=1e-6), (row, k)
