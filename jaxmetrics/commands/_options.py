"""Command-line options that several commands build, and the choices every command reads from the
library: plain argparse, no JAX, so that ``jaxmetrics --help`` stays fast.

A list of names (metrics, estimators, divergences, poolings, dtypes, ...) is defined once, in its
library module; an option offers it through :class:`LibraryChoices`, which imports that module the
first time the list is needed (a value is checked, or the command's ``--help`` lists it), never
while the parser is built."""
from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Any

__all__ = ["CENTERINGS", "DEFAULT_RESAMPLES", "DTYPE_CHOICES", "LibraryChoices", "POOLING_CHOICES", "RANKINGS", "SCORES",
           "SIMILARITY_METRICS", "SPECIAL_TOKENS", "add_confidence_options", "add_dtype_option",
           "check_confidence_options"]


class LibraryChoices(Sequence):
    """The names of a library constant, as an option's ``choices=``: ``before`` + the names of
    ``module.name`` (a tuple, the keys of a dict, or a function returning either) + ``after``,
    read on first use. Give the option a ``metavar`` (argparse would otherwise list the choices
    while the parser is built) and write ``%(choices)s`` in its help."""

    def __init__(self, module: str, name: str, *, before: tuple[str, ...] = (), after: tuple[str, ...] = ()):
        self.module, self.name, self.before, self.after = module, name, tuple(before), tuple(after)
        self._names: tuple[str, ...] | None = None

    def _load(self) -> tuple[str, ...]:
        if self._names is None:
            value: Any = getattr(importlib.import_module(self.module), self.name)
            if callable(value):
                value = value()
            self._names = self.before + tuple(value) + self.after
        return self._names

    def __getitem__(self, i):
        return self._load()[i]

    def __len__(self) -> int:
        return len(self._load())

    def __iter__(self):
        return iter(self._load())

    def __contains__(self, value: object) -> bool:
        return value in self._load()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and not isinstance(other, str) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash((self.module, self.name, self.before, self.after))

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in (("before", self.before), ("after", self.after)) if v)
        return f"LibraryChoices({self.module}.{self.name}{extra})"


#: ``--dtype``'s values: :data:`jaxmetrics.models.loader.MODEL_DTYPES`
DTYPE_CHOICES = LibraryChoices("jaxmetrics.models.loader", "MODEL_DTYPES")
#: ``--pooling``'s values: ``auto`` and the names of :data:`jaxmetrics.models.POOLINGS`
POOLING_CHOICES = LibraryChoices("jaxmetrics.models.pooling", "POOLINGS", before=("auto",))
#: the similarities of :func:`jaxmetrics.similarity.compute_similarity` (``--metric``)
SIMILARITY_METRICS = LibraryChoices("jaxmetrics.similarity.settings", "SIMILARITY_METRICS")
#: the centering methods of the similarity family (``--centering``)
CENTERINGS = LibraryChoices("jaxmetrics.similarity.centering", "CENTERING_METHODS")
#: what the token matching does with special tokens (``--special-tokens``)
SPECIAL_TOKENS = LibraryChoices("jaxmetrics.similarity.settings", "SPECIAL_TOKENS")
#: the per-pair scores of a similarity result (``--score``)
SCORES = LibraryChoices("jaxmetrics.similarity.sweep", "SCORE_FIELDS")
#: how a correlation sweep ranks its settings (``--rank-by``)
RANKINGS = LibraryChoices("jaxmetrics.similarity.sweep", "RANKINGS")

# the help names the dtypes without reading the list (%(choices)s): ``jaxmetrics demo --help`` stays free of JAX
_DTYPE_HELP = ("compute dtype of the model(s), float32 or bfloat16 (default float32). bfloat16 multiplies "
               "bfloat16 operands with float32 accumulation, with layer norms, softmax, logits and the returned "
               "vectors in float32: meant for hardware that multiplies bfloat16 faster than float32 (GPUs, TPUs, CPUs "
               "with AMX), no faster on other CPUs, and the numbers move slightly (docs/sharp_edges.md gives the speed and the "
               "deviation per metric)")


def add_dtype_option(parser: argparse.ArgumentParser) -> None:
    """``--dtype``: the one compute-dtype option of every command that loads a model."""
    parser.add_argument("--dtype", choices=DTYPE_CHOICES, metavar="DTYPE", default="float32", help=_DTYPE_HELP)


#: ``--num-resamples`` when ``--confidence`` is given without it (the library functions' default)
DEFAULT_RESAMPLES = 1000


def add_confidence_options(parser: argparse.ArgumentParser, *, what: str, seed: bool = True) -> None:
    """``--confidence LEVEL`` (off unless given: ``what`` says which interval it adds),
    ``--num-resamples`` and, with ``seed``, ``--seed`` (the resampling's seed): the interval options
    of the commands that score one set; :func:`check_confidence_options` checks them."""
    parser.add_argument("--confidence", type=float, default=None, metavar="LEVEL",
                        help=f"also give {what}, at this nominal coverage strictly between 0 and 1, e.g. 0.95 "
                             "(default: no interval)")
    parser.add_argument("--num-resamples", type=int, default=None, metavar="B",
                        help=f"resamples of --confidence's interval, at least 2 (default {DEFAULT_RESAMPLES})")
    if seed:
        parser.add_argument("--seed", type=int, default=None,
                            help="seed of --confidence's resampling: the same seed gives the same interval "
                                 "(default 0)")


def check_confidence_options(args: argparse.Namespace) -> None:
    """The options of :func:`add_confidence_options`, before any work: ``--confidence`` and
    ``--num-resamples`` within the library's bounds (``jaxmetrics._validation.check_resampling``);
    ``--num-resamples`` and ``--seed`` only with ``--confidence`` (refused
    otherwise: they would be ignored). Fills in their defaults when ``--confidence`` is given."""
    extra = [opt for attr, opt in (("num_resamples", "--num-resamples"), ("seed", "--seed"))
             if getattr(args, attr, None) is not None]
    if args.confidence is None:
        if extra:
            raise ValueError(f"{extra[0]}: only applies with --confidence (no interval is computed without it)")
        return
    if args.num_resamples is None:
        args.num_resamples = DEFAULT_RESAMPLES
    from jaxmetrics import _validation as V  # imports JAX: only when a command runs

    # the library's one check: the bounds and message of every interval function
    V.check_resampling(args.num_resamples, args.confidence, names=("--num-resamples", "--confidence"))
    if hasattr(args, "seed") and args.seed is None:
        args.seed = 0
