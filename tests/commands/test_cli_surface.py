"""What every command shares: ``--version``, each option's default in ``--help``, warnings as one
``jaxmetrics: warning:`` line, progress as plain periodic lines when stderr is not a terminal,
and no "PyTorch was not found" notice from transformers (jaxmetrics never uses its PyTorch models).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import jaxmetrics
from jaxmetrics import cli, progress


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"jaxmetrics {jaxmetrics.__version__}"


def _options():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        for a in p._actions:
            if a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
                yield name, p, a


def test_help_appends_a_default_it_does_not_already_state():
    from jaxmetrics.commands._util import DefaultsHelpFormatter

    p = argparse.ArgumentParser(prog="x", formatter_class=DefaultsHelpFormatter)
    p.add_argument("--k", type=int, default=3, help="neighbours")
    p.add_argument("--layer", type=int, default=-1, help="layer (default: the last)")
    p.add_argument("--out", default=None, help="write here")
    p.add_argument("--flag", action="store_true", help="a switch")
    out = " ".join(p.format_help().split())
    assert "neighbours (default: 3)" in out
    assert "layer (default: the last) " in out and out.count("default") == 2


def test_a_warning_is_one_line_once(monkeypatch, capsys):
    def func(args):
        for _ in range(3):
            warnings.warn("something\n  odd", UserWarning)
        return 0

    before = warnings.showwarning
    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    args = parser.parse_args(["perplexity", "--model", "m", "x.txt"])
    monkeypatch.setattr(parser, "parse_args", lambda argv=None: argparse.Namespace(**{**vars(args), "func": func}))
    assert cli.main([]) == 0
    err = capsys.readouterr().err
    assert err == "jaxmetrics: warning: something odd\n"
    assert warnings.showwarning is before  # restored: a library user's warnings are untouched


def test_progress_is_plain_lines_when_stderr_is_a_file(monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.0)
    bar = progress.progress_bar(4, desc="featurize", unit="text")
    for _ in range(4):
        bar.update(1)
    bar.close()
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "\r" not in err and len(lines) == 4   # close() does not repeat the 100 % line
    assert lines[0].startswith("jaxmetrics: featurize: 1/4 texts (25%,")
    assert lines[-1].startswith("jaxmetrics: featurize: 4/4 texts (100%,")


def test_progress_lines_name_the_unit_in_english(monkeypatch, capsys):
    """A log says "batches", not "batchs", and each count once: the closing line only when the
    last periodic line did not already show it."""
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.0)
    with progress.progress_bar(3, desc="perplexity", unit="batch") as bar:
        bar.update(3)
    with progress.progress_bar(None, desc="generate greedy", unit="prompt") as bar:
        bar.update(2)
    lines = capsys.readouterr().err.splitlines()
    assert [ln.split(" (")[0] for ln in lines] == ["jaxmetrics: perplexity: 3/3 batches",
                                                    "jaxmetrics: generate greedy: 2 prompts"]
    monkeypatch.setattr(progress, "LOG_INTERVAL", 3600.0)
    with progress.progress_bar(1, desc="score runs", unit="run") as bar:   # no periodic line: the closing one
        bar.update(1)
    assert capsys.readouterr().err.startswith("jaxmetrics: score runs: 1/1 run (100%,")


def test_progress_is_rate_limited_and_silent_when_disabled(capsys):
    bar = progress.progress_bar(1000, desc="featurize", unit="text")
    for _ in range(1000):
        bar.update(1)
    bar.close()
    assert len(capsys.readouterr().err.splitlines()) == 1   # the closing line only
    with progress.progress_bar(5, desc="x", enabled=False) as quiet:
        quiet.update(5)
    assert capsys.readouterr().err == ""


def test_progress_is_a_bar_on_a_terminal(monkeypatch):
    class Tty:
        def isatty(self):
            return True

        def write(self, s):
            pass

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stderr", Tty())
    bar = progress.progress_bar(3, desc="featurize", unit="text")
    assert type(bar).__module__.startswith("tqdm")
    bar.close()


def test_no_pytorch_notice_where_pytorch_is_missing(tmp_path):
    """In a process where torch cannot be imported (as in an install without the test extra),
    loading a model through jaxmetrics prints nothing from transformers."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "from jaxmetrics.cli import main\n"
            "from jaxmetrics.data import demo_model_dir\n"
            "open(sys.argv[1], 'w').write('To be, or not to be, that is the question.\\n')\n"
            "sys.exit(main(['perplexity', '--model', str(demo_model_dir()), '--quiet', sys.argv[1]]))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "c.txt")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "PyTorch" not in proc.stderr and "perplexity" in proc.stdout


def test_every_option_has_help_that_states_its_default():
    """Every option of every command has help text, and the help of an option that is neither a
    flag nor required states its default (the formatter appends it, or the text says it). A
    hidden option (``help=argparse.SUPPRESS``: an earlier name kept working) shows no help."""
    import argparse

    missing = []
    for name, p, a in _options():
        if a.help == argparse.SUPPRESS:
            continue
        text = p.formatter_class(prog="x")._get_help_string(a) or ""
        is_flag = a.nargs == 0
        if not a.help:
            missing.append(f"{name} {a.option_strings[0]}: no help")
        elif not (is_flag or a.required or "default" in text):
            missing.append(f"{name} {a.option_strings[0]}: default not stated")
    assert not missing, "\n".join(missing)




def test_results_on_stdout_status_and_warnings_on_stderr(tmp_path, capsys):
    """featurize writes its array and says so on stderr (stdout stays empty, so it can be piped);
    mauve prints only its score line on stdout; status, progress and warnings go to stderr as
    ``jaxmetrics: ...`` lines."""
    import numpy as np

    from jaxmetrics.testing import tiny_checkpoint

    pytest.importorskip("torch")
    model = tiny_checkpoint("bert", tmp_path / "bert")
    texts = tmp_path / "t.txt"
    texts.write_text("".join(f"a short line of text number {i}\n" for i in range(6)))
    out = tmp_path / "f.npy"
    assert cli.main(["featurize", str(texts), "--model", model, "--out", str(out), "--max-length", "16"]) == 0
    cap = capsys.readouterr()
    assert cap.out == ""
    assert "wrote 6 x" in cap.err and str(out) in cap.err
    assert np.load(out).shape[0] == 6
    rng = np.random.default_rng(0)
    p, q = tmp_path / "p.npy", tmp_path / "q.npy"
    np.save(p, rng.normal(size=(24, 8)).astype(np.float32))
    np.save(q, rng.normal(size=(24, 8)).astype(np.float32) + 0.5)
    assert cli.main(["mauve", "--references", str(p), "--candidates", str(q), "--num-buckets", "8"]) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith("MAUVE ") and len(cap.out.strip().splitlines()) == 1, cap.out
    assert "jaxmetrics: warning:" in cap.err  # 3 points per bucket and side: the spread warning
    assert "Warning" not in cap.err and "warnings.warn" not in cap.err
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"not an array")
    assert cli.main(["mauve", "--references", str(p), "--candidates", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "candidates: cannot read" in err and "no NumPy .npy header" in err, err


def _modules_after(code: str, *args: str) -> set[str]:
    """Run ``code`` in a fresh interpreter; the top-level modules it imported (printed last)."""
    probe = code + "\nimport sys; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
    proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAXMETRICS_COMPILATION_CACHE": "off"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return set(proc.stdout.split("\n")[-2].split())


def test_help_builds_every_command_without_importing_jax():
    """``jaxmetrics --help`` (every command's parser) imports neither JAX nor numpy: start-up
    stays well under a second, and a usage error is reported before any heavy import."""
    loaded = _modules_after("from jaxmetrics.cli import build_parser; build_parser()")
    assert not loaded & {"jax", "jaxlib", "numpy", "flax", "transformers"}, loaded & {"jax", "numpy", "flax"}
    loaded = _modules_after("from jaxmetrics.cli import main\n"
                            "import contextlib, io\n"
                            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
                            "    try:\n"
                            "        main(['demo', '--help'])\n"
                            "    except SystemExit as e:\n"
                            "        assert e.code == 0 and '--num-prompts' in out.getvalue()\n")
    assert "jax" not in loaded and "numpy" not in loaded


def test_mauve_on_feature_files_loads_no_model_code(tmp_path):
    """A CLI run imports only what it uses: MAUVE from ``.npy`` features needs JAX but neither
    Flax nor transformers (no model is loaded)."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "p.npy", rng.normal(size=(60, 4)).astype(np.float32))
    np.save(tmp_path / "q.npy", rng.normal(size=(60, 4)).astype(np.float32) + 1.0)
    loaded = _modules_after("import sys\nfrom jaxmetrics.cli import main\n"
                            "assert main(['mauve', '--references', sys.argv[1], '--candidates', sys.argv[2],"
                            " '--num-buckets', '4', '--quiet']) == 0\n",
                            str(tmp_path / "p.npy"), str(tmp_path / "q.npy"))
    assert "jax" in loaded
    assert not loaded & {"flax", "transformers", "torch", "optax"}, loaded & {"flax", "transformers", "torch"}


def test_batch_size_defaults_give_their_reason():
    """The commands' --batch-size defaults differ (8 texts of up to 1024 tokens, 8 windows, 16, 32,
    64 texts, 64 prompts); each --help says why, and that the numbers do not depend on it."""
    import re

    seen = {}
    for name, _, action in _options():
        if "--batch-size" not in action.option_strings:
            continue
        text = " ".join((action.help or "").split())
        m = re.search(r"\(default:? (\d+)([,:]) ", text)
        assert m, (name, text)                                      # a number, then its reason
        assert action.default in (None, int(m.group(1))), (name, text)
        if name == "finetune":   # a training hyperparameter: the fine-tuned parameters depend on it
            assert "the parameters depend on it" in text, (name, text)
            continue
        assert "speed and memory only" in text or "do not depend on it" in text, (name, text)
        seen[name] = int(m.group(1))
    assert {"featurize", "mauve", "perplexity", "similarity", "evaluate-generation"} <= set(seen)
    assert len(set(seen.values())) > 1          # several defaults: hence the reasons


def _lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_cli_errors_name_the_flag_and_empty_texts_name_the_fix(tmp_path, capsys):
    """One style per door: a command-line error starts with the flag (``--references:``), also when
    the library raised it with its Python name (``references:``); an empty line names the option,
    the file's line and what to do (``--drop-empty`` where the command has it). Real text, and no
    model is loaded for any of these."""
    from jaxmetrics.data import load_shakespeare

    speeches = load_shakespeare("heldout", limit=6, min_words=5)
    refs = _lines(tmp_path / "refs.txt", speeches[:3])
    holey = _lines(tmp_path / "holey.txt", [speeches[3], "  ", speeches[4]])
    short = _lines(tmp_path / "short.txt", speeches[3:5])
    model = str(tmp_path / "no-model")

    def err(*argv):
        assert cli.main(list(argv)) == 2
        return capsys.readouterr().err.strip()

    e = err("similarity", "--references", refs, "--candidates", holey, "--model", model, "--empty", "error")
    assert e == (f"jaxmetrics similarity: error: --candidates: {holey!r} has 1 empty (blank or whitespace-only) "
                 "text at line 2; give --empty zero to score each such pair P = R = F1 = 0, as bert_score does")
    e = err("mark-evaluate", "--references", holey, "--candidates", refs, "--model", model, "--k", "1")
    assert e.startswith("jaxmetrics mark-evaluate: error: --references: ") and "at line 2" in e, e
    assert e.endswith("or give --empty drop to leave it out (the count is printed)"), e
    e = err("featurize", holey, "--model", model, "--out", str(tmp_path / "f.npy"))
    assert e.startswith("jaxmetrics featurize: error: texts: ") and "at line 2" in e and e.endswith("pass --drop-empty")
    e = err("similarity", "--references", refs, "--candidates", short, "--model", model)
    assert e.startswith("jaxmetrics similarity: error: --references: 3 texts do not pair with 2"), e
    e = err("mauve", "--references", str(tmp_path / "missing.txt"), "--candidates", refs)
    assert e.startswith("jaxmetrics mauve: error: --references: file "), e
