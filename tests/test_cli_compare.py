"""``jaxmetrics compare`` on real text: the leaderboard, its JSON and plot, and every bad input
refused before the model is loaded."""
import json
import re

import pytest

from jaxmetrics.cli import main


def _sentences(n):
    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare("train"):
        out += [s for s in re.split(r"(?<=[.!?])\s+", speech) if 8 <= len(s.split()) <= 30]
    return out[:n]


def _repeat(s):
    w = s.split()
    head = w[: max(3, len(w) // 3)]
    return " ".join((head * (len(w) // len(head) + 1))[: len(w)])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("compare")
    refs = _sentences(40)
    close = [" ".join(s.split()[1:]) for s in refs]           # the first word dropped
    closer = [" ".join(s.split()[:-1]) for s in refs]         # the last word dropped
    looped = [_repeat(s) for s in refs]                       # degenerate repetition
    paths = {}
    for name, texts in (("refs", refs), ("close", close), ("closer", closer), ("looped", looped)):
        paths[name] = d / f"{name}.txt"
        paths[name].write_text("\n".join(texts) + "\n")
    return d, {k: str(v) for k, v in paths.items()}


def test_leaderboard_json_and_plot_on_real_text(files, minilm_dir, capsys):
    d, f = files
    out, png = d / "board.json", d / "board.png"
    rc = main(["compare", "--references", f["refs"], "--candidates", f["looped"], f["close"], f["closer"],
               "--model", str(minilm_dir), "--num-resamples", "500", "--json", str(out), "--plot", str(png),
               "--quiet"])
    table = capsys.readouterr().out
    assert rc == 0
    doc = json.loads(out.read_text())
    ranks = {s["name"]: s["rank"] for s in doc["systems"]}
    assert ranks["looped"] == 3                                # the degraded system is last
    for s in doc["systems"]:
        assert s["low"] < s["value"] < s["high"]
    looped_pairs = [p for p in doc["pairs"] if "looped" in (p["a"], p["b"])]
    assert len(doc["pairs"]) == 3 and all(p["p_value"] < 0.05 for p in looped_pairs)
    assert "metric:bertscore" in doc["signature"] and doc["method"] == "bootstrap"
    assert png.stat().st_size > 0
    last = [ln for ln in table.splitlines() if ln.startswith("| 3 |")][0]
    assert "looped" in last and last.rstrip().endswith("| - |")   # better than nobody
    first = [ln for ln in table.splitlines() if ln.startswith("| 1 |")][0]
    assert "looped" in first.split("|")[5]                    # the leader beats the looped system


@pytest.mark.parametrize("extra,match", [
    (["--candidates", "CLOSE"], "--candidates: give at least two systems"),
    (["--candidates", "CLOSE", "CLOSER", "--names", "a"], "--names: 1 names for 2"),
    (["--candidates", "CLOSE", "CLOSE"], "--names: the systems' names must differ"),
    (["--candidates", "CLOSE", "CLOSER", "--confidence", "1.5"], "--confidence: expected a number"),
    (["--candidates", "CLOSE", "CLOSER", "--num-resamples", "1"], "--num-resamples: at least 2"),
    (["--candidates", "CLOSE", "SHORT"], "has 3 texts, the references 40"),
])
def test_bad_input_is_refused_before_the_model_is_loaded(files, extra, match, capsys):
    d, f = files
    short = d / "short.txt"
    short.write_text("a\nb\nc\n")
    sub = {"CLOSE": f["close"], "CLOSER": f["closer"], "SHORT": str(short)}
    argv = ["compare", "--references", f["refs"], "--model", str(d / "no-such-model")] + [sub.get(a, a) for a in extra]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and match in err, err
