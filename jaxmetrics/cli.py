"""The ``jaxmetrics`` command line.

Each sub-command lives in its own module under :mod:`jaxmetrics.commands` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (a callable taking the
parsed ``argparse.Namespace`` and returning an exit code). Modules are discovered at
start-up, so adding a command never touches this file.

Exit codes: 0 success, 2 a usage or input error (one line on stderr naming the option: the
flag, ``--max-length: ...``, also when the library raised it with its Python name,
``max_length: ...``), 130 interrupted with Ctrl-C (one line, no traceback).

Streams: results go to stdout; status, progress and warnings to stderr. A warning is one line,
``jaxmetrics: warning: ...`` (not Python's ``UserWarning`` with its source line), each distinct
message once per run.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys


#: each command's parser, by name (filled by :func:`build_parser`)
_COMMAND_PARSERS: dict[str, argparse.ArgumentParser] = {}


def build_parser() -> argparse.ArgumentParser:
    from jaxmetrics import __version__
    from jaxmetrics.commands._util import DefaultsHelpFormatter

    parser = argparse.ArgumentParser(
        prog="jaxmetrics",
        description="Evaluate open-ended text generation with JAX metrics.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"jaxmetrics {__version__}")
    parser.add_argument("--compilation-cache", metavar="DIR|off", default=None,
                        help="keep compiled programs in DIR so later runs load them instead of compiling, "
                             "or 'off' (default: $JAXMETRICS_COMPILATION_CACHE if set, else "
                             "$XDG_CACHE_HOME/jaxmetrics/xla; an unusable default folder means one "
                             "warning and no cache)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _COMMAND_PARSERS.clear()
    from jaxmetrics import commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"jaxmetrics.commands.{info.name}")
        mod.register(sub)
    for name, p in sub.choices.items():  # every command's --help states each option's default
        p.formatter_class = DefaultsHelpFormatter
        _COMMAND_PARSERS[name] = p
    return parser


def _one_line_warnings() -> None:
    """Print each warning as ``jaxmetrics: warning: <message>`` on stderr, once per message."""
    import warnings

    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if text not in seen:
            seen.add(text)
            print(f"jaxmetrics: warning: {text}", file=sys.stderr, flush=True)

    warnings.showwarning = show


def _headless_plots() -> None:
    """Figures are only saved to files here: matplotlib's Agg backend, chosen through ``MPLBACKEND``
    (unless the user set it) before anything imports matplotlib, so building the parser still
    imports neither matplotlib nor numpy. The library's plot functions never choose a backend."""
    import os

    os.environ.setdefault("MPLBACKEND", "Agg")


def main(argv: list[str] | None = None) -> int:
    import warnings

    _headless_plots()
    with warnings.catch_warnings():
        _one_line_warnings()
        cache_error = _apply_cache_option(argv)   # before any module that imports JAX
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return _run(args, cache_error, _flags(parser, args.command))


def _apply_cache_option(argv: list[str] | None) -> ValueError | None:
    """Set up the compilation cache from ``--compilation-cache`` (or the library's default) before
    the commands are imported; a folder named on the command line that cannot be used is an
    error, reported once the command is known."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or {"-h", "--help", "--version"} & set(argv):   # nothing compiles: keep JAX unimported
        return None
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--compilation-cache", default=None)
    known, _ = pre.parse_known_args(argv)
    from jaxmetrics.compilation import apply_default_compilation_cache

    try:
        apply_default_compilation_cache(known.compilation_cache, strict=known.compilation_cache is not None)
    except ValueError as e:
        return e
    return None


def _flags(parser: argparse.ArgumentParser, command: str) -> dict[str, str]:
    """``{python name: flag}`` of the options of ``command`` (``max_length`` -> ``--max-length``),
    read from the command's usage line (public argparse output, not its private actions)."""
    import re

    usage = _COMMAND_PARSERS[command].format_usage() if command in _COMMAND_PARSERS else ""
    return {flag[2:].replace("-", "_"): flag for flag in re.findall(r"--[a-z0-9][a-z0-9-]*", usage)}


def _flag_prefix(message: str, flags: dict[str, str]) -> str:
    """``message`` with a leading Python argument name (``references: ...``, what the library
    says) replaced by the command's flag (``--references: ...``): one style per door."""
    head, sep, rest = message.partition(":")
    if sep and head in flags:
        return f"{flags[head]}:{rest}"
    return message


def _run(args: argparse.Namespace, cache_error: ValueError | None = None, flags: dict[str, str] | None = None) -> int:
    try:
        if cache_error is not None:
            raise ValueError(f"--compilation-cache: {str(cache_error).split(': ', 1)[-1]}")
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileNotFoundError) as e:
        print(f"jaxmetrics {args.command}: error: {_flag_prefix(str(e), flags or {})}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted(args)


def _interrupted(args: argparse.Namespace) -> int:
    """Ctrl-C: one line instead of a traceback from inside JAX, and the shell's status 130."""
    msg = f"jaxmetrics {args.command}: interrupted"
    cache = getattr(args, "cache_dir", None)
    if cache:
        msg += (f"; the cache {cache!r} keeps what was computed so far: rerun the same "
                "command to resume")
    print(msg, file=sys.stderr)
    sys.stderr.flush()
    return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
