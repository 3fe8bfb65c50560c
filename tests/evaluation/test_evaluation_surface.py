"""``evaluate-generation`` at its surface: checks before any model is loaded, the default
generation length on a short-context model, the saved generations, the report's caption, and a
cache that survives damaged files.

Small sizes: the bundled 128-position GPT-2 as generator and featurizer, 4-8 held-out speeches.
"""
from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pytest

from jaxmetrics.cli import main
from generation_records import shakespeare_records
from jaxmetrics.data import demo_model_dir
from jaxmetrics.evaluation import (FeatureSettings, GenerationSettings, MauveScoring, ScoringSettings,
                                   evaluate_generation, format_markdown, generation)

GEN = GenerationSettings(decodings=("greedy", "top_k=20"), seeds=(0, 1), max_new_tokens=6)
SCORING = ScoringSettings(mauve=MauveScoring(seeds=(25, 26)), self_bleu_samples=4)
SMALL = dict(generation=GEN, scoring=SCORING, batch_size=8, progress=False)



def _records(n):
    return shakespeare_records(n)


def _text_files(tmp_path, n):
    recs = _records(n)
    pp, rr = tmp_path / "p.txt", tmp_path / "r.txt"
    pp.write_text("\n".join(r["prompt"] for r in recs) + "\n")
    rr.write_text("\n".join(r["continuation"] for r in recs) + "\n")
    return str(pp), str(rr)



# no_model: tests/conftest.py


# ----------------------------------------------------------------------------- checks before any model


@pytest.mark.parametrize("n,mark_evaluate,need", [(1, True, 4), (3, True, 4), (1, False, 2)])
def test_too_small_dataset_fails_before_any_model(n, mark_evaluate, need, no_model):
    with pytest.raises(ValueError, match=rf"^dataset: records has {n} prompt\(s\); the report needs at least {need}"):
        evaluate_generation(model="no/such/model", featurizer="no/such/model", dataset=_records(n),
                            **dict(SMALL, scoring=SCORING.replace(mauve=MauveScoring(seeds=(25,)),
                                                                  mark_evaluate=mark_evaluate)))


def test_explicit_num_buckets_sets_the_minimum(no_model):
    with pytest.raises(ValueError, match=r"at least 6 \(scoring.mauve.num_buckets=11 needs a point per bucket"):
        evaluate_generation(model="m", featurizer="m", dataset=_records(5),
                            **dict(SMALL, scoring=SCORING.replace(mauve=SCORING.mauve.replace(num_buckets=11))))


def test_unwritable_cache_and_out_fail_before_any_model(tmp_path, no_model):
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    kw = dict(model="m", featurizer="m", dataset=_records(4), **SMALL)
    with pytest.raises(ValueError, match=r"^cache_dir: cannot create .*file\.txt/cache.*is a file"):
        evaluate_generation(cache_dir=blocker / "cache", **kw)
    with pytest.raises(ValueError, match=r"^out_dir: .*file\.txt' exists and is not a directory"):
        evaluate_generation(out_dir=blocker, **kw)


def test_cli_checks_everything_before_any_model(tmp_path, no_model, capsys):
    p, r = _text_files(tmp_path, 4)
    (tmp_path / "one").mkdir()
    one_p, one_r = _text_files(tmp_path / "one", 1)
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    base = ["evaluate-generation", "--model", "no/such/model", "--featurizer", "no/such/model", "--quiet"]
    cases = [
        ([one_p, one_r], "dataset: ", "has 1 prompt(s); the report needs at least 4"),
        ([p, r, "--cache-dir", str(blocker / "c")], "--cache-dir: ", "is a file"),
        ([p, r, "--out", str(blocker)], "--out: ", "is not a directory"),
        ([p, r, "--mauve-seeds", "3", "3"], "--mauve-seeds: ", "repeated seeds [3, 3]"),
        ([p, r, "--max-length", "0"], "--max-length: ", ">= 1"),
        ([p, r, "--max-new-tokens", "0"], "--max-new-tokens: ", ">= 1"),
        ([p, r, "--seeds", "1", "1"], "--seeds: ", "repeated seeds"),
        ([p, r, "--mauve-seeds", "-1"], "--mauve-seeds: ", ">= 0"),
    ]
    for extra, head, text in cases:
        rc = main(base[:1] + extra + base[1:] + ["--out", str(tmp_path / "o")] * ("--out" not in extra))
        err = capsys.readouterr().err
        assert rc == 2 and f"error: {head}" in err and text in err, (extra, err)
    assert not (tmp_path / "o").exists()


def test_old_option_names_are_gone(tmp_path, capsys):
    p, r = _text_files(tmp_path, 4)
    for old in (["--feature-max-length", "64"],):
        with pytest.raises(SystemExit) as e:
            main(["evaluate-generation", p, r, "--model", "m", "--featurizer", "m"] + old)
        assert e.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err


def test_every_pooling_of_the_command_line_is_accepted(lm, tmp_path):
    """--pooling offers the pooling table's names; cls (the first token's vector) runs too."""
    rep = evaluate_generation(model=lm, featurizer=lm, dataset=_records(4), features=FeatureSettings(pooling="cls"),
                              **dict(SMALL, generation=GEN.replace(decodings=("greedy",), max_new_tokens=4),
                                     scoring=SCORING.replace(mauve=MauveScoring(seeds=(25,)))))
    assert rep.config["pooling"] == "cls" and np.isfinite(rep.rows["greedy"]["mauve"])


# ----------------------------------------------------------------------------- generation length


def test_conflicting_length_names_both_options_before_generating(tmp_path, monkeypatch, capsys):
    def never(*a, **k):
        raise AssertionError("generation started")

    monkeypatch.setattr(generation, "_generate_run", never)
    p, r = _text_files(tmp_path, 4)
    rc = main(["evaluate-generation", p, r, "--model", str(demo_model_dir()), "--featurizer", str(demo_model_dir()),
               "--max-new-tokens", "128", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "error: --max-new-tokens: the longest prompt" in err and "128 positions" in err
    assert "--prompt-tokens" in err and "max_new_tokens" not in err


def test_cli_defaults_run_on_the_128_position_model(tmp_path, lm):
    """No --max-new-tokens on the bundled 128-position model: the default is what the positions
    leave after the longest prompt; generations.jsonl holds every text with its prompt, setting
    and seed (none for greedy); the caption gives seeds to the sampled setting only."""
    p, r = _text_files(tmp_path, 4)
    out = tmp_path / "out"
    rc = main(["evaluate-generation", p, r, "--model", str(demo_model_dir()), "--featurizer", str(demo_model_dir()),
               "--decodings", "greedy", "top_k=20", "--seeds", "3", "4", "--mauve-seeds", "25", "26",
               "--self-bleu-samples", "3", "--no-eos", "--out", str(out), "--quiet"])
    assert rc == 0
    rep = json.loads((out / "report.json").read_text())
    prompts = [np.asarray(lm.tokenizer(x.rstrip("\n"), add_special_tokens=False)["input_ids"])
               for x in open(p).readlines()]
    longest = max(x.size for x in prompts)
    assert rep["config"]["max_new_tokens"] == 128 - longest
    assert rep["config"]["scoring"]["mauve"]["seeds"] == [25, 26] and rep["runs"]["top_k=20"][1]["kmeans_seeds"] == [27, 28]
    # every generated text, with its prompt, setting and seed (greedy: none)
    lines = [json.loads(x) for x in (out / "generations.jsonl").read_text().splitlines()]
    assert len(lines) == 4 * 3 and rep["files"]["generations"] == str(out / "generations.jsonl")
    assert [(x["setting"], x["seed"]) for x in lines[::4]] == [("greedy", None), ("top_k=20", 3), ("top_k=20", 4)]
    assert [x["row"] for x in lines[:4]] == [0, 1, 2, 3]
    assert [x["prompt"] for x in lines[:4]] == lm.tokenizer.batch_decode([x.tolist() for x in prompts])
    (gen,) = list((out / "cache").glob("*/top_k=20/seed4/generation.npz"))
    with np.load(gen) as z:
        ids = [z["ids"][a:b] for a, b in zip(z["offsets"][:-1], z["offsets"][1:])]
    assert [x["text"] for x in lines[8:]] == lm.tokenizer.batch_decode([i.tolist() for i in ids])
    assert all(i.size == 128 - longest for i in ids)   # --no-eos: every continuation fills the positions
    # the report: greedy has no seed
    assert rep["runs"]["greedy"][0]["seed"] is None and rep["runs"]["top_k=20"][0]["seed"] == 3
    caption = (out / "report.md").read_text()
    assert "sampling seeds [3, 4] (top_k=20)" in caption and "greedy: one deterministic run, no seed" in caption


def test_caption_lists_seeds_only_for_sampled_settings():
    cfg = dict(num_prompts=5, max_new_tokens=8, featurizer="f", pooling="last", scoring=ScoringSettings().to_dict())
    greedy = format_markdown({"greedy": {"mauve": 0.5}},
                             dict(cfg, generation=GenerationSettings(decodings=("greedy",)).to_dict()))
    assert "seeds [0, 1, 2]" not in greedy and "sampling seed" not in greedy
    assert "greedy: one deterministic run, no seed" in greedy
    assert "MAUVE over 5 k-means seeds per run (mauve-text scoring)" in greedy
    both = format_markdown({"greedy": {"mauve": 0.5}},
                           dict(cfg, generation=GenerationSettings(decodings=("greedy", "top_p=0.9")).to_dict()))
    assert "sampling seeds [0, 1, 2] (top_p=0.9)" in both


# ----------------------------------------------------------------------------- damaged cache files


_REAL_GENERATE_RUN = generation._generate_run


def test_damaged_cache_files_are_named_and_recomputed(tmp_path, lm, monkeypatch):
    import jaxmetrics.mauve as M

    cache = tmp_path / "cache"
    kw = dict(model=lm, featurizer=lm, dataset=_records(8), cache_dir=cache, **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clean = evaluate_generation(**kw)
    pristine = tmp_path / "pristine"
    shutil.copytree(cache, pristine)

    (gen,) = cache.glob("*/top_k=20/seed1/generation.npz")
    gen.write_bytes(gen.read_bytes()[:60])                       # truncated
    (scores,) = cache.glob("*/greedy/seed0/scores-*.json")
    broken = '{"seed": 0, "gen_ppl": '
    scores.write_text(broken)                                    # broken JSON
    (feats,) = cache.glob("*/top_k=20/seed0/features-*.npy")
    np.save(feats, np.zeros((3, 2), np.float32))                 # readable, wrong shape
    (manifest,) = cache.glob("manifest.json")
    manifest.write_text("[]")                                    # not an object

    generated, scored = [], []

    def gen_run(lm_, prompts, dec, seed, **k):
        generated.append((dec.name, seed))
        return _REAL_GENERATE_RUN(lm_, prompts, dec, seed, **k)

    real_seeds = M.compute_mauve_seeds

    def mauve_seeds(*a, **k):
        scored.append(k["seeds"])
        return real_seeds(*a, **k)

    monkeypatch.setattr(generation, "_generate_run", gen_run)
    monkeypatch.setattr(M, "compute_mauve_seeds", mauve_seeds)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = evaluate_generation(**kw)
    damaged = [str(w.message) for w in caught if "damaged cache file" in str(w.message)]
    with pytest.raises(json.JSONDecodeError) as e:
        json.loads(broken)
    cause = f"JSONDecodeError: {e.value}"     # Expecting value: line 1 column ..., now with the file's name
    assert sorted(damaged) == sorted([
        f"cache_dir: ignoring damaged cache file {gen} (BadZipFile: File is not a zip file); it is recomputed",
        f"cache_dir: ignoring damaged cache file {scores} ({cause}); it is recomputed",
        f"cache_dir: ignoring damaged cache file {feats} (ValueError: shape (3, 2), expected 2 dimensions and 8 "
        f"along axis 0); it is recomputed",
        f"cache_dir: ignoring damaged cache file {manifest} (ValueError: a JSON list, expected an object); it is "
        f"recomputed"])
    assert again.rows == clean.rows and again.runs == clean.runs
    assert generated == [("top_k=20", 1)]             # only the truncated generation
    assert scored == [(25, 26)]                         # only the broken scores (greedy's run)
    # every file is whole again and equal to the clean run's
    for f in pristine.rglob("*"):
        if f.is_file():
            g = cache / f.relative_to(pristine)
            if f.suffix == ".npz":
                with np.load(f) as a, np.load(g) as b:
                    assert all(np.array_equal(a[k], b[k]) for k in a.files), f
            elif f.suffix == ".npy":
                np.testing.assert_array_equal(np.load(f), np.load(g))
            else:
                assert json.loads(f.read_text()) == json.loads(g.read_text()), f
