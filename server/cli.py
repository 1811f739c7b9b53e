"""`craits ...`: the one command-line entry point.

Each concern registers its own sub-commands (``register_cli(subparsers)`` in its
module); this file only assembles them and turns user mistakes into one-line
errors with exit code 2 instead of tracebacks.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from server import __version__
from server.engine import ConfigError
from server.errors import UserError

__all__ = ["UserError", "build_parser", "main"]

# Modules that contribute sub-commands; each has register_cli(subparsers).
_COMMAND_MODULES = (
    "server.demo",
    "server.service",
    "server.play",
    "server.checker",
    "server.replay",
    "tournaments.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="craits",
        description="Craits Arena: referee, tournaments and replays for the card game Craits.",
    )
    parser.add_argument("--version", action="version", version=f"craits-arena {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name and (name == err.name or name.startswith(err.name + ".")):  # not built yet
                continue
            raise
        module.register_cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (UserError, ConfigError) as err:
        print(f"craits: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("craits: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
