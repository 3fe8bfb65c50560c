"""The ``jaxmetrics`` command line.

Each sub-command lives in its own module under :mod:`jaxmetrics.commands` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (a callable taking the
parsed ``argparse.Namespace`` and returning an exit code). Modules are discovered at
start-up, so adding a command never touches this file.

Exit codes: 0 success, 2 a usage or input error (one line on stderr naming the option), 130
interrupted with Ctrl-C (one line, no traceback).

Streams: results go to stdout; status, progress and warnings to stderr. A warning is one line,
``jaxmetrics: warning: ...`` (not Python's ``UserWarning`` with its source line), each distinct
message once per run.
"""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys


def build_parser() -> argparse.ArgumentParser:
    from jaxmetrics import __version__
    from jaxmetrics._cli_util import DefaultsHelpFormatter

    parser = argparse.ArgumentParser(
        prog="jaxmetrics",
        description="Evaluate open-ended text generation with JAX metrics.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"jaxmetrics {__version__}")
    parser.add_argument("--compilation-cache", metavar="DIR", default=os.environ.get("JAXMETRICS_COMPILATION_CACHE"),
                        help="keep compiled programs in DIR so later runs load them instead of compiling "
                             "(default: $JAXMETRICS_COMPILATION_CACHE; off when neither is given)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from jaxmetrics import commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"jaxmetrics.commands.{info.name}")
        mod.register(sub)
    for p in sub.choices.values():  # every command's --help states each option's default
        p.formatter_class = DefaultsHelpFormatter
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    import warnings

    with warnings.catch_warnings():
        _one_line_warnings()
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        if args.compilation_cache:
            from jaxmetrics.compilation import enable_compilation_cache

            try:
                enable_compilation_cache(args.compilation_cache)
            except ValueError as e:
                raise ValueError(f"--compilation-cache: {str(e).split(': ', 1)[-1]}") from None
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileNotFoundError) as e:
        print(f"jaxmetrics {args.command}: error: {e}", file=sys.stderr)
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
