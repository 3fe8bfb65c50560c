"""Result signatures (jaxmetrics.results): every pipeline result and every JSON of the command
line carries one; changing any one setting changes it, it parses back to the settings, two runs
with the same settings give the same signature and the same numbers, and the model part carries
a hash of the weights (two checkpoints with one directory name but different weights differ)."""
from __future__ import annotations

import csv
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.results import extend_signature, key_id, make_signature, model_id, parse_signature
from realtext_family import realtext_family  # noqa: F401 (fixture)

pytest.importorskip("torch")  # jaxmetrics.testing.tiny_checkpoint writes its weights with torch

MODEL = re.compile(r"^[\w.-]+@sha256:[0-9a-f]{12}$")
TEXTS = [f"the cat number {i} sat on the mat and the dog {'ran far away' if i % 2 else 'slept'}"
         for i in range(8)]
OTHER = [f"a dog {i} barked at the cat while the bird sang {'loud' if i % 3 else 'soft'}" for i in range(8)]


@pytest.fixture(scope="module")
def bert(tiny_checkpoint_dir):
    from jaxmetrics.models import load_model

    return load_model(tiny_checkpoint_dir("bert"))


@pytest.fixture(scope="module")
def bert_bf16(tiny_checkpoint_dir):
    from jaxmetrics.models import load_model

    return load_model(tiny_checkpoint_dir("bert"), dtype=jnp.bfloat16)


def _variants(run, base: dict, changes: dict, must: dict) -> str:
    """``run(**base)``'s signature parses to ``must`` (each value as written); each change of one
    setting gives a signature unlike the base's and every other's. Returns the base signature."""
    sig = run(**base)
    fields = parse_signature(sig)
    for k, v in must.items():
        assert fields.get(k) == v, (k, fields.get(k), sig)
    seen = {sig: "base"}
    for name, value in changes.items():
        other = run(**{**base, name: value})
        assert other not in seen, f"changing {name} to {value!r} gives the signature of {seen.get(other)}: {other}"
        seen[other] = name
    return sig


# ----------------------------------------------------------------------------- the format


def test_format_parses_back_and_extends():
    sig = make_signature("x", model="some/dir/tiny", layer=-1, seeds=[1, 2], idf=False, t=0.5, dtype=jnp.bfloat16)
    assert sig == "metric:x|jaxmetrics:" + parse_signature(sig)["jaxmetrics"] + \
        "|model:tiny|dtype:bfloat16|idf:no|layer:-1|seeds:1,2|t:0.5"
    assert extend_signature(sig, layer=3, pooling="mean") == sig.replace("layer:-1", "layer:3").replace(
        "seeds", "pooling:mean|seeds")
    with pytest.raises(ValueError, match="signature"):
        extend_signature("layer:1")


def test_model_id_carries_the_weights_hash(tmp_path):
    """(c) one directory name, different random weights: different ids and signatures; the same
    weights written twice: the same id."""
    from jaxmetrics.lm import perplexity
    from jaxmetrics.models import load_model
    from jaxmetrics.testing import tiny_checkpoint

    a = load_model(tiny_checkpoint("gpt2", tmp_path / "a" / "m", seed=0))
    b = load_model(tiny_checkpoint("gpt2", tmp_path / "b" / "m", seed=1))
    c = load_model(tiny_checkpoint("gpt2", tmp_path / "c" / "m", seed=0))
    assert model_id(a).split("@")[0] == model_id(b).split("@")[0] == "m"
    assert MODEL.match(model_id(a)) and model_id(a) != model_id(b) and model_id(a) == model_id(c)
    assert model_id(a)[-12:] == a.weights_sha256[:12]
    ids = np.arange(40) % 50
    ra, rb, rc = (perplexity(ids, model=m, max_length=16, stride=8) for m in (a, b, c))
    assert ra.signature != rb.signature and ra.signature == rc.signature
    assert ra.perplexity == rc.perplexity != rb.perplexity


# ----------------------------------------------------------------------------- MAUVE


# pq: tests/conftest.py (40 x 6, q shifted by 0.5)


def test_compute_mauve_signature(pq):
    from jaxmetrics.mauve import compute_mauve
    from jaxmetrics.mauve.quantize.quantizers import KMeansQuantizer

    p, q = pq

    def run(**kw):
        return compute_mauve(p_features=p, q_features=q, **kw).signature

    base = dict(num_buckets=4, seed=25)
    sig = _variants(run, base, dict(seed=26, num_buckets=5, kmeans_explained_var=0.8, kmeans_num_redo=2,
                                    kmeans_max_iter=50, pca_max_data=30, mauve_scaling_factor=2.0,
                                    divergence_curve_discretization_size=10, scoring="paper",
                                    quantizer=KMeansQuantizer(4, max_points_per_centroid=64)),
                    dict(metric="mauve", seeds="25", num_buckets="4", quantizer="kmeans", kmeans_num_redo="5",
                         kmeans_explained_var="0.9", mauve_scaling_factor="5.0", scoring="mauve-text"))
    assert "model" not in parse_signature(sig)     # arrays in: no featurizer
    assert parse_signature(run(num_buckets="auto"))["num_buckets"] == "auto"   # as given, not the k it became
    # (b) the same settings: the same signature and the same numbers
    a, b = compute_mauve(p_features=p, q_features=q, **base), compute_mauve(p_features=p, q_features=q, **base)
    assert a.signature == b.signature and a.mauve == b.mauve and np.array_equal(a.p_hist, b.p_hist)
    assert a.to_dict()["signature"] == a.signature and "signature" not in repr(a)


def test_compute_mauve_seeds_signature(pq):
    from jaxmetrics.mauve import compute_mauve, compute_mauve_seeds

    p, q = pq
    out = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2), num_buckets=4)
    assert parse_signature(out.signature)["seeds"] == "1,2"
    assert compute_mauve_seeds(references=p, candidates=q, seeds=(1, 3), num_buckets=4).signature != out.signature
    one = compute_mauve_seeds(references=p, candidates=q, seeds=(7,), num_buckets=4)
    single = compute_mauve(p_features=p, q_features=q, seed=7, num_buckets=4)
    assert one.signature == single.signature and float(one.mauve[0]) == pytest.approx(single.mauve, abs=1e-12)


def test_shared_codebook_signature(pq):
    from jaxmetrics.mauve import fit_quantizer, mauve_shared_codebook

    p, q = pq

    def run(**kw):
        return mauve_shared_codebook([(p, q), (q, p)], **kw)[0].signature

    _variants(run, dict(seed=25, num_buckets=4), dict(seed=26, num_buckets=5, kmeans_num_redo=2, scaling=2.0),
              dict(metric="mauve", codebook="shared", seeds="25", num_buckets="4", quantizer="kmeans",
                   kmeans_num_redo="5"))
    given = parse_signature(run(fitted=fit_quantizer([p, q], num_buckets=4)))
    assert given["codebook"] == "given" and given["num_buckets"] == "4" and "seeds" not in given


def test_compute_mauve_from_text_names_the_featurizer(bert, bert_bf16):
    from jaxmetrics.mauve import compute_mauve

    def run(model=bert, **kw):
        return compute_mauve(p_text=TEXTS, q_text=OTHER, model=model, num_buckets=2, **kw).signature

    sig = _variants(run, dict(pooling="mean", max_text_length=16),
                    dict(pooling="last", max_text_length=8, model=bert_bf16),
                    dict(model=model_id(bert), pooling="mean", max_length="16", layer="-1", dtype="float32"))
    assert MODEL.match(parse_signature(sig)["model"])
    assert parse_signature(run(model=bert_bf16, pooling="mean", max_text_length=16))["dtype"] == "bfloat16"


def test_mauve_sweeps_signature(pq, bert):
    from jaxmetrics.mauve import mauve_length_sweep, mauve_sweep

    p, q = pq
    systems = {"a": q, "b": q + 0.5}

    def run(**kw):
        return mauve_sweep(references=p, candidates=systems, **kw).signature

    sig = _variants(run, dict(over="k", values=(2, 3), seeds=(1, 2)),
                    dict(values=(2, 4), seeds=(1, 3), over="c", kmeans_num_redo=2, scaling=2.0),
                    dict(metric="mauve-sweep", over="k", values="2,3", seeds="1,2", kmeans_num_redo="5"))
    assert "num_buckets" not in parse_signature(sig)   # the swept setting is in values only
    assert parse_signature(run(over="n", seeds=(1,), num_buckets=2))["values"] == "default"
    res = mauve_length_sweep(references=TEXTS, candidates={"o": OTHER}, model=bert, lengths=(8, 16), seeds=(1,),
                             num_buckets=2)
    fields = parse_signature(res.signature)
    assert fields["over"] == "length" and fields["values"] == "8,16" and fields["model"] == model_id(bert)
    assert fields["pooling"] == "mean" and fields["layer"] == "-1" and fields["dtype"] == "float32"


# ----------------------------------------------------------------------------- similarity


def test_compute_similarity_signature(bert, bert_bf16):
    from jaxmetrics.similarity import compute_similarity

    def run(model=bert, **kw):
        return compute_similarity(references=TEXTS[:4], candidates=OTHER[:4], model=model, **kw).signature

    base = dict(metric="twmd", layer=2, centering="none", max_length=16)
    sig = _variants(run, base, dict(metric="bertscore", layer=1, centering="batch", temperature=0.3, num_iterations=2,
                                    max_length=12, idf=True, special_tokens="keep", model=bert_bf16),
                    dict(metric="twmd", model=model_id(bert), layer="2", centering="none", temperature="0.02",
                         num_iterations="1", idf="no", special_tokens="drop", max_length="16", dtype="float32"))
    assert run(**dict(base, centering="batch", center_batch_size=2)) != run(**dict(base, centering="batch"))
    from jaxmetrics.similarity import SimilaritySettings

    bs = parse_signature(run(settings=SimilaritySettings(metric="bertscore", layer=2, max_length=16,
                                                         baseline=(0.1, 0.2, 0.3))))
    assert bs["metric"] == "bertscore" and bs["baseline"] == "0.1,0.2,0.3" and "temperature" not in bs
    # (b) the same settings: the same signature and identical numbers
    a = compute_similarity(references=TEXTS[:4], candidates=OTHER[:4], model=bert, **base)
    b = compute_similarity(references=TEXTS[:4], candidates=OTHER[:4], model=bert, **base)
    assert a.signature == b.signature == sig and np.array_equal(a.f1, b.f1)


def test_correlation_sweep_and_anisotropy_signatures(bert):
    from jaxmetrics.similarity import compute_anisotropy, correlation_sweep

    human = np.linspace(0.0, 5.0, 6)

    def sweep(**kw):
        return correlation_sweep(references=TEXTS[:6], candidates=OTHER[:6], human=human, model=bert,
                                 max_length=16, **kw).signature

    _variants(sweep, dict(layers=(2,), centering="none", temperatures=(0.1,)),
              dict(layers=(1,), centering="batch", temperatures=(0.2,), metric="trwmd", score="recall"),
              dict(metric="correlation-sweep", metrics="twmd", layers="2", centerings="none", temperatures="0.1",
                   score="f1", max_length="16", model=model_id(bert)))

    def aniso(**kw):
        return compute_anisotropy(TEXTS[:4], model=bert, **kw).signature

    _variants(aniso, dict(centerings=("none",), num_pairs=64, max_length=16),
              dict(centerings=("none", "corpus"), num_pairs=32, seed=1, max_length=12, center_batch_size=2),
              dict(metric="anisotropy", centerings="none", num_pairs="64", seed="0", max_length="16",
                   model=model_id(bert), dtype="float32"))


# ----------------------------------------------------------------------------- perplexity, Mark-Evaluate, diversity


def test_perplexity_signatures(gpt2):
    from jaxmetrics.lm import perplexity, text_perplexities

    ids = np.arange(60) % 50

    def run(**kw):
        return perplexity(ids, model=gpt2, batch_size=4, **kw).signature

    base = dict(max_length=16, stride=8)
    sig = _variants(run, base, dict(max_length=32, stride=4, reduction="sequence", convention="document"),
                    dict(metric="perplexity", model=model_id(gpt2), max_length="16", stride="8",
                         reduction="corpus", convention="exact", dtype="float32"))
    a, b = perplexity(ids, model=gpt2, **base), perplexity(ids, model=gpt2, batch_size=2, **base)
    assert a.signature == b.signature == sig and a.nll == pytest.approx(b.nll, rel=1e-6)  # batch size: speed only

    def per_text(**kw):
        return text_perplexities(TEXTS[:3], model=gpt2, **kw).signature

    _variants(per_text, dict(max_length=None), dict(max_length=8, add_start_token=False),
              dict(metric="text-perplexity", add_start_token="yes", max_length="none"))


def test_mark_evaluate_signature(tiny_checkpoint_dir):
    from jaxmetrics.mark_evaluate import compute_mark_evaluate
    from jaxmetrics.models import load_model

    bert = load_model(tiny_checkpoint_dir("bert", num_layers=4))   # token mode takes the last 5 hidden states

    def run(**kw):
        return compute_mark_evaluate(references=TEXTS, candidates=OTHER, model=bert, **kw).signature

    _variants(run, dict(k=2, max_length=16),
              dict(k=3, token_level=True, literal=True, occasions="visits", baselines=False, max_length=12),
              dict(metric="mark-evaluate", k="2", token_level="no", pooling="mean", layers="-1",
                   literal="no", occasions="samples", baselines="yes", max_length="16", model=model_id(bert)))
    assert parse_signature(run(k=2, max_length=16, token_level=True))["layers"] == "0,1,2,3,4"


def test_diversity_report_signature(bert):
    from jaxmetrics.diversity import run_diversity_test

    sets = [["a a a", "a a a"], ["a b a", "a a b"], ["a b c", "c d e"], ["x y z", "u v w"]]
    params = [0.2, 0.5, 0.8, 1.1]
    r = run_diversity_test(sets, params, ["distinct-1"])
    assert parse_signature(r.signature) == {"metric": "diversity-test", "jaxmetrics": parse_signature(
        r.signature)["jaxmetrics"], "metrics": "distinct-1", "test": "dec"}
    assert run_diversity_test(sets, [0, 0, 1, 1], ["distinct-1"]).signature != r.signature        # conTest
    assert run_diversity_test(sets, params, ["distinct-2"]).signature != r.signature
    neural = parse_signature(run_diversity_test(sets, params, ["sent-bert"], model=bert).signature)
    assert neural["model"] == model_id(bert) and neural["dtype"] == "float32"


# ----------------------------------------------------------------------------- the command line


def _lines(path, texts):
    path.write_text("".join(t + "\n" for t in texts))
    return str(path)


def _json_signature(path) -> dict:
    doc = json.loads(open(path).read())
    assert isinstance(doc.get("signature"), str) and doc["signature"], sorted(doc)
    return parse_signature(doc["signature"])


def test_every_cli_json_has_a_signature(tmp_path, tiny_checkpoint_dir, bert, capsys):
    """(d) one small run of each command: its JSON has a top-level "signature" naming the model
    (with its weights' hash) when there is one."""
    from jaxmetrics.cli import main

    bert_dir, gpt2_dir = tiny_checkpoint_dir("bert"), tiny_checkpoint_dir("gpt2")
    refs, cands = _lines(tmp_path / "r.txt", TEXTS), _lines(tmp_path / "c.txt", OTHER)
    j = lambda name: str(tmp_path / f"{name}.json")  # noqa: E731
    q = ["--quiet"]

    rng = np.random.default_rng(0)
    p_npy, q_npy = tmp_path / "p.npy", tmp_path / "q.npy"
    np.save(p_npy, rng.normal(size=(24, 6)).astype(np.float32))
    np.save(q_npy, rng.normal(size=(24, 6)).astype(np.float32) + 0.5)
    assert main(["mauve", "--references", str(p_npy), "--candidates", str(q_npy), "--num-buckets", "3",
                 "--json", j("mauve_f")] + q) == 0
    assert "model" not in _json_signature(j("mauve_f"))
    assert main(["mauve", "--references", refs, "--candidates", cands, "--model", bert_dir, "--num-buckets", "2",
                 "--max-length", "16", "--json", j("mauve_t")] + q) == 0
    fields = _json_signature(j("mauve_t"))
    assert fields["model"] == model_id(bert) and fields["pooling"] == "mean" and fields["max_length"] == "16"
    from jaxmetrics.mauve import compute_mauve   # the command's signature is the Python pipeline's from text

    want = compute_mauve(p_text=TEXTS, q_text=OTHER, model=bert, num_buckets=2, max_text_length=16, pooling="mean")
    assert json.loads(open(j("mauve_t")).read())["signature"] == want.signature

    assert main(["mauve-sweep", "--references", str(p_npy), "--candidates", str(q_npy), "--over", "k",
                 "--values", "2", "3", "--seeds", "1", "--json", j("sweep")] + q) == 0
    assert _json_signature(j("sweep"))["over"] == "k"

    assert main(["similarity", "--references", refs, "--candidates", cands, "--model", bert_dir,
                 "--metric", "bertscore", "--max-length", "16", "--json", j("sim")] + q) == 0
    assert _json_signature(j("sim"))["model"] == model_id(bert)

    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{a}\t{b}\t{i}\n" for i, (a, b) in enumerate(zip(TEXTS[:4], OTHER[:4]))))
    assert main(["similarity-eval", str(tsv), "--model", bert_dir, "--layers", "2", "--max-length", "16",
                 "--json", j("simeval")] + q) == 0
    assert _json_signature(j("simeval"))["metric"] == "correlation-sweep"

    assert main(["anisotropy", refs, "--model", bert_dir, "--centering", "none", "--num-pairs", "32",
                 "--max-length", "16", "--json", j("aniso")] + q) == 0
    assert _json_signature(j("aniso"))["model"] == model_id(bert)

    corpus = _lines(tmp_path / "corpus.txt", TEXTS)
    assert main(["perplexity", corpus, "--model", gpt2_dir, "--max-length", "16", "--json", j("ppl")] + q) == 0
    assert _json_signature(j("ppl"))["stride"] == "16"

    capsys.readouterr()
    assert main(["mark-evaluate", "--references", refs, "--candidates", cands, "--model", bert_dir, "--k", "2",
                 "--max-length", "16", "--no-baselines"] + q) == 0
    doc = json.loads(capsys.readouterr().out)      # mark-evaluate prints its JSON
    assert parse_signature(doc["signature"])["k"] == "2"

    data = tmp_path / "d.csv"
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sample_id", "context", "resp_0", "resp_1", "label_value", "label_name"])
        for k, s in enumerate([["a a a", "a a b"], ["a b a", "c a b"], ["a b c", "c d e"], ["x y z", "u v w"]]):
            w.writerow([k, "c", *s, k, "t"])
    assert main(["diversity-test", str(data), "--metrics", "distinct,sent-bert", "--model", bert_dir,
                 "--json", j("div")] + q) == 0
    fields = _json_signature(j("div"))
    assert fields["metrics"] == "distinct,sent-bert" and fields["model"] == model_id(bert)

    prompts = _lines(tmp_path / "prompts.txt", [t.split(" sat")[0] for t in TEXTS[:4]])
    conts = _lines(tmp_path / "conts.txt", [" sat on the mat" + t.split("sat on the mat")[1] for t in TEXTS[:4]])
    out = tmp_path / "gen"
    assert main(["evaluate-generation", prompts, conts, "--model", gpt2_dir, "--featurizer", gpt2_dir,
                 "--decodings", "greedy", "--mauve-seeds", "25", "--self-bleu-samples", "2", "--max-new-tokens", "4",
                 "--similarity-model", "none", "--out", str(out)] + q) == 0
    fields = _json_signature(out / "report.json")
    assert fields["metric"] == "evaluate-generation" and fields["decodings"] == "greedy"
    assert fields["model"] == fields["featurizer"] and MODEL.match(fields["model"])


# ----------------------------------------------------------------------------- resampling, keys and analyses
# Whatever draws with a key or resamples names the key, the scheme and its settings: two results
# with one signature hold the same numbers, and a changed key, number of resamples, confidence or
# method changes the signature (the numbers move with each). Real text: all-MiniLM-L6-v2 features
# of sentences of the bundled plays (tests/realtext_family.py), 60 per set.


@pytest.fixture(scope="module")
def real(realtext_family):
    """``(P [60, 384], {system: Q [60, 384]})``: human sentences, and three candidate sets (other
    human sentences, half of them with shuffled words, looping repeats)."""
    fam = realtext_family(60, members=("human", "shuffle50", "repeated"))
    return np.asarray(fam["human"][0]), {name: np.asarray(q) for name, (_, q) in fam.items()}


def _cosine(p, q):
    """Per-item score of a system: the cosine of its row i with human row i."""
    p = p / np.linalg.norm(p, axis=1, keepdims=True)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    return jnp.asarray(np.sum(p * q, axis=1), jnp.float32)


def test_key_id():
    assert key_id(jax.random.key(0)) == "0-0" and key_id(jax.random.key(7)) == "0-7"
    assert key_id(jax.random.PRNGKey(7)) == key_id(jax.random.key(7))
    assert key_id(jax.random.fold_in(jax.random.key(0), 1)) != key_id(jax.random.key(0))
    assert jax.jit(lambda k: jnp.float32(len(key_id(k))))(jax.random.key(1)) == len("traced")
    closed = jax.random.key(12)     # a concrete key closed over inside jit is read: '0-12'
    assert jax.jit(lambda x: x + len(key_id(closed)))(jnp.float32(0)) == len("0-12")


def test_interval_and_system_comparison_signatures_pin_the_numbers(real):
    from jaxmetrics.confidence import compare_systems, confidence_interval, subsample_interval

    p, systems = real
    scores = {name: _cosine(p, q) for name, q in systems.items()}
    base = dict(key=jax.random.key(0), num_resamples=200, confidence=0.95)

    def compared(**kw):
        return compare_systems(jnp.mean, scores, **kw)

    _variants(lambda **kw: compared(**kw).signature, dict(base, method="bootstrap"),
              dict(key=jax.random.key(1), num_resamples=300, confidence=0.9, method="randomization"),
              dict(metric="compare-systems", key="0-0", num_resamples="200", confidence="0.95", method="bootstrap",
                   correction="holm", statistic="mean"))
    a, b, other = compared(**base), compared(**base), compared(**dict(base, key=jax.random.key(1)))
    assert a.signature == b.signature and np.array_equal(a.low, b.low) and np.array_equal(a.p_value, b.p_value)
    assert not np.array_equal(a.low, other.low)          # another key moves the numbers: and the signature

    human = scores["human"]

    def interval(**kw):
        return confidence_interval(jnp.mean, human, **kw)

    _variants(lambda **kw: interval(**kw).signature, dict(base, method="bca"),
              dict(key=jax.random.key(1), num_resamples=300, confidence=0.9, method="percentile"),
              dict(metric="confidence-interval", key="0-0", num_resamples="200", confidence="0.95", method="bca",
                   statistic="mean"))
    a, b, other = interval(**base), interval(**base), interval(**dict(base, num_resamples=300))
    assert a.signature == b.signature and float(a.low) == float(b.low) and float(a.high) == float(b.high)
    assert (float(a.low), float(a.high)) != (float(other.low), float(other.high))
    sub = _variants(lambda **kw: subsample_interval(jnp.mean, human, **kw).signature, dict(base, fraction=0.75),
                    dict(key=jax.random.key(1), num_resamples=300, confidence=0.9, fraction=0.5),
                    dict(method="subsample", fraction="0.75", key="0-0"))
    assert sub != interval(**base).signature


def test_compare_mauve_signature_pins_the_numbers(real):
    from jaxmetrics.mauve import compare_mauve

    p, systems = real

    def run(**kw):
        return compare_mauve(references=p, systems=systems, **kw)

    base = dict(key=jax.random.key(0), num_resamples=40, seeds=(25,), num_buckets=6)
    _variants(lambda **kw: run(**kw).signature, base,
              dict(key=jax.random.key(5), num_resamples=50, confidence=0.9, method="bootstrap", seeds=(26,),
                   num_buckets=8, scaling=2.0),
              dict(metric="compare-mauve", key="0-0", num_resamples="40", confidence="0.95", method="randomization",
                   correction="holm", seeds="25", num_buckets="6", quantizer="kmeans", kmeans_num_redo="5",
                   mauve_scaling_factor="5.0"))
    a, b = run(**base), run(**base)
    assert a.signature == b.signature
    for field in ("scores", "score_low", "score_high", "low", "p_value", "adjusted_p_value"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    other = run(**dict(base, key=jax.random.key(5)))
    assert not np.array_equal(a.score_low, other.score_low)   # the key moves the intervals: it is in the signature
    assert parse_signature(run(**dict(base, num_buckets="auto")).signature)["num_buckets"] == "auto"  # as given


def test_estimate_mauve_and_attribution_signatures(real):
    from jaxmetrics.mauve import estimate_mauve, mauve_attribution

    p, systems = real
    q = systems["shuffle50"]
    est = {k: estimate_mauve(references=p, candidates=q, key=jax.random.key(k), estimator="classifier")
           for k in (0, 5)}
    assert parse_signature(est[0].signature)["key"] == "0-0" and parse_signature(est[5].signature)["key"] == "0-5"
    again = estimate_mauve(references=p, candidates=q, key=jax.random.key(0), estimator="classifier")
    assert again.signature == est[0].signature and again.mauve == est[0].mauve

    def run(**kw):
        return mauve_attribution(references=p, candidates=q, **kw)

    base = dict(seeds=(25,), num_buckets=6)
    _variants(lambda **kw: run(**kw).signature, base,
              dict(seeds=(26,), num_buckets=8, temperature=None, num_nearest_bins=3, pseudocount=1.0, scaling=2.0),
              dict(metric="mauve-attribution", seeds="25", num_buckets="6", temperature="auto", num_nearest_bins="10",
                   pseudocount="0.5", quantizer="kmeans", kmeans_explained_var="0.9"))
    a, b = run(**base), run(**base)
    assert a.signature == b.signature and np.array_equal(a.q_influence, b.q_influence)
    assert parse_signature(run(**dict(base, temperature=0.5)).signature)["temperature"] == "0.5"


def test_mauve_intervals_carry_the_signature(real):
    from jaxmetrics.mauve import compute_mauve_seeds

    p, systems = real

    def run(**kw):
        return compute_mauve_seeds(references=p, candidates=systems["repeated"], seeds=(1, 2), num_buckets=6, **kw)

    sig = _variants(lambda **kw: run(**kw).signature, dict(confidence=0.95, num_resamples=50),
                    dict(confidence=0.9, num_resamples=60),
                    dict(bootstrap="reflected", confidence="0.95", num_resamples="50", seeds="1,2"))
    out = run(confidence=0.95, num_resamples=50)
    assert out.mauve_interval.signature == out.frontier_integral_interval.signature == out.signature == sig


def test_compare_command_signature_and_holm_fields(tmp_path, tiny_checkpoint_dir, capsys):
    """``jaxmetrics compare``'s JSON signature names --seed, --num-resamples, --method, --confidence
    (the same options: the same signature and numbers); with three systems the p-values are
    Holm-adjusted, said in the table and in the JSON, which keeps the raw ones too."""
    from jaxmetrics.cli import main
    from jaxmetrics.confidence import holm_adjust
    from jaxmetrics.data import load_shakespeare

    lines = [" ".join(t.split()[:16]) for t in load_shakespeare("heldout", limit=40, min_words=12)]
    refs = _lines(tmp_path / "refs.txt", lines[:10])
    cands = [_lines(tmp_path / f"{name}.txt", texts) for name, texts in
             (("a", lines[10:20]), ("b", lines[20:30]), ("c", [" ".join(t.split()[:6]) for t in lines[:10]]))]
    bert_dir = tiny_checkpoint_dir("bert")

    def run(*extra, name="out"):
        out = str(tmp_path / f"{name}.json")
        assert main(["compare", "--references", refs, "--candidates", *cands, "--model", bert_dir, "--max-length", "16",
                     "--num-resamples", "50", "--json", out, "--quiet", *extra]) == 0
        return json.loads(open(out).read())

    capsys.readouterr()
    base = run()
    assert "Holm-adjusted p <" in capsys.readouterr().out     # three systems: the table says so
    fields = parse_signature(base["signature"])
    assert fields["seed"] == "0" and fields["num_resamples"] == "50" and fields["method"] == "bootstrap"
    assert fields["confidence"] == "0.95" and fields["correction"] == "holm" and MODEL.match(fields["model"])
    seen = {base["signature"]}
    for extra in (["--seed", "1"], ["--num-resamples", "60"], ["--method", "randomization"], ["--confidence", "0.9"]):
        sig = run(*extra)["signature"]
        assert sig not in seen, extra
        seen.add(sig)
    again = run()
    assert again["signature"] == base["signature"] and again["pairs"] == base["pairs"] and \
        again["systems"] == base["systems"]
    assert base["correction"] == "holm" and "Holm-adjusted" in base["significance"]
    raw = np.ones((3, 3))
    for pair in base["pairs"]:
        i, j = "abc".index(pair["a"]), "abc".index(pair["b"])
        raw[i, j] = raw[j, i] = pair["p_value"]
    adjusted = holm_adjust(raw)
    for pair in base["pairs"]:
        i, j = "abc".index(pair["a"]), "abc".index(pair["b"])
        assert pair["adjusted_p_value"] == pytest.approx(adjusted[i, j], rel=1e-6)
    mauve = run("--metric", "mauve", "--num-resamples", "40", name="mauve")
    fields = parse_signature(mauve["signature"])
    assert fields["metric"] == "compare-mauve" and fields["key"] == "0-0" and fields["correction"] == "holm"
    assert fields["method"] == "randomization" and fields["num_resamples"] == "40" and fields["pooling"] == "mean"


def test_keyed_kernels_and_model_scores_are_signed(pq, gpt2, bert):
    """The other results that draw with a key or score text with a model: PRD, the anisotropy
    kernel, the diversity sets and decTest on generated sets, MAUVE as a loss, the decoding scores
    and the generation perplexity name their key and settings."""
    from jaxmetrics.diversity import compute_set_metrics, self_decoding_test, unigram_generator
    from jaxmetrics.lm import decoding_scores, generation_perplexity
    from jaxmetrics.mark_evaluate import prd
    from jaxmetrics.mauve.training.fit import fit_to_mauve

    p, q = pq

    def curve(**kw):
        return prd(references=p, candidates=q, **{"key": jax.random.key(0), "num_buckets": 4, "num_runs": 2,
                                                   "num_angles": 11, **kw}).signature

    _variants(curve, {}, dict(key=jax.random.key(1), num_runs=3),
              dict(metric="prd", key="0-0", num_buckets="4", num_runs="2", num_angles="11"))

    def fit(**kw):
        return fit_to_mauve(q, references=p, **{"key": jax.random.key(0), "num_steps": 2, "num_buckets": 4,
                                                  "refit_every": 1, **kw}).signature

    _variants(fit, {}, dict(key=jax.random.key(1), learning_rate=0.01),
              dict(metric="mauve-fit", key="0-0", num_steps="2", optimizer="adam", seed="25", generator="identity"))

    gen = unigram_generator(vocab_size=30, length=8, n_responses=3)

    def dec(**kw):
        return self_decoding_test(gen, ["c"] * 3, **{"params": [0.5, 2.0], "metrics": ["distinct-1"],
                                                     "key": jax.random.key(0), **kw}).signature

    _variants(dec, {}, dict(key=jax.random.key(1), params=[0.5, 3.0], metrics=["distinct-2"]),
              dict(metric="self-decoding-test", key="0-0", params="0.5,2.0", metrics="distinct-1"))
    sets = [["the cat sat", "a dog ran"], ["the cat sat", "the cat sat"]]
    neural = parse_signature(compute_set_metrics(sets, ["sent-bert"], model=bert).signature)
    assert neural["metric"] == "set-metrics" and neural["model"] == model_id(bert) and neural["dtype"] == "float32"
    assert "model" not in parse_signature(compute_set_metrics(sets, ["distinct-1"]).signature)

    def scores(**kw):
        return decoding_scores(TEXTS[:3], model=gpt2, **{"max_length": 16, **kw}).signature

    _variants(scores, {}, dict(epsilon=1e-3, temperature=0.5, top_k=5, top_p=0.9, max_length=12),
              dict(metric="decoding-scores", model=model_id(gpt2), max_length="16", top_k="none", dtype="float32"))

    def gen_ppl(**kw):
        return generation_perplexity(TEXTS[:3], model=gpt2, **{"max_length": 16, **kw}).signature

    _variants(gen_ppl, {}, dict(convention="exact", max_length=12, remove_ids=[0]),
              dict(metric="generation-perplexity", model=model_id(gpt2), convention="mauve", remove_ids="none"))
