"""Shared checks, options and output of the ``jaxmetrics`` sub-commands (the CLI layer only:
library code never imports this module).

Every sub-command checks all of its files before its first expensive step (loading a model,
featurizing, scoring): inputs exist, are files and decode as UTF-8; outputs are not directories,
their folder exists and is writable, and plots have a format matplotlib can write. Errors are
``ValueError`` s that name the option, which :func:`jaxmetrics.cli.main` prints as one line: a
command-line error starts with the flag (``--references: ...``, or a positional argument's name,
``texts: ...``), never with the Python argument it becomes (``references: ...``, the library's
prefix for the same mistake made in Python).

Every JSON a command writes goes through :func:`write_json`.
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Iterable

from jaxmetrics._files import check_folder_writable
from jaxmetrics.commands._options import POOLING_CHOICES

__all__ = ["DefaultsHelpFormatter", "add_model_option", "add_pooling_option", "add_progress_options", "check_output_file",
           "check_outputs", "check_plot_file", "option_error", "progress_enabled", "read_input_texts", "write_json"]


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


def read_input_texts(path: str, option: str, *, command: str, drop_empty: bool = False,
                     fix: str = "remove them") -> list[str]:
    """The texts of the input file of ``option`` (one per line, or a ``.jsonl`` file's ``text``
    fields), every error naming ``option``.

    Empty or whitespace-only texts are dropped with one status line on stderr when ``drop_empty``
    (``jaxmetrics <command>: <option>: dropped 2 empty text(s)``); otherwise they are an error that
    names the option, the file, the line numbers (records of a ``.jsonl`` file) and ``fix``, what
    to do about them (say the command's ``--drop-empty`` when it has one). No text left is an
    error too.
    """
    import sys

    from jaxmetrics.models.io import read_texts

    texts = read_texts(path, name=option)
    empty = [i for i, t in enumerate(texts) if not t.strip()]
    if empty and drop_empty:
        print(f"jaxmetrics {command}: {option}: dropped {len(empty)} empty text(s)", file=sys.stderr)
        texts = [t for t in texts if t.strip()]
    elif empty:
        where = "records" if os.path.splitext(path)[1].lower() in (".jsonl", ".ndjson") else "lines"
        shown = ", ".join(str(i + 1) for i in empty[:10]) + (", ..." if len(empty) > 10 else "")
        raise ValueError(f"{option}: {len(empty)} empty or whitespace-only text(s) in {path!r} ({where} {shown}); "
                         f"{fix}")
    if not texts:
        raise ValueError(f"{option}: {path!r} holds no non-empty text")
    return texts


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
