"""The web server: the board, the bots, the live games and their JSON API (docs/web.md).

An aiohttp application on the event loop of the process it is made in: the web process of
``--web`` (``server.web.process``), or ``craits web``'s. Pages and API read two things:
the :class:`~server.web.live.LiveHub` (games being played, or relayed to it) and, for a
tournament or a ladder, a :class:`~server.web.board.Board` (what its store holds), refreshed
every ``poll_s`` on a thread of its own. Server-sent events carry every change:
``/api/stream`` the board's (standings, progress, live games, recent games), and
``/api/games/{id}/events`` one game's records.

A reader never slows a game: the game only appends its records to a list. One tick of the
server, every ``tick_s``, sends each stream's readers everything new (each record encoded
once, the same bytes written once to each reader) and the board's readers whatever changed;
a reader that leaves more than ``max_buffer`` unread (it does not read) is disconnected.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import html
import json
import math
import re
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from aiohttp import web

from participants.final import final_of
from participants.roster import ORGANIZER
from participants.unpack import Bounds
from server.errors import UserError
from server.logging import get_logger
from server.storage.replay.faults import hide_bot_errors
from server.storage.replay.format import ReplayError
from server.storage.store import StoreError
from server.web.board import Board, download_name, fault_text
from server.web.classroom import ClassroomPages
from server.web.fanout import MAX_BUFFER, Reader, accepts_deflate, finish, open_stream
from server.web.live import END, GameStream, LiveHub, public_records, strip_full
from server.web.participants import ParticipantPages, is_public
from tournaments.standings import RATING_HEADERS, RATING_LEGEND

log = get_logger()
T = TypeVar("T")

_ASSETS = Path(__file__).with_name("assets")
_VIEWER = Path(__file__).resolve().parents[1] / "viewer" / "assets"
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
    "connect-src 'self'"
)
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
RECENT_GAMES = 30
LIVE_PROGRESS_S = 1.0
"""... and this often while games are being played (their decisions and hands move on)."""
BOT_GAMES = 200
GAMES_PER_PAGE = 500
"""Recorded games on one page of /games (newest first)."""
FINAL_REFRESH_S = 5.0
"""How long a stopping server waits for the store's last state (a run's finish) for its board."""


@dataclass(frozen=True, slots=True)
class WebOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    reveal_after: float | None = None
    """Seconds after which a live game's every card may be shown (None: never while it plays)."""
    tick_s: float = 0.25
    """Each stream writes at most this often (everything new at once): a person watching sees
    no difference, and a spectator costs one write per tick instead of one per record."""
    max_buffer: int = MAX_BUFFER
    """Bytes a reader may leave unread before it is dropped."""
    heartbeat_s: float = 15.0
    poll_s: float = 0.5
    roster: str | None = None
    """A roster folder: its participants log in, submit and see their own pages (server.web.participants)."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses or networks of the reverse proxies in front (``--trusted-proxy``): only from
    them is ``X-Forwarded-For`` believed, for the roster's lockout of wrong tokens per address."""
    private_errors: bool = False
    """Leave bot errors' words out as a roster's pages do, without the roster (``craits web`` of
    a participants' ladder's output folder): see :attr:`WebServer.private_errors`."""


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``PORT`` (host 127.0.0.1); a one-line error otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UserError(f"--web {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8080 (port 0: any free port)")
    return host, int(port)


def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _viewer_asset(name: str) -> str:
    return (_VIEWER / name).read_text(encoding="utf-8")


def _embed(value: Any) -> str:
    return (
        json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    )


def _fill(template: str, values: dict[str, str]) -> str:
    """Replace each {{KEY}} in one pass, so a value never has markers of its own filled."""
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: values.get(m.group(1), m.group(0)), template)


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(
        text=json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str),
        status=status, content_type="application/json",
    )


class WebServer:
    """Serves the pages and the API for ``hub`` (live games) and ``board`` (a store, or None)."""

    def __init__(self, hub: LiveHub, board: Board | None, options: WebOptions, *, title: str = "Craits Arena") -> None:
        self.hub = hub
        self.board = board
        self.options = options
        self.title = title
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="craits-web-board")
        self._live_dirty = True
        self._live_stale = False
        self._published_version = -1
        self._published_progress: dict[str, Any] = {}
        """What the board's readers were last sent (:meth:`_refresh_board`)."""
        self._streams: set[GameStream] = set()
        """The game streams being read, which the tick pumps."""
        self.spectators = 0
        self.most_spectators = 0
        """The most connections reading a stream at once so far."""
        self.dropped = 0
        self.participants = (ParticipantPages(self, options.roster, trusted_proxies=options.trusted_proxies)
                             if options.roster else None)
        self.final = final_of(board.source.out_dir if board is not None else None)
        """The roster's final this board shows (None: not a final): see :meth:`_final_gate`."""
        self._final_seen = (0.0, False)
        self.classroom = ClassroomPages(self.participants) if self.participants is not None else None
        self.private_errors = self.participants is not None or options.private_errors
        """A participants' board: the strangers rule keeps each bot error's text (its own code's
        exception, file:line) off the public pages, the API, the streams and the replays served;
        its owner reads it on their private pages, the organizer there and in the logs."""
        hub.hide_bot_errors = self.private_errors
        self.app = self._make_app()

    # ------------------------------------------------------------------ life

    def _make_app(self) -> web.Application:
        packed = self.participants.bounds.packed if self.participants is not None else Bounds().packed
        app = web.Application(middlewares=[self._errors, self._final_gate],
                              client_max_size=packed + 2**20)  # (an upload's form)
        app.add_routes([
            web.get("/", self.page_board),
            web.get("/games", self.page_games),
            web.get("/games/{game_id}", self.page_game),
            web.get("/bots/{bot}", self.page_bot),
            web.get("/api", self.api_index),
            web.get("/api/standings", self.api_standings),
            web.get("/api/progress", self.api_progress),
            web.get("/api/games", self.api_games),
            web.get("/api/games/{game_id}", self.api_game),
            web.get("/api/games/{game_id}/events", self.api_game_events),
            web.get("/api/games/{game_id}/replay", self.api_game_replay),
            web.get("/api/bots/{bot}", self.api_bot),
            web.get("/api/stream", self.api_stream),
        ])
        if self.participants is not None:
            app.add_routes(self.participants.routes())
        if self.classroom is not None:
            app.add_routes(self.classroom.routes())
        return app

    async def start(self) -> str:
        """Listen; a busy or bad address is a :class:`UserError` (one line)."""
        host, port = self.options.host, self.options.port
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        try:
            await site.start()
        except OSError as err:
            await self._runner.cleanup()
            self._runner = None
            if err.errno == errno.EADDRINUSE:
                raise UserError(f"--web {host}:{port}: the port is in use; choose another (port 0: any free port)") from None
            if isinstance(err, socket.gaierror) or err.errno in (errno.EADDRNOTAVAIL, errno.EACCES):
                raise UserError(f"--web {host}:{port}: cannot listen there ({err.strerror or err})") from None
            raise UserError(f"--web {host}:{port}: {err.strerror or err}") from None
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        bound = sockets[0].getsockname()[1] if sockets else port
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{bound}/"
        if self.participants is not None:
            self.participants.start()
            if self.classroom is not None:
                self.classroom.start()
            if is_public(host):
                print(f"web: {host} is reachable from other machines and participants' tokens and code cross it: "
                      "serve it behind a TLS reverse proxy (docs/teachers.md) and let only the proxy reach this port",
                      file=sys.stderr, flush=True)
        self.hub.on_change.append(self._live_changed)
        self._tasks.append(asyncio.create_task(self._tick()))
        if self.board is not None:
            with contextlib.suppress(Exception):  # the first refresh reports its own trouble below
                await self._board_call(self.board.refresh)
            self._tasks.append(asyncio.create_task(self._poll()))
        log.debug("web_started", url=self.url)
        return self.url

    async def stop(self) -> None:
        """End every open stream with what it has not had yet, then stop listening. The board's
        readers get the store's last state (a run's finish) and ``closed``: their page says the
        server has stopped, rather than trying to reconnect to it forever."""
        with contextlib.suppress(ValueError):
            self.hub.on_change.remove(self._live_changed)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self.board is not None and self._runner is not None:  # (a store that stopped answering: not for long)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._refresh_board(), FINAL_REFRESH_S)
        self._publish_live()
        if self.board is None:
            self.hub.publish("progress", self._progress())
        self.hub.publish("closed", {"why": "the server has stopped"})
        self.hub.flush_feed()
        self.hub.feed.close()  # every open stream ends (its response is finished) before the server goes
        now = time.monotonic()
        for stream in self._streams:  # a game that ended since the last tick: its readers see it end
            if stream.pump(now, final=True):
                stream.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.participants is not None:
            await self.participants.close()
        if self.classroom is not None:
            await self.classroom.close()
        if self.board is not None:
            board = self.board
            await asyncio.get_running_loop().run_in_executor(self._executor, board.close)
        self._executor.shutdown(wait=False)

    async def _board_call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def _poll(self) -> None:
        """Refresh the board every ``poll_s``; publish what changed."""
        while True:
            await self._refresh_board()
            await asyncio.sleep(self.options.poll_s)

    async def _refresh_board(self) -> None:
        """Read the store again and publish what changed since the last time."""
        assert self.board is not None
        board = self.board
        try:
            await self._board_call(board.refresh)
        except Exception as err:  # a store being written may refuse a read now and then
            log.warning("web_board_refresh_failed", error=str(err))
        if board.version != self._published_version:
            self._published_version = board.version
            self.hub.publish("standings", board.snapshot.standings)
            self.hub.publish("games", self._recent_games())
        progress = board.snapshot.progress
        if progress != self._published_progress:
            self._published_progress = progress
            self.hub.publish("progress", progress)

    async def _tick(self) -> None:
        """Every ``tick_s``: each game stream's readers get what is new, the live list is
        published if a game started or ended (and every second while games are played), and
        the board's readers get what changed, each in one write."""
        loop = asyncio.get_running_loop()
        live_sent = loop.time()
        while True:
            await asyncio.sleep(self.options.tick_s)
            now = time.monotonic()
            for stream in list(self._streams):
                if not stream.pump(now):
                    self._streams.discard(stream)
            due = loop.time() - live_sent >= LIVE_PROGRESS_S
            if self._live_dirty or (due and (self._live_stale or self.hub.live())):
                self._live_dirty = self._live_stale = False
                live_sent = loop.time()
                self._publish_live()
            self.hub.flush_feed()

    def _publish_live(self) -> None:
        """The live list for the board's readers, and with no store to poll, the games this
        process finished."""
        self.hub.publish("live", self._live_games())
        if self.board is None:
            self.hub.publish("games", self._recent_games())

    def _live_changed(self, started: bool) -> None:
        """A game started: the next tick publishes the live list (spectators find it there).
        A game ended: the list goes out within a second, with the next game's start if one
        comes first (its own page has already been told)."""
        if started:
            self._live_dirty = True
        else:
            self._live_stale = True

    # ------------------------------------------------------------------ data

    def _live_games(self) -> list[dict[str, Any]]:
        return [g.summary() for g in self.hub.live()]

    def _games(self) -> list[dict[str, Any]]:
        """Recorded games, oldest first: the store's, or those this process finished."""
        return self.board.snapshot.games if self.board is not None else list(self.hub.finished)

    def _recent_games(self) -> list[dict[str, Any]]:
        return [_game_row(g) for g in self._games()[-RECENT_GAMES:][::-1]]

    def _recorded(self, game_id: str) -> dict[str, Any] | None:
        if self.board is not None:
            return self.board.snapshot.by_id.get(game_id)
        return next((g for g in self.hub.finished if g["game_id"] == game_id), None)

    def _full_allowed(self, game: dict[str, Any]) -> bool:
        return self.board is None or not self.board.hidden_deal(game)

    def _shown(self, value: Any) -> Any:
        """``value`` as the public pages may show it (:attr:`private_errors`)."""
        return hide_bot_errors(value) if self.private_errors else value

    def _standings(self) -> dict[str, Any]:
        if self.board is None:
            return {"standings": [], "tournament": self.title}
        return self.board.snapshot.standings

    def _progress(self) -> dict[str, Any]:
        if self.board is None:
            done = len(self.hub.finished)
            return {"name": self.title, "kind": "server", "done": done, "total": done, "live": len(self.hub.live())}
        return self.board.snapshot.progress

    # ------------------------------------------------------------------ errors

    @web.middleware
    async def _errors(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPNotFound as err:
            return self._not_found(request, err.text if err.text and not err.text.startswith("404") else "no such page")
        except web.HTTPException as err:  # (a participant's page refusing: 400, 403, 413, 429; redirects pass)
            if err.status < 400:
                raise
            return self._not_found(request, err.text or err.reason, status=err.status, title=err.reason)
        except ReplayError as err:  # a replay file damaged or removed since the game was recorded
            log.warning("web_replay_unreadable", path=request.path, error=str(err))
            what = f"this game's replay cannot be read: {err.message}"
            if err.record is not None:
                what = f"this game's replay cannot be read: record {err.record}: {err.message}"
            return self._not_found(request, what, status=500, title="Replay unreadable")
        except StoreError as err:  # the database went away: the pages come back with it
            log.warning("web_store_unavailable", path=request.path, error=str(err))
            return self._not_found(request, "the tournament's store cannot be read just now; try again in a moment",
                                   status=503, title="Store unavailable")

    @web.middleware
    async def _final_gate(self, request: web.Request,
                          handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        """A deliberate check, not an accident of which folder is served: a board of a roster's
        final (``craits web ROSTER/final/out``, or its tournament run with ``--web``) shows
        nothing, its games and replays included, to anyone but the organizer until ``craits
        final publish``."""
        if self.final is None or request.path in ("/login", "/logout"):
            return await handler(request)
        at, published = self._final_seen
        if time.monotonic() - at > 1.0:  # (read again at most every second: a board polls)
            published = await asyncio.get_running_loop().run_in_executor(None, lambda: bool(self.final and self.final.published))
            self._final_seen = (time.monotonic(), published)
        if published or (self.participants is not None and await self.participants._who(request) == ORGANIZER):
            return await handler(request)
        raise web.HTTPNotFound(text="the final's results are not published yet (the organizer publishes them with "
                                    "craits final publish)")

    def _not_found(self, request: web.Request, what: str, *, status: int = 404, title: str = "Not found",
                   ) -> web.Response:
        if request.path.startswith("/api"):
            return _json({"error": what}, status=status)
        return self._page(title, f'<main class="board"><h1>{html.escape(title)}</h1><p class="meta" style="white-space: pre-line">'
                                 f'{html.escape(what)}</p><p><a href="/">the board</a></p></main>', status=status)

    # ------------------------------------------------------------------ pages

    def _page(self, title: str, body: str, *, script: str = "", status: int = 200, head: str = "") -> web.Response:
        page = _fill(_asset("page.html"), {
            "HEAD": head, "TITLE": html.escape(title), "CSS": _viewer_asset("viewer.css") + _asset("web.css"),
            "NAV": html.escape(self.title), "BODY": body, "JS": script.replace("</", "<\\/"),
        })
        return web.Response(text=page, status=status, content_type="text/html", headers={"Content-Security-Policy": CSP})

    async def page_board(self, request: web.Request) -> web.Response:
        data = {
            "standings": self._standings(), "progress": self._progress(),
            "live": self._live_games(), "games": self._recent_games(),
        }
        data = self._shown(data)
        note = self.board.source.note if self.board is not None else ""
        body = _fill(_asset("board.html"), {
            "DATA": _embed(data), "NOTE": f'<p id="live-note" class="legend">{html.escape(note)}</p>' if note else "",
            "LEGEND": html.escape(RATING_LEGEND), "RATING": html.escape(RATING_HEADERS[0]),
            "SPREAD": html.escape(RATING_HEADERS[1]),
        })
        return self._page(self.title, body, script=_asset("board.js"))

    async def page_games(self, request: web.Request) -> web.Response:
        """The recorded games, newest first, :data:`GAMES_PER_PAGE` at a time (``?page=N``):
        a ladder that has run for weeks has a hundred thousand."""
        games = self._games()
        pages = max(1, -(-len(games) // GAMES_PER_PAGE))
        asked = request.query.get("page", "1")
        number = min(int(asked), pages) if asked.isdigit() and int(asked) >= 1 else 1
        newest = len(games) - (number - 1) * GAMES_PER_PAGE
        shown = games[max(0, newest - GAMES_PER_PAGE):newest][::-1]
        data = self._shown({"live": self._live_games(), "games": [_game_row(g) for g in shown]})
        nav = ""
        if pages > 1:
            links = [f'<a id="newer" href="/games?page={number - 1}">newer</a>' if number > 1 else "",
                     f'<a id="older" href="/games?page={number + 1}">older</a>' if number < pages else ""]
            nav = (f'<p class="meta" id="pages" data-page="{number}" data-pages="{pages}">games '
                   f"{len(games) - newest + 1:,} to {len(games) - newest + len(shown):,} of {len(games):,}, newest "
                   f"first &middot; {' &middot; '.join(link for link in links if link)}</p>")
        body = _fill(_asset("games.html"), {"DATA": _embed(data), "NAV": nav})
        return self._page(f"{self.title}: games", body, script=_asset("board.js"))

    async def page_bot(self, request: web.Request) -> web.Response:
        name = request.match_info["bot"]
        info = await self._bot(name)
        if info is None:
            return self._not_found(request, f"no bot named {name!r} here")
        return self._page(f"{name} - {self.title}", _bot_body(name, self._shown(info)))

    async def _bot(self, name: str) -> dict[str, Any] | None:
        if self.board is None:
            return None
        return await self._board_call(self.board.bot, name)

    async def page_game(self, request: web.Request) -> web.Response:
        game_id = request.match_info["game_id"]
        live = self.hub.games.get(game_id)
        if live is not None:
            delay = self.options.reveal_after
            full = request.query.get("view") == "full" and delay is not None
            count = live.visible(delay if full else None)
            if count < 2:
                return self._page(
                    f"{game_id} - {self.title}",
                    f'<main class="board"><h1>Game {html.escape(game_id)}</h1><p class="meta">Every hand shows '
                    f"{delay:g} s behind the game, and it started less than that ago: this page reloads in a "
                    f'moment, or <a href="?">watch it live with the hands hidden</a>.</p></main>',
                    head=f'<meta http-equiv="refresh" content="{max(1, math.ceil(delay or 1))}">',
                )
            data = {
                "records": live.records(count, full), "index_href": "/",
                "live": {"events": f"/api/games/{game_id}/events", "from": count, "reveal_after": delay,
                         "view": "full" if full else "public"},
            }
            return self._viewer(f"Craits live {game_id}", data)
        game = self._recorded(game_id)
        if game is None:
            return self._not_found(request, f"no game {game_id!r} here (not live, not recorded)")
        if game["replay"] is None:
            return self._not_found(request, f"game {game_id} has no replay")
        records = await self._replay_records(game)
        page: dict[str, Any] = {"records": records, "index_href": "/"}
        if not self._full_allowed(game):
            page["note"] = "hands hidden: this deal is still to be played at another table"
        return self._viewer(f"Craits replay {game_id}", page)

    async def _replay_records(self, game: dict[str, Any]) -> list[dict[str, Any]]:
        from server.storage.replay import load_records

        records = self._shown(await self._board_call(lambda: load_records(self._replay_file(game))))
        if self._full_allowed(game):
            return [strip_full(r) for r in records]
        return public_records(records)

    def _viewer(self, title: str, data: dict[str, Any]) -> web.Response:
        js = _viewer_asset("viewer.js") + "\n" + _asset("live.js")
        page = _fill(_viewer_asset("viewer.html"), {
            "TITLE": html.escape(title), "CSS": _viewer_asset("viewer.css") + _asset("web.css"),
            "JS": js.replace("</", "<\\/"), "DATA": _embed(data),
        })
        page = page.replace("img-src data:", "img-src data:; connect-src 'self'")
        return web.Response(text=page, content_type="text/html", headers={"Content-Security-Policy": CSP})

    # ------------------------------------------------------------------ API

    async def api_index(self, request: web.Request) -> web.Response:
        return _json({
            "standings": "/api/standings", "progress": "/api/progress", "games": "/api/games",
            "game": "/api/games/{game_id}", "game_events": "/api/games/{game_id}/events (text/event-stream)",
            "game_replay": "/api/games/{game_id}/replay", "bot": "/api/bots/{bot}",
            "stream": "/api/stream (text/event-stream)", "docs": "docs/web.md",
        })

    async def api_standings(self, request: web.Request) -> web.Response:
        return _json(self._shown(self._standings() if self.board is None else self.board.snapshot.document()))

    async def api_progress(self, request: web.Request) -> web.Response:
        return _json({**self._progress(), "live": len(self.hub.live())})

    async def api_games(self, request: web.Request) -> web.Response:
        return _json(self._shown({"live": self._live_games(), "recorded": [_game_row(g) for g in self._games()]}))

    async def api_game(self, request: web.Request) -> web.Response:
        game_id = request.match_info["game_id"]
        live = self.hub.games.get(game_id)
        if live is not None:
            return _json({"state": "over" if live.over else "live", **live.summary(),
                          "events": f"/api/games/{game_id}/events"})
        game = self._recorded(game_id)
        if game is None:
            raise web.HTTPNotFound(text=f"no game {game_id!r} here")
        return _json({"state": "recorded", **self._shown(_game_row(game)), "events": f"/api/games/{game_id}/events",
                      "full_replay": game["replay"] is not None and self._full_allowed(game)})

    async def api_game_replay(self, request: web.Request) -> web.StreamResponse:
        game_id = request.match_info["game_id"]
        game = self._recorded(game_id)
        if game is None or game["replay"] is None:
            raise web.HTTPNotFound(text=f"no recorded replay of game {game_id!r} here")
        if not self._full_allowed(game):
            return _json({"error": f"game {game_id}: its deal is still to be played at another table"}, status=403)
        path = await self._board_call(self._replay_file, game)
        from server.storage.replay import is_compact

        # (format 2 is served as stored, gzip: `curl URL | zcat`, as `craits replay verify` reads it)
        compact = is_compact(path)
        if self.private_errors and any(f.get("bot_errors") for f in game.get("faults") or () if f):
            body = await self._board_call(_without_bot_errors, path)  # (sealed again: it verifies)
            return web.Response(body=body, headers={
                "Content-Type": "application/gzip",
                "Content-Disposition": f'attachment; filename="{download_name(game_id, True)}"'})
        kind = "application/gzip" if compact else "application/x-ndjson"
        name = download_name(game_id, compact)
        return web.FileResponse(path, headers={"Content-Type": kind,
                                               "Content-Disposition": f'attachment; filename="{name}"'})

    def _replay_file(self, game: dict[str, Any]) -> str:
        """A recorded game's replay as a file (on the board's thread): the store's is copied out."""
        return self.board.replay_file(game) if self.board is not None else str(game["replay"])

    async def api_bot(self, request: web.Request) -> web.Response:
        name = request.match_info["bot"]
        info = await self._bot(name)
        if info is None:
            raise web.HTTPNotFound(text=f"no bot named {name!r} here")
        return _json(self._shown(info))

    # ------------------------------------------------------------------ streams

    def _reader_dropped(self) -> None:
        self.dropped += 1
        log.info("web_reader_dropped", why="not reading")

    @contextlib.asynccontextmanager
    async def _stream(
        self, request: web.Request, headers: dict[str, str] = SSE_HEADERS
    ) -> AsyncIterator[tuple[web.StreamResponse, Reader | None]]:
        response, reader = await open_stream(request, headers)
        self.spectators += 1
        self.most_spectators = max(self.most_spectators, self.spectators)
        try:
            yield response, reader
        finally:
            self.spectators -= 1

    async def api_stream(self, request: web.Request) -> web.StreamResponse:
        """The board's feed: the latest standings, progress, live list and recent games, then
        each change as it is published."""
        hub = self.hub
        if "live" not in hub.latest:
            hub.publish("live", self._live_games())
        async with self._stream(request) as (response, reader):
            if reader is not None:
                while True:  # (a write waits only when the reader's buffer is full)
                    serial = hub.serial
                    await response.write(hub.feed_so_far())
                    if hub.serial == serial:
                        break
                hub.feed.add(reader)
                await finish(response, reader)
        return response

    async def api_game_events(self, request: web.Request) -> web.StreamResponse:
        """One game's records as server-sent events (``record``), then ``end``. Live: the public
        view, from ``?from=N`` or the browser's Last-Event-ID; ``?view=full``: every card, each
        record ``reveal_after`` seconds after it happened. Recorded: the replay's records."""
        game_id = request.match_info["game_id"]
        full = request.query.get("view") == "full"
        if full and self.options.reveal_after is None:
            return _json({"error": "this server shows no hidden card during play (start it with --reveal-after)"},
                         status=403)
        start = _start_index(request)
        live = self.hub.games.get(game_id)
        if live is None:
            game = self._recorded(game_id)
            if game is None or game["replay"] is None:
                raise web.HTTPNotFound(text=f"no game {game_id!r} here (not live, not recorded)")
            records = await self._replay_records(game)
            async with self._stream(request) as (response, _reader):
                for i, record in enumerate(records[start:], start):
                    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False)
                    await response.write(f"id: {i}\nevent: record\ndata: {text}\n\n".encode())
                await response.write(END)
            return response
        compact = request.query.get("form") == "compact"
        stream = live.streams.get((full, compact))
        if stream is None:
            stream = live.streams[(full, compact)] = GameStream(
                live, full, self.options.reveal_after if full else None, heartbeat_s=self.options.heartbeat_s,
                max_buffer=self.options.max_buffer, on_drop=self._reader_dropped, compact=compact,
            )
        deflated = accepts_deflate(request)
        headers = {**SSE_HEADERS, "Content-Encoding": "deflate", "Vary": "Accept-Encoding"} if deflated else SSE_HEADERS
        async with self._stream(request, headers) as (response, reader):
            if reader is not None:
                await stream.join(response, reader, start, deflated)
                self._streams.add(stream)
                await finish(response, reader)
        return response


def _start_index(request: web.Request) -> int:
    last = request.headers.get("Last-Event-ID")
    if last is not None and last.isdigit():
        return int(last) + 1
    start = request.query.get("from", "0")
    return int(start) if start.isdigit() else 0


def _without_bot_errors(path: str) -> bytes:
    """A replay's bytes without its bot errors' texts, in format 2, sealed again (the seal shows
    a change, not who made it: the game still verifies, the rules being what is checked)."""
    import tempfile

    from server.storage.replay.compact import write_compact
    from server.storage.replay.reader import read_replay

    records = hide_bot_errors(list(read_replay(path).records))
    with tempfile.TemporaryDirectory(prefix="craits-replay-") as folder:
        return write_compact(Path(folder) / "replay.jsonl.gz", records).read_bytes()


def _game_row(game: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in game.items() if k not in ("seed", "replay", "recorded")} | {  # (recorded: for grades)
        "replay": game.get("replay") is not None}


# --------------------------------------------------------------------------- the bot page


def _fmt(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def rating_svg(points: list[dict[str, Any]], width: int = 640, height: int = 220) -> str:
    """The rating (mu) after each game with a ±sigma band, as an inline SVG."""
    if not points:
        return '<p class="meta">No rated game yet.</p>'
    pad = 34
    lows = [p["mu"] - p["sigma"] for p in points]
    highs = [p["mu"] + p["sigma"] for p in points]
    low, high = math.floor(min(lows)), math.ceil(max(highs))
    if high - low < 1:
        high = low + 1
    n = len(points)

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i / max(n - 1, 1))

    def y(v: float) -> float:
        return float(height - pad - (height - 2 * pad) * (v - low) / (high - low))

    band = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(highs))
    band += " " + " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in reversed(list(enumerate(lows))))
    line = " ".join(f"{x(i):.1f},{y(p['mu']):.1f}" for i, p in enumerate(points))
    ticks = "".join(
        f'<text x="{pad - 4}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>'
        f'<line x1="{pad}" x2="{width - pad}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
        for v in (low, (low + high) / 2, high)
    )
    return (
        f'<svg id="rating-plot" class="plot" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="rating after each game" data-points="{n}">'
        f"{ticks}"
        f'<polygon points="{band}" class="band"/><polyline points="{line}" class="mu"/>'
        f'<text x="{width / 2}" y="{height - 6}" text-anchor="middle">game 1 to {n}</text>'
        "</svg>"
    )


def _fault_row(fault: dict[str, Any]) -> str:
    """A fault of a bot's page: the game (at the decision, when its replay shows where), what
    happened, and the replay to download with the command that reruns it."""
    e = html.escape
    game = quote(fault["game_id"], safe="")
    first = fault.get("first")
    counters = fault_text(fault["faults"])
    if first is None:
        link = f'<a href="/games/{e(game, quote=True)}">{e(fault["game_id"])}</a>'
        return f'<tr><td>{link}</td><td>{fault["seat"]}</td><td>{e(counters)}</td><td></td></tr>'
    link = (f'<a class="fault-decision" href="/games/{e(game, quote=True)}{e(first["anchor"], quote=True)}">'
            f'{e(fault["game_id"])}, decision {first["decision"]}</a>')
    what = f'{first["what"]}' + (f' (and {first["count"] - 1} more)' if first["count"] > 1 else "")
    reproduce = (f'<a class="fault-replay" href="/api/games/{e(game, quote=True)}/replay" download="'
                 f'{e(first["file"], quote=True)}">replay</a> <code class="fault-command">'
                 f'{e(first["command"])}</code>')
    return (f'<tr><td>{link}</td><td>{fault["seat"]}</td><td>{e(what)}<br><small>{e(counters)}</small></td>'
            f"<td>{reproduce}</td></tr>")


def _bot_body(name: str, info: dict[str, Any]) -> str:
    e = html.escape
    row = info["standing"]
    issues = {k: v for k, v in row.get("issues", {}).items() if v}
    faults_total = sum(issues.values())
    head = (
        f'<h1 id="bot-name">{e(name)}</h1>'
        f'<p class="meta">rank {row["rank"]} &middot; {RATING_HEADERS[0]} {_fmt(row["rating_ordinal"])} '
        f'({e(RATING_HEADERS[1])} {_fmt(row["rating_mu"])} &plusmn; {_fmt(row["rating_sigma"])}) &middot; average placing '
        f'{_fmt(row["avg_placing"])} &middot; {row["games"]} games &middot; {row["wins"]} wins &middot; '
        f"{faults_total} faults</p>"
    )
    plot = f'<section class="panel"><h2>Rating over time</h2>{rating_svg(info["ratings"])}</section>'
    fault_rows = "".join(_fault_row(f) for f in reversed(info["faults"])) or '<tr><td colspan="4">no faults</td></tr>'
    faults = (
        '<section class="panel"><h2>Faults</h2><p class="meta">Each links to its decision in the replay; download '
        'the replay and play the game again from there with your bot (docs/rerun.md).</p>'
        '<table id="faults" class="sheet"><thead><tr><th>game</th>'
        f"<th>seat</th><th>what</th><th>reproduce</th></tr></thead><tbody>{fault_rows}</tbody></table></section>"
    )
    shown = info["games"][-BOT_GAMES:]
    game_rows = "".join(
        f'<tr><td><a href="/games/{e(g["game_id"], quote=True)}">{e(g["game_id"])}</a></td><td>{g["seat"]}</td>'
        f'<td>{e(", ".join(b for i, b in enumerate(g["bots"]) if i != g["seat"]))}</td>'
        f'<td>{e(str(g["total"]))}</td><td>{g["placing"]}</td><td>{e(g["status"])}'
        f'{" (aborted)" if g["aborted"] else ""}</td></tr>'
        for g in reversed(shown)
    ) or '<tr><td colspan="6">no games yet</td></tr>'
    games = (
        f'<section class="panel"><h2>Games</h2><p class="meta">{len(shown)} most recent of {len(info["games"])} '
        f'(all of them: <a href="/api/bots/{e(quote(name, safe=""), quote=True)}">/api/bots/{e(name)}</a>)</p>'
        f'<table id="bot-games" class="sheet"><thead><tr><th>game</th>'
        "<th>seat</th><th>against</th><th>total</th><th>place</th><th>status</th></tr></thead>"
        f"<tbody>{game_rows}</tbody></table></section>"
    )
    return f'<main class="board">{head}{plot}{faults}{games}</main>'
