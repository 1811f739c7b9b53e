"""`craits ...`: every sub-command, and nothing else.

Each module here is one command group: it declares its arguments, turns them into plain
values, and calls the core (which never sees an ``argparse.Namespace``). This file
assembles them and turns user mistakes into one-line errors with exit code 2 instead of
tracebacks.

A group imports at its top only what declaring its options needs; the web app, the stores,
the queue, gRPC and the engine are imported by the functions that run a command, so its
``--help`` and a user's mistake print without loading them (tests/test_cli.py checks it;
``bench/cli_start.py`` measures the start).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

import craits.grpc_io  # noqa: F401  # before any command imports grpc: it chooses gRPC's I/O layer

from server import __version__
from server.errors import UserError

__all__ = ["UserError", "build_parser", "main"]

COMMANDS: dict[str, str] = {
    "demo": "demo", "serve": "serve", "play": "play", "check-bot": "check_bot", "replay": "replay",
    "tournament": "tournament", "ladder": "tournament", "handout": "handout", "worker": "worker",
    "store": "worker", "web": "web", "roster": "roster", "submit": "roster", "compare": "classroom",
    "scrimmage": "classroom", "final": "classroom", "doctor": "doctor",
}
"""Each command and the module of ``server.cli`` that declares it, in the order ``craits --help``
lists them: a command imports only its own module (``craits play`` starts in a quarter of the
time it took to import every group), ``--help`` and a mistyped command all of them."""


def _groups(command: str | None) -> list[ModuleType]:
    names = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    return [importlib.import_module(f"server.cli.{name}") for name in names]


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv`` (its command's group only), or for every command (None)."""
    parser = argparse.ArgumentParser(
        prog="craits",
        description="Craits Arena: referee, tournaments and replays for the card game Craits.",
    )
    parser.add_argument("--version", action="version", version=f"craits-arena {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    command = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    for group in _groups(command):
        group.register_cli(sub)
    return parser


def _user_mistakes() -> tuple[type[Exception], ...]:
    """UserError, and the engine's ConfigError once a command has loaded the engine (only then can one
    be raised): ``craits --help`` and a command that fails before it needs the engine never import it."""
    engine = sys.modules.get("server.engine")
    return (UserError,) if engine is None else (UserError, engine.ConfigError)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except _user_mistakes() as err:
        print(f"craits: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("craits: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # whoever read the output stopped reading (`craits ... | head`): not a fault
        with contextlib.suppress(OSError):  # (and no second error when Python flushes it on the way out)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a program killed by SIGPIPE
