"""Shared by the generation-evaluation tests: the bundled demo GPT-2, loaded once per module that
asks for it (their records: ``generation_records.py``)."""
from __future__ import annotations

import pytest

from jaxmetrics.data import demo_model_dir


@pytest.fixture(scope="module")
def lm():
    """The bundled demo GPT-2."""
    from jaxmetrics.models import load_model

    return load_model(demo_model_dir())
