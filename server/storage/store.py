"""SQLite storage of a tournament: its schedule, every finished game, nothing half-written.

One database file holds one tournament (``<output dir>/tournament.db``). It runs
in WAL mode; a finished game is written in a single transaction (its result,
every seat's status and every hand's scores), so after a crash at any moment a
game is either fully recorded or absent, and resuming means playing the games
that have no result row. ``synchronous=NORMAL``: in WAL mode a committed game
survives any crash of the process (SIGKILL included); a power cut may lose the
last few commits, never half of one, and resume plays those games again.

Scores are stored as decimal text: Craits pressures double, so totals can pass
what a 64-bit SQLite INTEGER holds.

Tables (``schema_version`` says which layout a file has)::

    tournament  one row: name, source file text and path, schedule digest,
                settings (JSON), created_at, finished_at, deal_key (the secret the
                deals come from: never shown, see tournaments.schedule.deal_key)
    bots        name, kind, token: the tokens a resumed run must reuse
    games       the schedule: game_id, ordinal, table_no, deal, rotation, seed, seats
    results     one row per recorded game: digest, replay path, aborted reason
    seats       per recorded game and seat: bot, total, placing, status, counters
    hands       per recorded game and hand: dealer, reason, scores and pressures
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from server.spec import GameRecord

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE tournament (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    source_text TEXT NOT NULL,
    source_path TEXT NOT NULL,
    schedule_digest TEXT NOT NULL,
    settings TEXT NOT NULL,
    created_at REAL NOT NULL,
    finished_at REAL,
    deal_key TEXT
);
CREATE TABLE bots (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    token TEXT NOT NULL
);
CREATE TABLE games (
    game_id TEXT PRIMARY KEY,
    ordinal INTEGER NOT NULL UNIQUE,
    table_no INTEGER NOT NULL,
    deal INTEGER NOT NULL,
    rotation INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    seats TEXT NOT NULL
);
CREATE TABLE results (
    game_id TEXT PRIMARY KEY REFERENCES games(game_id),
    recorded_at REAL NOT NULL,
    digest TEXT NOT NULL,
    replay_path TEXT,
    lower_wins INTEGER NOT NULL,
    team_placings TEXT,
    aborted TEXT NOT NULL DEFAULT ''
);
CREATE TABLE seats (
    game_id TEXT NOT NULL REFERENCES results(game_id),
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    total TEXT NOT NULL,
    placing INTEGER NOT NULL,
    status TEXT NOT NULL,
    decisions INTEGER NOT NULL,
    timeouts INTEGER NOT NULL,
    strikes INTEGER NOT NULL,
    illegal INTEGER NOT NULL,
    malformed INTEGER NOT NULL,
    disconnects INTEGER NOT NULL,
    default_actions INTEGER NOT NULL,
    think_s REAL NOT NULL,
    transport_s REAL NOT NULL,
    bot_errors INTEGER NOT NULL DEFAULT 0,
    bot_error TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (game_id, seat)
);
CREATE TABLE hands (
    game_id TEXT NOT NULL REFERENCES results(game_id),
    number INTEGER NOT NULL,
    dealer INTEGER NOT NULL,
    reason TEXT NOT NULL,
    scores TEXT NOT NULL,
    pressures TEXT NOT NULL,
    PRIMARY KEY (game_id, number)
);
"""

COUNTERS = ("decisions", "timeouts", "strikes", "illegal", "malformed", "disconnects", "default_actions", "bot_errors")
"""Per-seat counters from ``SeatReport``, stored and summed as they are."""

_ADDED_SEAT_COLUMNS = {
    "bot_errors": "bot_errors INTEGER NOT NULL DEFAULT 0",
    "bot_error": "bot_error TEXT NOT NULL DEFAULT ''",
}
"""Columns of ``seats`` added after layout version 1 was first shipped: a file without them
gets them when opened for writing (``ALTER TABLE ... ADD COLUMN``: instant, nothing
rewritten) and reads them as their defaults when opened read-only."""


def _default_of(column: str) -> str:
    """The SQL value a column of ``_ADDED_SEAT_COLUMNS`` reads as where a file lacks it."""
    return "''" if column == "bot_error" else "0"


class StoreError(Exception):
    """The database cannot be used as asked (wrong file, other version, bad record)."""


class Unreachable(StoreError):
    """The database could not be reached (no server answered, it is starting or stopping, the
    connection dropped and the store's own retries ran out): worth waiting for, unlike one that
    refused what was asked. A SQLite file never raises it; PostgreSQL's stores and rosters do."""


@dataclass(frozen=True, slots=True)
class GameSlot:
    """One scheduled game."""

    game_id: str
    ordinal: int
    table: int
    deal: int
    rotation: int
    seed: int
    seats: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TournamentRow:
    name: str
    source_text: str
    source_path: str
    schedule_digest: str
    settings: dict[str, Any]
    created_at: float
    finished_at: float | None
    deal_key: bytes | None = field(default=None, repr=False)
    """The secret the run's deals come from (None: a run stored before deal keys, whose deals
    came from its file's seed). For the organizer's runner only: never shown."""


@dataclass(frozen=True, slots=True)
class SeatRow:
    seat: int
    bot: str
    total: int
    placing: int
    status: str
    counters: dict[str, int]
    think_s: float
    transport_s: float
    bot_error: str = ""
    """The first of the seat's bot errors, in words (``SeatReport.bot_error``)."""


@dataclass(frozen=True, slots=True)
class HandRow:
    number: int
    dealer: int
    reason: str
    scores: tuple[int, ...]
    pressures: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StoredResult:
    """A recorded game, as the standings read it."""

    game_id: str
    ordinal: int
    seats: tuple[SeatRow, ...]
    lower_wins: bool
    team_placings: tuple[int, ...] | None
    aborted: str
    digest: str
    replay_path: str | None
    seed: int | None = None
    """The deal's seed: games that share it played one deal (the rankings count it once)."""
    recorded_at: float = 0.0
    """When the game was recorded (seconds since the epoch): what a grade up to a deadline counts."""

    @property
    def bots(self) -> tuple[str, ...]:
        return tuple(s.bot for s in self.seats)

    @property
    def totals(self) -> tuple[int, ...]:
        return tuple(s.total for s in self.seats)

    @property
    def placings(self) -> tuple[int, ...]:
        return tuple(s.placing for s in self.seats)


class TournamentStore(Protocol):
    """What the runner, the ladder, the standings and the pages use of a store: ``Store``
    (SQLite, one file per tournament) and ``server.storage.postgres.PostgresStore`` (many
    tournaments and many hosts) both offer it, with the same meaning."""

    @property
    def path(self) -> Any: ...  # where the results are, for messages (a file, a database URL)

    def close(self) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: object) -> None: ...
    def create_tournament(
        self, *, name: str, source_text: str, source_path: str, schedule_digest: str, settings: dict[str, Any],
        bots: Sequence[tuple[str, str, str]], games: Iterable[GameSlot], deal_key: bytes | None = None,
    ) -> None: ...
    def record_game(self, record: GameRecord) -> None: ...
    def add_games(self, games: Iterable[GameSlot]) -> None: ...
    def drop_pending(self, game_ids: Iterable[str]) -> None: ...
    def set_bots(self, bots: Sequence[tuple[str, str, str]], source_text: str, source_path: str) -> None: ...
    def bot_names(self) -> list[str]: ...
    def forget_aborted(self) -> int: ...
    def now(self) -> float: ...
    def mark_finished(self) -> None: ...
    def tournament(self) -> TournamentRow | None: ...
    def bot_tokens(self) -> dict[str, str]: ...
    def games(self, pending_only: bool = False, after: int = -1) -> list[GameSlot]: ...
    def pending_games(self) -> list[GameSlot]: ...
    def counts(self) -> tuple[int, int]: ...
    def results(self, after: int = -1) -> list[StoredResult]: ...  # (``after``: only games later in the schedule)
    def hands(self, game_id: str) -> list[HandRow]: ...


class Store:
    """A tournament database. Use from one thread; open one per process."""

    FILENAME = "tournament.db"

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        """``readonly``: for reports (standings), which then work in a folder this process
        cannot write, e.g. a finished tournament's folder shared read-only."""
        self.path = Path(path)
        try:
            if readonly:
                self._db = self._connect_readonly()
                self._check_schema(readonly=True)
                return
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self._db.execute("PRAGMA foreign_keys = ON")
            mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._check_schema()
        except sqlite3.DatabaseError as err:
            raise StoreError(f"{self.path}: not a usable tournament database ({err})") from None
        if mode.lower() != "wal":
            raise StoreError(f"{self.path}: cannot switch the database to WAL mode (got {mode})")

    def _connect_readonly(self) -> sqlite3.Connection:
        """Read-only; where the folder cannot be written either (no room for WAL's shared
        memory file), as an immutable file: then no other process may be writing it."""
        uri = self.path.resolve().as_uri()
        try:
            db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=30.0)
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            if os.access(self.path.parent, os.W_OK):
                raise
            return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)

    @classmethod
    def in_dir(cls, directory: str | Path) -> Store:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        return cls(directory / cls.FILENAME)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_schema(self, *, readonly: bool = False) -> None:
        self._seat_columns = tuple("s." + c for c in (*COUNTERS, "bot_error"))
        """What ``results`` selects for the counters and bot_error (defaults where an old file lacks them)."""
        self._has_deal_key = True
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables and readonly:  # (a report does not set up a database: it says what the file is)
            if self.path.stat().st_size == 0:
                raise StoreError(f"{self.path}: an empty file (0 bytes), not a tournament's database")
            raise StoreError(f"{self.path}: this SQLite file is not a Craits tournament database")
        if not tables:
            self._db.executescript(f"BEGIN; {_SCHEMA} INSERT INTO schema_version VALUES ({SCHEMA_VERSION}); COMMIT;")
            return
        if "schema_version" not in tables:
            raise StoreError(f"{self.path}: this SQLite file is not a Craits tournament database")
        version = self._db.execute("SELECT version FROM schema_version").fetchone()
        if not version or version[0] != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: database layout version {version[0] if version else '?'}, "
                f"this craits reads version {SCHEMA_VERSION}"
            )
        self._has_deal_key = any(r[1] == "deal_key" for r in self._db.execute("PRAGMA table_info(tournament)"))
        if not self._has_deal_key and not readonly:  # (a file from before deal keys: its run keeps its seeds)
            self._db.execute("ALTER TABLE tournament ADD COLUMN deal_key TEXT")
            self._has_deal_key = True
        have = {r[1] for r in self._db.execute("PRAGMA table_info(seats)")}
        for column, definition in _ADDED_SEAT_COLUMNS.items():
            if column not in have and not readonly:
                self._db.execute(f"ALTER TABLE seats ADD COLUMN {definition}")
        self._seat_columns = tuple(
            ("s." + c if c in have or not readonly else _default_of(c)) for c in (*COUNTERS, "bot_error"))

    # --------------------------------------------------------------- writing

    def create_tournament(
        self,
        *,
        name: str,
        source_text: str,
        source_path: str,
        schedule_digest: str,
        settings: dict[str, Any],
        bots: Sequence[tuple[str, str, str]],
        games: Iterable[GameSlot],
        deal_key: bytes | None = None,
    ) -> None:
        """Store the tournament, its bots ``(name, kind, token)``, its secret deal key and its whole
        schedule at once."""
        existing = self.tournament()
        if existing is not None:
            raise StoreError(f"{self.path}: already holds tournament {existing.name!r}")
        with self._transaction():
            self._db.execute(
                "INSERT INTO tournament (id, name, source_text, source_path, schedule_digest, settings, created_at,"
                " deal_key) VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
                (name, source_text, source_path, schedule_digest, json.dumps(settings, sort_keys=True), time.time(),
                 None if deal_key is None else deal_key.hex()),
            )
            self._db.executemany("INSERT INTO bots (name, kind, token) VALUES (?, ?, ?)", bots)
            self._db.executemany(
                "INSERT INTO games (game_id, ordinal, table_no, deal, rotation, seed, seats) VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((g.game_id, g.ordinal, g.table, g.deal, g.rotation, g.seed, json.dumps(g.seats)) for g in games),
            )

    def record_game(self, record: GameRecord) -> None:
        """Write one finished (or aborted) game in ONE transaction: the result, every
        seat and every hand, or nothing at all."""
        try:
            self._record_game(record)
        except sqlite3.Error as err:  # a full disk, a damaged file: nothing of the game is kept
            raise StoreError(f"{self.path}: game {record.game_id} could not be recorded: {err}") from None

    def _record_game(self, record: GameRecord) -> None:
        with self._transaction():
            row = self._db.execute("SELECT seats FROM games WHERE game_id = ?", (record.game_id,)).fetchone()
            if row is None:
                raise StoreError(f"game {record.game_id!r} is not in the schedule")
            seats = json.loads(row[0])
            if len(record.seats) != len(seats) or any(r.bot != b for r, b in zip(record.seats, seats, strict=False)):
                raise StoreError(f"game {record.game_id}: the record's seats {[r.bot for r in record.seats]} are not the schedule's {seats}")
            result = record.result
            if not record.aborted and len(result.totals) != len(seats):
                raise StoreError(f"game {record.game_id}: {len(result.totals)} totals for {len(seats)} seats")
            try:
                self._db.execute(
                    "INSERT INTO results (game_id, recorded_at, digest, replay_path, lower_wins, team_placings, aborted)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.game_id,
                        time.time(),
                        record.digest,
                        None if record.replay_path is None else str(record.replay_path),
                        int(result.lower_wins),
                        None if result.team_placings is None else json.dumps(list(result.team_placings)),
                        record.aborted,
                    ),
                )
            except sqlite3.IntegrityError:
                raise StoreError(f"game {record.game_id} is already recorded") from None
            for seat, report in enumerate(record.seats):
                total = result.totals[seat] if seat < len(result.totals) else 0
                placing = result.placings[seat] if seat < len(result.placings) else 0
                self._db.execute(
                    f"INSERT INTO seats (game_id, seat, bot, total, placing, status, {', '.join(COUNTERS)},"
                    f" bot_error, think_s, transport_s) VALUES ({', '.join('?' * (len(COUNTERS) + 9))})",
                    (
                        record.game_id, seat, report.bot, str(total), placing, str(report.status),
                        *(getattr(report, name) for name in COUNTERS), report.bot_error,
                        report.think_s, report.transport_s,
                    ),
                )
            for hand in result.hands:
                self._db.execute(
                    "INSERT INTO hands (game_id, number, dealer, reason, scores, pressures) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        record.game_id, hand.number, hand.dealer, hand.reason,
                        json.dumps(list(hand.scores)), json.dumps(list(hand.pressures)),
                    ),
                )

    def add_games(self, games: Iterable[GameSlot]) -> None:
        """Append games to the schedule in one transaction (a ladder's next round)."""
        try:
            with self._transaction():
                self._db.executemany(
                    "INSERT INTO games (game_id, ordinal, table_no, deal, rotation, seed, seats)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    ((g.game_id, g.ordinal, g.table, g.deal, g.rotation, g.seed, json.dumps(g.seats)) for g in games),
                )
        except sqlite3.IntegrityError as err:
            raise StoreError(f"{self.path}: cannot add the games: {err}") from None

    def drop_pending(self, game_ids: Iterable[str]) -> None:
        """Take unplayed games out of the schedule (a recorded game is never dropped)."""
        with self._transaction():
            self._db.executemany(
                "DELETE FROM games WHERE game_id = ? AND game_id NOT IN (SELECT game_id FROM results)",
                ((i,) for i in game_ids),
            )

    def set_bots(self, bots: Sequence[tuple[str, str, str]], source_text: str, source_path: str) -> None:
        """A ladder's file was read again: store new bots ``(name, kind, token)``, the new
        kind and token of a known one, and the file's text, in one transaction."""
        with self._transaction():
            self._db.executemany(
                "INSERT INTO bots (name, kind, token) VALUES (?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, token = excluded.token",
                bots,
            )
            self._db.execute(
                "UPDATE tournament SET source_text = ?, source_path = ? WHERE id = 1", (source_text, source_path)
            )

    def bot_names(self) -> list[str]:
        """Every bot ever stored, in the order they were added."""
        return [r[0] for r in self._db.execute("SELECT name FROM bots ORDER BY rowid")]

    def forget_aborted(self) -> int:
        """Delete the aborted games' records (one transaction) so they are played again;
        returns how many. For aborts caused by the infrastructure, not by the bots."""
        with self._transaction():
            ids = [r[0] for r in self._db.execute("SELECT game_id FROM results WHERE aborted != ''")]
            for table in ("hands", "seats", "results"):
                self._db.executemany(f"DELETE FROM {table} WHERE game_id = ?", ((i,) for i in ids))
            if ids:
                self._db.execute("UPDATE tournament SET finished_at = NULL WHERE id = 1")
        return len(ids)

    def now(self) -> float:
        """Now by the clock the store's times are written with: this machine's (only this machine
        writes a SQLite file; :meth:`server.storage.postgres.PostgresStore.now` is the database's)."""
        return time.time()

    def mark_finished(self) -> None:
        with self._transaction():
            self._db.execute("UPDATE tournament SET finished_at = ? WHERE id = 1 AND finished_at IS NULL", (time.time(),))

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    # --------------------------------------------------------------- reading

    def tournament(self) -> TournamentRow | None:
        key = "deal_key" if self._has_deal_key else "NULL"
        row = self._db.execute(
            f"SELECT name, source_text, source_path, schedule_digest, settings, created_at, finished_at, {key}"
            " FROM tournament"
        ).fetchone()
        if row is None:
            return None
        try:
            settings = json.loads(row[4])
        except (TypeError, ValueError) as err:
            raise StoreError(f"{self.path}: the tournament's settings are damaged ({err})") from None
        return TournamentRow(row[0], row[1], row[2], row[3], settings, row[5], row[6],
                             None if row[7] is None else bytes.fromhex(row[7]))

    def bot_tokens(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT name, token FROM bots").fetchall())

    def games(self, pending_only: bool = False, after: int = -1) -> list[GameSlot]:
        """The schedule in order; ``pending_only``: the games with no recorded result;
        ``after``: only those later in the schedule than that ordinal."""
        where = " AND game_id NOT IN (SELECT game_id FROM results)" if pending_only else ""
        rows = self._db.execute(
            f"SELECT game_id, ordinal, table_no, deal, rotation, seed, seats FROM games WHERE ordinal > ?{where}"
            " ORDER BY ordinal", (after,)
        )
        return [GameSlot(r[0], r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6]))) for r in rows]

    def pending_games(self) -> list[GameSlot]:
        return self.games(pending_only=True)

    def counts(self) -> tuple[int, int]:
        """(games recorded, games scheduled)."""
        done = self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        total = self._db.execute("SELECT COUNT(*) FROM games").fetchone()[0]
        return done, total

    def results(self, after: int = -1) -> list[StoredResult]:
        """Every recorded game, in schedule order (read in one transaction, so a game another
        process records meanwhile is seen whole or not at all); ``after``: only those later
        in the schedule than that ordinal (what a ladder's running tally has not had)."""
        if self._db.in_transaction:
            return self._results(after)
        self._db.execute("BEGIN")
        try:
            return self._results(after)
        finally:
            self._db.execute("COMMIT")

    def _results(self, after: int) -> list[StoredResult]:
        seats: dict[str, list[SeatRow]] = {}
        for r in self._db.execute(
            f"SELECT s.game_id, s.seat, s.bot, s.total, s.placing, s.status, {', '.join(self._seat_columns)},"
            " s.think_s, s.transport_s FROM games g CROSS JOIN seats s ON s.game_id = g.game_id"  # (the schedule
            " WHERE g.ordinal > ? ORDER BY g.ordinal, s.seat", (after,)  # first: its ordinal's index finds the games)
        ):
            counters = dict(zip(COUNTERS, r[6 : 6 + len(COUNTERS)], strict=True))
            try:
                total = int(r[3])
            except (TypeError, ValueError):
                raise StoreError(f"{self.path}: game {r[0]}, seat {r[1]}: total {r[3]!r} is not a number") from None
            seats.setdefault(r[0], []).append(
                SeatRow(r[1], r[2], total, r[4], r[5], counters, r[-2], r[-1], r[6 + len(COUNTERS)]))
        out = []
        for r in self._db.execute(
            "SELECT r.game_id, g.ordinal, r.lower_wins, r.team_placings, r.aborted, r.digest, r.replay_path, g.seed,"
            " r.recorded_at FROM results r JOIN games g USING (game_id) WHERE g.ordinal > ? ORDER BY g.ordinal", (after,)
        ):
            if r[0] not in seats:
                raise StoreError(f"{self.path}: game {r[0]} is recorded without its seats: the database is damaged")
            out.append(
                StoredResult(
                    game_id=r[0],
                    ordinal=r[1],
                    seats=tuple(seats.get(r[0], ())),
                    lower_wins=bool(r[2]),
                    team_placings=None if r[3] is None else tuple(json.loads(r[3])),
                    aborted=r[4],
                    digest=r[5],
                    replay_path=r[6],
                    seed=r[7],
                    recorded_at=float(r[8] or 0.0),
                )
            )
        return out

    def hands(self, game_id: str) -> list[HandRow]:
        rows = self._db.execute(
            "SELECT number, dealer, reason, scores, pressures FROM hands WHERE game_id = ? ORDER BY number", (game_id,)
        )
        return [HandRow(r[0], r[1], r[2], tuple(json.loads(r[3])), tuple(json.loads(r[4]))) for r in rows]


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any exception."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self._db.execute("COMMIT")
        else:
            with contextlib.suppress(sqlite3.Error):  # (the error being raised says more)
                self._db.execute("ROLLBACK")
