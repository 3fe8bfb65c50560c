"""Loader: sharded safetensors, and clear errors for missing/incomplete/unsafe/unknown checkpoints."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("torch")

from jaxmetrics.models import known_model_types, load_model  # noqa: E402
from jaxmetrics.models.registry import get_architecture  # noqa: E402
from jaxmetrics.testing import tiny_checkpoint  # noqa: E402


# gpt2_dir: tests/conftest.py (the tests copy it before changing anything)


def test_sharded_safetensors_load_like_single_file(tmp_path, gpt2_dir):
    d, tm = tiny_checkpoint("bert", tmp_path / "bert", return_torch=True)
    sharded = tmp_path / "sharded"
    tm.save_pretrained(str(sharded), max_shard_size="20KB")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{d}/{f}", sharded / f)
    assert (sharded / "model.safetensors.index.json").exists()
    assert not (sharded / "model.safetensors").exists()
    ids = np.array([[2, 10, 11, 3]], np.int32)
    mask = np.ones_like(ids, bool)
    a = load_model(d).forward(ids, mask).last_hidden_state
    b = load_model(sharded).forward(ids, mask).last_hidden_state
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # a missing shard is reported by name
    shard = sorted(sharded.glob("model-*.safetensors"))[0]
    shard.unlink()
    with pytest.raises(ValueError, match=rf"^model: .*incomplete: missing weight shard.*{shard.name}"):
        load_model(sharded)


def test_missing_directory():
    with pytest.raises(ValueError, match="^model: model directory './no/such/model' does not exist"):
        load_model("./no/such/model")


def test_hub_id_offline_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="^model: 'not-a-cached-model-xyz' is not a local directory"):
        load_model("not-a-cached-model-xyz")


def test_incomplete_directory(tmp_path, gpt2_dir):
    with pytest.raises(ValueError, match="^model: .* no config.json"):
        load_model(tmp_path)
    d = tmp_path / "noweights"
    shutil.copytree(gpt2_dir, d)
    (d / "model.safetensors").unlink()
    with pytest.raises(ValueError, match=r"^model: .*incomplete: no model.safetensors"):
        load_model(d)


def test_pickled_bin_is_refused_without_unpickling(tmp_path, gpt2_dir):
    d = tmp_path / "binonly"
    shutil.copytree(gpt2_dir, d)
    (d / "model.safetensors").unlink()
    # not a valid pickle at all: the loader must refuse before ever opening it
    (d / "pytorch_model.bin").write_bytes(b"\x80\x04 this would be unpickled")
    with pytest.raises(ValueError, match=r"^model: .*pytorch_model.bin.*safetensors only and never unpickles"):
        load_model(d)


def test_unknown_architecture_lists_known_ones(tmp_path, gpt2_dir):
    d = tmp_path / "mamba"
    shutil.copytree(gpt2_dir, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["model_type"] = "mamba"
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"^model_type: architecture 'mamba' is not supported.*gpt2"):
        load_model(d)
    assert {"gpt2", "bert", "roberta"} <= set(known_model_types())
    assert get_architecture("gpt2").kind == "gpt2"


def test_wrong_weights_are_named(tmp_path, gpt2_dir):
    from safetensors.numpy import load_file, save_file

    d = tmp_path / "bad"
    shutil.copytree(gpt2_dir, d)
    sd = load_file(str(d / "model.safetensors"))
    key = next(k for k in sd if k.endswith("wpe.weight"))  # 'transformer.wpe.weight' (LM-head checkpoint)
    sd[key] = sd[key][:10]
    save_file(sd, str(d / "model.safetensors"))
    with pytest.raises(ValueError, match=r"^model .*wpe.embedding has shape \(10, 32\)"):
        load_model(d)
    del sd[key]
    save_file(sd, str(d / "model.safetensors"))
    with pytest.raises(ValueError, match=r"^checkpoint: weight 'wpe.weight' is missing"):
        load_model(d)


def test_bad_name_type():
    with pytest.raises(TypeError, match="^model"):
        load_model(3)


def test_hub_id_goes_through_snapshot_download(monkeypatch, gpt2_dir):
    import huggingface_hub

    calls = []

    def fake_snapshot_download(repo_id, allow_patterns=None, **kw):
        calls.append((repo_id, allow_patterns))
        return gpt2_dir

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    lm = load_model("openai-community/gpt2")
    assert lm.kind == "gpt2" and lm.is_causal and lm.path == gpt2_dir
    (repo, patterns), = calls
    assert repo == "openai-community/gpt2"
    assert "*.safetensors" in patterns and not any("bin" in p or "pt" == p[-2:] for p in patterns)


def test_loaded_model_repr_is_one_line(minilm, demo_gpt2_dir):
    """``repr`` of a loaded model is one short line (kind, name, layers, parameters, dtype), not
    the module, tokenizer and config trees (hundreds of lines)."""
    import jax
    from flax import nnx

    for lm in (minilm, load_model(demo_gpt2_dir)):
        r = repr(lm)
        assert "\n" not in r and len(r) < 300, r
        n = lm.num_parameters
        assert 0 < n <= sum(np.size(x) for x in jax.tree.leaves(nnx.state(lm.model)))
        assert r.startswith(f"LoadedModel(kind={lm.kind!r}, name={lm.name!r}, num_layers={lm.num_layers}, ")
        assert f"dtype={np.dtype(lm.dtype).name})" in r
    assert "params=22.6M" in repr(minilm) and 22_500_000 < minilm.num_parameters < 22_700_000


def test_long_text_tokenization_is_quiet(demo_gpt2_dir):
    """Tokenizing a real document longer than the model's positions (as the README does before
    ``perplexity`` slides windows over it) prints no transformers "Token indices sequence length is
    longer than the specified maximum ... indexing errors" notice; the forward pass still refuses
    the over-long input itself."""
    import logging

    from jaxmetrics.data import load_shakespeare

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    log = logging.getLogger("transformers.tokenization_utils_base")
    handler = Keep(level=logging.WARNING)
    log.addHandler(handler)
    try:
        lm = load_model(demo_gpt2_dir)                   # a fresh tokenizer: it has not warned yet
        doc = " ".join(load_shakespeare("heldout", limit=40))
        ids = lm.tokenizer(doc)["input_ids"]
    finally:
        log.removeHandler(handler)
    assert len(ids) > 4 * lm.max_positions
    assert not [r for r in records if "sequence length is longer" in r.getMessage()]
    with pytest.raises(ValueError, match="^input_ids: length .* exceeds the model's 128 positions"):
        lm.forward(np.asarray([ids[:200]]), np.ones((1, 200), bool))
