"""Command-line options that several commands build (``--dtype``): plain argparse, no JAX, so that
``jaxmetrics --help`` stays fast."""
from __future__ import annotations

import argparse

__all__ = ["DTYPE_CHOICES", "add_dtype_option"]

#: ``--dtype``'s values: :data:`jaxmetrics.models.loader.MODEL_DTYPES`, spelled out here so that
#: building a parser imports no model code (a test checks they agree)
DTYPE_CHOICES = ("float32", "bfloat16")

_DTYPE_HELP = ("compute dtype of the model(s) (default float32). bfloat16 runs the matrix products in bfloat16 "
               "with layer norms, softmax, logits and the returned vectors in float32: faster on accelerators, "
               "slower on a CPU, and the numbers move slightly (docs/sharp_edges.md gives the deviation per "
               "metric)")


def add_dtype_option(parser: argparse.ArgumentParser) -> None:
    """``--dtype``: the one compute-dtype option of every command that loads a model."""
    parser.add_argument("--dtype", choices=DTYPE_CHOICES, default="float32", help=_DTYPE_HELP)
