"""``craits serve``: the referee for bots that connect on their own, or for games between given bots."""

from __future__ import annotations

import argparse
import asyncio
import errno
import itertools
import json
import os
import signal
import socket
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from craits import grpc_io

from server.cli import play
from server.cli.tls_options import add_tls_options, tls_request
from server.cli.web_options import add_web_options, web_options
from server.errors import UserError
from server.transport.commands import bot_command_help

if TYPE_CHECKING:
    from server.transport.tls import ServerTLS


def register_cli(subparsers: Any) -> None:
    """Add ``craits serve``."""
    parser = subparsers.add_parser(
        "serve",
        help="run the referee (for bots that connect on their own, or for games between given bots)",
        description=(
            "Run the gRPC referee until SIGTERM or Ctrl-C. With --bot, play games between the given "
            "bots (built-in names, commands, or remote:NAME:TOKEN for bots that connect on their own: "
            f"each game waits up to {play.REMOTE_CONNECT_TIMEOUT_MS // 1000} s for them, unless "
            "--connect-timeout-ms says otherwise); "
            "without, serve health and reflection and accept the tokens given with --token. "
            "On SIGTERM, games in flight get --shutdown-grace seconds to finish; the rest are recorded as aborted."
        ),
        epilog=bot_command_help(),
    )
    parser.add_argument("--address", default="127.0.0.1:50051", help="HOST:PORT to listen on (port 0: any free port)")
    parser.add_argument("--token", action="append", default=[], metavar="NAME=TOKEN",
                        help="accept a remote bot's token (repeatable)")
    parser.add_argument("--bot", action="append", default=[], metavar="BOT",
                        help="a seat: built-in name, command, or remote:NAME:TOKEN (repeat once per seat)")
    parser.add_argument("--games", type=int, default=0, help="games to play with --bot, seats rotating (0: until stopped)")
    parser.add_argument("--parallel", type=int, default=1, help="games at once with --bot")
    parser.add_argument("--results", metavar="FILE", help="append one JSON line per finished game")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run command bots unsandboxed, as this user (trusted bots only)")
    parser.add_argument("--shutdown-grace", type=float, default=10.0, metavar="S",
                        help="seconds games in flight may take to finish after SIGTERM")
    play.add_game_options(parser)
    add_tls_options(parser, folder="--log-dir")
    add_web_options(parser)
    parser.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    from server.cli.play import game_settings, parse_bots
    from server.logging import configure_logging
    from server.transport import sandbox as sandboxes
    from server.transport.tls import server_tls
    from server.web.serve import run_watched

    if args.games < 0 or args.parallel < 1:
        raise UserError("--games must be 0 or more and --parallel 1 or more")
    tokens = []
    for item in args.token:
        name, sep, token = item.partition("=")
        if not sep or not name or not token:
            raise UserError(f"--token {item!r}: expected NAME=TOKEN")
        tokens.append((name, token))
    if _port_taken(args.address):  # (gRPC would say it in two lines, one of them its own log's)
        raise UserError(f"--address {args.address}: the port is in use (is another referee running there?); "
                        "choose another (port 0: any free port)")
    tls = server_tls(tls_request(args), args.log_dir, args.address)
    bots = parse_bots(args.bot) if args.bot else []
    launches = any(bot.command for bot in bots)
    try:
        args.sandbox = sandboxes.mode(unsandboxed=args.no_sandbox, launches=launches)
    except sandboxes.SandboxError as err:
        raise UserError(str(err)) from None
    if launches and args.sandbox == "none":
        print(sandboxes.UNSANDBOXED, file=sys.stderr)
    elif launches:
        play.refuse_unsandboxable(bots)
    settings = game_settings(args, bots) if bots else None
    if settings is not None and settings.replays is not None:
        _writable_folder("--replays", settings.replays)
    if args.results:
        _appendable(Path(args.results))
    try:
        log_path = configure_logging(args.log_dir, name="serve")
    except OSError as err:
        raise UserError(f"--log-dir {args.log_dir}: cannot write the log there: {_why(err)}") from None
    web_options(args)
    return grpc_io.run(run_watched(web_options(args), None, "Craits serve",
                                   lambda: _serve(args, tokens, bots, settings, log_path, tls)))


async def _serve(args: argparse.Namespace, tokens: list[tuple[str, str]], bots: list[Any], settings: Any,
                 log_path: Path | None, tls: ServerTLS | None = None) -> int:
    from server.cli.play import make_spec, record_summary
    from server.spec import SeatStatus
    from server.transport.service import (
        Arena,
        ArenaClosed,
        ArenaError,
        ArenaOptions,
        listening_text,
        security_notes,
    )

    try:
        arena = await Arena.start(args.address, ArenaOptions(bot_log_dir=Path(args.log_dir) / "bots",
                                                             sandbox=args.sandbox), tls)
    except ArenaError as err:
        raise UserError(str(err)) from None
    for name, token in tokens:
        arena.register_token(token, name)
    remote = [bot for bot in bots if not bot.command and not bot.builtin]
    for bot in remote:
        arena.register_token(bot.token, bot.name)
    print(f"craits serve: listening on {arena.target}{' over TLS' if tls else ''} (logs: {log_path})", flush=True)
    for note in security_notes(arena):
        print(f"craits serve: {note}", file=sys.stderr, flush=True)
    if remote:
        print(f"craits serve: {listening_text(arena, [bot.name for bot in remote])}; each game waits up to "
              f"{settings.clocks.connect_timeout_s:g} s for them", file=sys.stderr, flush=True)
    hint = "" if bots else " (games start with --bot: one seat per bot, remote:NAME:TOKEN for this one)"

    def waiting(name: str, peer: str) -> None:
        print(f"craits serve: {name} connected ({peer}) and waits for a game{hint}", file=sys.stderr, flush=True)

    arena.on_waiting_bot = waiting

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    results = Path(args.results) if args.results else None
    counter = itertools.count()
    finished = 0
    failures: list[str] = []

    async def worker() -> None:
        nonlocal finished
        while not arena.closing:
            n = next(counter)
            if args.games and n >= args.games:
                return
            spec = make_spec(bots, settings, n, prefix="serve", rotate=True)  # (as craits play: each bot in each seat)
            try:
                record = await arena.run_game(spec)
            except ArenaClosed:
                return
            except ArenaError as err:  # (a game that could not be played)
                failures.append(str(err))
                stop.set()
                return
            except OSError as err:  # (its replay could not be written: the folder gone, a full disk)
                failures.append(f"game {spec.game_id}: {_why(err)}")
                stop.set()
                return
            finished += 1
            summary = record_summary(spec, record)
            if results is not None:
                try:
                    _append_line(results, summary)
                except OSError as err:  # (a full disk): the result goes to standard error rather than nowhere
                    print(json.dumps(summary, sort_keys=True), file=sys.stderr, flush=True)
                    failures.append(f"--results {results}: cannot append game {spec.game_id} "
                                    f"(its line is above, on standard error): {err.strerror or err}")
                    stop.set()
                    return
            trouble = [f"{seat.bot} {seat.status}" for seat in record.seats if seat.status is not SeatStatus.OK]
            print(f"craits serve: game {spec.game_id} " + ("aborted: " + record.aborted if record.aborted
                  else "totals " + " ".join(map(str, record.result.totals)))
                  + (f"; {', '.join(trouble)} (see --results or the log)" if trouble else ""), flush=True)

    workers = [asyncio.create_task(worker()) for _ in range(args.parallel)] if bots else []
    all_done = asyncio.ensure_future(asyncio.gather(*workers)) if workers else None
    waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(stop.wait())]
    if all_done is not None:
        waiters.append(all_done)
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    print("craits serve: shutting down", flush=True)
    await arena.shutdown(args.shutdown_grace)
    if workers:
        await asyncio.gather(*workers, return_exceptions=True)
    for w in waiters:
        w.cancel()
    print(f"craits serve: stopped after {finished} game(s)", flush=True)
    if failures:
        raise UserError("; ".join(failures))
    return 0


def _port_taken(address: str) -> bool:
    """True when HOST:PORT's port is already listened on (anything else wrong with the address
    is the referee's to say)."""
    host, _, port = address.rpartition(":")
    if not port.isdigit() or int(port) == 0:
        return False
    try:
        family, kind, proto, _, where = socket.getaddrinfo(host.strip("[]") or None, int(port),
                                                           type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError, ValueError):
        return False
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(where)
        except OSError as err:
            return err.errno == errno.EADDRINUSE
    return False


def _writable_folder(option: str, folder: Path) -> None:
    """Refuse, before the referee listens, a folder the games could not write in."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()  # (made and gone at once: the folder takes files)
    except OSError as err:
        raise UserError(f"{option} {folder}: cannot write there: {_why(err)}") from None


def _appendable(path: Path) -> None:
    """Refuse, before the referee listens, a --results file no line could be appended to."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
    except OSError as err:
        raise UserError(f"--results {path}: cannot append to it: {_why(err)}") from None


def _why(err: OSError) -> str:
    """What the system said, with the path it said it of (a parent, say)."""
    return f"{err.strerror or err}" + (f": {err.filename}" if err.filename else "")


def _append_line(path: Path, value: Any) -> None:
    """One whole JSON line per write, flushed to disk: a crash never leaves half a line."""
    data = (json.dumps(value, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
