"""benchmarks/mauve_profile.py at toy size: the staged run equals compute_mauve (the script
checks it at its smallest size and fails otherwise), the k-means' work is counted, and the
table is written."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def test_tiny_profile_is_the_compute_mauve_path_and_counts_the_searches(tmp_path):
    out = tmp_path / "profile"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    subprocess.run([sys.executable, str(BENCH / "mauve_profile.py"), "--sizes", "200", "--out", str(out)],
                   check=True, capture_output=True, text=True, env=env, timeout=600)
    (rec,) = json.loads(out.with_suffix(".json").read_text())["records"]
    assert rec["compute_mauve_equal"] is True and rec["k"] == 20 and 0 < rec["mauve"] <= 1
    # 400 rows padded to a bucketed size, 20 clusters: below the bounds' threshold, every step
    # searches every row
    assert rec["rows_searched"] == [s * rec["rows"] for s in rec["lloyd_steps"]] and rec["searched_share"] == 1
    assert rec["kmeans_done_gflops"] > 0 and rec["xla_matmul_kmeans_shape_gflops"] > 0
    table = out.with_suffix(".md").read_text()
    assert table.startswith("# mauve_profile") and "| 200 | 20 |" in table and "Machine:" in table
