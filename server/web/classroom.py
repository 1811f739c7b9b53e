"""The pages a class or a competition runs on, beside the participants' own
(:mod:`server.web.participants`, whose log-in, sessions, CSRF and 404-for-strangers they use):

* ``/p/NAME/compare``: compare two of one's versions (:mod:`participants.compare`), and each
  comparison's verdict, refreshed while it plays;
* ``/p/NAME/final``: the deadline, the choice of the version for the final, and the final's
  results once the organizer has published them (:mod:`participants.final`);
* ``/organizer``: the teacher's dashboard (:mod:`participants.dashboard`) and its CSV.

``craits compare`` uses ``POST /api/compare`` and ``GET /api/me/compare/N`` with the bearer token.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import html
import json
import time
from typing import Any
from urllib.parse import quote

from aiohttp import web

from participants.compare import (
    HOUSE,
    MAX_GAMES,
    CompareError,
    Comparison,
    Comparisons,
    verdict_words,
)
from participants.dashboard import Row, Rubric, read_rubrics, rows, to_csv
from participants.final import Final, FinalError, progress_of, when_text
from participants.roster import ORGANIZER, RosterError, split_bot
from participants.scrimmage import Scrimmage, Scrimmages, quota
from participants.settings import DEFAULT_GAMES, DEFAULT_PANEL
from participants.tables import LEASE_S
from server.logging import get_logger
from server.storage.replay.faults import hide_others_bot_errors
from server.storage.replay.reader import Replay, read_replay
from server.viewer.pages import render_html
from server.web.participants import CSP, Builder, ParticipantPages

e = html.escape
log = get_logger(component="classroom")


def _signed(value: float) -> str:
    return f"{value:+.3f}"


class ClassroomPages:
    """The pages above, for the participants' pages ``pages``."""

    def __init__(self, pages: ParticipantPages) -> None:
        self.pages = pages
        self.server = pages.server
        self.roster = pages.roster
        self.comparisons = Comparisons(self.roster)
        self.final = Final(self.roster)
        self.comparer = Builder(self.roster.folder, module="participants.compare")
        self.scrimmages = Scrimmages(self.roster)
        self.scrimmager = Builder(self.roster.folder, module="participants.scrimmage")
        self._watcher: asyncio.Task[None] | None = None

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/p/{name}/compare", self.page_compare),
            web.post("/p/{name}/compare", self.post_compare),
            web.get("/p/{name}/compare/{ident}", self.page_comparison),
            web.get("/p/{name}/final", self.page_final),
            web.post("/p/{name}/final", self.post_final),
            web.get("/organizer", self.page_dashboard),
            web.get("/organizer.csv", self.dashboard_csv),
            web.get("/p/{name}/scrimmage", self.page_scrimmages),
            web.post("/p/{name}/scrimmage", self.post_scrimmage),
            web.get("/p/{name}/scrimmage/{ident}", self.page_scrimmage),
            web.get("/p/{name}/scrimmage/{ident}/{game_id}", self.page_scrimmage_replay),
            web.post("/api/scrimmage", self.api_scrimmage),
            web.get("/api/me/scrimmage/{ident}", self.api_scrimmage_get),
            web.post("/api/compare", self.api_compare),
            web.get("/api/me/compare/{ident}", self.api_comparison),
        ]

    def start(self) -> None:
        """Continue the comparisons an earlier run left unfinished, and keep looking for one
        that a player elsewhere left (its lease ran out: that process or machine stopped)."""
        if self.comparisons.pending():
            self.comparer.kick()
        if self.scrimmages.pending():
            self.scrimmager.kick()
        self._watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        """Every :data:`LEASE_S`, start this process's player for a job waiting that nobody holds
        (on another web process, its player died with its lease): someone plays every job."""
        while True:
            await asyncio.sleep(LEASE_S)
            for queue, player in ((self.comparisons, self.comparer), (self.scrimmages, self.scrimmager)):
                try:
                    if await asyncio.to_thread(queue.free_in) == 0 and not player.running:
                        player.kick()
                except RosterError as err:  # (the database away: looked at again later)
                    log.warning("job_queue_not_read", kind=queue.KIND, error=str(err))

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        await self.comparer.close()
        await self.scrimmager.close()

    def _page(self, title: str, body: str, **kwargs: Any) -> web.Response:
        return self.server._page(f"{title} - {self.server.title}", body, **kwargs)

    def _back(self, name: str) -> str:
        return f'<p><a id="participant" href="/p/{quote(name)}">{e(name)}</a></p>'

    # ------------------------------------------------------------------ version against version

    async def page_compare(self, request: web.Request, *, said: str = "", status: int = 200) -> web.Response:
        name = await self.pages._may_see(request)
        versions = [v for v in await self.pages._call(self.roster.versions, name) if v.status == "admitted"]
        jobs: list[Comparison] = await self.pages._call(self.comparisons.of, name)
        csrf = self.pages._csrf(request)

        def options(chosen: int | None) -> str:
            return "".join(f'<option value="{v.number}"{" selected" if v.number == chosen else ""}>v{v.number}</option>'
                           for v in versions)

        newest = versions[-1].number if versions else None
        older = versions[-2].number if len(versions) > 1 else None
        house = "".join(f'<label><input type="checkbox" name="against" value="{h}"'
                        f'{" checked" if h in DEFAULT_PANEL else ""}> {h}</label> ' for h in HOUSE)
        rows = "".join(self._row(name, job) for job in jobs)
        form = ('<p class="meta">You need two admitted versions to compare.</p>' if len(versions) < 2 else
                f'<form method="post" action="/p/{quote(name)}/compare" id="compare-form">'
                f'<input type="hidden" name="csrf" value="{csrf}">'
                f'<label>old <select name="a" id="cmp-a">{options(older)}</select></label> '
                f'<label>new <select name="b" id="cmp-b">{options(newest)}</select></label> '
                f'<label>at most <input type="number" name="games" id="cmp-games" value="{DEFAULT_GAMES}" min="1" '
                f'max="{MAX_GAMES}"> games</label> '
                '<label><input type="checkbox" name="until_told" id="cmp-until" value="1" checked> stop once told apart'
                f'</label><br>against the house bots {house}<button id="compare">compare</button></form>')
        body = (f'<main class="board participant">{self._back(name)}<h1>Compare two versions</h1>'
                + (f'<p class="meta error" id="compare-error">{e(said)}</p>' if said else "")
                + '<p class="meta">Both versions play the same deals, each in every seat, against the same house '
                  'bots; only the version differs. The interval is valid however often you look at it, so stop '
                  'whenever it has told them apart.</p>'
                + form
                + '<h2>Your comparisons</h2><table id="comparisons"><tr><th>#</th><th>versions</th><th>status</th>'
                  f'<th>games</th><th>verdict</th></tr>{rows}</table></main>')
        return self._page(f"{name}: compare", body, status=status)

    def _row(self, name: str, job: Comparison) -> str:
        s = job.summary()
        return (f'<tr><td><a href="/p/{quote(name)}/compare/{job.id}">{job.id}</a></td><td>v{job.b} against v{job.a}'
                f'</td><td>{e(job.status)}</td><td>{s.games}</td>'
                f'<td>{e(verdict_words(s.verdict, job.a, job.b, s.points.low, s.points.high))}</td></tr>')

    async def post_compare(self, request: web.Request) -> web.StreamResponse:
        name = await self.pages._may_see(request)
        form = await self.pages._form(request)
        try:
            job = await self._ask(name, {"a": form.get("a"), "b": form.get("b"), "games": form.get("games"),
                                         "until_told": bool(form.get("until_told")), "against": form.getall("against", [])})
        except RosterError as err:
            return await self.page_compare(request, said=str(err), status=400)
        raise web.HTTPSeeOther(f"/p/{quote(name)}/compare/{job.id}")

    async def _ask(self, name: str, asked: dict[str, Any]) -> Comparison:
        def number(key: str) -> int:
            value = str(asked.get(key, "")).strip().removeprefix("v")
            if not value.isdigit():
                raise CompareError(f"{key}: a version number, got {asked.get(key)!r}")
            return int(value)

        panel = [str(p) for p in asked.get("against") or DEFAULT_PANEL]
        job: Comparison = await self.pages._call(
            lambda: self.comparisons.ask(name, number("a"), number("b"), games=number("games") if asked.get("games")
                                         else DEFAULT_GAMES, until_told=bool(asked.get("until_told", True)),
                                         panel=panel))
        self.comparer.kick()
        return job

    async def page_comparison(self, request: web.Request) -> web.Response:
        name = await self.pages._may_see(request)
        job = await self._job(name, request.match_info["ident"])
        s = job.summary()
        going = job.status in ("waiting", "running")
        body = (f'<main class="board participant">{self._back(name)}'
                f'<p><a href="/p/{quote(name)}/compare">all comparisons</a></p>'
                f'<h1>v{job.b} against v{job.a}</h1><p><b id="verdict" class="verdict" data-verdict="{e(s.verdict)}">'
                f'{e(verdict_words(s.verdict, job.a, job.b, s.points.low, s.points.high))}</b></p>'
                f'<p class="meta"><span id="cmp-status">{e(job.status)}</span>{": " + e(job.message) if job.message else ""}'
                f'; <span id="cmp-games">{s.games}</span> games ({s.deals} deals, every seat) of at most {job.games}, '
                f'against {e(", ".join(job.panel))}{"; stops once told apart" if job.until_told else ""}.</p>'
                '<table id="differences"><tr><th></th><th>v' + str(job.b) + ' - v' + str(job.a) + '</th>'
                '<th>interval</th><th></th></tr>'
                f'<tr id="placing"><td>average placing</td><td>{_signed(s.placing.mean)}</td>'
                f'<td>{_signed(s.placing.low)} .. {_signed(s.placing.high)}</td>'
                '<td>95 %, valid at every look, its ends ruled out; below 0: the new version places better</td></tr>'
                f'<tr id="points"><td>average points</td><td>{s.points.mean:+.1f}</td>'
                '<td>-</td><td>a plain average, no interval (the verdict is on placing); below 0: fewer points, '
                'better</td></tr></table>'
                + (f'<p class="meta">Faults: v{job.a} in {s.a_faults} games, v{job.b} in {s.b_faults}.</p>'
                   if s.a_faults or s.b_faults else "")
                + ('<p class="meta">Playing: this page reloads by itself.</p>' if going else "") + "</main>")
        head = '<meta http-equiv="refresh" content="2">' if going else ""
        return self._page(f"{name}: v{job.b} against v{job.a}", body, head=head)

    async def _job(self, name: str, ident: str) -> Comparison:
        job: Comparison | None = await self.pages._call(self.comparisons.get, int(ident)) if ident.isdigit() else None
        if job is None or job.participant != name:
            raise web.HTTPNotFound(text="no such page")
        return job

    async def api_compare(self, request: web.Request) -> web.Response:
        who = await self.pages._bearer(request)
        try:
            job = await self._ask(who, await _asked(request, '{"a": 1, "b": 2, "games": 120}'))
        except RosterError as err:
            return _json({"error": str(err)}, 400)
        return _json(job.to_dict())

    async def api_comparison(self, request: web.Request) -> web.Response:
        who = await self.pages._bearer(request)
        job = await self._job(who, request.match_info["ident"])
        return _json(job.to_dict())

    # ------------------------------------------------------------------ scrimmages

    async def page_scrimmages(self, request: web.Request, *, said: str = "", status: int = 200) -> web.Response:
        name = await self.pages._may_see(request)
        active = await self.pages._call(self.roster.active)
        jobs: list[Scrimmage] = await self.pages._call(self.scrimmages.involving, name)
        used = await self.pages._call(self.scrimmages.used, name)
        limit = await self.pages._call(quota, self.roster)
        mine = next((v for v in active if v.participant == name), None)
        others = [v.participant for v in active if v.participant != name]
        choices = "".join(f'<option value="{e(o)}">{e(o)}</option>' for o in others) + "".join(
            f'<option value="{h}">house {h}</option>' for h in HOUSE)
        form = ('<p class="meta">You need an admitted version to play scrimmages.</p>' if mine is None else
                f'<form method="post" action="/p/{quote(name)}/scrimmage" id="scrimmage-form">'
                f'<input type="hidden" name="csrf" value="{self.pages._csrf(request)}">'
                f'<label>against <select name="against" id="scrim-against" multiple size="5">{choices}</select></label> '
                f'<label><input type="number" name="games" id="scrim-games" value="4" min="1" max="{limit}"> games'
                '</label> <button id="scrimmage">play</button></form>')
        rows = "".join(
            f'<tr><td><a href="/p/{quote(name)}/scrimmage/{j.id}">{j.id}</a></td><td>{e(j.participant)}</td>'
            f'<td>{e(", ".join(j.seats))}</td><td>{e(j.status)}</td><td>{len(j.results)} of {j.games}</td></tr>'
            for j in jobs)
        body = (f'<main class="board participant">{self._back(name)}<h1>Scrimmages</h1>'
                + (f'<p class="meta error" id="scrimmage-error">{e(said)}</p>' if said else "")
                + '<p class="meta">Unrated games against the bots you choose (other participants\' playing versions '
                  f'or house bots), played when the ladder leaves room. You have <span id="quota-left">'
                  f'{max(limit - used, 0)}</span> of {limit} games left this hour.</p>'
                + form + '<h2>Your scrimmages</h2><table id="scrimmages"><tr><th>#</th><th>asked by</th><th>table</th>'
                  f'<th>status</th><th>games</th></tr>{rows}</table></main>')
        return self._page(f"{name}: scrimmages", body, status=status)

    async def post_scrimmage(self, request: web.Request) -> web.StreamResponse:
        name = await self.pages._may_see(request)
        form = await self.pages._form(request)
        try:
            job = await self._scrimmage(name, {"against": form.getall("against", []), "games": form.get("games")})
        except RosterError as err:
            return await self.page_scrimmages(request, said=str(err), status=400)
        raise web.HTTPSeeOther(f"/p/{quote(name)}/scrimmage/{job.id}")

    async def _scrimmage(self, name: str, asked: dict[str, Any]) -> Scrimmage:
        games = str(asked.get("games") or "").strip()
        if not games.isdigit():
            raise CompareError(f"games: a whole number, got {asked.get('games')!r}")
        against = [str(a) for a in asked.get("against") or []]
        job: Scrimmage = await self.pages._call(self.scrimmages.ask, name, against, int(games))
        self.scrimmager.kick()
        return job

    async def _scrimmage_of(self, name: str, ident: str) -> Scrimmage:
        job: Scrimmage | None = await self.pages._call(self.scrimmages.get, int(ident)) if ident.isdigit() else None
        if job is None or name not in job.participants():
            raise web.HTTPNotFound(text="no such page")
        return job

    async def page_scrimmage(self, request: web.Request) -> web.Response:
        name = await self.pages._may_see(request)
        job = await self._scrimmage_of(name, request.match_info["ident"])
        going = job.status in ("waiting", "running")
        rows = "".join(
            f'<tr class="scrim-game"><td><a href="/p/{quote(name)}/scrimmage/{job.id}/{quote(g["game_id"])}">'
            f'{e(g["game_id"])}</a></td>'
            + "".join(f"<td>{e(bot)}: {place}</td>" for bot, place in zip(g["bots"], g["placings"], strict=True))
            + "</tr>" for g in job.results)
        body = (f'<main class="board participant">{self._back(name)}'
                f'<p><a href="/p/{quote(name)}/scrimmage">all scrimmages</a></p>'
                f'<h1>Scrimmage {job.id}: <span id="scrim-status">{e(job.status)}</span></h1>'
                f'<p class="meta">Asked by {e(job.participant)}: {job.games} games at {e(", ".join(job.seats))}; '
                f'unrated (not in the ladder\'s ratings).{" " + e(job.message) if job.message else ""}</p>'
                f'<table id="scrim-games"><tr><th>game (replay)</th><th colspan="5">places</th></tr>{rows}</table>'
                + ('<p class="meta">Playing: this page reloads by itself.</p>' if going else "") + "</main>")
        head = '<meta http-equiv="refresh" content="2">' if going else ""
        return self._page(f"scrimmage {job.id}", body, head=head)

    async def page_scrimmage_replay(self, request: web.Request) -> web.Response:
        name = await self.pages._may_see(request)
        job = await self._scrimmage_of(name, request.match_info["ident"])
        game_id = request.match_info["game_id"]
        if game_id not in {g["game_id"] for g in job.results}:
            raise web.HTTPNotFound(text="no such page")
        try:
            page = await self.pages._call(lambda: render_html(_own_errors(read_replay(self.scrimmages.replay_file(job, game_id)),
                                                                          name)))
        except (OSError, ValueError):
            raise web.HTTPNotFound(text="this game's replay is not kept") from None
        return web.Response(text=page, content_type="text/html", headers={"Content-Security-Policy": CSP})

    async def api_scrimmage(self, request: web.Request) -> web.Response:
        who = await self.pages._bearer(request)
        try:
            job = await self._scrimmage(who, await _asked(request, '{"against": ["bob", "random"], "games": 4}'))
        except RosterError as err:
            return _json({"error": str(err)}, 400)
        return _json(_scrimmage_json(job))

    async def api_scrimmage_get(self, request: web.Request) -> web.Response:
        who = await self.pages._bearer(request)
        return _json(_scrimmage_json(await self._scrimmage_of(who, request.match_info["ident"])))

    # ------------------------------------------------------------------ the deadline and the final

    async def page_final(self, request: web.Request, *, said: str = "", status: int = 200) -> web.Response:
        name = await self.pages._may_see(request)
        try:
            plan = await self.pages._call(self.final.plan)
        except FinalError as err:
            plan, said = None, said or str(err)
        if plan is None:
            body = (f'<main class="board participant">{self._back(name)}<h1>The final</h1>'
                    f'<p id="final-none" class="meta">{e(said) or "No final is planned."}</p></main>')
            return self._page(f"{name}: the final", body, status=status)
        versions = await self.pages._call(self.roster.versions, name)
        past = await self.pages._call(self.roster.now) >= plan.deadline_for(name)  # (the roster's clock)
        lines = []
        for v in reversed(versions):
            late = v.created > plan.deadline_for(name)
            lines.append(f'<li data-version="{v.number}">v{v.number} ({e(v.status)})'
                         f'{" <b class=practice>practice only: submitted after the deadline</b>" if late else ""}</li>')
        if past:
            try:
                entries = await self.pages._call(self.final.snapshot)
                if entries is None:  # (another participant's extension is still to come: as things stand)
                    entries = await self.pages._call(self.final.entrants_now)
            except FinalError as err:
                entries, said = [], said or str(err)
            mine = next((x for x in entries or [] if x.participant == name), None)
            why = "" if mine or entries is None else next(
                (p.why for p in await self.pages._call(self.final.field) if p.participant == name), "")
            entered = (f'Your version in the final: <b id="final-version">v{mine.number}</b>' if mine else
                       '<span id="final-version">You have no version in the final'
                       + (f": {e(_to_them(why.removeprefix('left out: ')))}" if why else "") + ".</span>")
            choose = ""
        else:
            entries = await self.pages._call(self.final.entrants_now)
            mine = next((x for x in entries if x.participant == name), None)
            chosen = await self.pages._call(self.final.choice, name)
            admitted = [v for v in versions if v.status == "admitted"]
            options = '<option value="">the one I play on the ladder</option>' + "".join(
                f'<option value="{v.number}"{" selected" if v.number == chosen else ""}>v{v.number}</option>'
                for v in admitted)
            entered = (f'If the deadline were now, your version in the final would be <b id="final-version">'
                       f'v{mine.number}</b>.' if mine else '<span id="final-version">You have no admitted version '
                       'yet: nothing of yours would enter the final.</span>')
            choose = (f'<form method="post" action="/p/{quote(name)}/final"><input type="hidden" name="csrf" '
                      f'value="{self.pages._csrf(request)}"><label>enter <select name="version" id="final-choice">'
                      f'{options}</select></label> <button id="final-choose">choose</button></form>')
        results = await self.pages._call(self.final.results_for, name)
        shown = ('<p id="final-results" class="meta">The results are not published yet.</p>' if results is None else
                 '<h2>Results</h2><table id="final-results"><tr><th>rank</th><th>bot</th><th>games</th>'
                 '<th>average placing</th><th>rating</th></tr>' + "".join(
                     f'<tr><td>{r["rank"]}</td><td>{e(r["bot"])}</td><td>{r["games"]}</td><td>{_two(r.get("avg_placing"))}</td>'
                     f'<td>{_two(r.get("rating_ordinal"))}</td></tr>' for r in results.get("standings", [])) + "</table>"
                 + ("" if results.get("complete") else
                    f'<p class="meta" id="final-progress">So far{_progress_text(progress_of(results))}.</p>'))
        body = (f'<main class="board participant">{self._back(name)}<h1>The final</h1>'
                + (f'<p class="meta error" id="final-error">{e(said)}</p>' if said else "")
                + f'<p>Deadline: <b id="deadline">{e(when_text(plan.deadline_for(name)))}</b>'
                  f'{" (passed)" if past else ""}. A version submitted after it plays on the ladder as practice '
                  'only.</p>'
                + f"<p>{entered}</p>{choose}<ul id=final-versions>{''.join(lines)}</ul>{shown}</main>")
        return self._page(f"{name}: the final", body, status=status)

    async def post_final(self, request: web.Request) -> web.StreamResponse:
        name = await self.pages._may_see(request)
        form = await self.pages._form(request)
        chosen = str(form.get("version", ""))
        try:
            await self.pages._call(self.final.choose, name, int(chosen) if chosen.isdigit() else None)
        except RosterError as err:
            return await self.page_final(request, said=str(err), status=400)
        raise web.HTTPSeeOther(f"/p/{quote(name)}/final")


    # ------------------------------------------------------------------ the teacher's dashboard

    async def _organizer(self, request: web.Request) -> None:
        """Only the organizer: anyone else gets the same 404 as for a page that does not exist."""
        if await self.pages._who(request) != ORGANIZER:
            raise web.HTTPNotFound(text="no such page")

    async def _table(self) -> tuple[list[Row], list[Rubric], str]:
        board = self.server.board
        games = list(board.snapshot.games) if board is not None else []
        standings = list(board.snapshot.standings.get("standings", [])) if board is not None else []
        ratings = dict(await self.server._board_call(board.ratings)) if board is not None else {}
        said = ""
        try:
            rubrics = await self.pages._call(read_rubrics, self.roster)
        except RosterError as err:
            rubrics, said = [], str(err)
        table = await self.pages._call(rows, self.roster, games, standings, rubrics, ratings)
        return table, rubrics, said

    async def page_dashboard(self, request: web.Request) -> web.Response:
        await self._organizer(request)
        table, rubrics, said = await self._table()
        try:
            plan = await self.pages._call(self.final.plan)
        except FinalError as err:
            plan, said = None, said or str(err)
        past = plan is not None and await self.pages._call(self.roster.now) >= plan.deadline
        heads = "".join(f"<th>{e(r.name)}<br><small>{r.confidence:.0%}, {r.games}+ games</small></th>" for r in rubrics)
        lines = []
        for row in table:
            verdicts = "".join(
                f'<td class="verdict {v.verdict}" title="{v.games} games'
                + (f", placing gap {v.mean:+.2f} ({v.low:+.2f} .. {v.high:+.2f})" if v.mean is not None else "")
                + f'">{v.verdict} ({v.games})</td>' for v in row.verdicts)
            when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(row.last_submission)) if row.last_submission else "-"
            lines.append(
                f'<tr data-name="{e(row.name)}"><td><a href="/p/{quote(row.name)}">{e(row.name)}</a>'
                f'{" (revoked)" if row.revoked else ""}</td><td>{e(row.team)}</td>'
                f'<td>{"yes" if row.submitted else "no"}</td><td>{e(row.latest)}</td><td>{e(row.playing)}</td>'
                f'<td class="in-final" title="{e(row.in_final)}">{e(row.final)}'
                f'{" <small>(" + e(row.in_final.partition(":")[0]) + ")</small>" if row.in_final else ""}</td>'
                f'<td>{row.games}</td>'
                f'<td class="faulty">{"-" if row.faults_per_game is None else f"{row.games_with_faults} ({row.faults_per_game:.0%})"}</td>'
                f'<td>{"-" if row.rating is None else f"{row.rating:.2f}"}</td><td>{row.rank or "-"}</td>'
                f'<td>{when}</td>{verdicts}</tr>')
        deadline = ("No final is planned (final.toml)." if plan is None else
                    f"Deadline {e(plan.deadline_text)}: " + ("passed; the final column is the snapshot taken then, "
                                                            "and each row counts the games played up to its "
                                                            "participant's deadline (the CSV stays the same)."
                                                            if past else "to come; the final column is what would "
                                                            "enter if it were now."))
        log = await self.pages._call(self.final.deadline_log) if plan is not None else []
        progress = await self.pages._call(self.final.progress)
        changes = ('<h2>Deadline changes</h2><ul id="deadline-log">' + "".join(
            f"<li>{e(change.text())}</li>" for change in log) + "</ul>") if log else ""
        left_out = [row for row in table if row.in_final.startswith("left out")]
        out_list = ('<h2>Left out of the final</h2><ul id="left-out">' + "".join(
            f'<li data-name="{e(row.name)}">{e(row.name)}: {e(row.in_final.removeprefix("left out: "))}</li>'
            for row in left_out) + "</ul>") if left_out else ""
        body = ('<main class="board"><h1>Dashboard</h1>'
                + (f'<p class="meta error" id="dashboard-error">{e(said)}</p>' if said else "")
                + (f'<p class="meta error" id="plan-note">{e(plan.note)}</p>' if plan is not None and plan.note else "")
                + f'<p class="meta" id="dashboard-deadline">{deadline} Results of the final: '
                  f'{"published" if self.final.published else "hidden from the participants"}'
                  f'{_progress_text(progress)}.</p>'
                + '<p><a id="csv" href="/organizer.csv" download>download as CSV</a></p>'
                '<table id="dashboard"><tr><th>participant</th><th>team</th><th>submitted</th><th>latest</th>'
                '<th>playing</th><th>final</th><th>games</th><th>games with faults</th><th>rating</th><th>rank</th>'
                f'<th>last submission (UTC)</th>{heads}</tr>{"".join(lines)}</table>{out_list}{changes}'
                '<p class="meta">Games with faults: games in which the bot timed out, had an answer refused, a bot '
                'error or a default move, or was disconnected (the board counts them the same way). '
                'A rubric passes when the whole 95 % (or its stated) anytime-valid interval of the '
                'placing gap is below 0 over at least its number of games, fails when it is above 0, and is '
                'undecided otherwise. Games, faults and ratings are the ladder\'s, over all of a participant\'s '
                'versions and their own bot connected with their token (rating and rank: the version playing, '
                'else their own bot).</p></main>')
        return self._page("Dashboard", body)

    async def dashboard_csv(self, request: web.Request) -> web.Response:
        await self._organizer(request)
        table, rubrics, _ = await self._table()
        stamp = time.strftime("%Y%m%d-%H%M", time.gmtime())
        return web.Response(text=to_csv(table, rubrics), content_type="text/csv", headers={
            "Content-Disposition": f'attachment; filename="dashboard-{stamp}.csv"'})


async def _asked(request: web.Request, example: str) -> dict[str, Any]:
    """An API request's JSON object; a :class:`RosterError` (a 400 with the reason) otherwise."""
    try:
        asked = await request.json()
    except ValueError:
        asked = None
    if not isinstance(asked, dict):
        raise RosterError(f"send a JSON object, like {example}")
    return asked


def _own_errors(replay: Replay, name: str) -> Replay:
    """A game against classmates as ``name`` may see it: their bot errors' texts left out."""
    seats = {i for i, seat in enumerate(replay.header["seats"]) if (split_bot(str(seat.get("bot", ""))) or ("",))[0] == name}
    return dataclasses.replace(replay, records=tuple(hide_others_bot_errors(list(replay.records), seats)))


def _scrimmage_json(job: Scrimmage) -> dict[str, Any]:
    return {"id": job.id, "seats": list(job.seats), "games": job.games, "status": job.status, "message": job.message,
            "results": list(job.results)}


def _to_them(why: str) -> str:
    """A reason written for the organizer ("their own bot played ..."), said to the participant."""
    return why.replace("their ", "your ")


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(data), status=status, content_type="application/json")


def _progress_text(progress: tuple[int, int, bool] | None) -> str:
    """How far the final has been played, as its results say (every web process reads the same)."""
    if progress is None:
        return ""
    recorded, scheduled, complete = progress
    return f": {recorded} of {scheduled} games recorded" + (" (complete)" if complete else ", still playing or stopped")


def _two(value: Any) -> str:
    """A standing's number as the board shows it (2.39, not 2.388889); "-" when there is none."""
    return "-" if value is None else f"{value:.2f}" if isinstance(value, (int, float)) else e(str(value))
