"""PostgreSQL storage of tournaments and ladders: the SQLite store's interface, many hosts.

``PostgresStore(url, name)`` holds the tournament (or ladder) ``name`` in the database
at ``url`` (``postgresql://user@host:port/db``); one database holds any number of
them, and the queue of games (procrastinate, ``tournaments.distributed``) lives in
the same database, so an organizer runs one service.

It offers what ``server.storage.store.Store`` offers, with the same meaning, so the
runner, the ladder, the standings and the pages cannot tell them apart. What differs:

* **the replay is in the database.** ``record_game`` reads the replay the game just
  wrote and stores it with the result, its seats and its hands in ONE transaction:
  the database copy is the authoritative one; ``export_replays`` (``craits replay
  export``) writes the files, and the viewer pages are built from those.
* **a game is recorded once.** Two workers may finish the same game (one was thought
  dead and its game given to another): the first result is kept, a later one is
  refused (``record_game`` raises ``StoreError``; ``record_game_once`` says False).
* **the connection may drop** (a restarted server, a network cut): every operation is
  one transaction, retried on a new connection with backoff for ``retry_s`` seconds
  before it gives up with a ``StoreError``; an operation never half-happens.
* **the layout is versioned**: ``server/storage/migrations/NNNN_*.sql``, applied in
  order and recorded in ``craits_schema``. An empty database is set up at first use;
  a database at an older version is refused with the command that migrates it
  (``craits store migrate URL``), a newer one with "upgrade craits".
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import Dumper, PyFormat

from server.logging import Throttle, get_logger
from server.spec import GameRecord
from server.storage.settings import STORE_ENV
from server.storage.store import (  # (Unreachable: raised here, and imported from here too)
    COUNTERS,
    GameSlot,
    HandRow,
    SeatRow,
    StoredResult,
    StoreError,
    TournamentRow,
    Unreachable,
)

URL_SCHEMES = ("postgresql", "postgres")
MIGRATIONS_PACKAGE = "server.storage.migrations"
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
_LOCK_KEY = 0x43524149  # pg_advisory_xact_lock key while migrating ("CRAI")
T = TypeVar("T")
C = TypeVar("C", bound=psycopg.Connection[Any])
log = get_logger(component="store")
_retries = Throttle()
"""A lost database's retries: logged once, then at most once a minute, until it is back."""


def is_store_url(text: str | None) -> bool:
    return bool(text) and urlsplit(str(text)).scheme in URL_SCHEMES


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


def migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) of every migration shipped with this craits, in order."""
    out = []
    for entry in resources.files(MIGRATIONS_PACKAGE).iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            out.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    out.sort()
    if [v for v, _, _ in out] != list(range(1, len(out) + 1)):
        raise RuntimeError(f"{MIGRATIONS_PACKAGE}: migrations must be numbered 0001, 0002, ... without gaps")
    return out


SCHEMA_VERSION = len(migrations())


class TextWithoutNul(Dumper):
    """A text parameter with each NUL kept as U+FFFD: PostgreSQL's text cannot hold a NUL (SQLite's
    can), and a participant's build printing one, or any text of theirs carrying one, failed the
    statement that stored it (a version never decided, the builder stopped for everyone)."""

    _inner = psycopg.adapters.get_dumper(str, PyFormat.TEXT)

    def __init__(self, cls: type, context: Any = None) -> None:
        super().__init__(cls, context)
        self._dumper = self._inner(cls, context)
        self.oid = self._dumper.oid

    def dump(self, obj: str) -> Buffer | None:
        return self._dumper.dump(obj.replace("\x00", "\ufffd") if "\x00" in obj else obj)


def without_nul(conn: C) -> C:
    """``conn``, its text parameters kept free of NUL (:class:`TextWithoutNul`)."""
    conn.adapters.register_dumper(str, TextWithoutNul)
    return conn


def connect(url: str, *, timeout_s: float = 10.0) -> psycopg.Connection[Any]:
    try:
        return without_nul(psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout_s))))
    except psycopg.Error as err:
        kind = Unreachable if isinstance(err, psycopg.OperationalError) and server_not_there(err) else StoreError
        raise kind(f"{redact(url)}: cannot connect: {_one_line(err)}") from None


def server_not_there(err: psycopg.OperationalError) -> bool:
    """Whether a failed connection is worth waiting for: no server answered (refused, timed out)
    or it answered that it is starting, stopping or full. A server that refused us itself (a
    wrong password, a database that does not exist) will refuse again: psycopg gives no SQLSTATE
    for a failed connection, so this reads libpq's message, where the server's own reason
    follows "FATAL:"."""
    text = str(err)
    return "FATAL:" not in text or any(s in text for s in ("the database system is", "too many clients"))


def wait_until_reachable(url: str, wait_s: float, waiting: Callable[[str], None]) -> None:
    """Return once a connection to ``url`` opens; while the server is not there
    (:func:`server_not_there`) call ``waiting(why)`` once and try again with backoff for up to
    ``wait_s`` seconds. Other failures, or the wait spent, are a StoreError at once."""
    deadline = time.monotonic() + wait_s
    delay, said = 0.5, False
    while True:
        try:
            psycopg.connect(url, autocommit=True, connect_timeout=5).close()
            return
        except psycopg.OperationalError as err:
            if not server_not_there(err) or time.monotonic() + delay > deadline:
                raise StoreError(f"{redact(url)}: cannot connect: {_one_line(err)}") from None
            if not said:
                said = True
                waiting(_one_line(err))
        except psycopg.Error as err:
            raise StoreError(f"{redact(url)}: cannot connect: {_one_line(err)}") from None
        time.sleep(delay)
        delay = min(delay * 2, 5.0)


def schema_version(conn: psycopg.Connection[Any]) -> int | None:
    """The database's layout version; None for a database without craits tables."""
    exists = conn.execute("SELECT to_regclass('craits_schema') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return None
    row = conn.execute("SELECT max(version) FROM craits_schema").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def migrate(url: str, *, only_if_empty: bool = False) -> tuple[int, int]:
    """Bring the database to this craits' layout (and the queue's tables); returns
    (version before, version after). ``only_if_empty``: set up a new database, but
    leave an existing older one alone (``check_schema`` then refuses it)."""
    try:
        return _migrate(url, only_if_empty)
    except psycopg.Error as err:
        raise StoreError(f"{redact(url)}: cannot set up or migrate the database: {_one_line(err)}") from None


def _migrate(url: str, only_if_empty: bool) -> tuple[int, int]:
    with connect(url) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        before = schema_version(conn)
        if before is not None and only_if_empty:
            return before, before
        if before is None:
            conn.execute(
                "CREATE TABLE craits_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
        current = before or 0
        if current > SCHEMA_VERSION:
            raise StoreError(_newer(url, current))
        for version, name, sql in migrations():
            if version > current:
                conn.execute(sql.encode())  # (bytes: no %-placeholders in a migration)
                conn.execute("INSERT INTO craits_schema (version, name) VALUES (%s, %s)", (version, name))
        _ensure_queue_schema(conn)
        return before or 0, SCHEMA_VERSION


def _ensure_queue_schema(conn: psycopg.Connection[Any]) -> None:
    """procrastinate's tables, in the same database, created with the craits ones."""
    row = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()
    if row and row[0]:
        return
    from procrastinate.schema import SchemaManager

    conn.execute(SchemaManager.get_schema().encode())


def _newer(url: str, version: int) -> str:
    return (f"{redact(url)}: the database's layout is version {version}, newer than this craits knows "
            f"({SCHEMA_VERSION}); upgrade craits")


def check_schema(url: str, conn: psycopg.Connection[Any]) -> None:
    version = schema_version(conn)
    if version == SCHEMA_VERSION:
        return
    if version is None:
        raise StoreError(f"{redact(url)}: no craits tables in this database; create them with: {migrate_command(url)}")
    if version > SCHEMA_VERSION:
        raise StoreError(_newer(url, version))
    raise StoreError(
        f"{redact(url)}: the database's layout is version {version}, this craits uses version {SCHEMA_VERSION}; "
        f"migrate it (back it up first) with: {migrate_command(url)}"
    )


def migrate_command(url: str) -> str:
    """``craits store migrate`` for this database, to paste as it is: the URL as given when it
    holds no password, else ``"$CRAITS_STORE"`` (never the password, masked or not)."""
    if urlsplit(url).password is None:
        return f"craits store migrate {url}"
    command = f'craits store migrate "${STORE_ENV}"'
    return command if os.environ.get(STORE_ENV) == url else f"{command} (with {STORE_ENV} set to the URL)"


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


@dataclass(frozen=True, slots=True)
class Refusal:
    """Games a worker refused, for one reason (see :meth:`PostgresStore.note_refusal`)."""

    worker: str
    reason: str
    games: int
    last_game: str
    last_at: float


NOW = "extract(epoch FROM clock_timestamp())"
"""Now, in seconds since the epoch, by the database server's clock, in SQL: every time a store or
roster kept in PostgreSQL writes or compares is read from it, so that the machines of a
competition, whatever their own clocks say, agree (a worker whose clock ran late wrote games
played after a deadline as before it; a web process, uploads)."""


def database_clock(conn: psycopg.Connection[Any]) -> float:
    """:data:`NOW` read through ``conn``."""
    row = conn.execute(f"SELECT {NOW}").fetchone()
    assert row is not None
    return float(row[0])


_RECORD_SQL = """
WITH g AS (
    SELECT * FROM json_to_recordset(%(games)s::json)
        AS g (game_id text, digest text, replay_path text, lower_wins bool, team_placings text, aborted text, seats text)
), r AS (
    INSERT INTO craits_results (tournament, game_id, recorded_at, digest, replay_path, lower_wins, team_placings,
                                aborted, worker)
    SELECT %(t)s, g.game_id, NOW_EPOCH, g.digest, g.replay_path, g.lower_wins, g.team_placings, g.aborted, %(worker)s
      FROM g JOIN craits_games s ON s.tournament = %(t)s AND s.game_id = g.game_id AND s.seats::jsonb = g.seats::jsonb
    ON CONFLICT (tournament, game_id) DO NOTHING
    RETURNING game_id
), s AS (
    INSERT INTO craits_seats (tournament, game_id, seat, bot, total, "placing", status, COUNTERS, bot_error,
                              think_s, transport_s)
    SELECT %(t)s, u.*
      FROM json_to_recordset(%(seats)s::json) AS u (game_id text, seat int, bot text, total numeric, "placing" int,
                                                     status text, COUNTER_TYPES, bot_error text, think_s float8,
                                                     transport_s float8)
     WHERE u.game_id IN (SELECT game_id FROM r)
), h AS (
    INSERT INTO craits_hands (tournament, game_id, number, dealer, reason, scores, pressures)
    SELECT %(t)s, u.game_id, u.number, u.dealer, u.reason, u.scores::text, u.pressures::text
      FROM json_to_recordset(%(hands)s::json)
        AS u (game_id text, number int, dealer int, reason text, scores json, pressures json)
     WHERE u.game_id IN (SELECT game_id FROM r)
), p AS (
    INSERT INTO craits_replays (tournament, game_id, body)
    SELECT %(t)s, u.game_id, u.body FROM unnest(%(p_game)b::text[], %(p_body)b::bytea[]) AS u (game_id, body)
     WHERE u.game_id IN (SELECT game_id FROM r)
), q AS (
    DELETE FROM procrastinate_jobs j USING json_to_recordset(%(jobs)s::json) AS u (game_id text, job bigint)
     WHERE j.id = u.job AND j.status IN ('todo', 'doing')
       AND (u.game_id IN (SELECT game_id FROM r) OR EXISTS (
            SELECT 1 FROM g JOIN craits_games s ON s.tournament = %(t)s AND s.game_id = g.game_id
                        AND s.seats::jsonb = g.seats::jsonb
                       JOIN craits_results x ON x.tournament = %(t)s AND x.game_id = g.game_id
             WHERE g.game_id = u.game_id))
)
SELECT game_id FROM r
""".replace("COUNTER_TYPES", ", ".join(f"{c} int" for c in COUNTERS)).replace("COUNTERS", ", ".join(COUNTERS)).replace(
    "NOW_EPOCH", NOW)
"""Games recorded in one statement (:meth:`PostgresStore.record_games_once`): the result of each
game scheduled with these seats and not yet recorded, and then its seats, hands and replay; the
games recorded are returned; so are the queue's jobs the games were played for, of the games
recorded now or before (a worker's job finished in the statement that records its game, not in
one of its own). A game's, seat's and hand's rows come as one JSON document each
(one ``json.dumps`` for a batch: as arrays, psycopg dumped them an element at a time in Python,
the worker's largest cost per game, bench/distributed.py); a hand's scores and pressures stay
their JSON text as written; the replays come as a bytea array."""


@dataclass(frozen=True, slots=True)
class GoneWorker:
    """A worker found gone with games in hand (``tournaments.distributed.find_gone_workers``)."""

    name: str
    host: str
    gone_at: float
    why: str
    """"its connections closed" (killed: found within seconds) or "no heartbeat for N s"."""
    games: tuple[str, ...]
    """The games it held (tournament/game), put back in the queue."""


class PostgresStore:
    """A tournament or ladder ``name`` in a PostgreSQL database. Use from one thread."""

    FILENAME = "tournament.db"  # (the SQLite store's; a PostgreSQL run writes none)
    kind = "postgresql"

    def __init__(self, url: str, name: str, *, readonly: bool = False, retry_s: float = 60.0,
                 create: bool = True) -> None:
        self.url = url
        self.name = name
        self.path = f"{redact(url)} (tournament {name})"
        self.readonly = readonly
        self.retry_s = retry_s
        self.stop_waiting = threading.Event()
        """Set (from any thread): a lost database is given up at once, not waited for."""
        if create and not readonly:
            migrate(url, only_if_empty=True)
        self._conn: psycopg.Connection[Any] | None = connect(url)
        try:
            check_schema(url, self._conn)
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------- connection

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _retrying(self, what: str, op: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run ``op`` (one transaction) on the connection; on a lost connection, reconnect
        with backoff and run it again, for up to ``retry_s`` seconds."""
        began = time.monotonic()
        deadline = began + self.retry_s
        delay = 0.2
        tries = 0
        while True:
            try:
                if self._conn is None or self._conn.closed or self._conn.broken:
                    self.close()
                    self._conn = without_nul(psycopg.connect(self.url, autocommit=True, connect_timeout=5))
                done = op(self._conn)
                if tries:
                    log.info("store_reconnected", what=what, lost_s=round(time.monotonic() - began, 1), tries=tries,
                             **({"retries_not_logged": quiet} if (quiet := _retries.reset()) else {}))
                return done
            except psycopg.OperationalError as err:
                self.close()
                tries += 1
                if time.monotonic() + delay > deadline or self.stop_waiting.is_set():
                    raise Unreachable(f"{self.path}: {what}: the database is unreachable: {_one_line(err)}") from None
                held = _retries.allow("store_retry")
                if held is not None:
                    log.warning("store_retry", what=what, error=_one_line(err), retry_in_s=round(delay, 2),
                                **({"also_retried_since": held} if held else {}))
                self.stop_waiting.wait(delay)
                delay = min(delay * 2, 5.0)
            except psycopg.Error as err:
                raise StoreError(f"{self.path}: {what}: {_one_line(err)}") from None

    @contextlib.contextmanager
    def _tx(self, conn: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
        with conn.transaction():
            yield conn

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
        if name != self.name:
            raise StoreError(f"{self.path}: cannot store tournament {name!r} here")
        games = list(games)

        def op(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                if conn.execute("SELECT 1 FROM craits_tournaments WHERE name = %s", (name,)).fetchone():
                    raise StoreError(f"{self.path}: already holds tournament {name!r}")
                conn.execute(
                    "INSERT INTO craits_tournaments (name, source_text, source_path, schedule_digest, settings,"
                    f" created_at, deal_key) VALUES (%s, %s, %s, %s, %s, {NOW}, %s)",
                    (name, source_text, source_path, schedule_digest, json.dumps(settings, sort_keys=True), deal_key),
                )
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO craits_bots (tournament, name, position, kind, token) VALUES (%s, %s, %s, %s, %s)",
                        [(name, b[0], i, b[1], b[2]) for i, b in enumerate(bots)],
                    )
                    self._insert_games(cur, games)

        self._retrying("storing the tournament", op)

    def _insert_games(self, cur: psycopg.Cursor[Any], games: Sequence[GameSlot]) -> None:
        if not games:
            return
        with cur.copy(
            "COPY craits_games (tournament, game_id, ordinal, table_no, deal, rotation, seed, seats) FROM STDIN"
        ) as copy:
            for g in games:
                copy.write_row((self.name, g.game_id, g.ordinal, g.table, g.deal, g.rotation, g.seed, json.dumps(g.seats)))

    def record_game(self, record: GameRecord) -> None:
        """Write one finished (or aborted) game in ONE transaction: the result, every seat,
        every hand and its replay (read from ``record.replay_path``), or nothing at all.
        A game already recorded raises ``StoreError``."""
        if not self.record_game_once(record):
            raise StoreError(f"game {record.game_id} is already recorded")

    def record_game_once(self, record: GameRecord, *, worker: str = "") -> bool:
        """As ``record_game``; False (and nothing written) when the game is already recorded."""
        [outcome] = self.record_games_once([record], worker=worker)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def record_games_once(self, records: Sequence[GameRecord], *, worker: str = "",
                          jobs: Sequence[int | None] | None = None) -> list[bool | Exception]:
        """Record games as ``record_game_once`` does, many in one statement: for each, in order,
        True (recorded now), False (recorded already: nothing written) or the error that
        ``record_game`` would raise (not in the schedule, other seats, a replay that cannot be read).

        One statement, so one round trip and one commit for them all (a worker finishing games
        together waited on a statement each: the queue's ceiling, bench/distributed.py): each
        game's result is inserted only if the game is in the schedule with these seats and not yet
        recorded, and its seats, hands and replay only with it (:data:`_RECORD_SQL`); a statement
        is atomic, so each game is recorded whole or not at all, and a connection lost during it
        records none (the statement is run again on a new one). A game the database refuses does
        not refuse the others: they are then recorded one by one. A game twice in ``records`` is
        recorded once, its second copy found recorded. A database that stays lost raises
        ``Unreachable`` for them all.

        ``jobs``: the queue's job (procrastinate's) each game was played for, or None: a game's
        job is finished (deleted) in the same statement exactly when its outcome is True or False
        (its game recorded, now or before), and left to its worker otherwise."""
        outcomes: list[bool | Exception | None] = [None] * len(records)
        params = self._record_params(records, worker, outcomes, jobs)
        tries: list[bool] = []

        def attempt(conn: psycopg.Connection[Any]) -> set[str]:
            # A commit whose answer was lost to a dropped connection is retried: then the
            # games are found recorded, with these very digests, which count as this call's.
            tries.append(True)
            return {row[0] for row in conn.execute(_RECORD_SQL, params).fetchall()}

        left = [i for i, o in enumerate(outcomes) if o is None]
        if params is not None:
            what = (f"recording game {records[0].game_id}" if len(records) == 1
                    else f"recording {len(records)} games ({records[0].game_id} ...)")
            try:
                recorded = self._retrying(what, attempt)
            except Unreachable:
                raise
            except StoreError as err:
                if len(left) == 1:
                    outcomes[left[0]] = err
                for i in left if len(left) > 1 else ():
                    outcomes[i] = self.record_games_once([records[i]], worker=worker,
                                                         jobs=None if jobs is None else [jobs[i]])[0]
                return [o for o in outcomes if o is not None]
            for i in list(left):
                if records[i].game_id in recorded:
                    outcomes[i] = True
                    recorded.discard(records[i].game_id)  # (a second copy in this call: checked as a duplicate)
                    left.remove(i)
        if left:
            found = self._scheduled_and_recorded([records[i].game_id for i in left])
            for i in left:
                record = records[i]
                seats, digest = found.get(record.game_id, (None, None))
                if seats is None:
                    outcomes[i] = StoreError(f"game {record.game_id!r} is not in the schedule")
                elif seats != [r.bot for r in record.seats]:
                    outcomes[i] = StoreError(f"game {record.game_id}: the record's seats {[r.bot for r in record.seats]}"
                                             f" are not the schedule's {seats}")
                else:
                    outcomes[i] = len(tries) > 1 and digest == record.digest
        return [o for o in outcomes if o is not None]

    def _record_params(self, records: Sequence[GameRecord], worker: str, outcomes: list[bool | Exception | None],
                       jobs: Sequence[int | None] | None = None) -> dict[str, Any] | None:
        """:data:`_RECORD_SQL`'s parameters for ``records``; a record that fails before the
        statement (its replay unreadable, say) gets its error in ``outcomes`` and stays out; so
        does a game's second copy (left None). None: no game left to insert."""
        games: list[dict[str, Any]] = []
        seats: list[dict[str, Any]] = []
        hands: list[dict[str, Any]] = []
        replay_games: list[str] = []
        replays: list[bytes] = []
        finished: list[dict[str, Any]] = []
        seen: set[str] = set()
        for i, record in enumerate(records):
            job = None if jobs is None else jobs[i]
            if record.game_id in seen:
                if job is not None:
                    finished.append({"game_id": record.game_id, "job": job})
                continue
            try:
                game, game_seats, game_hands = self._record_rows(record)
                replay = self._read_replay(record)
            except Exception as err:  # (this game's alone: the others go on)
                outcomes[i] = err
                continue
            if job is not None:
                finished.append({"game_id": record.game_id, "job": job})
            seen.add(record.game_id)
            games.append(game)
            seats += game_seats
            hands += game_hands
            if replay is not None:
                replay_games.append(record.game_id)
                replays.append(replay)
        if not seen:
            return None
        return {"t": self.name, "worker": worker, "games": json.dumps(games),
                "seats": json.dumps(seats), "hands": json.dumps(hands), "p_game": replay_games, "p_body": replays,
                "jobs": json.dumps(finished)}

    @staticmethod
    def _record_rows(record: GameRecord) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        """One game's rows in :data:`_RECORD_SQL`'s documents: its result, a row per seat, a row per hand."""
        game_id, result, seats = record.game_id, record.result, [r.bot for r in record.seats]
        if not record.aborted and len(result.totals) != len(seats):
            raise StoreError(f"game {game_id}: {len(result.totals)} totals for {len(seats)} seats")
        game = {"game_id": game_id, "digest": record.digest,
                "replay_path": None if record.replay_path is None else f"replays/{Path(record.replay_path).name}",
                "lower_wins": bool(result.lower_wins),
                "team_placings": None if result.team_placings is None else json.dumps(list(result.team_placings)),
                "aborted": record.aborted, "seats": json.dumps(seats)}
        seat_rows = [
            {"game_id": game_id, "seat": j, "bot": r.bot,
             "total": str(result.totals[j]) if j < len(result.totals) else "0",
             "placing": result.placings[j] if j < len(result.placings) else 0, "status": str(r.status),
             **{c: getattr(r, c) for c in COUNTERS}, "bot_error": r.bot_error.replace("\x00", "\ufffd"),
             "think_s": float(r.think_s),
             "transport_s": float(r.transport_s)}
            for j, r in enumerate(record.seats)]
        hand_rows = [{"game_id": game_id, "number": h.number, "dealer": h.dealer, "reason": h.reason,
                      "scores": list(h.scores), "pressures": list(h.pressures)} for h in result.hands]
        return game, seat_rows, hand_rows

    def _scheduled_and_recorded(self, game_ids: Sequence[str]) -> dict[str, tuple[list[str], str | None]]:
        """game -> (its scheduled seats, the digest recorded or None), for those in the schedule."""
        rows = self._retrying("reading games", lambda c: c.execute(
            "SELECT g.game_id, g.seats, r.digest FROM craits_games g LEFT JOIN craits_results r"
            " ON r.tournament = g.tournament AND r.game_id = g.game_id"
            " WHERE g.tournament = %s AND g.game_id = ANY(%s)", (self.name, list(game_ids))).fetchall())
        return {r[0]: (json.loads(r[1]), r[2]) for r in rows}

    def _recorded_digest(self, game_id: str) -> str | None:
        row = self._retrying("reading a result", lambda c: c.execute(
            "SELECT digest FROM craits_results WHERE tournament = %s AND game_id = %s", (self.name, game_id)
        ).fetchone())
        return None if row is None else str(row[0])

    @staticmethod
    def _read_replay(record: GameRecord) -> bytes | None:
        if record.replay_path is None:
            return None
        try:
            return Path(record.replay_path).read_bytes()
        except FileNotFoundError:
            return None  # an aborted game may have none
        except OSError as err:
            raise StoreError(f"game {record.game_id}: cannot read its replay {record.replay_path}: {err}") from None

    def add_games(self, games: Iterable[GameSlot]) -> None:
        games = list(games)

        def op(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction(), conn.cursor() as cur:
                self._insert_games(cur, games)

        self._retrying("adding games", op)

    def drop_pending(self, game_ids: Iterable[str]) -> None:
        ids = list(game_ids)
        self._retrying("dropping games", lambda c: c.execute(
            "DELETE FROM craits_games g WHERE tournament = %s AND game_id = ANY(%s) AND NOT EXISTS"
            " (SELECT 1 FROM craits_results r WHERE r.tournament = g.tournament AND r.game_id = g.game_id)",
            (self.name, ids),
        ))

    def set_bots(self, bots: Sequence[tuple[str, str, str]], source_text: str, source_path: str) -> None:
        def op(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                row = conn.execute(
                    "SELECT coalesce(max(position) + 1, 0) FROM craits_bots WHERE tournament = %s", (self.name,)
                ).fetchone()
                start = row[0] if row else 0
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO craits_bots (tournament, name, position, kind, token) VALUES (%s, %s, %s, %s, %s)"
                        " ON CONFLICT (tournament, name) DO UPDATE SET kind = excluded.kind, token = excluded.token",
                        [(self.name, b[0], start + i, b[1], b[2]) for i, b in enumerate(bots)],
                    )
                conn.execute(
                    "UPDATE craits_tournaments SET source_text = %s, source_path = %s WHERE name = %s",
                    (source_text, source_path, self.name),
                )

        self._retrying("storing the bots", op)

    def set_bot_files(self, bots: Sequence[tuple[str, str, Sequence[str]]]) -> None:
        """(bot, hash, command): bots a worker plays from files kept in the store by their hash
        (a roster's versions, server.storage.bot_files), rather than from the tournament file."""
        def op(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO craits_bot_files (tournament, bot, files, command) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (tournament, bot) DO UPDATE SET files = excluded.files, command = excluded.command",
                    [(self.name, bot, files, json.dumps(list(command))) for bot, files, command in bots])

        self._retrying("storing the bots' files", op)

    def bot_files(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """{bot: (hash of its files, command)} of :meth:`set_bot_files`."""
        rows = self._retrying("reading the bots' files", lambda c: c.execute(
            "SELECT bot, files, command FROM craits_bot_files WHERE tournament = %s", (self.name,)).fetchall())
        return {r[0]: (r[1], tuple(json.loads(r[2]))) for r in rows}

    def bot_names(self) -> list[str]:
        rows = self._retrying("reading the bots", lambda c: c.execute(
            "SELECT name FROM craits_bots WHERE tournament = %s ORDER BY position", (self.name,)).fetchall())
        return [r[0] for r in rows]

    def remote_bots(self) -> set[str]:
        """The bots that connect on their own (kind ``remote``): the coordinator plays their games."""
        rows = self._retrying("reading the bots", lambda c: c.execute(
            "SELECT name FROM craits_bots WHERE tournament = %s AND kind = 'remote'", (self.name,)).fetchall())
        return {r[0] for r in rows}

    def forget_aborted(self) -> int:
        def op(conn: psycopg.Connection[Any]) -> int:
            with conn.transaction():
                rows = conn.execute(
                    "DELETE FROM craits_results WHERE tournament = %s AND aborted != '' RETURNING game_id", (self.name,)
                ).fetchall()
                if rows:
                    conn.execute("UPDATE craits_tournaments SET finished_at = NULL WHERE name = %s", (self.name,))
                return len(rows)

        return self._retrying("forgetting the aborted games", op)

    def now(self) -> float:
        """Now by the database server's clock, which every time this store keeps is written
        with: the machines of a competition compare times with one clock, whatever their own
        say (a worker whose clock ran late wrote games played after a deadline as before it)."""
        return self._retrying("reading the time", database_clock)

    def mark_finished(self) -> None:
        self._retrying("marking the end", lambda c: c.execute(
            f"UPDATE craits_tournaments SET finished_at = {NOW}"
            " WHERE name = %s AND finished_at IS NULL", (self.name,),
        ))

    def note_refusal(self, worker: str, reason: str, game_id: str) -> None:
        """``worker`` refused ``game_id`` for ``reason`` (counted per worker and reason)."""
        self._retrying("noting a refused game", lambda c: c.execute(
            "INSERT INTO craits_refusals (tournament, worker, reason, games, last_game, last_at)"
            f" VALUES (%s, %s, %s, 1, %s, {NOW}) ON CONFLICT (tournament, worker, reason)"
            " DO UPDATE SET games = craits_refusals.games + 1, last_game = EXCLUDED.last_game, last_at = EXCLUDED.last_at",
            (self.name, worker, reason, game_id)))

    def refusals(self, since: float = 0.0) -> list[Refusal]:
        """Why workers refused this tournament's games since ``since`` (by :meth:`now`), the
        latest first."""
        rows = self._retrying("reading the refusals", lambda c: c.execute(
            "SELECT worker, reason, games, last_game, last_at FROM craits_refusals"
            " WHERE tournament = %s AND last_at >= %s ORDER BY last_at DESC", (self.name, since)).fetchall())
        return [Refusal(*row) for row in rows]

    def set_run_state(self, state: dict[str, Any]) -> None:
        """How a ladder's run stands (``tournaments.ladder.write_state``), for ``ladder standings``
        on any machine: its folder's ``ladder.json``, in the database."""
        self._retrying("noting how the run stands", lambda c: c.execute(
            "UPDATE craits_tournaments SET run_state = %s WHERE name = %s",
            (json.dumps(state, sort_keys=True), self.name)))

    def run_state(self) -> dict[str, Any] | None:
        row = self._retrying("reading how the run stands", lambda c: c.execute(
            "SELECT run_state FROM craits_tournaments WHERE name = %s", (self.name,)).fetchone())
        try:
            state = json.loads(row[0]) if row and row[0] else None
        except ValueError:
            return None
        return state if isinstance(state, dict) else None

    def gone_workers(self, since: float) -> list[GoneWorker]:
        """The workers found gone (killed, their heartbeat stopped) since ``since`` (by
        :meth:`now`) while they held games of any tournament, the latest first."""
        rows = self._retrying("reading the workers", lambda c: c.execute(
            "SELECT name, host, gone_at, gone_why, games FROM craits_workers WHERE gone_at >= %s"
            " ORDER BY gone_at DESC LIMIT 20", (since,)).fetchall())
        return [GoneWorker(r[0], r[1], r[2], r[3], tuple(json.loads(r[4]))) for r in rows]

    def delete_tournament(self) -> None:
        """Everything stored of this tournament (``--overwrite``), in one transaction."""
        self._retrying("deleting the tournament", lambda c: c.execute(
            "DELETE FROM craits_tournaments WHERE name = %s", (self.name,)))

    # --------------------------------------------------------------- reading

    def tournament(self) -> TournamentRow | None:
        row = self._retrying("reading the tournament", lambda c: c.execute(
            "SELECT name, source_text, source_path, schedule_digest, settings, created_at, finished_at, deal_key"
            " FROM craits_tournaments WHERE name = %s", (self.name,)).fetchone())
        if row is None:
            return None
        try:
            settings = json.loads(row[4])
        except (TypeError, ValueError) as err:
            raise StoreError(f"{self.path}: the tournament's settings are damaged ({err})") from None
        return TournamentRow(row[0], row[1], row[2], row[3], settings, row[5], row[6],
                             None if row[7] is None else bytes(row[7]))

    def bot_tokens(self) -> dict[str, str]:
        rows = self._retrying("reading the bots", lambda c: c.execute(
            "SELECT name, token FROM craits_bots WHERE tournament = %s", (self.name,)).fetchall())
        return {r[0]: r[1] for r in rows}

    def games(self, pending_only: bool = False, after: int = -1) -> list[GameSlot]:
        """As :meth:`server.storage.store.Store.games`."""
        where = (" AND NOT EXISTS (SELECT 1 FROM craits_results r WHERE r.tournament = g.tournament"
                 " AND r.game_id = g.game_id)") if pending_only else ""
        rows = self._retrying("reading the schedule", lambda c: c.execute(
            "SELECT game_id, ordinal, table_no, deal, rotation, seed, seats FROM craits_games g"
            f" WHERE tournament = %s AND ordinal > %s{where} ORDER BY ordinal", (self.name, after)).fetchall())
        return [GameSlot(r[0], r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6]))) for r in rows]

    def pending_games(self) -> list[GameSlot]:
        return self.games(pending_only=True)

    def game(self, game_id: str) -> GameSlot | None:
        row = self._retrying("reading a game", lambda c: c.execute(
            "SELECT game_id, ordinal, table_no, deal, rotation, seed, seats FROM craits_games"
            " WHERE tournament = %s AND game_id = %s", (self.name, game_id)).fetchone())
        return None if row is None else GameSlot(row[0], row[1], row[2], row[3], row[4], row[5], tuple(json.loads(row[6])))

    def game_to_play(self, game_id: str) -> tuple[GameSlot | None, bool, dict[str, str]]:
        """What a worker needs to play a game, in one round trip (one statement): its slot
        (None: not in the schedule), whether it is recorded already, and the bots' tokens."""
        row = self._retrying("reading a game", lambda c: c.execute(
            "SELECT g.game_id, g.ordinal, g.table_no, g.deal, g.rotation, g.seed, g.seats,"
            " EXISTS (SELECT 1 FROM craits_results r WHERE r.tournament = g.tournament AND r.game_id = g.game_id),"
            " (SELECT json_object_agg(b.name, b.token) FROM craits_bots b WHERE b.tournament = g.tournament)"
            " FROM craits_games g WHERE g.tournament = %s AND g.game_id = %s", (self.name, game_id)).fetchone())
        if row is None:
            return None, False, {}
        slot = GameSlot(row[0], row[1], row[2], row[3], row[4], row[5], tuple(json.loads(row[6])))
        return slot, bool(row[7]), dict(row[8] or {})

    def games_to_play(self, game_ids: Sequence[str]) -> tuple[dict[str, tuple[GameSlot, bool]], dict[str, str]]:
        """:meth:`game_to_play` for many games in one round trip: each game's slot and whether it
        is recorded already (a game not in the schedule is left out), and the bots' tokens."""
        rows = self._retrying("reading games", lambda c: c.execute(
            "SELECT g.game_id, g.ordinal, g.table_no, g.deal, g.rotation, g.seed, g.seats,"
            " EXISTS (SELECT 1 FROM craits_results r WHERE r.tournament = g.tournament AND r.game_id = g.game_id),"
            " NULL::json FROM craits_games g WHERE g.tournament = %(t)s AND g.game_id = ANY(%(ids)s)"
            " UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"  # (the tokens, in a row of their own)
            " (SELECT json_object_agg(b.name, b.token) FROM craits_bots b WHERE b.tournament = %(t)s)",
            {"t": self.name, "ids": list(game_ids)}).fetchall())
        games, tokens = {}, {}
        for r in rows:
            if r[0] is None:
                tokens = dict(r[8] or {})
            else:
                games[r[0]] = (GameSlot(r[0], r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6]))), bool(r[7]))
        return games, tokens

    def is_recorded(self, game_id: str) -> bool:
        return self._recorded_digest(game_id) is not None

    def counts(self) -> tuple[int, int]:
        row = self._retrying("counting the games", lambda c: c.execute(
            "SELECT (SELECT count(*) FROM craits_results WHERE tournament = %s),"
            " (SELECT count(*) FROM craits_games WHERE tournament = %s)", (self.name, self.name)).fetchone())
        assert row is not None
        return int(row[0]), int(row[1])

    def results(self, after: int = -1) -> list[StoredResult]:
        """As :meth:`server.storage.store.Store.results`."""
        def op(conn: psycopg.Connection[Any]) -> tuple[list[Any], list[Any]]:
            with conn.transaction():  # (one snapshot for both reads)
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                seat_rows = conn.execute(
                    "SELECT s.game_id, s.seat, s.bot, s.total, s.\"placing\", s.status, "
                    f"{', '.join('s.' + c for c in COUNTERS)}, s.bot_error, s.think_s, s.transport_s"
                    " FROM craits_seats s JOIN craits_games g USING (tournament, game_id)"
                    " WHERE s.tournament = %s AND g.ordinal > %s ORDER BY s.game_id, s.seat", (self.name, after)).fetchall()
                result_rows = conn.execute(
                    "SELECT r.game_id, g.ordinal, r.lower_wins, r.team_placings, r.aborted, r.digest, r.replay_path,"
                    " g.seed, r.recorded_at FROM craits_results r JOIN craits_games g USING (tournament, game_id)"
                    " WHERE r.tournament = %s AND g.ordinal > %s ORDER BY g.ordinal", (self.name, after)).fetchall()
                return seat_rows, result_rows

        seat_rows, result_rows = self._retrying("reading the results", op)
        seats: dict[str, list[SeatRow]] = {}
        for r in seat_rows:
            counters = dict(zip(COUNTERS, r[6 : 6 + len(COUNTERS)], strict=True))
            seats.setdefault(r[0], []).append(
                SeatRow(r[1], r[2], int(r[3]), r[4], r[5], counters, r[-2], r[-1], r[6 + len(COUNTERS)]))
        out = []
        for r in result_rows:
            if r[0] not in seats:
                raise StoreError(f"{self.path}: game {r[0]} is recorded without its seats: the database is damaged")
            out.append(StoredResult(
                game_id=r[0], ordinal=r[1], seats=tuple(seats[r[0]]), lower_wins=bool(r[2]),
                team_placings=None if r[3] is None else tuple(json.loads(r[3])),
                aborted=r[4], digest=r[5], replay_path=r[6], seed=None if r[7] is None else int(r[7]),
                recorded_at=float(r[8] or 0.0),
            ))
        return out

    def hands(self, game_id: str) -> list[HandRow]:
        rows = self._retrying("reading the hands", lambda c: c.execute(
            "SELECT number, dealer, reason, scores, pressures FROM craits_hands"
            " WHERE tournament = %s AND game_id = %s ORDER BY number", (self.name, game_id)).fetchall())
        return [HandRow(r[0], r[1], r[2], tuple(json.loads(r[3])), tuple(json.loads(r[4]))) for r in rows]

    def replay(self, game_id: str) -> bytes | None:
        row = self._retrying("reading a replay", lambda c: c.execute(
            "SELECT body FROM craits_replays WHERE tournament = %s AND game_id = %s", (self.name, game_id)).fetchone())
        return None if row is None else bytes(row[0])

    def replay_ids(self) -> list[str]:
        """The games whose replay is stored (an aborted game may have none)."""
        rows = self._retrying("listing the replays", lambda c: c.execute(
            "SELECT game_id FROM craits_replays WHERE tournament = %s ORDER BY game_id", (self.name,)).fetchall())
        return [r[0] for r in rows]

    def export_replays(self, directory: Path) -> int:
        """Write every stored replay as ``directory/<game>.jsonl.gz`` (format 2, as stored:
        compressed) or ``<game>.jsonl`` (format 1), each atomically, leaving a file that already
        holds the same bytes; returns how many were written."""
        from server.storage.replay.format import GZIP_MAGIC, V1_SUFFIX, V2_SUFFIX

        directory.mkdir(parents=True, exist_ok=True)
        written = 0
        for game_id in self.replay_ids():
            body = self.replay(game_id)
            if body is None:
                continue
            path = directory / f"{game_id}{V2_SUFFIX if body.startswith(GZIP_MAGIC) else V1_SUFFIX}"
            if path.is_file() and path.read_bytes() == body:
                continue
            tmp = path.with_name(path.name + ".tmp")
            try:
                tmp.write_bytes(body)
                tmp.replace(path)
            except OSError:
                tmp.unlink(missing_ok=True)
                raise
            written += 1
        return written


def tournaments_in(url: str) -> list[tuple[str, str]]:
    """(name, "tournament"|"ladder") of everything the database holds."""
    with connect(url) as conn:
        check_schema(url, conn)
        rows = conn.execute("SELECT name, schedule_digest FROM craits_tournaments ORDER BY name").fetchall()
    return [(r[0], "ladder" if r[1] == "ladder" else "tournament") for r in rows]
