"""`craits ...`: every sub-command, and nothing else.

Each module here is one command group: it declares its arguments, turns them into plain
values, and calls the core (which never sees an ``argparse.Namespace``). This file
assembles them and turns user mistakes into one-line errors with exit code 2 instead of
tracebacks.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from server import __version__
from server.cli import (
    check_bot,
    classroom,
    demo,
    doctor,
    handout,
    play,
    replay,
    roster,
    serve,
    tournament,
    web,
    worker,
)
from server.engine import ConfigError
from server.errors import UserError

__all__ = ["UserError", "build_parser", "main"]

_COMMAND_GROUPS = (demo, serve, play, check_bot, replay, tournament, handout, worker, web, roster, classroom, doctor)
"""In the order ``craits --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="craits",
        description="Craits Arena: referee, tournaments and replays for the card game Craits.",
    )
    parser.add_argument("--version", action="version", version=f"craits-arena {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in _COMMAND_GROUPS:
        group.register_cli(sub)
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
    except BrokenPipeError:  # whoever read the output stopped reading (`craits ... | head`): not a fault
        with contextlib.suppress(OSError):  # (and no second error when Python flushes it on the way out)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a program killed by SIGPIPE
