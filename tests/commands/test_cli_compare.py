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
    (["--candidates", "CLOSE", "CLOSER", "--confidence", "1.5"], "--confidence: must lie strictly between 0 and 1"),
    (["--candidates", "CLOSE", "CLOSER", "--confidence", "0.2"], "--confidence: must be at least 0.5"),
    (["--candidates", "CLOSE", "CLOSER", "--num-resamples", "1"], "--num-resamples: must be >= 2"),
    (["--candidates", "CLOSE", "CLOSER", "--num-resamples", "20"], "--num-resamples: a 95% interval needs at least 39"),
    (["--candidates", "CLOSE", "CLOSER", "--batch-size", "0"], "--batch-size: must be >= 1"),
    (["--candidates", "CLOSE", "CLOSER", "--max-length", "0"], "--max-length: must be >= 1"),
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


def test_mauve_leaderboard_under_one_quantizer_on_real_text(tmp_path, minilm_dir, capsys):
    """--metric mauve: unpaired files of different sizes, one shared quantizer, the looping system
    last and significantly worse; the JSON's scores are compare_mauve's on the same features."""
    import jax
    import numpy as np

    from jaxmetrics.mauve import compare_mauve
    from jaxmetrics.models import load_model, sentence_embeddings

    sents = _sentences(560)
    refs, human, other = sents[:200], sents[200:380], sents[380:560]
    looped = [_repeat(s) for s in other]
    paths = {}
    for name, texts in (("refs", refs), ("human", human), ("looped", looped)):
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("\n".join(texts) + "\n")
    out = tmp_path / "m.json"
    assert main(["compare", "--metric", "mauve", "--references", str(paths["refs"]), "--candidates",
                 str(paths["human"]), str(paths["looped"]), "--model", minilm_dir, "--pooling", "mean",
                 "--max-length", "64", "--num-resamples", "200", "--seeds", "1", "2", "--quiet", "--json", str(out),
                 "--plot", str(tmp_path / "m.png")]) == 0
    printed = capsys.readouterr().out
    assert "MAUVE against 200 references under one quantizer per seed (2, k = 18), mean pooling" in printed
    assert "randomization p < 0.05" in printed
    doc = json.loads(out.read_text())
    assert [s["name"] for s in doc["systems"]] == ["human", "looped"]
    human_row = next(line for line in printed.splitlines() if line.startswith("| 1 | human |"))
    assert human_row.endswith("| looped |")          # significantly better than the looping system
    assert doc["method"] == "randomization" and doc["seeds"] == [1, 2] and doc["num_buckets"] == 18
    assert [s["num_candidates"] for s in doc["systems"]] == [180, 180]
    assert doc["pairs"][0]["p_value"] < 0.05 and doc["pairs"][0]["difference"] > 0.2
    assert "| 1 | human |" in printed and "| looped |" in printed.split("| 1 | human |")[1]
    assert (tmp_path / "m.png").stat().st_size > 0
    lm = load_model(minilm_dir)
    feats = {n: sentence_embeddings(t, model=lm, max_length=64, progress=False)
             for n, t in (("refs", refs), ("human", human), ("looped", looped))}
    ref = compare_mauve(references=np.asarray(feats["refs"]), systems={"human": np.asarray(feats["human"]), "looped": np.asarray(feats["looped"])},
                        key=jax.random.key(0), seeds=(1, 2), num_resamples=200)
    assert [s["value"] for s in doc["systems"]] == pytest.approx([float(v) for v in ref.scores], abs=2e-3)
