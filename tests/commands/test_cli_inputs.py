"""The commands' inputs on real text: one policy for empty texts (``--empty``) in every command
that reads candidate texts and in the Python API, one reader of texts and ``.npy`` features for
``mauve`` and ``compare --metric mauve``, and ``mauve --explain`` by the lines of the input files."""
from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

from jaxmetrics.cli import main


def _sentences(n, split="train"):
    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare(split):
        out += [s for s in re.split(r"(?<=[.!?])\s+", speech) if 8 <= len(s.split()) <= 30]
    return out[:n]


def _looped(s):
    w = s.split()
    head = w[: max(3, len(w) // 3)]
    return " ".join((head * (len(w) // len(head) + 1))[: len(w)])


def _write(path, lines):
    path.write_text("".join(f"{t}\n" for t in lines))
    return str(path)


# ---- empty generations ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """12 real reference sentences and 12 candidates of which line 5 is blank and line 9 holds spaces."""
    d = tmp_path_factory.mktemp("empty_pairs")
    sents = _sentences(24)
    refs, cands = sents[:12], [" ".join(s.split()[1:]) for s in sents[:12]]
    cands[4], cands[8] = "", "   "
    return d, refs, cands, _write(d / "refs.txt", refs), _write(d / "cands.txt", cands)


def test_similarity_scores_an_empty_candidate_zero_and_keeps_the_pairing(pairs, minilm_dir, capsys):
    """A blank generation is a real output: its pair scores P = R = F1 = 0 (bert_score's rule), the
    other pairs keep their partners and score as if the empty pairs were absent, and the lines are
    printed and written in --json; --empty error refuses them, naming the file and the lines."""
    from jaxmetrics.similarity import compute_similarity

    d, refs, cands, rf, cf = pairs
    out = d / "sim.json"
    assert main(["similarity", "--references", rf, "--candidates", cf, "--model", minilm_dir, "--metric",
                 "bertscore", "--json", str(out), "--quiet"]) == 0
    cap = capsys.readouterr()
    assert "2 empty texts" in cap.err and "lines 5, 9" in cap.err and "--empty zero" in cap.err
    assert "warning" not in cap.err                      # reported once, by its lines
    assert "over 12 pairs (2 with an empty candidate, scored 0)" in cap.out
    doc = json.loads(out.read_text())
    assert doc["empty_candidate_lines"] == [5, 9] and doc["empty_candidates"] == [4, 8]
    f1 = np.asarray(doc["f1"])
    assert f1.shape == (12,) and f1[4] == 0 and f1[8] == 0
    assert doc["precision"][4] == 0 and doc["recall"][8] == 0
    keep = [i for i in range(12) if i not in (4, 8)]
    alone = compute_similarity(references=[refs[i] for i in keep], candidates=[cands[i] for i in keep],
                               model=minilm_dir, metric="bertscore")
    np.testing.assert_allclose(f1[keep], alone.f1, atol=1e-6)    # pair i still pairs line i with line i
    assert np.all(f1[keep] > 0.3)
    assert doc["mean"]["f1"] == pytest.approx(f1.mean(), abs=1e-6)
    # --empty error: refused before the model is loaded, with the file, the lines and the option
    assert main(["similarity", "--references", rf, "--candidates", cf, "--model", str(d / "no-model"),
                 "--empty", "error"]) == 2
    err = capsys.readouterr().err
    assert "cands.txt" in err and "lines 5, 9" in err and "--empty zero" in err and "no-model" not in err
    # an empty reference has nothing to compare against: always an error
    assert main(["similarity", "--references", cf, "--candidates", rf, "--model", str(d / "no-model")]) == 2
    err = capsys.readouterr().err
    assert err.count("references:") == 1 and "lines 5, 9" in err


def test_python_api_scores_empty_candidates_zero_with_a_warning(pairs, minilm):
    """compute_similarity and bertscore follow the same rule: P = R = F1 = 0 (before the baseline
    rescaling, which then applies to the pair as bert_score does), one warning, the pairs listed."""
    from jaxmetrics.similarity import SimilaritySettings, bertscore, compute_similarity

    _, refs, cands, _, _ = pairs
    refs, cands = refs[:6], cands[:6]                    # pair 4 is the empty one
    with pytest.warns(UserWarning, match=r"candidates: 1 of 6 texts are empty \(pairs 4\)"):
        res = compute_similarity(references=refs, candidates=cands, model=minilm, metric="bertscore")
    assert res.empty_candidates == (4,) and res.f1[4] == 0 and res.precision[4] == 0 and res.recall[4] == 0
    assert np.all(np.delete(res.f1, 4) > 0.3) and res.mean().f1 == pytest.approx(float(np.mean(res.f1)))
    base = (0.2, 0.3, 0.25)
    with pytest.warns(UserWarning, match="empty"):
        scaled = compute_similarity(references=refs, candidates=cands, model=minilm,
                                    settings=SimilaritySettings(metric="bertscore", baseline=base))
    want = [(0 - b) / (1 - b) for b in base]
    got = [float(getattr(scaled, f)[4]) for f in ("precision", "recall", "f1")]
    assert got == pytest.approx(want, abs=1e-6)
    np.testing.assert_allclose(np.delete(scaled.f1, 4), (np.delete(res.f1, 4) - 0.25) / 0.75, atol=1e-5)
    with pytest.warns(UserWarning, match=r"cands: 1 of 6 texts are empty"):
        P, R, F = bertscore(cands, refs, model=minilm, num_layers=6)
    assert F[4] == 0 and P[4] == 0 and np.all(np.delete(F, 4) > 0.3)
    with pytest.raises(ValueError, match="^candidates: all 2 texts are empty"):
        compute_similarity(references=refs[:2], candidates=["", " "], model=minilm)
    with pytest.raises(ValueError, match="^references: 1 empty"):
        compute_similarity(references=["", refs[1]], candidates=cands[:2], model=minilm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # no empty candidate: no warning, no field
        assert compute_similarity(references=refs[:2], candidates=cands[:2], model=minilm,
                                  metric="bertscore").empty_candidates == ()


def test_compare_keeps_the_pairing_of_a_system_with_an_empty_generation(pairs, minilm_dir, capsys):
    d, refs, cands, rf, cf = pairs
    full = _write(d / "full.txt", [" ".join(s.split()[:-1]) for s in refs])
    out = d / "cmp.json"
    assert main(["compare", "--references", rf, "--candidates", full, cf, "--model", minilm_dir,
                 "--num-resamples", "50", "--json", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "jaxmetrics compare: --candidates: 2 empty texts" in err and "lines 5, 9" in err
    doc = json.loads(out.read_text())
    rows = {s["name"]: s for s in doc["systems"]}
    assert rows["cands"]["empty_candidate_lines"] == [5, 9] and rows["full"]["empty_candidate_lines"] == []
    assert doc["num_pairs"] == 12 and rows["cands"]["num_candidates"] == 12 and doc["empty"] == "zero"
    assert rows["full"]["rank"] == 1                     # two zero pairs pull the other system down
    # --empty drop would shift the pairing: refused for a per-pair metric, before the model
    assert main(["compare", "--references", rf, "--candidates", full, cf, "--model", str(d / "no-model"),
                 "--empty", "drop"]) == 2
    assert "--empty drop: would shift the pairing" in capsys.readouterr().err
    assert main(["compare", "--references", rf, "--candidates", full, cf, "--model", str(d / "no-model"),
                 "--empty", "error"]) == 2
    assert "cands.txt" in capsys.readouterr().err


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """Real human sentences (references) and generations with a blank line 3."""
    d = tmp_path_factory.mktemp("empty_sets")
    sents = _sentences(80)
    cands = sents[40:]
    cands[2] = ""
    return d, _write(d / "human.txt", sents[:40]), _write(d / "model.txt", cands), cands


def test_set_metrics_refuse_an_empty_text_unless_dropped_with_a_count(sets, minilm_dir, capsys):
    """MAUVE and Mark-Evaluate cannot featurize an empty text: the run stops before the model is
    loaded with the file, the line and the option; --empty drop leaves it out and says so."""
    d, human, model, cands = sets
    nomodel = str(d / "no-model")
    for argv in (["mauve", "--model", nomodel], ["mark-evaluate", "--model", nomodel],
                 ["compare", "--metric", "mauve", "--model", nomodel],
                 ["mauve-sweep", "--model", nomodel, "--over", "k", "--values", "2"]):
        cand = [model, human] if argv[0] == "compare" else [model]
        assert main(argv[:1] + ["--references", human, "--candidates", *cand] + argv[1:]) == 2
        err = capsys.readouterr().err
        assert "model.txt" in err and "line 3" in err and "--empty drop" in err and "no-model" not in err, err
    assert main(["mark-evaluate", "--references", human, "--candidates", model, "--model", nomodel,
                 "--drop-empty"]) == 2                   # the old flag is --empty drop
    err = capsys.readouterr().err
    assert "dropped 1 empty text" in err and "line 3" in err and "no-model" in err
    assert main(["compare", "--metric", "mauve", "--references", human, "--candidates", model, human,
                 "--model", nomodel, "--empty", "zero"]) == 2
    assert "--empty zero: MAUVE has no per-text score" in capsys.readouterr().err
    out = d / "m.json"
    assert main(["mauve", "--references", human, "--candidates", model, "--model", minilm_dir, "--pooling", "mean",
                 "--max-length", "64", "--num-buckets", "4", "--empty", "drop", "--json", str(out), "--quiet"]) == 0
    cap = capsys.readouterr()
    assert "candidates: dropped 1 empty text" in cap.err and "line 3" in cap.err
    assert "n = 40 / 39" in cap.out
    doc = json.loads(out.read_text())
    assert doc["num_candidates"] == 39 and doc["empty_candidate_lines"] == [3] and doc["settings"]["empty"] == "drop"


def test_perplexity_per_line_counts_the_blank_lines_it_skips(sets, capsys):
    d, human, _, _ = sets
    corpus = d / "corpus.txt"
    corpus.write_text("To be, or not to be.\n\nThat is the question.\n   \n")
    assert main(["perplexity", str(corpus), "--model", str(d / "no-model"), "--per-line"]) == 2
    err = capsys.readouterr().err
    assert "dropped 2 empty texts" in err and "lines 2, 4" in err and "no tokens to score" in err


# ---- one reader for mauve and compare: .npy features --------------------------------------------------------------


@pytest.fixture(scope="module")
def features(tmp_path_factory, minilm):
    """Real MiniLM sentence features saved as .npy: 80 human sentences, 60 other human sentences,
    60 looping generations; and the text files they were made from."""
    from jaxmetrics.models import sentence_embeddings

    d = tmp_path_factory.mktemp("npy")
    sents = _sentences(200)
    texts = {"refs": sents[:80], "human": sents[80:140], "looped": [_looped(s) for s in sents[140:200]]}
    feats = {}
    for name, t in texts.items():
        feats[name] = np.asarray(sentence_embeddings(t, model=minilm, max_length=64, progress=False), np.float32)
        np.save(d / f"{name}.npy", feats[name])
        _write(d / f"{name}.txt", t)
    return d, texts, feats


def test_compare_mauve_reads_npy_features_as_mauve_does(features, capsys):
    import jax

    from jaxmetrics.mauve import compare_mauve

    d, _, feats = features
    out = d / "cmp.json"
    assert main(["compare", "--metric", "mauve", "--references", str(d / "refs.npy"), "--candidates",
                 str(d / "human.npy"), str(d / "looped.npy"), "--num-resamples", "100", "--seeds", "1",
                 "--json", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "features from .npy" in printed
    doc = json.loads(out.read_text())
    ref = compare_mauve(references=feats["refs"], systems={"human": feats["human"], "looped": feats["looped"]},
                        key=jax.random.key(0), seeds=(1,), num_resamples=100)
    got = {s["name"]: s["value"] for s in doc["systems"]}
    assert [got["human"], got["looped"]] == pytest.approx([float(v) for v in ref.scores], abs=1e-6)
    assert got["human"] > got["looped"] and doc["inputs"] == "features" and doc["model"] is None
    assert [s["num_candidates"] for s in doc["systems"]] == [60, 60]
    # what mauve refuses, compare refuses alike, naming the option, never "not valid UTF-8"
    for argv, match in (([str(d / "human.txt"), str(d / "looped.npy")], "all be .npy feature files"),
                        ([str(d / "human.npy"), str(d / "looped.npy"), "--model", "m"], "--model: not used"),
                        ([str(d / "human.npy"), str(d / "looped.npy"), "--metric", "bertscore"],
                         "--metric bertscore scores pairs of texts")):
        assert main(["compare", "--metric", "mauve", "--references", str(d / "refs.npy"), "--candidates"] + argv) == 2
        err = capsys.readouterr().err
        assert match in err and "UTF-8" not in err, err


# ---- --explain by the lines of the input files --------------------------------------------------------------------


def _explained(printed):
    """``(header, {'q': [(line, text)], 'p': [...]})`` of the --explain block."""
    block = printed.split("Influence of one more copy")[1]
    rows, side = {"q": [], "p": []}, None
    for ln in block.splitlines():
        if ln.startswith("Generations"):
            side = "q"
        elif ln.startswith("Human texts"):
            side = "p"
        elif side and re.match(r"\s+\d+\. (line|row) ", ln):
            m = re.match(r"\s+\d+\. (?:line|row) (\d+)\s+\S+(?:  (.*))?$", ln)
            rows[side].append((int(m.group(1)), m.group(2)))
    return block.splitlines()[0], rows


def test_explain_names_file_lines_and_shows_the_texts_beside_npy_features(features, capsys):
    """.npy features with their text files: each ranked row is shown with its text and the line of
    that file; the looping generations rank first; a file with blank lines maps the rows to its
    non-empty lines; a count that does not match is refused before any work."""
    d, texts, _ = features
    gen = texts["looped"][:30] + texts["human"][:30]
    gen_lines = []
    for i, t in enumerate(gen):           # a blank line before every tenth generation: rows skip them
        gen_lines += ["", t] if i % 10 == 0 else [t]
    np.save(d / "mix.npy", np.concatenate([np.load(d / "looped.npy")[:30], np.load(d / "human.npy")[:30]]))
    mix_txt = _write(d / "mix.txt", gen_lines)
    out = d / "e.json"
    assert main(["mauve", "--references", str(d / "refs.npy"), "--candidates", str(d / "mix.npy"), "--explain", "10",
                 "--candidates-text", mix_txt, "--references-text", str(d / "refs.txt"), "--json", str(out),
                 "--quiet"]) == 0
    printed = capsys.readouterr().out
    header, rows = _explained(printed)
    file_lines = gen_lines
    for line, text in rows["q"]:
        assert file_lines[line - 1].startswith(text.rstrip(".")[:90]), (line, text)
    refs_lines = texts["refs"]
    for line, text in rows["p"]:
        assert refs_lines[line - 1].startswith(text.rstrip(".")[:90])
    doc = json.loads(out.read_text())["explain"]
    for r in doc["candidates"]:
        assert file_lines[r["line"] - 1] == r["text"] and r["line"] == r["index"] + 2 + r["index"] // 10
    assert sum(r["text"] in texts["looped"] for r in doc["candidates"]) >= 8    # the looping ones first
    # rows only, without the texts: 1-based rows, labelled as rows
    assert main(["mauve", "--references", str(d / "refs.npy"), "--candidates", str(d / "mix.npy"),
                 "--explain", "3", "--json", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())["explain"]
    assert "row of the .npy features" in printed and all(r["line"] is None for r in doc["candidates"])
    assert f"row {doc['candidates'][0]['index'] + 1} " in printed
    for extra, match in ((["--explain", "3", "--candidates-text", str(d / "refs.txt")], "holds 80 texts"),
                         (["--candidates-text", mix_txt], "only with --explain")):
        assert main(["mauve", "--references", str(d / "refs.npy"), "--candidates", str(d / "mix.npy")] + extra) == 2
        assert match in capsys.readouterr().err


def test_explain_on_text_lists_file_lines_and_relates_its_mauve_star_to_the_summary(features, minilm_dir, capsys):
    """Text input with a blank line dropped: every listed line is the line of the candidates file
    that holds the text shown. The header's MAUVE* is labelled: one --seeds value gives the summary
    line that seed's MAUVE* and the header the mean over the explanation's five seeds (both
    printed); several seeds give both lines the same number."""
    d, texts, _ = features
    cands = texts["looped"][:10] + texts["human"][:30]
    lines = cands[:7] + [""] + cands[7:]
    cf, rf = _write(d / "gen.txt", lines), _write(d / "refs60.txt", texts["refs"][:60])
    out = d / "t.json"
    base = ["mauve", "--references", rf, "--candidates", cf, "--model", minilm_dir, "--pooling", "mean",
            "--max-length", "64", "--empty", "drop", "--explain", "5", "--json", str(out), "--quiet",
            "--cache-dir", str(d / "cache")]             # the second run reads the features back
    assert main(base) == 0
    printed = capsys.readouterr().out
    header, rows = _explained(printed)
    doc = json.loads(out.read_text())
    for r in doc["explain"]["candidates"]:
        assert lines[r["line"] - 1] == r["text"]
        assert r["line"] == r["index"] + (1 if r["index"] < 7 else 2)   # the blank line 8 is not a row
    assert [ln for ln, _ in rows["q"]] == [r["line"] for r in doc["explain"]["candidates"]]
    summary = float(re.search(r"MAUVE\* (\d\.\d{4})", printed.split("\n\n")[0]).group(1))
    assert summary == pytest.approx(doc["mauve_star"], abs=1e-4)
    assert f"the line above, MAUVE* {doc['mauve_star']:.4f}, is seed 25 alone" in header
    assert f"MAUVE* {doc['explain']['mauve_star']:.4f} is the mean over the k-means seeds 25 26 27 28 29" in header
    # several seeds: the header and the summary line print one quantity, the mean over the same seeds
    assert main(base + ["--seeds", "25", "26"]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    header, _ = _explained(printed)
    m = re.search(r"MAUVE\* (\d\.\d{4}) \(the mean over the seeds 25 26, as in the line above\)", header)
    assert m and float(m.group(1)) == pytest.approx(doc["mauve_star"], abs=1e-4), header
    assert doc["explain"]["mauve_star"] == pytest.approx(doc["mauve_star"], abs=5e-5)
