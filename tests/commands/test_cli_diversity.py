"""``jaxmetrics diversity``: distinct-n and Self-BLEU of text files with the library's values and
intervals, on real text; every option and file checked before anything is computed."""
from __future__ import annotations

import csv
import json
import re

import pytest

from jaxmetrics.cli import main
from jaxmetrics.diversity import distinct_n, distinct_n_interval, self_bleu, self_bleu_interval


def _sentences(n: int, skip: int = 0) -> list[str]:
    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare("train", limit=400):
        out += [s for s in re.split(r"(?<=[.!?])\s+", speech) if 8 <= len(s.split()) <= 30]
    return out[skip:skip + n]


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    """40 real sentences, and 40 that are 20 other sentences each generated twice (a system that
    repeats itself across its generations)."""
    d = tmp_path_factory.mktemp("diversity_cli")
    human = _sentences(40)
    twice = _sentences(20, skip=40)
    repeated = [twice[i // 2] for i in range(40)]
    paths = {}
    for name, t in (("human", human), ("repeated", repeated)):
        paths[name] = d / f"{name}.txt"
        paths[name].write_text("\n".join(t) + "\n")
    return d, {"human": human, "repeated": repeated}, {k: str(v) for k, v in paths.items()}


def test_values_and_intervals_are_the_library_functions(texts, capsys):
    import jax

    d, t, f = texts
    js, cs = d / "div.json", d / "div.csv"
    assert main(["diversity", f["human"], f["repeated"], "--n", "2", "--confidence", "0.9", "--num-resamples",
                 "200", "--seed", "1", "--json", str(js), "--csv", str(cs)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(js.read_text())
    rows = doc["rows"]
    assert [(r["file"], r["metric"], r["n"]) for r in rows] == [
        (f[name], metric, n) for name in ("human", "repeated") for metric in ("distinct-n", "self-bleu") for n in (2,)]
    key = jax.random.key(1)
    for r in rows:
        name = "human" if r["file"] == f["human"] else "repeated"
        value, interval = ((distinct_n, distinct_n_interval) if r["metric"] == "distinct-n"
                           else (self_bleu, self_bleu_interval))
        assert r["value"] == pytest.approx(value(t[name], r["n"]), abs=1e-12) and r["num_texts"] == 40
        want = interval(t[name], r["n"], key=key, num_resamples=200, confidence=0.9)
        assert (r["low"], r["high"]) == pytest.approx((float(want.low), float(want.high)), abs=1e-7)
        assert r["low"] <= r["value"] <= r["high"] and r["interval"]["method"] == "subsample"
        assert f"| {r['file']} | {r['metric']} | {r['n']} | 40 | {r['value']:.4f} | [{r['low']:.4f}, " in printed
    by = {(r["file"], r["metric"], r["n"]): r for r in rows}
    # the looping text is less diverse, beyond the intervals: fewer distinct 2-grams, a higher Self-BLEU
    assert by[(f["repeated"], "distinct-n", 2)]["high"] < by[(f["human"], "distinct-n", 2)]["low"]
    assert by[(f["repeated"], "self-bleu", 2)]["low"] > by[(f["human"], "self-bleu", 2)]["high"]
    sig = doc["signature"]
    assert sig.startswith("metric:diversity|") and "confidence:0.9" in sig and "|n:2|" in sig
    with open(cs, newline="") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 4 and [float(x["value"]) for x in table] == [r["value"] for r in rows]
    assert [float(x["low"]) for x in table] == [r["low"] for r in rows]
    assert "90% intervals: texts resampled (subsample, 200 resamples, seed 1)" in printed


def test_defaults_are_each_metrics_own_order_without_interval(texts, capsys):
    d, t, f = texts
    js = d / "plain.json"
    assert main(["diversity", f["human"], "--json", str(js)]) == 0
    printed = capsys.readouterr().out
    rows = json.loads(js.read_text())["rows"]
    assert [(r["metric"], r["n"]) for r in rows] == [("distinct-n", 3), ("self-bleu", 4)]
    assert rows[0]["value"] == pytest.approx(distinct_n(t["human"]), abs=1e-12)
    assert rows[1]["value"] == pytest.approx(self_bleu(t["human"]), abs=1e-12)
    assert all(r["low"] is None for r in rows) and "interval" not in printed


def test_an_empty_line_is_an_empty_generation_and_said(tmp_path, capsys):
    texts = _sentences(6) + [""]
    path = tmp_path / "gaps.txt"
    path.write_text("\n".join(texts) + "\n")
    js = tmp_path / "gaps.json"
    assert main(["diversity", str(path), "--metrics", "distinct-n", "--n", "1", "--json", str(js)]) == 0
    err = capsys.readouterr().err
    assert "1 empty line(s) counted as empty generations" in err
    (row,) = json.loads(js.read_text())["rows"]
    assert row["num_texts"] == 7 and row["value"] == pytest.approx(distinct_n(texts, 1), abs=1e-12)


@pytest.mark.parametrize("extra,match", [
    (["--num-resamples", "50"], "--num-resamples: only applies with --confidence"),
    (["--seed", "2"], "--seed: only applies with --confidence"),
    (["--interval-method", "bca"], "--interval-method: only applies with --confidence"),
    (["--confidence", "95"], "--confidence: must "),
    (["--n", "0"], "--n: n-gram orders must be >= 1"),
    (["--n", "2", "2"], "--n: repeated orders"),
    (["--metrics", "self-bleu", "self-bleu"], "--metrics: repeated metrics"),
    (["SHORT"], "holds 1 text(s); at least 2 are needed"),
    (["THREE", "--confidence", "0.9"], "holds 2 text(s); at least 3 are needed (subsample intervals"),
    (["MISSING"], "files:"),
    (["--json", "NODIR"], "--json:"),
])
def test_bad_options_and_files_are_refused_before_anything_is_computed(texts, tmp_path, extra, match,
                                                                       monkeypatch, capsys):
    import jaxmetrics.diversity.intervals as I

    def forbid(*a, **k):
        raise AssertionError("a metric was computed before the options and files were checked")

    monkeypatch.setattr(I, "CORPUS_METRICS", {k: (forbid, forbid) for k in I.CORPUS_METRICS})
    d, t, f = texts
    short, three = tmp_path / "short.txt", tmp_path / "three.txt"
    short.write_text("one text\n")
    three.write_text("one text\nanother text\n")
    sub = {"SHORT": str(short), "THREE": str(three), "MISSING": str(tmp_path / "missing.txt"),
           "NODIR": str(tmp_path / "no" / "x.json")}
    rc = main(["diversity", f["human"]] + [sub.get(a, a) for a in extra])
    err = capsys.readouterr().err
    assert rc == 2 and match in err, err
