"""Shared checks, options and output of the ``jaxmetrics`` sub-commands (the CLI layer only:
library code never imports this module): plain argparse at import, no JAX, so that
``jaxmetrics --help`` stays fast.

A list of names (metrics, estimators, divergences, poolings, dtypes, ...) is defined once, in its
library module; an option offers it through :class:`LibraryChoices`, which imports that module the
first time the list is needed (a value is checked, or the command's ``--help`` lists it), never
while the parser is built.

Every sub-command checks all of its files before its first expensive step (loading a model,
featurizing, scoring): inputs exist, are files and decode as UTF-8; outputs are not directories,
their folder exists and is writable, and plots have a format matplotlib can write. Errors are
``ValueError`` s that name the option, which :func:`jaxmetrics.cli.main` prints as one line: a
command-line error starts with the flag (``--references: ...``, or a positional argument's name,
``texts: ...``), never with the Python argument it becomes (``references: ...``, the library's
prefix for the same mistake made in Python).

Every JSON a command writes goes through :func:`write_json`, and every set of texts or features
a command reads goes through :func:`read_input`, which applies the one policy for empty texts
(``--empty``, :func:`add_empty_option`).
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, Iterable

from jaxmetrics._files import (PAIR_EMPTY_POLICIES, SET_EMPTY_POLICIES, check_folder_writable,
                               check_input_file, text_line_numbers)

__all__ = ["add_confidence_options", "add_dtype_option", "add_empty_option", "add_model_option",
           "add_pooling_option", "add_progress_options", "add_significance_options", "CENTERINGS",
           "check_confidence_options", "check_significance_options",
           "check_output_file", "check_outputs", "check_plot_file", "DEFAULT_RESAMPLES", "DefaultsHelpFormatter",
           "DTYPE_CHOICES", "Inputs", "is_features", "LibraryChoices", "line_list", "load_features",
           "option_error", "POOLING_CHOICES", "progress_enabled", "RANKINGS", "read_input", "SCORES",
           "SIMILARITY_METRICS", "SPECIAL_TOKENS", "write_json"]


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


def add_significance_options(parser: argparse.ArgumentParser, *, resamples: str, alpha: str,
                             can_turn_off: bool = False) -> None:
    """``--num-resamples B`` (default 1000; ``resamples`` says what is resampled; with
    ``can_turn_off``, 0 turns the resampling off), ``--confidence`` (default 0.95), ``--alpha``
    (default 0.05; ``alpha`` says what it decides) and ``--seed`` (default 0): the one set of
    resampling options of the commands that compare systems, settings or metrics (``compare``,
    ``meta-eval``, ``similarity-eval``, ``diversity-test``); :func:`check_significance_options`
    checks them."""
    off = "; 0 turns it off" if can_turn_off else ""
    parser.add_argument("--num-resamples", type=int, default=DEFAULT_RESAMPLES, metavar="B",
                        help=f"{resamples}, at least (1 + c) / (1 - c) for --confidence c (39 at 0.95){off} "
                             f"(default {DEFAULT_RESAMPLES})")
    parser.add_argument("--confidence", type=float, default=0.95, metavar="LEVEL",
                        help="the intervals' nominal coverage, in [0.5, 1) (default 0.95)")
    parser.add_argument("--alpha", type=float, default=0.05, help=f"{alpha} (default 0.05)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")


def check_significance_options(args: argparse.Namespace, *, can_turn_off: bool = False) -> None:
    """The options of :func:`add_significance_options`, before any work, with the library's
    bounds (``jaxmetrics._validation.check_resampling``, the rule of every interval function):
    ``--confidence`` in [0.5, 1), at least ``(1 + c) / (1 - c)`` resamples (or 0 where
    ``can_turn_off``), ``--alpha`` in (0, 1)."""
    from jaxmetrics import _validation as V  # imports JAX: only when a command runs

    if can_turn_off and args.num_resamples == 0:
        V.check_confidence(args.confidence, "--confidence")
    else:
        V.check_resampling(args.num_resamples, args.confidence, names=("--num-resamples", "--confidence"))
    V.check_open_unit(args.alpha, "--alpha")


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """``--help`` with every option's default: appended as ``(default: X)`` unless the help
    already says what the default is. Flags (``store_true``) are off unless given."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("default" in text or not action.option_strings or action.required
                or action.default in (None, False, argparse.SUPPRESS) or isinstance(action.default, bool)):
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"

    def _expand_help(self, action: argparse.Action) -> str:
        # argparse joins an option's choices for every help text; read them (a library list, which may
        # import JAX) only where the help shows them
        if action.choices is not None and "%(choices)" not in (action.help or ""):
            import copy

            action = copy.copy(action)
            action.choices = None
        return super()._expand_help(action)


def add_progress_options(parser: argparse.ArgumentParser) -> None:
    """``--quiet`` (hide progress bars; ``--no-progress`` is an alias)."""
    parser.add_argument("--quiet", "--no-progress", dest="quiet", action="store_true",
                        help="hide the progress bars (shown on stderr by default)")


def progress_enabled(args: argparse.Namespace) -> bool:
    return not getattr(args, "quiet", False)


POOLING_HELP = ("one of %(choices)s: how a text becomes one vector (the library's pooling table): 'mean' (masked mean of the "
                "token vectors, special tokens included: the sentence-transformers convention), 'last' (the "
                "last real token's vector, mauve-text's convention for GPT-2), 'cls' (the first token's "
                "vector), or 'auto' (default): mean for encoders (BERT, RoBERTa, MiniLM), last token for "
                "decoders (GPT-2, Llama)")


#: how every command's model options describe a model
MODEL_FORMS = "a local Hugging Face checkpoint folder (config.json, *.safetensors, tokenizer files) or a hub id"


def add_model_option(parser: argparse.ArgumentParser, role: str, *, option: str = "--model",
                     default: str | None = None) -> None:
    """``--model`` (or ``option``): ``role`` (what the command uses the model for) and the forms a
    model may take, worded the same in every command; required unless ``default`` is given."""
    text = f"{role}: {MODEL_FORMS}"
    if default is None:
        parser.add_argument(option, required=True, help=text)
    else:
        parser.add_argument(option, default=default, help=text)


def add_length_and_batch_options(parser: argparse.ArgumentParser, *, max_length_help: str, batch_size: int,
                                 batch_help: str, max_length: int | None = None,
                                 max_length_metavar: str | None = None) -> None:
    """``--max-length`` (tokens a text or window keeps; ``max_length_help`` says the command's
    default) and ``--batch-size`` (``batch_help``): the two options of every command that runs a
    model, declared once; :func:`check_length_and_batch` checks them."""
    extra = {} if max_length_metavar is None else {"metavar": max_length_metavar}
    parser.add_argument("--max-length", type=int, default=max_length, help=max_length_help, **extra)
    parser.add_argument("--batch-size", type=int, default=batch_size, help=batch_help)


def check_length_and_batch(args: argparse.Namespace, *, min_length: int = 1) -> None:
    """``--batch-size`` at least 1 and, when given, ``--max-length`` at least ``min_length``
    (before any model is loaded)."""
    from jaxmetrics._validation import check_int

    check_int(args.batch_size, "--batch-size", minimum=1)
    if args.max_length is not None:
        check_int(args.max_length, "--max-length", minimum=min_length)


def add_pooling_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pooling", choices=POOLING_CHOICES, metavar="POOLING", default="auto", help=POOLING_HELP)


def check_output_file(path: str, option: str) -> str:
    """Check that ``path`` can be written: not a directory, its folder exists and is writable.

    Nothing is created (a probe file in the folder is removed at once).
    """
    if not path:
        raise ValueError(f"{option}: empty file name")
    if os.path.isdir(path):
        raise ValueError(f"{option}: {path!r} is a directory, expected a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"{option}: cannot write {path!r}: directory {parent!r} does not exist")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise ValueError(f"{option}: cannot write {path!r}: the file is read-only")
    check_folder_writable(parent, f"{option}: cannot write {path!r}: directory {parent!r} is not writable")
    return path


def _plot_formats() -> set[str]:
    try:
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - matplotlib is a dependency
        raise ValueError(f"--plot: plotting needs matplotlib ({e})") from None
    return set(Figure().canvas.get_supported_filetypes())


def check_plot_file(path: str, option: str = "--plot") -> str:
    """:func:`check_output_file` plus a format (file extension) matplotlib can write."""
    check_output_file(path, option)
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext:
        formats = _plot_formats()
        if ext not in formats:
            raise ValueError(f"{option}: matplotlib cannot write {ext!r} files; use one of "
                             f"{', '.join(sorted(formats))}")
    return path


def check_outputs(args: argparse.Namespace, options: Iterable[tuple[str, str]]) -> None:
    """Check every ``(attribute, option)`` output of ``args`` that is set."""
    for attr, option in options:
        value = getattr(args, attr, None)
        if value:
            (check_plot_file if option == "--plot" else check_output_file)(value, option)


def option_error(e: Exception, renames: dict[str, str]) -> ValueError:
    """``e`` with the library argument it names (``num_buckets: ...``) replaced by the option."""
    msg = str(e)
    for arg, option in renames.items():
        if msg.startswith(f"{arg}:") or msg.startswith(f"{arg} "):
            return ValueError(option + msg[len(arg):])
    return ValueError(msg)


def _json_default(obj: Any) -> Any:
    """What :mod:`json` cannot write itself: a result (its ``to_dict()``), a NumPy array or scalar."""
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot write a {type(obj).__name__} as JSON")


def write_json(path: str | None, obj: Any, *, sort_keys: bool = False) -> None:
    """The one JSON writer of the commands: ``obj`` (a result, written as its ``to_dict()``, or plain
    data that may hold results and NumPy values) as indented JSON ending in a newline, to the file
    ``path`` (UTF-8) or, with ``path=None``, to stdout. Non-finite numbers are written as
    ``NaN`` / ``Infinity``, as Python's :mod:`json` reads them."""
    import json
    import sys

    if hasattr(obj, "to_dict"):
        obj = obj.to_dict()
    text = json.dumps(obj, indent=2, sort_keys=sort_keys, default=_json_default) + "\n"
    if path is None:
        sys.stdout.write(text)
        return
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


# ---- inputs: one reader for every set of texts or features, one policy for empty texts ----------------------

#: ``--empty``'s values (:data:`jaxmetrics._files.EMPTY_POLICIES`): what a command does with an empty
#: (blank or whitespace-only) text of an input file. ``error``: stop, naming the file and its lines;
#: ``drop``: leave it out and print how many and which lines (set metrics: MAUVE, Mark-Evaluate);
#: ``zero``: keep it, its pair scored 0 as bert_score does (per-pair similarities, whose pairing must
#: not shift).
_EMPTY_CHOICES = {name: LibraryChoices("jaxmetrics._files", name)
                  for name in ("EMPTY_POLICIES", "SET_EMPTY_POLICIES", "PAIR_EMPTY_POLICIES")}
#: the ``.npy`` suffix of a feature file (the extension decides; a text file is anything else)
FEATURE_SUFFIX = ".npy"
_SET_EMPTY_HELP = ("what to do with an empty (blank or whitespace-only) text of a text file: 'error' stops with the "
                   "file and its line numbers; 'drop' leaves those texts out and prints how many and which lines. "
                   "{what} cannot featurize an empty text, so it has no score to set to 0 (default error)")
_PAIR_EMPTY_HELP = ("what to do with an empty (blank or whitespace-only) candidate: 'zero' scores its pair "
                    "P = R = F1 = 0 (before --baseline rescaling), as bert_score does, and prints how many and which "
                    "lines (--json lists them); 'error' stops with the file and its line numbers. An empty reference "
                    "is always an error (default zero)")


def add_empty_option(parser: argparse.ArgumentParser, *, per_pair: bool, what: str = "MAUVE",
                     help: str | None = None) -> None:
    """``--empty``: :data:`EMPTY_POLICIES` for a per-pair command (``zero`` or ``error``, default
    ``zero``) or a set metric (``error`` or ``drop``, default ``error``; ``what`` names the metric
    in the help). ``help`` replaces the help of a command that takes both kinds."""
    if help is not None:
        parser.add_argument("--empty", choices=_EMPTY_CHOICES["EMPTY_POLICIES"], default=None, metavar="POLICY",
                            help=help)
    elif per_pair:
        parser.add_argument("--empty", choices=_EMPTY_CHOICES["PAIR_EMPTY_POLICIES"], default=PAIR_EMPTY_POLICIES[0],
                            metavar="POLICY", help=_PAIR_EMPTY_HELP)
    else:
        parser.add_argument("--empty", choices=_EMPTY_CHOICES["SET_EMPTY_POLICIES"], default=SET_EMPTY_POLICIES[0],
                            metavar="POLICY", help=_SET_EMPTY_HELP.format(what=what))


def is_features(path: str) -> bool:
    """Whether ``path`` is a ``.npy`` feature file (by its extension)."""
    return os.path.splitext(path)[1].lower() == FEATURE_SUFFIX


def line_list(lines: list[int], *, limit: int = 10) -> str:
    """``'line 4'`` / ``'lines 4, 9'`` / ``'lines 4, 9, ... (12 in all)'``: 1-based lines for a message."""
    shown = ", ".join(map(str, lines[:limit])) + (f", ... ({len(lines)} in all)" if len(lines) > limit else "")
    return ("line " if len(lines) == 1 else "lines ") + shown


@dataclasses.dataclass(frozen=True)
class Inputs:
    """One input file as a command uses it (:func:`read_input`).

    Attributes:
      path, option: the file and the option that named it.
      texts: the texts kept (``None`` for a feature file).
      features: float ``[n, d]`` (``None`` for a text file).
      lines: 1-based line of the file of each text kept (a feature file: its rows, 1-based).
      empty_lines: 1-based lines of the empty texts: dropped under ``drop``, kept (scored 0) under ``zero``.
    """

    path: str
    option: str
    texts: list[str] | None
    features: Any
    lines: list[int]
    empty_lines: list[int]

    @property
    def rows(self) -> int:
        return len(self.lines)


def load_features(path: str, option: str):
    """A ``.npy`` feature file as a finite ``[n, d]`` array, or a ``ValueError`` naming ``option``."""
    from jaxmetrics import _validation as V  # imports JAX: only when a command runs

    import numpy as np

    try:
        with open(path, "rb") as fh:
            if fh.read(6) != b"\x93NUMPY":
                raise ValueError("no NumPy .npy header: save the features with numpy.save")
            fh.seek(0)
            arr = np.load(fh, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise ValueError(f"{option}: cannot read {path!r} as a .npy array ({e})") from None
    return V.check_features(arr, option)


def read_input(path: str, option: str, *, command: str, empty: str = "error", kind: str = "set",
               what: str = "MAUVE", features: bool = False, fix: str | None = None) -> Inputs:
    """Read one input of ``jaxmetrics <command>`` and apply ``--empty``: the reader of every command
    that reads sets of texts (or features), so that all of them treat an empty text alike.

    With ``features`` a ``.npy`` file is read as features (:func:`load_features`); any other file
    holds texts (:func:`jaxmetrics.models.read_texts`: one per line, or ``.jsonl`` with ``text``),
    checked first (:func:`jaxmetrics._files.check_input_file`). ``kind`` says what an empty
    (blank or whitespace-only) text can become: ``'set'`` (a set metric, ``what``: it cannot be
    featurized, ``empty`` is ``'error'`` or ``'drop'``), ``'pair'`` (the candidate of a per-pair
    similarity: ``'error'`` or ``'zero'``), ``'reference'`` (a per-pair reference: always an
    error) or ``'document'`` (a document of a per-line score such as perplexity: it has no tokens to
    score, so it is always dropped, counted). Under ``empty``:

    * ``'error'``: ``ValueError`` naming ``option``, the file, the empty lines and the ``--empty``
      value that accepts them;
    * ``'drop'``: left out; one line on stderr counts them and names their lines;
    * ``'zero'``: kept (the per-pair scorer gives the pair 0); one line on stderr counts them.

    A file with no non-empty text is a ``ValueError`` under every policy. ``fix`` replaces the
    error's advice for a command whose option is not ``--empty`` (``--drop-empty``).
    """
    if features and is_features(path):
        check_input_file(path, option, text=False)
        arr = load_features(path, option)
        return Inputs(path, option, None, arr, list(range(1, arr.shape[0] + 1)), [])
    check_input_file(path, option)
    from jaxmetrics.models.io import read_texts

    texts = read_texts(path, name=option)
    lines = text_line_numbers(path)
    if len(lines) != len(texts):  # pragma: no cover - the two readers split lines alike
        raise ValueError(f"{option}: could not number the lines of {path!r}")
    blank = [ln for ln, t in zip(lines, texts) if not t.strip()]
    if not texts or len(blank) == len(texts):
        raise ValueError(f"{option}: {path!r} holds no non-empty text")
    if not blank:
        return Inputs(path, option, texts, None, lines, [])
    n, s = len(blank), "s" * (len(blank) > 1)
    where = f"{path!r}, {line_list(blank)}"
    allowed = {"set": SET_EMPTY_POLICIES, "pair": PAIR_EMPTY_POLICIES, "reference": ("error",),
               "document": ("drop",)}[kind]
    if empty not in allowed:
        empty = "drop" if kind == "document" else "error"
    if empty == "drop":
        why = "(no tokens to score)" if kind == "document" else "(--empty drop)"
        print(f"jaxmetrics {command}: {option}: dropped {n} empty text{s} ({where}) {why}",
              file=sys.stderr, flush=True)
        kept = [(ln, t) for ln, t in zip(lines, texts) if t.strip()]
        return Inputs(path, option, [t for _, t in kept], None, [ln for ln, _ in kept], blank)
    if empty == "zero":
        print(f"jaxmetrics {command}: {option}: {n} empty text{s} ({where}): "
              f"{'its pair' if n == 1 else 'their pairs'} scored P = R = F1 = 0, as bert_score does (--empty zero)",
              file=sys.stderr, flush=True)
        return Inputs(path, option, texts, None, lines, blank)
    hint = {"set": f"{what} cannot featurize an empty text: remove the line{s}, or give --empty drop to leave "
                   f"{'it' if n == 1 else 'them'} out (the count is printed)",
            "pair": "give --empty zero to score each such pair P = R = F1 = 0, as bert_score does",
            "reference": f"an empty reference leaves nothing to compare against: remove or fill the line{s}"}[kind]
    raise ValueError(f"{option}: {path!r} has {n} empty (blank or whitespace-only) text{s} at "
                     f"{line_list(blank)}; {fix or hint}")
