"""The ``Examples:`` blocks of the models layer run and pass."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["jaxmetrics.models.cache", "jaxmetrics.models.io", "jaxmetrics.models.featurize",
           "jaxmetrics.models.loader", "jaxmetrics.models.registry"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name, minilm_dir):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
