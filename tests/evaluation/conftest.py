"""Shared by the generation-evaluation tests: the bundled demo GPT-2, loaded once per module that
asks for it (their records: ``generation_records.py``)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def lm(demo_gpt2_dir):
    """The bundled demo GPT-2 (so its tests are marked ``real_model``: tests/conftest.py)."""
    from jaxmetrics.models import load_model

    return load_model(demo_gpt2_dir)
