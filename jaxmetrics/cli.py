"""The ``jaxmetrics`` command line.

Each sub-command lives in its own module under :mod:`jaxmetrics.commands` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (a callable taking the
parsed ``argparse.Namespace`` and returning an exit code). Modules are discovered at
start-up, so adding a command never touches this file.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxmetrics",
        description="Evaluate open-ended text generation with JAX metrics.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from jaxmetrics import commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"jaxmetrics.commands.{info.name}")
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileNotFoundError) as e:
        print(f"jaxmetrics {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
