"""Running the web server beside a tournament, a ladder or the referee (``--web``), in a
process of its own (``server.web.process``); and ``craits web``, which plays no game, in its."""

from __future__ import annotations

import argparse
import contextlib
import errno
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from server.errors import UserError
from server.logging import log_file
from server.web.app import WebOptions, WebServer, parse_address
from server.web.board import Board, BoardPlace, BoardSource
from server.web.live import LiveHub
from server.web.process import WebProcess, WebSetup

T = TypeVar("T")


def add_web_options(parser: argparse.ArgumentParser) -> None:
    """``--web HOST:PORT`` and ``--reveal-after S``."""
    parser.add_argument(
        "--web", metavar="HOST:PORT", type=web_address,
        help="serve the live board and games to browsers here while it plays (e.g. 127.0.0.1:8080; "
        "0.0.0.0:8080 opens it to other machines; port 0: any free port); see docs/web.md",
    )
    parser.add_argument(
        "--reveal-after", type=_seconds, metavar="S",
        help="with --web: spectators may also watch a game with every hand shown, S seconds behind it "
        "(default: hands stay hidden until the game is over)",
    )


def web_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` for argparse: a bad address, or a port already taken, is refused at once
    (before a tournament is created or a game played)."""
    try:
        host, port = parse_address(text)
    except UserError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix(f"--web {text!r}: ")) from None
    if port:
        problem = _bind_problem(host, port)
        if problem:
            raise argparse.ArgumentTypeError(f"{text}: {problem}")
    return host, port


def _bind_problem(host: str, port: int) -> str:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        return f"unknown host ({err.strerror})"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                return "the port is in use; choose another (port 0: any free port)"
            return f"cannot listen there ({err.strerror or err})"
    return ""


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError("must be 0 or more seconds")
    return value


def web_options(args: argparse.Namespace) -> WebOptions | None:
    """The options asked for on the command line (None: no --web)."""
    address = getattr(args, "web", None)
    reveal = getattr(args, "reveal_after", None)
    if address is None:
        if reveal is not None:
            raise UserError("--reveal-after goes with --web HOST:PORT")
        return None
    host, port = address
    return WebOptions(host=host, port=port, reveal_after=reveal, roster=getattr(args, "roster_dir", None))


def board_place(store: object, out_dir: Path, *, goal_rounds: int = 0) -> BoardPlace:
    """The board of the tournament or ladder this process plays in ``store``: its PostgreSQL
    database (this process's own games are live), else its output folder's SQLite store.
    ``goal_rounds``: a ladder's rounds when it will stop (``--rounds N``; 0: no end)."""
    from server.storage.postgres import PostgresStore

    if isinstance(store, PostgresStore):
        return BoardPlace(url=store.url, name=store.name, playing_here=True, goal_rounds=goal_rounds)
    return BoardPlace(out_dir=out_dir, goal_rounds=goal_rounds)


@asynccontextmanager
async def watching(
    options: WebOptions | None, *, board: BoardPlace | None = None, title: str = "Craits Arena"
) -> AsyncIterator[WebProcess | None]:
    """Serve the web pages from a process of their own while the block runs (nothing when
    ``options`` is None): the games started inside the block are live there, and ``board``
    (a tournament's or a ladder's store) gives the standings. A busy port is a
    :class:`UserError` before anything is played."""
    if options is None:
        yield None
        return
    logs = log_file()
    web = WebProcess(WebSetup(options, board, title, log_dir=None if logs is None else str(logs.parent)))
    url = await web.start()
    print(f"web: the board and the live games at {url}", file=sys.stderr, flush=True)
    try:
        with web.installed():
            yield web
    finally:
        await web.close()


async def run_watched(
    args: argparse.Namespace, board: BoardPlace | None, title: str, run: Callable[[], Awaitable[T]]
) -> T:
    """``await run()`` with the web pages served beside it when ``--web`` asks for them."""
    async with watching(web_options(args), board=board, title=title):
        return await run()


async def serve_board(source: BoardSource, options: WebOptions, stop: Callable[[], Awaitable[object]]) -> None:
    """``craits web``: a store's board, read-only, until ``stop()`` returns. In this process:
    it plays no game, so there is no referee to keep the web server's work away from."""
    server = WebServer(LiveHub(), Board(source), options, title=f"Craits {source.kind} {source.name}")
    url = await server.start()
    print(f"web: the board and the live games at {url}", file=sys.stderr, flush=True)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            await stop()
    finally:
        await server.stop()
