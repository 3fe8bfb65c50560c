"""Fixtures shared by the models tests: the tiny random GPT-2 (directory and loaded model)."""
import pytest

from jaxmetrics.models import load_model


@pytest.fixture(scope="module")
def gpt2_dir(tiny_checkpoint_dir):
    return tiny_checkpoint_dir("gpt2")


@pytest.fixture(scope="module")
def gpt2(gpt2_dir):
    return load_model(gpt2_dir)
