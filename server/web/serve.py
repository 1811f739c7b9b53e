"""Running the web server beside a tournament, a ladder or the referee (``--web``), in a
process of its own (``server.web.process``); and ``craits web``, which plays no game, in its.
It takes plain values (:class:`WebOptions`); the command line's options are ``server.cli.web_options``'s."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from server.logging import log_file
from server.web.app import WebOptions, WebServer
from server.web.board import Board, BoardPlace, BoardSource
from server.web.live import LiveHub
from server.web.process import WebProcess, WebSetup

T = TypeVar("T")


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
    options: WebOptions | None, board: BoardPlace | None, title: str, run: Callable[[], Awaitable[T]]
) -> T:
    """``await run()`` with the web pages served beside it when ``options`` asks for them (``--web``)."""
    async with watching(options, board=board, title=title):
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
