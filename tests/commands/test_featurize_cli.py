"""``jaxmetrics featurize`` and read_texts."""
from __future__ import annotations

import json

import numpy as np
import pytest

from jaxmetrics.cli import main
from jaxmetrics.models import load_model, read_texts, sentence_embeddings


@pytest.fixture(scope="module")
def model_dir(tiny_checkpoint_dir):
    pytest.importorskip("torch")
    return tiny_checkpoint_dir("bert")


def test_read_texts_plain_and_jsonl(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes("first line\r\nsecond — ünïcode\n\nlast".encode("utf-8"))
    assert read_texts(p) == ["first line", "second — ünïcode", "", "last"]
    j = tmp_path / "a.jsonl"
    j.write_text(json.dumps({"text": "one", "id": 1}) + "\n\n" + json.dumps({"text": "two\nlines"}) + "\n")
    assert read_texts(j) == ["one", "two\nlines"]


def test_read_texts_bad_input(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\n\xff\xfe broken\n")
    with pytest.raises(ValueError, match=r"^path: .*is not valid UTF-8"):
        read_texts(bad)
    with pytest.raises(ValueError, match="^path: file .* does not exist"):
        read_texts(tmp_path / "missing.txt")
    j = tmp_path / "b.jsonl"
    j.write_text('{"body": "x"}\n')
    with pytest.raises(ValueError, match="^path: line 1 .* has no 'text' field"):
        read_texts(j)
    j.write_text('{"text": "x"}\nnot json\n')
    with pytest.raises(ValueError, match="^path: line 2 .* is not valid JSON"):
        read_texts(j)
    with pytest.raises(TypeError, match="^path"):
        read_texts(None)


def test_cli_featurize_writes_features(tmp_path, model_dir, capsys):
    texts = ["A first sentence.", "Another, somewhat longer, sentence about evaluation.", "Short."]
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join(json.dumps({"text": t}) for t in texts) + "\n")
    out = tmp_path / "f.npy"
    rc = main(["featurize", str(src), "--model", model_dir, "--out", str(out), "--max-length", "64",
               "--batch-size", "2", "--no-progress"])
    assert rc == 0
    got = np.load(out)
    # an encoder is mean-pooled by default (--pooling auto)
    want = sentence_embeddings(texts, model=load_model(model_dir), max_length=64, batch_size=2, progress=False)
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert "wrote 3 x 32 features (mean pooling)" in capsys.readouterr().err


def test_cli_featurize_errors(tmp_path, model_dir, capsys):
    src = tmp_path / "t.txt"
    src.write_text("one\n\nthree\n")
    out = tmp_path / "f.npy"
    rc = main(["featurize", str(src), "--model", model_dir, "--out", str(out), "--no-progress"])
    assert rc == 2 and "texts: " in (err := capsys.readouterr().err) and "has 1 empty (blank or whitespace-only) text at line 2" in err
    rc = main(["featurize", str(src), "--model", model_dir, "--out", str(out), "--no-progress", "--drop-empty",
               "--max-length", "32"])
    assert rc == 0 and np.load(out).shape == (2, 32)
    rc = main(["featurize", str(src), "--model", str(tmp_path / "nope"), "--out", str(out), "--drop-empty"])
    assert rc == 2 and "does not exist" in capsys.readouterr().err
