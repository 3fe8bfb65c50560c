"""The demo (``jaxmetrics demo``): it runs offline, writes its files, and its numbers
behave as the MAUVE paper describes (greedy far from human text, nucleus closest).

The checks of a demo run are the ``check_*`` functions below. CI applies every one of them to
the demo that ``make test-wheel`` runs from the built wheel in a fresh virtual environment
(``--small``: 500 prompts, 3 sampling runs; tests/test_wheel.py), so ``make test`` does not run
the demo a second time. Here they run, ``slow`` (``make test-all``), on the development install:
``--small --num-prompts 100`` (every output and metric, greedy far from human text) and
``--small`` (the nucleus-closest check needs the 500 prompts: at 250 pure and nucleus runs
already overlap).

Also checks, in ``make test``, the bundled data and model: the small GPT-2 shipped in the
package (``jaxmetrics/_demo_data/model``) loads through ``jaxmetrics.models.load_model`` and
through transformers' ``GPT2LMHeadModel`` with the same logits, and its tokenizer through
``AutoTokenizer``; and the demo's table and length plot on hand-made rows.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from jaxmetrics.data import demo_data_dir, demo_model_dir, load_shakespeare


QUICK_PROMPTS = 100


def _run(tmp_path_factory, *extra):
    """``jaxmetrics demo --small`` in a fresh process, as a user runs it, at XLA's default
    optimization (the suite compiles at -O0, see conftest.py; the demo runs large programs,
    which -O0 would slow down)."""
    out = tmp_path_factory.mktemp("demo_output")
    flags = os.environ.get("XLA_FLAGS", "").replace("--xla_backend_optimization_level=0", "").strip()
    env = {**os.environ, "XLA_FLAGS": flags}
    code = "import sys; from jaxmetrics.cli import main; sys.exit(main(sys.argv[1:]))"
    res = subprocess.run([sys.executable, "-c", code, "demo", "--small", "--out", str(out), *extra],
                         env=env, capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    return out, json.loads((out / "results.json").read_text()), res.stderr


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    return _run(tmp_path_factory, "--num-prompts", str(QUICK_PROMPTS))


@pytest.fixture(scope="module")
def demo_run_500(tmp_path_factory):
    return _run(tmp_path_factory)


def check_outputs(out, res, num_prompts: int) -> None:
    """The files of a demo run in ``out`` (``res``: its results.json) parse and hold every metric."""
    assert set(res["rows"]) == {"human", "greedy", "pure", "nucleus"}
    assert res["config"]["num_prompts"] == num_prompts and res["config"]["sampling_runs"] == 3
    md = (out / "results.md").read_text()
    assert md.splitlines()[0].startswith("| Decoding | MAUVE")
    assert len([ln for ln in md.splitlines() if ln.startswith("| ")]) == 5  # header + 4 rows
    import matplotlib.image

    img = matplotlib.image.imread(out / "divergence_curves.png")
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    for r in ("greedy", "pure", "nucleus"):
        for k in ("mauve", "frontier_integral", "gen_ppl", "distinct_4", "self_bleu_4", "zipf", "rep", "bertscore_f1",
                  "twmd_f1", "me_petersen"):
            v = res["rows"][r][k]
            assert np.isfinite(v), (r, k, v)
        assert 0.0 < res["rows"][r]["mauve"] <= 1.0
    assert res["human_sliding_window_ppl"]["perplexity"] > 1.0
    assert res["notes"] == []  # every metric was computed
    from jaxmetrics.results import parse_signature   # the models (with their weights' hashes) and settings

    sig = parse_signature(res["signature"])
    assert sig["metric"] == "demo" and "@sha256:" in sig["model"] and "@sha256:" in sig["featurizer"]
    assert sig["num_prompts"] == str(num_prompts) and sig["dtype"] == "float32"
    # results.md is the shared report formatter's table of results.json; the report is written too
    from jaxmetrics.demo import DemoConfig, SlidingWindowPPL, format_table

    cfg, sw = DemoConfig(**res["config"]), SlidingWindowPPL(**res["human_sliding_window_ppl"])
    assert md == format_table(res["rows"], cfg, res["notes"], sw) + "\n"
    report = json.loads((out / "report.json").read_text())
    assert report["rows"]["top_p=0.9"]["mauve"] == res["rows"]["nucleus"]["mauve"]
    assert report["files"]["markdown"] == str(out / "report.md") and (out / "lengths.png").exists()
    assert len(res["samples"]["nucleus"]) == 3 and all(isinstance(t, str) and t for t in res["samples"]["pure"])


def check_greedy_far(res) -> None:
    """MAUVE paper, Table 2: greedy decoding is the farthest from human text."""
    rows = res["rows"]
    g, p, n, h = rows["greedy"], rows["pure"], rows["nucleus"], rows["human"]
    assert g["mauve"] < min(p["mauve"], n["mauve"])
    assert g["frontier_integral"] > max(p["frontier_integral"], n["frontier_integral"])
    assert g["distinct_4"] < min(p["distinct_4"], n["distinct_4"], h["distinct_4"])
    assert g["self_bleu_4"] > max(p["self_bleu_4"], n["self_bleu_4"], h["self_bleu_4"])
    assert g["rep"] >= max(p["rep"], n["rep"], h["rep"])
    assert g["gen_ppl"] < min(p["gen_ppl"], n["gen_ppl"], h["gen_ppl"])


def check_nucleus_closest(res) -> None:
    """MAUVE paper, Table 2: nucleus sampling is the closest to human text, then pure sampling,
    then greedy. Over 3 sampling runs each, every nucleus run beats every pure run on MAUVE;
    nucleus also truncates the unreliable tail (lower Gen. PPL than pure) and its n-gram
    statistics are the closest to the human ones."""
    assert res["config"]["num_prompts"] == 500
    rows = res["rows"]
    g, p, n, h = rows["greedy"], rows["pure"], rows["nucleus"], rows["human"]
    assert len(p["mauve_runs"]) == len(n["mauve_runs"]) == 3
    assert min(n["mauve_runs"]) > max(p["mauve_runs"])
    assert n["mauve"] > p["mauve"] > g["mauve"] + 0.1
    assert n["frontier_integral"] < p["frontier_integral"] < g["frontier_integral"]
    assert n["gen_ppl"] < p["gen_ppl"]
    for k in ("distinct_4", "self_bleu_4"):
        assert abs(n[k] - h[k]) < min(abs(p[k] - h[k]), abs(g[k] - h[k])), k
    for k in ("bertscore_f1", "twmd_f1", "me_petersen"):
        assert n[k] > max(p[k], g[k]), k


def check_legend(res) -> None:
    """The divergence curves are one sampling run and one k-means seed each, while the table's
    MAUVE is a mean over runs: every legend label gives both numbers, named, and the caption
    says which is which (a bare single-run MAUVE beside the table's mean read as a mismatch)."""
    from jaxmetrics.demo import ROW_LABELS

    legend = res["divergence_curves"]
    assert len(legend["labels"]) == 3
    for dec, label in zip(("greedy", "pure", "nucleus"), legend["labels"]):
        row = res["rows"][dec]
        assert label.startswith(ROW_LABELS[dec] + ": this curve ")
        assert 0.0 < float(label.split("this curve ")[1].split()[0]) <= 1.0
        assert label.endswith(f"; table {row['mauve']:.3f} ± {row['mauve_std']:.3f}")
        assert ("run 1 of 3" in label) == (dec != "greedy")
    assert "mean" in legend["caption"] and "one sampling run" in legend["caption"]


def test_demo_table_format():
    """The demo's table is the report's formatter in the paper's layout: every column of
    TABLE_COLUMNS even where no row has a value, the paper's row names, the demo's caption."""
    from jaxmetrics.demo import TABLE_COLUMNS, DemoConfig, SlidingWindowPPL, format_table
    from jaxmetrics.evaluation import format_markdown

    rows = {"human": {"distinct_4": 1.0}, "greedy": {"mauve": 0.25, "rep": 50.0}, "pure": {}, "nucleus": {}}
    cfg = DemoConfig(num_prompts=2, gen_len=5)
    lines = format_table(rows, cfg, ["x skipped"]).splitlines()
    assert lines[2].startswith("| Human | — | — | — | 1.000 |")
    assert lines[3].startswith("| Greedy | 0.250 | — |")
    assert "| 50.0 |" in lines[3]
    assert lines[-1] == "Note: x skipped"
    assert lines[7].startswith("2 held-out Shakespeare passages") and not any("Sliding" in ln for ln in lines)
    table = format_markdown(rows, {}, labels={"human": "Human", "greedy": "Greedy", "pure": "Pure sampling",
                                              "nucleus": "Nucleus, p=0.9"}, columns=TABLE_COLUMNS, caption=[])
    assert lines[:6] == table.splitlines()
    sw = SlidingWindowPPL(perplexity=12.345, num_tokens=100, max_length=128, stride=64)
    assert format_table(rows, cfg, (), sw).splitlines()[-1] == (
        "Sliding-window perplexity of the held-out human text: 12.35 (its first 100 tokens as one stream, "
        "window 128, stride 64: every token after the first window is read with at least 64 tokens of context).")


def check_perplexity_labels(out, res) -> None:
    """The Human row's Gen. PPL (each passage scored alone, the MAUVE experiments' convention) and
    the caption's sliding-window perplexity (the held-out stream with context) differ -- 179.05 vs
    184.94 at full size -- and the caption says they are different quantities, naming both values."""
    human, sw = res["rows"]["human"]["gen_ppl"], res["human_sliding_window_ppl"]["perplexity"]
    assert f"{human:.2f}" != f"{sw:.2f}"
    for md in ((out / "results.md").read_text(),):
        (line,) = [ln for ln in md.splitlines() if ln.startswith("Sliding-window perplexity")]
        assert f": {sw:.2f} (its first {res['human_sliding_window_ppl']['num_tokens']} tokens" in line
        assert f"A different quantity from the Human row's Gen. PPL ({human:.2f})" in line
        assert f"| Human | — | — | {human:.2f} |" in md


def check_log(log: str) -> None:
    """The demo's log (stderr, not a terminal): no "batchs", no seed for greedy decoding (it has
    none), and no progress line printed twice."""
    lines = [ln for ln in log.splitlines() if ln.startswith("jaxmetrics: ")]
    assert lines, log[-2000:]
    assert "batchs" not in log
    assert not [ln for ln in lines if "greedy seed" in ln]
    assert any(ln.startswith("jaxmetrics: generate greedy: ") for ln in lines), lines
    counts = [ln.split(" (")[0] for ln in lines]
    repeated = [c for i, c in enumerate(counts) if i and c == counts[i - 1]]
    assert not repeated, repeated


@pytest.mark.slow
def test_demo_quick_run(demo_run):
    out, res, log = demo_run
    check_outputs(out, res, QUICK_PROMPTS)
    check_greedy_far(res)
    check_legend(res)
    check_perplexity_labels(out, res)
    check_log(log)


@pytest.mark.slow
def test_demo_nucleus_is_closest_to_human(demo_run_500):
    check_nucleus_closest(demo_run_500[1])


def _lengths_report(lengths):
    from types import SimpleNamespace

    return SimpleNamespace(lengths={k: np.asarray(v) for k, v in lengths.items()})


def test_length_plot_draws_equal_lengths_side_by_side(tmp_path):
    """Every row with the same length (the demo: all 118 tokens): one bar per row, side by side
    and each visible, not one bar hiding the others; the title says the lengths are all equal."""
    from jaxmetrics.evaluation.plot import plot_report_lengths

    rows = ("human", "greedy", "pure", "nucleus")
    fig = plot_report_lengths(_lengths_report({r: [118] * 50 for r in rows}), tmp_path / "l.png")
    ax = fig.axes[0]
    bars = [p for p in ax.patches if p.get_height() > 0]
    assert len(bars) == 4 and all(b.get_height() == 50 for b in bars)
    spans = sorted((b.get_x(), b.get_x() + b.get_width()) for b in bars)
    assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))       # no two overlap
    assert len({tuple(b.get_facecolor()) for b in bars}) == 4                 # one colour per row
    assert "every text has 118 tokens" in ax.get_title()
    assert (tmp_path / "l.png").stat().st_size > 0
    # different lengths: each row's counts are its own histogram
    fig = plot_report_lengths(_lengths_report({"human": [3, 5, 5, 9], "greedy": [4, 4]}), tmp_path / "m.png")
    total = {}
    for p in fig.axes[0].patches:
        total[tuple(p.get_facecolor())] = total.get(tuple(p.get_facecolor()), 0) + p.get_height()
    assert sorted(total.values()) == [2, 4]


def test_curve_legend_covers_no_curve():
    """The divergence-curve legend sits outside the axes: no point of any curve -- greedy's hugs
    both axes, where the legend used to be -- lies under it."""
    from types import SimpleNamespace

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from jaxmetrics.evaluation.plot import _curves_figure

    t = np.linspace(0.0, 1.0, 25)
    greedy = np.stack([t ** 8, (1 - t) ** 8], axis=1)[::-1]          # close to both axes
    pure = np.stack([t, 1 - t ** 1.5], axis=1)[::-1]
    nucleus = np.stack([t, 1 - t ** 2], axis=1)[::-1]
    report = SimpleNamespace(curves={"greedy": greedy, "pure": pure, "nucleus": nucleus},
                             rows={"greedy": {"mauve": 0.004}, "pure": {"mauve": 0.3}, "nucleus": {"mauve": 0.4}})
    fig, legend = _curves_figure(report, None, None)
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    (leg,) = fig.legends
    box = leg.get_window_extent()
    assert [t.get_text() for t in leg.get_texts()] == legend.labels
    for line in ax.lines:
        pts = ax.transData.transform(np.asarray(line.get_xydata()))
        inside = (pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)
        assert not inside.any(), line.get_label()
    axes_box = ax.get_window_extent()
    assert box.y1 <= axes_box.y0                                           # below the axes


def test_demo_bad_arguments(monkeypatch, capsys):
    from jaxmetrics.cli import main
    from jaxmetrics.commands import demo

    monkeypatch.setenv("JAXMETRICS_DEMO_SIZE", "huge")
    with pytest.raises(SystemExit):
        demo.main([])
    assert main(["demo"]) == 2
    assert "JAXMETRICS_DEMO_SIZE" in capsys.readouterr().err
    monkeypatch.delenv("JAXMETRICS_DEMO_SIZE")
    assert main(["demo", "--num-prompts", "3"]) == 2
    assert "jaxmetrics demo: error: --num-prompts: expected at least 10" in capsys.readouterr().err


def test_bundled_data():
    held = load_shakespeare("heldout")
    train = load_shakespeare("train", limit=50)
    assert len(held) > 3000 and len(train) == 50
    long_held = {s for s in held if len(s.split()) >= 30}
    assert long_held and not long_held & set(load_shakespeare("train"))  # split by play
    text = "\n".join(held)
    for marker in ("**", "_", "[", "#"):
        assert marker not in text
    assert (demo_data_dir() / "README.md").is_file()
    with pytest.raises(ValueError, match="^split"):
        load_shakespeare("test")
    with pytest.raises(ValueError, match="^limit"):
        load_shakespeare("train", limit=0)


def test_bundled_model_loads_in_jax_and_transformers():
    """Same checkpoint, same logits: the jaxmetrics Flax loader and transformers' PyTorch GPT-2."""
    torch = pytest.importorskip("torch")
    from transformers import AutoTokenizer, GPT2LMHeadModel

    from jaxmetrics.models import load_model

    d = demo_model_dir()
    tok = AutoTokenizer.from_pretrained(d)
    assert tok.eos_token == "<|endoftext|>"
    ids = np.asarray([tok("Good morrow, my lord; what news from Rome?")["input_ids"]], np.int32)
    lm = load_model(d)
    jax_logits = np.asarray(lm.forward(ids, np.ones_like(ids)).logits)
    pt = GPT2LMHeadModel.from_pretrained(d).eval()
    with torch.no_grad():
        pt_logits = pt(torch.as_tensor(ids, dtype=torch.long)).logits.numpy()
    np.testing.assert_allclose(jax_logits, pt_logits, atol=2e-4, rtol=1e-4)
    assert tok.decode(ids[0]) == "Good morrow, my lord; what news from Rome?"
