"""``jaxmetrics compare`` on real text: every pair's difference, interval and p-value on stdout; the
same file given twice gets the same interval (the systems resampled with the same draws, the interval
``jaxmetrics similarity --confidence`` gives); options the metric would ignore are refused."""
from __future__ import annotations

import json
import re

import pytest

from jaxmetrics.cli import main


def _sentences(n: int) -> list[str]:
    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare("train", limit=400):
        out += [s for s in re.split(r"(?<=[.!?])\s+", speech) if 8 <= len(s.split()) <= 30]
    return out[:n]


def _looped(s: str) -> str:
    w = s.split()
    head = w[: max(3, len(w) // 3)]
    return " ".join((head * (len(w) // len(head) + 1))[: len(w)])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("compare_pairs")
    refs = _sentences(40)
    close = [" ".join(s.split()[1:]) for s in refs]           # the first word dropped
    looped = [_looped(s) for s in refs]                       # degenerate repetition
    paths = {}
    for name, texts in (("refs", refs), ("close", close), ("again", close), ("looped", looped)):
        paths[name] = d / f"{name}.txt"
        paths[name].write_text("\n".join(texts) + "\n")
    return d, {k: str(v) for k, v in paths.items()}


def test_same_file_twice_same_interval_and_pairs_printed(files, minilm_dir, capsys):
    d, f = files
    out, sim = d / "board.json", d / "close.json"
    assert main(["compare", "--references", f["refs"], "--candidates", f["close"], f["again"], f["looped"],
                 "--model", minilm_dir, "--num-resamples", "300", "--json", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    systems = {s["name"]: s for s in doc["systems"]}
    for field in ("value", "low", "high", "standard_error"):
        assert systems["close"][field] == systems["again"][field], field   # one file, one interval
    # ... the interval `jaxmetrics similarity --confidence` gives for that file
    assert main(["similarity", "--references", f["refs"], "--candidates", f["close"], "--model", minilm_dir,
                 "--metric", "bertscore", "--confidence", "0.95", "--num-resamples", "300", "--json", str(sim),
                 "--quiet"]) == 0
    capsys.readouterr()
    f1 = json.loads(sim.read_text())["intervals"]["f1"]
    assert (systems["close"]["low"], systems["close"]["high"]) == pytest.approx((f1["low"], f1["high"]), abs=1e-7)

    # every pair on stdout, with the JSON's numbers: the higher-ranked system first
    table = printed.split("differences (first minus second)")[1].strip().splitlines()
    assert "Holm-adjusted over the pairs" in table[0]     # three systems: three tests, one family
    assert table[1].startswith("| first | second | difference | 95% interval | p-value | Holm-adjusted | "
                               "Holm-adjusted p < 0.05 |")
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in table[3:]]
    assert len(rows) == 3
    pairs = {frozenset((p["a"], p["b"])): p for p in doc["pairs"]}
    for first, second, diff, interval, p_value, adjusted, significant in rows:
        pair = pairs[frozenset((first, second))]
        sign = 1 if pair["a"] == first else -1
        assert float(diff) == pytest.approx(sign * pair["difference"], abs=1e-4) and float(diff) >= 0
        assert float(p_value) == pytest.approx(pair["p_value"], abs=1e-4)
        assert float(adjusted) == pytest.approx(pair["adjusted_p_value"], abs=1e-4)
        assert float(adjusted) >= float(p_value) - 1e-4
        assert significant == ("yes" if pair["adjusted_p_value"] < 0.05 else "no")
        if "looped" in (first, second):
            assert second == "looped" and significant == "yes"
        lo, hi = (float(x) for x in interval.strip("[]").split(","))
        assert lo <= float(diff) <= hi
    same = next(r for r in rows if {r[0], r[1]} == {"close", "again"})
    assert float(same[2]) == 0.0 and same[6] == "no"


@pytest.mark.parametrize("extra,match", [
    (["--seeds", "1", "2"], "--seeds: applies to --metric mauve only; --metric bertscore would ignore it"),
    (["--metric", "twmd", "--pooling", "mean"], "--pooling: applies to --metric mauve only; --metric twmd would"),
    (["--metric", "mauve", "--score", "recall"], "--score: does not apply to --metric mauve"),
])
def test_options_the_metric_ignores_are_refused(files, extra, match, no_model, capsys):
    d, f = files
    rc = main(["compare", "--references", f["refs"], "--candidates", f["close"], f["looped"],
               "--model", str(d / "no-such-model")] + extra)
    err = capsys.readouterr().err
    assert rc == 2 and match in err, err
