"""compare, meta-eval, similarity-eval and diversity-test: one set of resampling options
(``--num-resamples``, ``--confidence``, ``--alpha``, ``--seed``) with one check, the library's
bound on the resamples an interval needs, refused before any file is read or model loaded."""
from __future__ import annotations

import pytest

from jaxmetrics.cli import main

COMMANDS = ("compare", "meta-eval", "similarity-eval", "diversity-test")
CAN_TURN_OFF = {"similarity-eval", "diversity-test"}


@pytest.fixture
def argv_of(tmp_path):
    """The smallest command line of each command; its input files exist, but every model is a
    path that does not, so an option that passed its checks would fail at loading."""
    refs, cands = tmp_path / "r.txt", tmp_path / "c.txt"
    refs.write_text("a\nb\n")
    cands.write_text("c\nd\n")
    items = tmp_path / "items.jsonl"
    items.write_text('{"human": 1.0, "noise": 0.5}\n' * 3)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a\tb\t1.0\n" * 3)
    sets = tmp_path / "sets.csv"
    sets.write_text("label,a,b\n0.1,x y,y z\n0.9,u v,v w\n")
    missing = str(tmp_path / "no-such-model")
    return {
        "compare": ["compare", "--references", str(refs), "--candidates", str(cands), str(cands), "--names", "a",
                    "b", "--model", missing],
        "meta-eval": ["meta-eval", str(items), "--columns", "noise"],
        "similarity-eval": ["similarity-eval", str(pairs), "--model", missing],
        "diversity-test": ["diversity-test", str(sets), "--metrics", "distinct-1"],
    }


def _error(argv, capsys) -> str:
    assert main(argv) == 2, argv
    return capsys.readouterr().err


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("extra, message", [
    (["--num-resamples", "20"], "--num-resamples: a 95% interval needs at least 39 resamples, got 20"),
    (["--confidence", "0.9", "--num-resamples", "18"], "--num-resamples: a 90% interval needs at least 19"),
    (["--num-resamples", "1"], "--num-resamples: must be >= 2"),
    (["--confidence", "0.3"], "--confidence: must be at least 0.5"),
    (["--confidence", "1.5"], "--confidence: must lie strictly between 0 and 1"),
    (["--alpha", "1.5"], "--alpha: must lie strictly between 0 and 1"),
    (["--alpha", "0"], "--alpha: must be finite and > 0, got 0.0"),
])
def test_every_comparing_command_refuses_the_same_bad_resampling_with_the_same_words(
        command, extra, message, argv_of, capsys):
    assert message in _error(argv_of[command] + extra, capsys)


@pytest.mark.parametrize("command", COMMANDS)
def test_zero_resamples_turns_the_meta_evaluation_off_only_where_it_is_optional(command, argv_of, capsys):
    if command in CAN_TURN_OFF:   # 0 is taken; the confidence is still checked
        err = _error(argv_of[command] + ["--num-resamples", "0", "--confidence", "0.2"], capsys)
        assert "--confidence: must be at least 0.5" in err, err
    else:
        err = _error(argv_of[command] + ["--num-resamples", "0"], capsys)
        assert "--num-resamples: must be >= 2" in err, err


@pytest.mark.parametrize("command", COMMANDS)
def test_the_options_and_their_defaults_are_the_same_in_every_help(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--confidence LEVEL the intervals' nominal coverage, in [0.5, 1) (default 0.95)" in text
    assert "at least (1 + c) / (1 - c) for --confidence c (39 at 0.95)" in text
    assert "--alpha ALPHA" in text and "(default 0.05)" in text
    assert "--seed SEED seed of the resampling (default 0)" in text
    assert ("0 turns it off" in text) == (command in CAN_TURN_OFF)


def test_compare_takes_its_earlier_level_option_as_alpha(argv_of, capsys):
    assert "--alpha: must lie strictly between 0 and 1" in _error(argv_of["compare"] + ["--level", "2"], capsys)


@pytest.mark.filterwarnings("ignore:meta_evaluate")   # a resample of 5 sets may repeat one: some undefined
def test_diversity_test_passes_confidence_and_alpha_to_its_meta_evaluation():
    import jax
    import numpy as np

    from jaxmetrics.diversity import run_diversity_test
    from jaxmetrics.meta import meta_evaluate

    sets = [["a a a", "a a a"], ["a b a", "a a b"], ["a b c", "c d e"], ["x y z", "u v w"], ["p q", "r s"]]
    params = [0.2, 0.5, 0.8, 1.1, 1.4]
    report = run_diversity_test(sets, params, ["distinct-1", "distinct-2"], num_resamples=60, confidence=0.9,
                                alpha=0.1)
    assert report.meta.confidence == 0.9 and report.meta.alpha == 0.1 and report.meta.num_resamples == 60
    with pytest.raises(ValueError, match="num_resamples: a 95% interval needs at least 39"):
        run_diversity_test(sets, params, ["distinct-1"], num_resamples=20)
    with pytest.raises(ValueError, match="alpha: must lie"):
        run_diversity_test(sets, params, ["distinct-1"], num_resamples=60, alpha=1.0)
    h = np.arange(10.0)
    with pytest.raises(ValueError, match="num_resamples: a 90% interval needs at least 19 resamples, got 10"):
        meta_evaluate({"a": h, "b": -h}, h, key=jax.random.key(0), num_resamples=10, confidence=0.9)
