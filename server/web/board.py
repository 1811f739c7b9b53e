"""What the pages show of a tournament or a ladder, read from its store.

A :class:`Board` reads through the store interface only (``results()``, ``games()``,
``counts()``, ``tournament()``), so it works with the SQLite store of an output folder
(:func:`folder_source`) and with a PostgreSQL store (:func:`postgres_source`, where the
replays are in the database too). It is refreshed on one thread of its own (SQLite
connections stay on the thread that opened them, and the referee's event loop never waits for
a query): :meth:`Board.refresh` opens its store on first use, looks at the counts, and
rebuilds the snapshot only when a game was recorded or scheduled, reading only what is new
(:class:`_Books`): a competition's 30,000th game costs the board what its 30th did.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from server.errors import UserError
from server.storage.store import GameSlot, Store, StoreError
from server.transport import presence
from tournaments.standings import Standings, Tally, faulty_games, seat_faults

JsonDict = dict[str, Any]
T = TypeVar("T")

FAULTS_LOCATED = 50
"""A bot page locates its most recent faults in their replays (a bot that faulted in every one
of ten thousand games is not made to wait for ten thousand files)."""
RATE_WINDOW_S = 60.0
"""The games-per-second rate is measured over this much recent time."""
GONE_SHOWN_S = 3600.0
"""A worker found gone (killed) is named on the board this long."""


@dataclass(frozen=True, slots=True)
class BoardSource:
    """How to read one tournament or ladder: open its store (on the board's thread) and
    compute its standings (the tournament's or the ladder's rules): ``new_tally(store)`` is
    an empty :class:`~tournaments.standings.Tally` of its bots, ``standings(tally,
    scheduled)`` the standings of the games added to it."""

    name: str
    kind: str
    """"tournament" or "ladder"."""
    out_dir: Path | None
    open_store: Callable[[], Any]
    new_tally: Callable[[Any], Tally]
    standings: Callable[[Tally, int], Standings]
    bots: Callable[[Any], Sequence[str]]
    replays_in_store: bool = False
    """The replays are read from the store (PostgreSQL), not from the output folder."""
    note: str = ""
    """Said on the board under the live games (where the others are played)."""
    goal_rounds: int = 0
    """A ladder run with ``--rounds N``: the rounds it will have played when it stops (0: no
    end, so the board draws no bar for it)."""


@dataclass(slots=True)
class Snapshot:
    standings: JsonDict = field(default_factory=dict)
    """The standings document without its head to head (the board's page and stream: rows
    for every bot, not bots squared cells that no page shows)."""
    table: Standings | None = None
    """The standings themselves, for :meth:`document`."""
    progress: JsonDict = field(default_factory=dict)
    games: list[JsonDict] = field(default_factory=list)
    """Recorded games, schedule order."""
    by_id: dict[str, JsonDict] = field(default_factory=dict)
    pending_seeds: frozenset[int] = frozenset()

    def document(self) -> JsonDict:
        """The whole standings document, head to head included (``/api/standings``, as
        ``standings.json``)."""
        return self.standings if self.table is None else self.table.to_dict()


class _Books:
    """What a board has read of its store: the schedule, and the recorded games that are
    *settled* (every game before them in the schedule is recorded too), added to a tally in
    schedule order. A refresh reads only the schedule's new games and the results after the
    settled ones, so it costs the same after 30,000 games as after 30."""

    def __init__(self, tally: Tally, bots: list[str]) -> None:
        self.tally = tally
        self.bots = bots
        self.slots: list[GameSlot] = []
        """The schedule, in order."""
        self.slot_by_id: dict[str, GameSlot] = {}
        self.games: list[JsonDict] = []
        """The settled games' rows for the pages: those of ``slots[:len(games)]`` (the results
        themselves are not kept: the tally, the rows and the ratings hold what is shown)."""
        self.ratings: dict[str, list[JsonDict]] = {}
        """Each bot's rating after each of its settled games (``rating_history``'s entries)."""
        self.table_games: Counter[int] = Counter()
        """Games in the schedule per table (a ladder's table is a round)."""
        self.table_settled: Counter[int] = Counter()
        self.tables_done = 0
        """Tables whose every game is settled: a ladder's rounds played."""

    def extend(self, slots: Sequence[GameSlot]) -> None:
        self.slots.extend(slots)
        self.slot_by_id.update((slot.game_id, slot) for slot in slots)
        self.table_games.update(slot.table for slot in slots)

    def settle(self, slot: GameSlot) -> None:
        self.table_settled[slot.table] += 1
        if self.table_settled[slot.table] == self.table_games[slot.table]:
            self.tables_done += 1

    @property
    def settled(self) -> int:
        return len(self.games)

    def after(self) -> int:
        """The schedule position after which results are still to be settled."""
        return self.slots[self.settled - 1].ordinal if self.settled else -1


class Board:
    """The snapshot of one tournament, refreshed from its store (see the module docstring)."""

    def __init__(self, source: BoardSource) -> None:
        self.source = source
        self.snapshot = Snapshot()
        self._store: Any = None
        self._counts: tuple[int, int] | None = None
        self._samples: deque[tuple[float, int]] = deque()
        self._ratings: dict[str, list[JsonDict]] = {}
        self._copies: dict[str, str] = {}
        self._faults: dict[str, list[Any]] = {}
        """Game id -> its replay's faults (server.storage.replay.faults): a recorded replay never changes."""
        self._copies_dir: str | None = None
        self._books: _Books | None = None
        self.version = 0

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._copies_dir is not None:
            shutil.rmtree(self._copies_dir, ignore_errors=True)
            self._copies_dir = None

    def refresh(self) -> bool:
        """Read the store again if it changed; True when the snapshot is new (its progress
        figures are updated every time)."""
        if self._store is None:
            self._store = self.source.open_store()
        store = self._store
        counts = store.counts()
        now = time.monotonic()
        self._samples.append((now, counts[0]))
        while len(self._samples) > 2 and now - self._samples[1][0] > RATE_WINDOW_S:
            self._samples.popleft()
        changed: bool = counts != self._counts
        if changed:
            self._rebuild(store, counts)
            self._counts = counts
            self.version += 1
        self.snapshot.progress = self._progress(store, counts, now)
        return changed

    def _progress(self, store: Any, counts: tuple[int, int], now: float) -> JsonDict:
        done, total = counts
        first_t, first_done = self._samples[0]
        span = now - first_t
        rate = (done - first_done) / span if span > 0 and done > first_done else 0.0
        row = store.tournament()
        finished = row is not None and row.finished_at is not None and done == total
        eta = (total - done) / rate if rate > 0 and total > done else None
        progress = {
            "name": self.source.name,
            "kind": self.source.kind,
            "done": done,
            "total": total,
            "rate": round(rate, 3),
            "eta_s": None if eta is None else round(eta, 1),
            "finished": finished,
        }
        if self.source.kind == "ladder":  # no end: rounds and games played, a bar only towards --rounds N
            progress["rounds"] = self._books.tables_done if self._books is not None else 0
            progress["goal_rounds"] = self.source.goal_rounds or None
        if hasattr(store, "gone_workers"):  # (PostgreSQL: workers on other machines, some killed)
            progress["workers_gone"] = self._gone_workers(store)
        if self.source.out_dir is not None:
            here = presence.read_file(self.source.out_dir / presence.FILENAME)
            if here is not None:
                progress["connections"] = {"bots": here.get("bots", {}), "refused": here.get("refused", [])}
        return progress

    def _gone_workers(self, store: Any) -> list[JsonDict]:
        """The workers found gone in the last hour with games of this tournament in hand (the
        organizer's command finds them: ``tournaments.distributed.find_gone_workers``)."""
        mine = f"{self.source.name}/"
        return [{"name": g.name, "host": g.host, "at": g.gone_at, "why": g.why,
                 "games": [x[len(mine):] for x in g.games if x.startswith(mine)]}
                for g in store.gone_workers(store.now() - GONE_SHOWN_S) if any(x.startswith(mine) for x in g.games)]

    def _rebuild(self, store: Any, counts: tuple[int, int]) -> None:
        """The snapshot after what changed: new games in the schedule, new results. Read
        afresh (every game read and rated again) only when the books no longer fit the
        store: bots changed, games dropped from the schedule, results removed (a resume
        that plays aborted games again)."""
        done, scheduled = counts
        bots = list(self.source.bots(store))
        books = self._books
        for fresh in (False, True):
            if fresh or books is None or books.bots != bots or scheduled < len(books.slots):
                books = self._books = _Books(self.source.new_tally(store), bots)
            if scheduled > len(books.slots):
                books.extend(store.games(after=books.slots[-1].ordinal if books.slots else -1))
            after = books.after()
            window = _consistent(lambda after=after: store.results(after=after))
            if books.settled + len(window) == done or fresh:  # (else: results removed, or one recorded meanwhile)
                break
        assert books is not None
        in_store = set(store.replay_ids()) if self.source.replays_in_store and window else set()
        rows = [self._game_row(r, books.slot_by_id.get(r.game_id), in_store) for r in window]
        settling = 0
        while (settling < len(window) and books.settled < len(books.slots)
               and window[settling].game_id == books.slots[books.settled].game_id):
            books.tally.add(window[settling])
            _rated(books.tally, window[settling], books.ratings)
            books.settle(books.slots[books.settled])
            books.games.append(rows[settling])
            settling += 1
        beyond, beyond_rows = window[settling:], rows[settling:]
        tally = books.tally
        ratings: dict[str, list[JsonDict]] = {}
        if beyond:  # recorded, but a game before them is still being played
            tally = tally.copy()
            for result in beyond:
                tally.add(result)
                _rated(tally, result, ratings)
        games = books.games + beyond_rows
        recorded = {r.game_id for r in beyond}
        table = self.source.standings(tally, scheduled)
        document = table.to_dict(head_to_head=False)
        document["faulty_games"] = faulty_games(games)  # (the faults column: games with one, as the dashboard counts)
        self.snapshot = Snapshot(
            standings=document,
            table=table,
            progress=self.snapshot.progress,
            games=games,
            by_id={g["game_id"]: g for g in games},
            pending_seeds=frozenset(s.seed for s in books.slots[books.settled:] if s.game_id not in recorded),
        )
        self._ratings = {b: books.ratings.get(b, []) + ratings.get(b, []) for b in bots}

    def _game_row(self, r: Any, slot: GameSlot | None, in_store: set[str]) -> JsonDict:
        return {
            "game_id": r.game_id,
            "ordinal": r.ordinal,
            "bots": list(r.bots),
            "totals": [str(t) if abs(t) > 2**53 else t for t in r.totals],
            "placings": list(r.placings),
            "statuses": [s.status for s in r.seats],
            "faults": [seat_faults(s) for s in r.seats],
            "aborted": r.aborted,
            "recorded": round(r.recorded_at, 3),
            "seed": None if slot is None else slot.seed,
            "replay": ("store" if r.game_id in in_store else None) if self.source.replays_in_store
            else self._replay(r.replay_path),
        }

    def _replay(self, stored: str | None) -> str | None:
        """This folder's copy of a game's replay (never a file outside it), as a path."""
        if not stored:
            return None
        out_dir = self.source.out_dir
        path = Path(stored)
        if out_dir is None:
            return str(path) if path.is_file() else None
        folder = out_dir.resolve()
        for candidate in (out_dir / "replays" / path.name, out_dir / path, path):
            if candidate.is_file() and candidate.resolve().is_relative_to(folder):
                return str(candidate)
        return None

    # ---- questions the pages ask

    def replay_file(self, game: JsonDict) -> str:
        """The path of a recorded game's replay (one with ``game["replay"]``; on the board's
        thread): the folder's file, or a copy of the store's (a recorded replay never changes)."""
        if not self.source.replays_in_store:
            return str(game["replay"])
        game_id = game["game_id"]
        path = self._copies.get(game_id)
        if path is None:
            body = self._store.replay(game_id)
            if body is None:
                raise StoreError(f"game {game_id}: its replay is not in the store")
            if self._copies_dir is None:
                self._copies_dir = tempfile.mkdtemp(prefix="craits-web-replays-")
            path = str(Path(self._copies_dir) / f"{len(self._copies)}.jsonl")
            Path(path).write_bytes(body)
            self._copies[game_id] = path
        return path

    def ratings(self) -> dict[str, list[JsonDict]]:
        """Each bot's rating after each of its games, as ``tournaments.standings.rating_history``
        gives them (call on the board's thread)."""
        return self._ratings

    def bot(self, name: str) -> JsonDict | None:
        """A bot's page: its standing, games, faults and ratings (on the board's thread)."""
        snap = self.snapshot
        row = next((r for r in snap.standings.get("standings", ()) if r["bot"] == name), None)
        if row is None:
            return None
        games = []
        faults = []
        for g in snap.games:
            if name not in g["bots"]:
                continue
            seat = g["bots"].index(name)
            entry = {
                "game_id": g["game_id"], "seat": seat, "bots": g["bots"], "total": g["totals"][seat],
                "placing": g["placings"][seat], "status": g["statuses"][seat], "aborted": g["aborted"],
                "replay": g["replay"] is not None,
            }
            games.append(entry)
            if g["faults"][seat]:
                faults.append({**entry, "faults": g["faults"][seat], "first": None, "_game": g})
        for fault in faults[-FAULTS_LOCATED:]:  # (each reads its game's replay once)
            fault["first"] = self._first_fault(fault["_game"], fault["seat"])
        for fault in faults:
            del fault["_game"]
        return {"standing": row, "games": games, "faults": faults, "ratings": self.ratings().get(name, [])}

    def _first_fault(self, game: JsonDict, seat: int) -> JsonDict | None:
        """Where the seat's first fault is in the game's replay (decision, what, the viewer's
        anchor, a command that reruns it), or None when the replay is missing or shows none."""
        from server.storage.replay import ReplayError, is_compact, read_replay
        from server.storage.replay.faults import replay_faults

        game_id = game["game_id"]
        if game.get("replay") is None:
            return None
        found = self._faults.get(game_id)
        try:
            path = self.replay_file(game)
            if found is None:
                found = self._faults[game_id] = replay_faults(read_replay(path))
        except (ReplayError, StoreError, OSError):
            return None
        fault = next((f for f in found if f.seat == seat), None)
        if fault is None:
            return None
        name = download_name(game_id, is_compact(path))
        return {"decision": fault.n, "what": fault.what, "count": fault.count, "anchor": fault.anchor(),
                "file": name, "command": fault.command(name)}

    def hidden_deal(self, game: JsonDict) -> bool:
        """True while a game with the same deal (seed) is still to be played: its full replay
        would show those cards in advance."""
        return game.get("seed") in self.snapshot.pending_seeds


def download_name(game_id: str, compact: bool = True) -> str:
    """The file name a game's replay is downloaded as (letters, digits, - _ . kept, else _),
    ending as its format's files do (format 2: ``.jsonl.gz``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in game_id) + (".jsonl.gz" if compact else ".jsonl")


def _consistent(read: Callable[[], T], tries: int = 5) -> T:
    """``read()``, again while it meets a game half-way written: a store may read its tables
    one query at a time while the tournament commits games between them."""
    for attempt in range(tries):
        try:
            return read()
        except StoreError:
            if attempt == tries - 1:
                raise
            time.sleep(0.05)
    raise AssertionError("unreachable")


def _rated(tally: Tally, result: Any, ratings: dict[str, list[JsonDict]]) -> None:
    """The ratings of ``result``'s bots after it (just added to ``tally``), as entries of
    ``rating_history``."""
    if result.aborted:
        return
    for bot in dict.fromkeys(result.bots):
        rating = tally.ratings[bot]
        ratings.setdefault(bot, []).append(
            {"game_id": result.game_id, "mu": round(rating.mu, 4), "sigma": round(rating.sigma, 4)})


def fault_text(faults: JsonDict) -> str:
    """A seat's faults in one game, in words: "timeouts 2, bot errors 3 (first: KeyError: 'x' at bot.py:9)"."""
    first = faults.get("first_bot_error")
    return ", ".join(
        f"{k.replace('_', ' ')} {v}" + (f" (first: {first})" if k == "bot_errors" and first else "")
        for k, v in faults.items() if k != "first_bot_error")


def folder_source(out_dir: Path) -> BoardSource:
    """A tournament's or a ladder's output folder, read through a read-only store (a
    :class:`UserError` now when it holds neither)."""
    from tournaments.ladder import reopen_ladder
    from tournaments.runner import TournamentError, open_tournament

    db = out_dir / Store.FILENAME
    if not db.is_file():
        raise UserError(f"{out_dir}: no {Store.FILENAME} here; is this a tournament's or a ladder's output folder?")
    try:
        with Store(db, readonly=True) as store:
            row = store.tournament()
    except StoreError as err:  # (it names the file)
        raise UserError(str(err)) from None
    except Exception as err:
        raise UserError(f"{db}: {err}") from None
    if row is None:
        raise UserError(f"{db}: no tournament is stored yet")

    def reopen(ladder: bool) -> tuple[Any, Any]:
        try:
            return reopen_ladder(out_dir) if ladder else open_tournament(out_dir, readonly=True)
        except TournamentError as err:
            raise UserError(str(err)) from None

    return _stored_source(row, reopen, out_dir=out_dir)


@dataclass(frozen=True, slots=True)
class BoardPlace:
    """Where a board reads its tournament or ladder, as plain values: a web process of its own
    (``server.web.process``) is handed this and opens the store itself (a
    :class:`BoardSource` holds functions, which do not cross to another process)."""

    out_dir: Path | None = None
    """The output folder (its SQLite store), when there is no ``url``."""
    url: str = ""
    """The PostgreSQL database."""
    name: str = ""
    """The tournament's or ladder's name in that database."""
    playing_here: bool = False
    """As :func:`postgres_source` says."""
    goal_rounds: int = 0
    """As :attr:`BoardSource.goal_rounds` says."""

    def source(self) -> BoardSource:
        """The source this place describes (a :class:`UserError` when it holds no tournament)."""
        if self.url:
            source = postgres_source(self.url, self.name, playing_here=self.playing_here)
        elif self.out_dir is None:
            raise UserError("a board needs an output folder or a PostgreSQL store")
        else:
            source = folder_source(self.out_dir)
        return dataclasses.replace(source, goal_rounds=self.goal_rounds) if self.goal_rounds else source


def _stored_source(row: Any, reopen: Callable[[bool], tuple[Any, Any]], **extra: Any) -> BoardSource:
    """The board of the stored tournament or ladder ``row``: ``reopen(ladder)`` gives its
    (config, store) each time the board reads it."""
    from tournaments.runner import LADDER_SCHEDULE, standings_tally

    ladder = row.schedule_digest == LADDER_SCHEDULE
    opened: dict[str, Any] = {}

    def open_store() -> Any:
        opened["config"], store = reopen(ladder)
        return store

    def bots(store: Any) -> Sequence[str]:  # (as ladder_standings and load_standings count them)
        names: Sequence[str] = store.bot_names() if ladder else opened["config"].bot_names
        return names

    def new_tally(store: Any) -> Tally:
        return standings_tally(opened["config"], bots(store), ladder=ladder)

    def standings(tally: Tally, scheduled: int) -> Standings:
        return tally.standings(name=opened["config"].name, games_scheduled=scheduled, by_rating=ladder)

    return BoardSource(name=row.name, kind="ladder" if ladder else "tournament", open_store=open_store,
                       new_tally=new_tally, standings=standings, bots=bots, **extra)


LIVE_HERE = (
    "Games played by craits workers on other machines show here once they are recorded: their moves are "
    "shown live only by the process that plays them (craits worker --web). The games this process plays "
    "itself are live here."
)
LIVE_ELSEWHERE = (
    "This board reads the PostgreSQL store: each game shows here once it is recorded. Its moves are shown "
    "live only by the process that plays it (craits tournament run ... --web for the games it plays itself, "
    "craits worker --web for the games a worker plays)."
)


def postgres_source(url: str, name: str, *, playing_here: bool = False) -> BoardSource:
    """The tournament or ladder ``name`` of the PostgreSQL database at ``url``, read-only (a
    :class:`UserError` now, in one line, when the database cannot be reached or holds no
    such tournament). ``playing_here``: this process plays some of its games (its local
    workers), whose moves it shows live."""
    from server.storage.postgres import PostgresStore, redact
    from tournaments.distributed import open_tournament_pg
    from tournaments.runner import TournamentError

    try:
        with PostgresStore(url, name, readonly=True, retry_s=0) as store:
            row = store.tournament()
    except StoreError as err:
        raise UserError(str(err)) from None
    if row is None:
        raise UserError(f"{redact(url)} holds no tournament or ladder named {name!r}")

    def reopen(ladder: bool) -> tuple[Any, Any]:
        try:
            config, store = open_tournament_pg(url, name, ladder=ladder, readonly=True)
        except (TournamentError, StoreError) as err:
            raise UserError(str(err)) from None
        store.retry_s = 5.0  # (the board tries again at its next refresh: a page never waits a minute)
        return config, store

    return _stored_source(row, reopen, out_dir=None, replays_in_store=True,
                          note=LIVE_HERE if playing_here else LIVE_ELSEWHERE)

