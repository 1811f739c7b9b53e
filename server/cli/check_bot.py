"""`craits check-bot -- COMMAND ...`: run a bot through scripted games and report what it got wrong.

The checker is a referee of its own, independent of the real one, so it can put
the bot in exact situations (``server.checker.scenarios``): it opens a gRPC
server on a loopback port, launches the bot with the usual environment
(``CRAITS_SERVER``, ``CRAITS_TOKEN``, ``CRAITS_BOT_NAME``), expects its Hello,
then plays scenario games that reach every kind of decision and the error paths
(a refused answer, a timed-out decision), and finally closes the stream and
expects the bot to exit. Every check is PASS, WARN (legal but costly, e.g. a
missed "one card") or FAIL, with what the bot sent and what was expected. The
exit status is 0 only when nothing failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from server.checker.timeouts import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_EXIT_TIMEOUT_S, DEFAULT_TIMEOUT_S
from server.errors import UserError
from server.transport import sandbox as sandboxes
from server.transport.commands import bot_command_help


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "check-bot",
        help="check that a bot speaks the protocol and the rules: craits check-bot -- COMMAND ...",
        description=__doc__,
        epilog=bot_command_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"seconds allowed for each answer (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--connect-timeout", type=float, default=DEFAULT_CONNECT_TIMEOUT_S, metavar="S",
                   help=f"seconds from launch to the bot's stream opening (default {DEFAULT_CONNECT_TIMEOUT_S:g})")
    p.add_argument("--exit-timeout", type=float, default=DEFAULT_EXIT_TIMEOUT_S, metavar="S",
                   help=f"seconds the bot may take to exit once its stream ends (default {DEFAULT_EXIT_TIMEOUT_S:g})")
    p.add_argument("--seed", type=int, default=1, help="seed of the checker's own players (default 1)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the report as JSON to FILE")
    p.add_argument("--no-sandbox", action="store_true", help="run the bot unsandboxed, as this user (trusted bots only)")
    p.add_argument(
        "--limit", action="append", default=[], metavar="KEY=VALUE",
        help=("run the sandboxed bot within a limit of a tournament file's [limits], with the same names and "
              "values: memory=256MiB, processes=32, cpu_s=30 (for the whole check), open_files, tmp, output; "
              "repeat for several (default: a tournament's defaults, "
              f"{sandboxes.size_text(sandboxes.Limits().memory)} of memory and {sandboxes.Limits().cpu_s} CPU s)"),
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="how to start the bot, after --")
    p.set_defaults(func=_run)


def _progress_line(number: int, of: int, title: str) -> None:
    sys.stderr.write(f"\r\033[Kchecking {number}/{of}: {title} ...")
    sys.stderr.flush()


def _run(args: argparse.Namespace) -> int:
    from server.checker.driver import CheckOptions, check_bot

    for name in ("timeout", "connect_timeout", "exit_timeout"):
        if not getattr(args, name) > 0:
            raise UserError(f"--{name.replace('_', '-')} must be a positive number of seconds")
    try:
        sandbox = sandboxes.mode(unsandboxed=args.no_sandbox, launches=True)
    except sandboxes.SandboxError as err:
        raise UserError(str(err)) from None
    if sandbox == "none":
        if args.limit:
            raise UserError("--limit applies to the sandbox; drop --no-sandbox to check the bot within limits")
        print(sandboxes.UNSANDBOXED, file=sys.stderr)
    values: dict[str, int] = {}
    for item in args.limit:
        key, equals, value = (part.strip() for part in item.partition("="))
        if not equals or not key or not value:
            raise UserError(f"--limit takes KEY=VALUE, e.g. --limit memory=256MiB; got {item!r}")
        try:
            values[key] = sandboxes.parse_limit(key, value)
        except ValueError as err:
            raise UserError(f"--limit {key}: {err}" if key in sandboxes.LIMIT_NAMES else f"--limit: {err}") from None
    limits = sandboxes.Limits(**values)
    # On a terminal, one line that says which check runs: a bot that uses its time checks for minutes.
    progress = _progress_line if sys.stderr.isatty() else None
    options = CheckOptions(args.timeout, args.connect_timeout, args.exit_timeout, args.seed, sandbox == "bwrap",
                           limits, progress)
    try:
        report = check_bot(args.command, options)
    finally:
        if progress is not None:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
    print(report.render())
    if args.json:
        try:
            args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n")
        except OSError as err:
            raise UserError(f"cannot write the JSON report to {args.json}: {err.strerror}") from err
    sys.stdout.flush()
    return 0 if report.ok else 1
