"""Shared by the MAUVE command-line tests."""
from __future__ import annotations

import pytest


@pytest.fixture
def no_model(monkeypatch):
    """Loading a model or featurizing a text fails the test: the options must be checked first."""
    import jaxmetrics.models as MO

    def boom(*a, **k):
        raise AssertionError("a model was loaded or a text featurized before the options were checked")

    for name in ("load_model", "resolve_model", "encode"):
        monkeypatch.setattr(MO, name, boom)
