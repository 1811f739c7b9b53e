"""The participants' private pages: log in with a token, upload a bot, see its versions, their
build logs and checker reports, their games and their own bot's output in each game.

Mounted on the web server when it is given a roster folder (``--web`` of a ladder whose file
names a ``roster``, or ``craits web --roster``). Strangers share this server, so:

* a token is exchanged once for a session cookie (HttpOnly, SameSite=Strict, Secure when the
  request came over HTTPS, directly or from a TLS proxy on this machine) naming a session kept
  in the roster's store: logging out, renewing or revoking the token ends it there, so a copied
  cookie opens nothing afterwards, in any web process on that store;
* every form carries a CSRF token derived from the session (login: from a cookie of its own);
* wrong tokens are slowed down per address (each costs more waiting; past
  :data:`MAX_FAILURES` the address is refused for a while), and never logged. Each check is
  counted in the store before the token is hashed, so parallel guesses meet one count; the
  address is the peer's, or the one ``X-Forwarded-For`` names when the peer is a proxy the
  organizer trusts (``--trusted-proxy``);
* a participant's pages live under ``/p/NAME/``; anyone else's (another participant's, or a
  name that does not exist) is the same 404, so names do not leak. The organizer's token
  opens every participant's pages.

``craits submit`` and scripts use ``POST /api/submit`` and ``GET /api/me/versions/N`` with
``Authorization: Bearer TOKEN`` instead of a cookie (no form, so no CSRF to forge).

After an upload the version is built and checked by ``python -m participants.admission``,
a process of its own, one at a time, taking the participants in turn (:class:`Builder`). One
upload of each participant waits (a newer one replaces it) and uploads are held to a quota
(``uploads_per_hour``, ``uploads_per_day``); the upload's answer says both, and the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import glob
import hashlib
import hmac
import html
import ipaddress
import json
import re
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web

from participants.admission import refuse_pending, roster_limits, upload_quota
from participants.fairness import Pauses
from participants.final import read_plan
from participants.roster import (
    ORGANIZER,
    PostgresRoster,
    QuotaError,
    Roster,
    RosterError,
    Version,
    replaced_reason,
    split_bot,
)
from participants.unpack import Bounds, UploadError, check_manifest
from server.logging import get_logger
from server.storage.replay.faults import Fault, fault_words, is_fault
from server.storage.replay.format import ReplayError
from server.storage.replay.reader import read_replay
from server.transport.pool import file_part
from server.viewer.pages import render_html
from server.web.board import download_name, fault_text

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
"""The viewer's (as server.web.app's pages, without a connection back: a replay page needs none)."""

log = get_logger()

SESSION_COOKIE = "craits_session"
LOGIN_COOKIE = "craits_login"
SESSION_S = 14 * 24 * 3600
SESSION_SHAPE = re.compile(r"^[A-Za-z0-9_-]{43}$")
"""A session cookie's shape (:meth:`Roster.open_session`'s secret): anything else is not looked up."""
MAX_FAILURES = 10
"""Wrong tokens from one address before it is refused for :data:`LOCKOUT_S`."""
LOCKOUT_S = 300.0
FAILURE_DELAY_S = 0.25
"""Each wrong token from an address waits this much longer than the one before (at most 5 s)."""
OUTPUT_SHOWN = 256 * 1024
GAME_MARK = re.compile(rb"^\[craits: game (\S+)\]$", re.MULTILINE)
"""The line a kept bot's log gets as each of its games starts (server.transport.launcher)."""
e = html.escape


def is_public(host: str) -> bool:
    """Whether a listening address is reachable from other machines (not loopback)."""
    if host in ("localhost", ""):
        return host == ""
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


def proxy_network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """A trusted proxy's address or network (``127.0.0.1``, ``10.0.0.0/8``); ValueError otherwise."""
    return ipaddress.ip_network(text.strip(), strict=False)


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def game_output(log_dir: Path, bot: str, game_id: str, seat: int) -> str | None:
    """``bot``'s own output during ``game_id``: from its kept process's log (split at the
    game marks), or from the game's own log when it was launched for that game only."""
    if not log_dir.is_dir():
        return None
    parts = []  # (a kept process that ended as the game began was replaced in it: both have a part)
    for path in sorted(log_dir.glob(f"{glob.escape(file_part(bot))}-*.log")):
        data = path.read_bytes()
        marks = list(GAME_MARK.finditer(data))
        for i, mark in enumerate(marks):
            if mark.group(1).decode(errors="replace") == game_id:
                end = marks[i + 1].start() if i + 1 < len(marks) else len(data)
                parts.append(data[mark.end():end].decode("utf-8", "replace").strip("\n"))
    if parts:
        return "\n".join(p for p in parts if p)
    alone = log_dir / f"{game_id}-seat{seat}.log"
    return alone.read_text(encoding="utf-8", errors="replace") if alone.is_file() else None


FAULTS_SHOWN = 200


def seat_faults(replay: str | None, seat: int) -> list[tuple[int, str]]:
    """(decision number, what went wrong) at each of ``seat``'s faults, from the game's replay
    (none when it has none): :func:`server.storage.replay.faults.is_fault`'s faults."""
    if not replay:
        return []
    try:
        loaded = read_replay(replay)
    except (OSError, ReplayError):
        return []
    return [(int(r["n"]), fault_words(r)) for r in loaded.decisions if r["seat"] == seat and is_fault(r)]


class Builder:
    """Builds and checks the versions waiting for it, in a process of its own, one run at a
    time; started again when an upload came in meanwhile, or when the process died with
    versions still waiting (it builds an interrupted version again, a few times at most). If it
    dies :data:`CRASHES` times in a row, the versions still waiting are refused with what it
    said, so nobody waits for a build that will not come."""

    CRASHES = 5

    def __init__(self, roster: Path, module: str = "participants.admission",
                 give_up: Callable[[str], None] | None = None) -> None:
        self.roster = roster
        self.module = module
        """The program run (``python -m MODULE ROSTER``): the admission, or another queue's."""
        self.give_up = give_up
        """Called (in a thread) with the reason when the process keeps dying (None: it is only logged)."""
        self.wanted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._process: asyncio.subprocess.Process | None = None

    @property
    def running(self) -> bool:
        """A run started and not yet over."""
        return self._task is not None

    def kick(self) -> None:
        self.wanted.set()
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        crashes = 0
        while self.wanted.is_set():
            self.wanted.clear()
            process = self._process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", self.module, str(self.roster),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
            out, _ = await process.communicate()
            self._process = None
            said = out.decode(errors="replace")
            log.info("participants_built", module=self.module, exit=process.returncode, said=said[-2000:])
            if process.returncode == 0:
                crashes = 0
                continue
            crashes += 1
            if crashes < self.CRASHES:
                self.wanted.set()  # (the versions it left building: the next run builds them, or refuses them)
            elif self.give_up is not None:
                last = next((line.strip() for line in reversed(said.splitlines()) if line.strip()), "")
                why = f"exit status {process.returncode}" + (f": {last[:200]}" if last else "")
                log.error("participants_builder_stopped", module=self.module, why=why)
                await asyncio.get_running_loop().run_in_executor(None, self.give_up, why)
        self._task = None

    async def close(self) -> None:
        """Stop building (the version being built stays ``building``: the next start builds it)."""
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


class ParticipantPages:
    """The pages and API above, for ``server`` (a :class:`~server.web.app.WebServer`)."""

    def __init__(self, server: Any, roster_dir: str | Path, bounds: Bounds | None = None,
                 trusted_proxies: Sequence[str] = ()) -> None:
        """``server``: the :class:`~server.web.app.WebServer` mounting these pages (its page frame,
        title and board; not imported here: the app imports this module). ``trusted_proxies``:
        the addresses (or networks) of the reverse proxies whose ``X-Forwarded-For`` is believed."""
        self.server = server
        self.roster = Roster(roster_dir)
        self._bounds = bounds
        self.key = self.roster.secret()
        self.builder = Builder(self.roster.folder, give_up=functools.partial(refuse_pending, self.roster))
        self.trusted = tuple(proxy_network(p) for p in trusted_proxies)

    @property
    def bounds(self) -> Bounds:
        """The upload limits: the organizer's as they are now (``craits roster set`` while the
        pages run counts from the next upload), unless fixed at construction."""
        return self._bounds or roster_limits(self.roster)[1]

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/login", self.page_login),
            web.post("/login", self.post_login),
            web.post("/logout", self.post_logout),
            web.get("/me", self.page_me),
            web.get("/p/{name}", self.page_participant),
            web.post("/p/{name}/upload", self.post_upload),
            web.post("/p/{name}/pin", self.post_pin),
            web.get("/p/{name}/versions/{number}", self.page_version),
            web.get("/p/{name}/games/{game_id}/output", self.page_output),
            web.get("/p/{name}/versions/{number}/replay", self.page_validation_replay),
            web.post("/api/submit", self.api_submit),
            web.get("/api/me/versions/{number}", self.api_version),
        ]

    def start(self) -> None:
        """Build what an earlier run left unbuilt."""
        if self.roster.pending():
            self.builder.kick()

    async def close(self) -> None:
        await self.builder.close()
    # ------------------------------------------------------------------ who is asking

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    def _sign(self, text: str) -> str:
        return hmac.new(self.key, text.encode(), hashlib.sha256).hexdigest()[:40]

    def _address(self, request: web.Request) -> str:
        """Who is guessing: the peer, or, when the peer is a proxy the organizer trusts, the
        address it was asked from (the last one in ``X-Forwarded-For`` that is not itself a
        trusted proxy: else one guesser would lock every participant out through the proxy).
        From any other peer the header is the guesser's own words, and ignored."""
        peer = request.remote or "?"
        if not self._trusted(peer):
            return peer
        for hop in reversed(request.headers.get("X-Forwarded-For", "").split(",")):
            hop = hop.strip()
            if hop and not self._trusted(hop):
                return hop if _is_address(hop) else peer  # (not an address: the proxy passed words on)
        return peer

    def _trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.trusted)

    def _secure(self, request: web.Request) -> bool:
        """Over HTTPS: directly, or through a TLS proxy the organizer trusts (its
        ``X-Forwarded-Proto``); from any other peer the header is the sender's own words."""
        if request.secure:
            return True
        return request.headers.get("X-Forwarded-Proto", "") == "https" and self._trusted(request.remote or "")

    async def _who(self, request: web.Request) -> str | None:
        """The participant (or :data:`ORGANIZER`) a request comes from: its bearer token, else its session."""
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            return await self._check_token(request, header.removeprefix("Bearer ").strip())
        cookie = request.cookies.get(SESSION_COOKIE, "")
        if not SESSION_SHAPE.match(cookie):
            return None
        who: str | None = await self._call(self.roster.session, cookie)
        return who

    async def _check_token(self, request: web.Request, token: str) -> str | None:
        """The token's owner; a wrong one waits longer each time, and too many lock the address out.
        The check is counted as a wrong one before the token is hashed (in the store, in one
        transaction with the count it passed), and given back if the token was right."""
        address = self._address(request)
        count, wait = await self._call(self.roster.count_attempt, address, MAX_FAILURES, LOCKOUT_S)
        if wait > 0:
            raise web.HTTPTooManyRequests(text=f"too many wrong tokens from your address: wait {wait:.0f} s")
        who = await self._call(self.roster.authenticate, token)
        if who is None:
            log.info("participant_token_refused", address=address, failures=count)
            await asyncio.sleep(min(5.0, FAILURE_DELAY_S * count))
            return None
        await self._call(self.roster.refund_attempt, address)
        return who

    def _csrf(self, request: web.Request) -> str:
        return self._sign("csrf|" + request.cookies.get(SESSION_COOKIE, ""))

    async def _form(self, request: web.Request) -> Any:
        """A posted form whose CSRF token is this session's; 403 otherwise."""
        form = await request.post()
        if not hmac.compare_digest(str(form.get("csrf", "")), self._csrf(request)):
            raise web.HTTPForbidden(text="this form has expired or did not come from this site: reload the page")
        return form

    async def _may_see(self, request: web.Request) -> str:
        """The participant named in the URL, when the asker is them or the organizer; else the
        same 404 as for a name nobody has."""
        name = request.match_info["name"]
        who = await self._who(request)
        if who is None or (who != name and who != ORGANIZER) or name == ORGANIZER:
            raise web.HTTPNotFound(text="no such page")
        if await self._call(self.roster.participant, name) is None:
            raise web.HTTPNotFound(text="no such page")
        return name

    # ------------------------------------------------------------------ log in and out

    async def page_login(self, request: web.Request, *, said: str = "", status: int = 200) -> web.Response:
        nonce = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(16)
        body = ('<main class="board participant"><h1>Log in</h1>'
                + (f'<p class="meta error" id="login-error">{e(said)}</p>' if said else "")
                + '<form method="post" action="/login"><label>Your token <input type="password" name="token" '
                f'id="token" autocomplete="off" required></label><input type="hidden" name="csrf" '
                f'value="{e(self._sign("login|" + nonce))}"> <button id="login">log in</button></form>'
                '<p class="meta">Your organizer gave you a token (craits-...). It stays in this form: '
                "never put it in a link.</p></main>")
        response = self.server._page(f"Log in - {self.server.title}", body, status=status)
        response.set_cookie(LOGIN_COOKIE, nonce, httponly=True, samesite="Strict", secure=self._secure(request),
                            max_age=3600)
        return response

    async def post_login(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        nonce = request.cookies.get(LOGIN_COOKIE, "")
        if not nonce or not hmac.compare_digest(str(form.get("csrf", "")), self._sign("login|" + nonce)):
            return await self.page_login(request, said="the form expired: log in again", status=403)
        try:
            who = await self._check_token(request, str(form.get("token", "")))
        except web.HTTPTooManyRequests as err:
            return await self.page_login(request, said=err.text or "too many wrong tokens", status=429)
        if who is None:
            return await self.page_login(request, said="that token is not valid here", status=403)
        session = await self._call(self.roster.open_session, who, SESSION_S)
        response = web.HTTPSeeOther("/me")
        response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="Strict",
                            secure=self._secure(request), max_age=SESSION_S)
        response.del_cookie(LOGIN_COOKIE)
        log.info("participant_logged_in", participant=who)
        raise response

    async def post_logout(self, request: web.Request) -> web.StreamResponse:
        """The session ends in the store: the cookie, if copied, opens nothing any more."""
        await self._form(request)
        if SESSION_SHAPE.match(cookie := request.cookies.get(SESSION_COOKIE, "")):
            await self._call(self.roster.end_session, cookie)
        response = web.HTTPSeeOther("/login")
        response.del_cookie(SESSION_COOKIE)
        raise response

    async def page_me(self, request: web.Request) -> web.StreamResponse:
        who = await self._who(request)
        if who is None:
            raise web.HTTPSeeOther("/login")
        if who == ORGANIZER:
            names = [p.name for p in await self._call(self.roster.participants)]
            links = "".join(f'<li><a href="/p/{quote(n)}">{e(n)}</a></li>' for n in names)
            return self.server._page("Participants", '<main class="board"><h1>Participants</h1><p><a id="dashboard-link" '
                                     f'href="/organizer">the dashboard</a></p><ul>{links}</ul></main>')
        raise web.HTTPSeeOther(f"/p/{quote(who)}")

    # ------------------------------------------------------------------ a participant's pages

    def _ratings(self) -> dict[str, dict[str, Any]]:
        board = self.server.board
        if board is None:
            return {}
        return {row["bot"]: row for row in board.snapshot.standings.get("standings", [])}

    def _games_of(self, name: str) -> list[dict[str, Any]]:
        board = self.server.board
        if board is None:
            return []
        return [g for g in board.snapshot.games if any((split_bot(b) or ("",))[0] == name for b in g["bots"])]

    async def page_participant(self, request: web.Request) -> web.Response:
        name = await self._may_see(request)
        person = await self._call(self.roster.participant, name)
        versions: list[Version] = await self._call(self.roster.versions, name)
        active = {v.bot for v in await self._call(self.roster.active)}
        ratings = self._ratings()
        bounds = await self._call(lambda: self.bounds)
        (per_hour, _), (per_day, _) = await self._call(upload_quota, self.roster)
        csrf = self._csrf(request)
        try:
            plan = await self._call(read_plan, self.roster)
        except RosterError:  # (a final.toml being written: its own page says what is wrong)
            plan = None
        rows = []
        for v in reversed(versions):
            rated = ratings.get(v.bot, {})
            late = plan is not None and v.created > plan.deadline
            rows.append(
                f'<tr class="version {e(v.status)}" data-version="{v.number}"><td><a href="/p/{quote(name)}/versions/'
                f'{v.number}">v{v.number}</a></td><td class="status">{e(v.status)}{" (playing)" if v.bot in active else ""}'
                f'{" <b class=practice>practice only: submitted after the deadline</b>" if late else ""}</td><td>{e(v.reason)}</td><td>{time.strftime("%Y-%m-%d %H:%M", time.gmtime(v.created))} UTC</td>'
                f'<td>{v.size:,} B</td><td>{rated.get("games", 0)}</td><td>{_num(rated.get("rating_ordinal"))}</td></tr>')
        admitted = [v for v in versions if v.status == "admitted"]
        options = '<option value="">the newest admitted</option>' + "".join(
            f'<option value="{v.number}"{" selected" if person.pinned == v.number else ""}>v{v.number}</option>'
            for v in admitted)
        games = self._games_of(name)[-50:][::-1]
        game_rows = []
        for g in games:
            seat = next(i for i, b in enumerate(g["bots"]) if (split_bot(b) or ("",))[0] == name)
            faults = g.get("faults", [None] * len(g["bots"]))[seat]
            game_rows.append(
                f'<tr><td><a href="/games/{quote(g["game_id"])}">{e(g["game_id"])}</a></td><td>{e(g["bots"][seat])}</td>'
                f'<td>{g["placings"][seat]}</td><td>{e(", ".join(g["bots"]))}</td>'
                f'<td>{e(str(g["statuses"][seat]))}{", " + e(fault_text(faults)) if faults else ""}</td>'
                f'<td><a href="/p/{quote(name)}/games/{quote(g["game_id"])}/output">its output</a></td></tr>')
        body = (
            f'<main class="board participant"><h1 id="who">{e(name)}</h1>'
            + "".join(f'<p class="meta error paused" data-version="{p.number}">v{p.number} {e(p.note)}</p>'
                      for p in await self._call(Pauses(self.roster).of, name))
            + f'<form method="post" action="/logout" class="inline"><input type="hidden" name="csrf" value="{csrf}">'
            '<button>log out</button></form>'
            f'<h2>Submit a new version</h2><form method="post" action="/p/{quote(name)}/upload" enctype="multipart/form-data">'
            f'<input type="hidden" name="csrf" value="{csrf}"><input type="file" name="bot" id="bot-file" required> '
            '<button id="upload">upload</button></form>'
            f'<p class="meta">A .zip or .tar.gz with a bot.toml (command = ["python", "bot.py"], and optionally '
            f'build = "..."), or one .py bot or .js strategy; at most {bounds.packed // 2**20} MB packed, '
            f'{bounds.unpacked // 2**20} MB unpacked, {bounds.files:,} files; {per_hour} uploads an hour, '
            f'{per_day} a day (a newer upload replaces one still waiting for its build).</p>'
            '<h2>Versions</h2><table id="versions"><tr><th>version</th><th>status</th><th>why</th><th>submitted</th>'
            f'<th>size</th><th>games</th><th>rating</th></tr>{"".join(rows)}</table>'
            f'<form method="post" action="/p/{quote(name)}/pin"><input type="hidden" name="csrf" value="{csrf}">'
            f'<label>play <select name="version">{options}</select></label> <button>choose</button></form>'
            f'<p class="meta" id="class-links"><a id="compare-link" href="/p/{quote(name)}/compare">compare two of your '
            f'versions</a> · <a id="scrimmage-link" href="/p/{quote(name)}/scrimmage">scrimmages</a> · <a id="final-link" href="/p/{quote(name)}/final">the deadline and the final</a></p>'
            f'<h2>Games</h2><table id="games"><tr><th>game</th><th>version</th><th>place</th><th>table</th>'
            f'<th>status</th><th></th></tr>{"".join(game_rows)}</table></main>')
        return self.server._page(f"{name} - {self.server.title}", body)

    async def page_version(self, request: web.Request) -> web.Response:
        name = await self._may_see(request)
        number = request.match_info["number"]
        version = await self._call(self.roster.version, name, int(number)) if number.isdigit() else None
        if version is None:
            raise web.HTTPNotFound(text="no such page")
        game = version.validation
        validation = ""
        if game:
            validation = (f'<h2>Validation game</h2><p class="meta">{e(game.get("game_id", ""))}: against '
                          f'{e(", ".join(game.get("seats", [])[1:]))}; {e(str(game.get("status")))}, place '
                          f'{e(str(game.get("placing")))}</p>'
                          + "".join(f"<p>{e(x)}</p>" for x in game.get("events", []))
                          + (f'<p><a id="validation-replay" href="/p/{quote(name)}/versions/{version.number}/replay">'
                             "watch it</a></p>" if game.get("replay") else "")
                          + f'<h3>Your bot\'s output</h3><pre id="validation-output">{e(game.get("output", ""))}</pre>')
        building = version.status == "building"
        body = (
            f'<main class="board participant"><p><a id="participant" href="/p/{quote(name)}">{e(name)}</a></p>'
            f'<h1>v{version.number}: <span id="status">{e(version.status)}</span></h1>'
            + (f'<p id="reason" class="meta">{e(version.reason)}</p>' if version.reason else "")
            + (f'<p class="meta" id="queue">Being built and checked: this page reloads by itself. '
               f'{e((await self._call(self.queue, version))["said"])}.</p>' if building else "")
            + f'<p class="meta">{e(version.filename)}, {version.size:,} bytes, sha256 {e(version.sha256[:16])}...; '
            f'command {e(" ".join(version.command))}</p>'
            f'<h2>Build log</h2><pre id="build-log">{e(version.build_log or "(no build step)")}</pre>'
            f'<h2>Conformance checker</h2><pre id="report">{e(version.report or "(not run)")}</pre>'
            f"{validation}</main>")
        head = '<meta http-equiv="refresh" content="2">' if building else ""
        return self.server._page(f"{name} v{version.number} - {self.server.title}", body, head=head)

    async def page_validation_replay(self, request: web.Request) -> web.Response:
        """The validation game's replay in the viewer (every hand shown: it was a game of its own)."""
        name = await self._may_see(request)
        number = request.match_info["number"]
        version = await self._call(self.roster.version, name, int(number)) if number.isdigit() else None
        folder = (self.roster.folder / "validation").resolve()
        game = version.validation if version else {}
        path = (folder / str(game.get("replay", ""))).resolve()
        if version is None or folder not in path.parents:
            raise web.HTTPNotFound(text="no such page")
        if not path.is_file() and game.get("replay_sha256") and isinstance(self.roster, PostgresRoster):
            await self._call(self.roster.fetch_kept, str(game["replay_sha256"]), path)  # (validated on another machine)
        if not path.is_file():
            raise web.HTTPNotFound(text="no such page")
        page = await self._call(lambda: render_html(read_replay(path)))
        return web.Response(text=page, content_type="text/html", headers={"Content-Security-Policy": CSP})

    async def page_output(self, request: web.Request) -> web.Response:
        name = await self._may_see(request)
        game_id = request.match_info["game_id"]
        game = self.server._recorded(game_id)
        seats = [i for i, b in enumerate((game or {}).get("bots", [])) if (split_bot(b) or ("",))[0] == name]
        if game is None or not seats:
            raise web.HTTPNotFound(text="no such page")
        bots = [game["bots"][seats[0]]]
        out_dir = self.server.board.source.out_dir if self.server.board is not None else None
        text = None
        if out_dir is not None:
            text = await self._call(game_output, Path(out_dir) / "bots", bots[0], game_id, seats[0])
        shown = "(no output kept for this game)" if text is None else text[-OUTPUT_SHOWN:] or "(it printed nothing)"
        faults = await self._call(seat_faults, game.get("replay"), seats[0])
        listed = "".join(
            f'<li><a class="fault" href="/games/{quote(game_id)}#decision={n}&amp;seat={seats[0]}">decision {n}</a>: '
            f"{e(what)}</li>" for n, what in faults[:FAULTS_SHOWN])
        rerun = ""
        if faults:  # (the command the bot page gives for this fault, with the file to download)
            file = download_name(game_id, str(game.get("replay", "")).endswith(".gz"))
            command = Fault(seats[0], bots[0], faults[0][0], faults[0][1], len(faults)).command(file)
            rerun = (f'<p class="meta">Play it again from decision {faults[0][0]} with your bot (docs/rerun.md): '
                     f'<a id="fault-replay" href="/api/games/{quote(game_id)}/replay" download="{e(file)}">download '
                     f'the replay</a>, then <code id="rerun">{e(command)}</code></p>')
        body = (f'<main class="board participant"><p><a href="/p/{quote(name)}">{e(name)}</a></p>'
                f'<h1>{e(bots[0])} in <a href="/games/{quote(game_id)}">{e(game_id)}</a></h1>'
                + (f'<h2>Its faults</h2><ul id="faults">{listed}</ul>{rerun}' if faults else "")
                + f'<h2>Its output</h2><pre id="output">{e(shown)}</pre></main>')
        return self.server._page(f"{bots[0]} in {game_id}", body)

    async def post_upload(self, request: web.Request) -> web.StreamResponse:
        name = await self._may_see(request)
        bounds = self.bounds
        form = await self._form(request.clone(client_max_size=bounds.packed + 2**20))  # (the limit as it is now)
        field = form.get("bot")
        if not isinstance(field, web.FileField):
            raise web.HTTPBadRequest(text="choose a file to upload")
        data = field.file.read(bounds.packed + 1)
        version = await self._store(name, data, field.filename)
        raise web.HTTPSeeOther(f"/p/{quote(name)}/versions/{version.number}")

    async def _store(self, name: str, data: bytes, filename: str) -> Version:
        bounds = self.bounds
        if len(data) > bounds.packed:
            raise self._too_big(len(data), bounds.packed)
        if not data:
            raise web.HTTPBadRequest(text="the upload is empty")
        try:
            await self._call(check_manifest, data, filename or "upload", bounds)
        except UploadError as err:
            raise web.HTTPBadRequest(text=str(err)) from None
        try:
            version: Version = await self._call(functools.partial(
                self.roster.submit, name, data, filename or "upload", quota=upload_quota(self.roster)))
        except QuotaError as err:
            raise web.HTTPTooManyRequests(text=str(err), headers={"Retry-After": f"{err.wait_s:.0f}"}) from None
        log.info("participant_submitted", participant=name, version=version.number, size=len(data))
        self.builder.kick()
        return version

    def queue(self, version: Version) -> dict[str, Any]:
        """Where ``version`` stands (called in a thread): the builds before it (one per other
        participant waiting, and theirs being built), the upload it replaced, the uploads left."""
        waiting = self.roster.pending()
        if self.roster.being_built() == version.id:
            waiting = []  # (its turn came)
        ahead = sorted({v.participant for v in waiting if v.participant != version.participant})
        mine = [v.number for v in waiting if v.participant == version.participant and v.number < version.number]
        theirs = self.roster.versions(version.participant)
        now = self.roster.now()
        replaced = [v.number for v in theirs if v.status == "refused" and v.reason == replaced_reason(version.number)]
        left = {per: most - sum(1 for v in theirs if v.created > now - window)
                for per, (most, window) in zip(("hour", "day"), upload_quota(self.roster), strict=True)}
        said = [f"{len(ahead) + len(mine)} build(s) before it (builds are taken in turn, one participant after another"
                + (f"; your v{mine[0]} is being built" if mine else "") + ")"]
        if replaced:
            said.append(f"it replaces {', '.join(f'v{n}' for n in replaced)}, which was waiting (one upload of "
                        "yours waits: the newest)")
        said.append(f"{max(left['hour'], 0)} upload(s) left this hour, {max(left['day'], 0)} today")
        return {"ahead": len(ahead) + len(mine), "replaced": replaced, "uploads_left": left, "said": "; ".join(said)}

    def _too_big(self, size: int, packed: int) -> web.HTTPRequestEntityTooLarge:
        return web.HTTPRequestEntityTooLarge(max_size=packed, actual_size=size,
                                             text=f"the upload is over {packed // 2**20} MB: the limit")

    async def post_pin(self, request: web.Request) -> web.StreamResponse:
        name = await self._may_see(request)
        form = await self._form(request)
        chosen = str(form.get("version", ""))
        try:
            await self._call(self.roster.pin, name, int(chosen) if chosen.isdigit() else None)
        except RosterError as err:
            raise web.HTTPBadRequest(text=str(err)) from None
        raise web.HTTPSeeOther(f"/p/{quote(name)}")

    # ------------------------------------------------------------------ the API

    async def api_submit(self, request: web.Request) -> web.Response:
        who = await self._bearer(request)
        packed = self.bounds.packed
        chunks, size = [], 0
        async for chunk in request.content.iter_chunked(2**16):  # (never more than the limit held)
            size += len(chunk)
            if size > packed or (request.content_length or 0) > packed:
                raise self._too_big(max(size, request.content_length or 0), packed)
            chunks.append(chunk)
        data = b"".join(chunks)
        version = await self._store(who, data, request.headers.get("X-Filename", "upload"))
        queue = await self._call(self.queue, version)
        return _json({"version": version.number, "status": version.status, "queue": queue,
                      "page": f"/p/{quote(who)}/versions/{version.number}"})

    async def api_version(self, request: web.Request) -> web.Response:
        who = await self._who(request)
        number = request.match_info["number"]
        version = await self._call(self.roster.version, who, int(number)) if who and number.isdigit() else None
        if version is None:
            raise web.HTTPNotFound(text="no such version")
        return _json({"version": version.number, "status": version.status, "reason": version.reason,
                      "build_log": version.build_log, "report": version.report,
                      "page": f"/p/{quote(who)}/versions/{version.number}"})

    async def _bearer(self, request: web.Request) -> str:
        header = request.headers.get("Authorization", "")
        who = await self._check_token(request, header.removeprefix("Bearer ").strip()) if header.startswith("Bearer ") else None
        if not header.startswith("Bearer "):
            raise web.HTTPUnauthorized(text="give your token: Authorization: Bearer TOKEN (craits submit does)")
        if who is None:  # (a student's first guess: a typo, a revoked or renewed token, another class's)
            raise web.HTTPUnauthorized(text="that token is not valid here: check it (CRAITS_TOKEN: the craits-... "
                                            "token your organizer gave you; renewing one ends the old one)")
        if who == ORGANIZER:
            raise web.HTTPUnauthorized(text="that is the organizer's token: use a participant's")
        return who


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(data), status=status, content_type="application/json")

