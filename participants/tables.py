"""Tables of a roster's database kept by the modules beside the roster (comparisons,
scrimmages, the final, pauses): each says its schema, made on first use, and works in a
connection of its own per piece of work, as :class:`participants.roster.Roster` does.

A roster kept in SQLite keeps them in its ``roster.db``. A roster kept in PostgreSQL
(:class:`participants.roster.PostgresRoster`) keeps them in its database, in a schema of its
own (``craits_roster_<name>``, so one database holds many rosters' tables apart): every web
process, the ladder and the organizer's commands, on any machine, then read and write the
same pauses, comparisons, scrimmages and final choices (and any table a new module adds by
subclassing :class:`RosterTables`: a deadline's extensions, say). The modules write SQLite's SQL;
:class:`_PgTables` says it in PostgreSQL's (``?`` placeholders, ``INSERT OR IGNORE``,
``lastrowid``, and in a schema, 64-bit integers and double-precision times).

Also here, for both stores: :class:`Queue`, the jobs web processes queue (comparisons,
scrimmages), each played by one process at a time under a lease that another process takes
over when it runs out; and :class:`RosterFiles`, the documents more than one process reads
(the final's plan and snapshot, the rubric, the ladder's game): files of the roster folder in
SQLite, rows of the roster's schema in PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import secrets
import socket
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from participants.roster import (
    STORE_FILE,
    PostgresRoster,
    Roster,
    RosterError,
    immediate,
    private_file,
    tempfile_in,
)
from server.logging import get_logger
from server.storage.postgres import database_clock

log = get_logger(component="roster_tables")


class RosterTables:
    SCHEMA = ""
    """CREATE TABLE IF NOT EXISTS ...: the subclass's tables."""

    def __init__(self, roster: Roster) -> None:
        self.roster = roster
        if not isinstance(roster, PostgresRoster):
            private_file(roster.db_path)  # (made 0600 if it is not there yet: it is the roster's)
        with self._db(setting_up=True) as db:
            db.executescript(self.SCHEMA)

    @contextlib.contextmanager
    def _db(self, *, setting_up: bool = False) -> Iterator[Any]:
        """A connection for one piece of work, in one transaction."""
        if isinstance(self.roster, PostgresRoster):
            with self.roster._db() as conn:  # (a transaction; a database error is a RosterError)
                yield _PgTables(conn, schema_of(self.roster.name), auto_id(self.SCHEMA), setting_up=setting_up)
            return
        db = sqlite3.connect(self.roster.db_path, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    @contextlib.contextmanager
    def _immediate(self) -> Iterator[Any]:
        """A connection in one transaction that no other writer of these tables enters until it
        ends: a quota's check and the write it allows. SQLite: ``BEGIN IMMEDIATE`` (the write lock
        from the start); PostgreSQL: a transaction-scoped advisory lock on the roster's schema,
        so web processes on any machine meet one count."""
        if isinstance(self.roster, PostgresRoster):
            with self._db() as db:
                schema = schema_of(self.roster.name)
                db.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (schema + ":quota",))
                yield db
            return
        with immediate(self.roster.db_path) as db:
            yield db


def database_now(db: Any) -> float:
    """Now, in seconds since the epoch, by the clock of the database ``db`` is a connection to:
    in PostgreSQL the server's, so that a lease taken on one machine and read on another is
    compared with one clock, whatever the machines' own say (a machine whose clock ran a minute
    ahead took over every live lease); in SQLite this machine's, the only one that reads it."""
    if isinstance(db, _PgTables):
        return database_clock(db.conn)
    return time.time()


def schema_of(roster: str) -> str:
    """The PostgreSQL schema of a roster's side tables (a long name hashed: identifiers stop at 63 bytes)."""
    name = f"craits_roster_{roster}"
    return name if len(name.encode()) <= 63 else f"craits_roster_{hashlib.sha256(roster.encode()).hexdigest()[:32]}"


_AUTO_ID = re.compile(r"\bid INTEGER PRIMARY KEY\b")
_AUTO_ID_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+) \(\s*id INTEGER PRIMARY KEY\b", re.IGNORECASE)


def auto_id(schema: str) -> frozenset[str]:
    """The tables of a schema whose ``id`` the database numbers (SQLite's ``id INTEGER PRIMARY KEY``)."""
    return frozenset(_AUTO_ID_TABLE.findall(schema))
_INSERT_OR_IGNORE = re.compile(r"^\s*INSERT OR IGNORE INTO\b", re.IGNORECASE)
_INSERT_INTO = re.compile(r"^\s*INSERT INTO (\w+)", re.IGNORECASE)


class _PgTables:
    """What the side tables' modules use of a ``sqlite3.Connection`` (``execute``,
    ``executescript``, a cursor's ``fetchone``/``fetchall``/iteration and ``lastrowid``), on
    a PostgreSQL connection inside its transaction, in the roster's schema."""

    def __init__(self, conn: Any, schema: str, numbered: frozenset[str], *, setting_up: bool) -> None:
        from psycopg import sql

        self.conn = conn
        self.numbered = numbered
        """Tables whose ``id`` the database makes: an INSERT there returns it (a cursor's ``lastrowid``)."""
        if setting_up:  # (two processes starting at once: one makes the schema, the other waits)
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (schema,))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET LOCAL search_path TO {}, public").format(sql.Identifier(schema)))

    def executescript(self, script: str) -> None:
        ddl = _AUTO_ID.sub("id BIGSERIAL PRIMARY KEY", script)
        ddl = re.sub(r"\bINTEGER\b", "BIGINT", ddl)
        ddl = re.sub(r"\bREAL\b", "DOUBLE PRECISION", ddl)
        self.conn.execute(ddl.encode())  # (bytes: no placeholders; several statements at once)

    def execute(self, query: str, params: Sequence[Any] = ()) -> _PgCursor:
        text = query.replace("%", "%%").replace("?", "%s")
        returning = False
        if _INSERT_OR_IGNORE.match(text):
            text = _INSERT_OR_IGNORE.sub("INSERT INTO", text) + " ON CONFLICT DO NOTHING"
        elif (insert := _INSERT_INTO.match(text)) and insert.group(1) in self.numbered:
            text += " RETURNING id"
            returning = True
        cursor = self.conn.execute(text, tuple(params))
        return _PgCursor(cursor, returning)


class _PgCursor:
    def __init__(self, cursor: Any, returning: bool) -> None:
        self._cursor = cursor
        self.lastrowid: int | None = None
        if returning:
            row = cursor.fetchone()
            self.lastrowid = int(row[0]) if row else None

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return list(self._cursor.fetchall())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor.fetchall() if self._cursor.description else [])


# ---------------------------------------------------------------------------- jobs played by one process


def _lease_s(said: str | None, default: float = 30.0) -> float:
    try:
        value = float(said) if said else default
    except ValueError:
        value = -1.0
    if not 0.5 <= value <= 3600:
        log.warning("lease_setting_ignored", CRAITS_LEASE_S=said, why="seconds from 0.5 to 3600", used=default)
        return default
    return value


LEASE_S = _lease_s(os.environ.get("CRAITS_LEASE_S"))
"""How long a process's claim on a job (a comparison, a scrimmage) holds without being renewed:
renewed every third of it while the job plays, so a process that dies (or a machine that
stops) leaves its job to another process this long after its last renewal."""

POLL_S = 1.0
"""How often a player waiting for a job another process holds looks for one it may take."""

LEASES = """
CREATE TABLE IF NOT EXISTS leases (kind TEXT NOT NULL, job INTEGER NOT NULL, holder TEXT NOT NULL,
                                   until REAL NOT NULL, PRIMARY KEY (kind, job));
"""


class LeaseLost(RosterError):
    """Another process holds the job now (this one stalled past its lease): it stops playing it."""


def lease_holder() -> str:
    """This process, as a lease names it (the machine, the process, and a random part: a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Queue(RosterTables):
    """Jobs kept in :attr:`TABLE` (an ``id`` and a ``status``), waiting or running until done
    or failed, that web processes on any machine start players for: each job is played by one
    process at a time, the one holding its lease (table ``leases``, one row per job). A claim
    takes the oldest job whose lease is free or has run out, in a transaction no other claim
    enters (:meth:`RosterTables._immediate`), so two players never take the same job; a player
    renews its lease while it plays (:func:`leased`) and writes the job's progress only while
    it still holds it (:meth:`holds`)."""

    TABLE = ""
    KIND = ""
    """The jobs' name in ``leases``."""

    def claim(self, holder: str, now: float | None = None) -> int | None:
        """The oldest job to play that no live lease holds, now leased to ``holder`` (None: none)."""
        with self._immediate() as db:
            now = database_now(db) if now is None else now
            row = db.execute(f"SELECT id FROM {self.TABLE} WHERE status IN ('waiting', 'running') AND id NOT IN "
                             "(SELECT job FROM leases WHERE kind = ? AND until > ?) ORDER BY id LIMIT 1",
                             (self.KIND, now)).fetchone()
            if row is None:
                return None
            db.execute("INSERT INTO leases (kind, job, holder, until) VALUES (?, ?, ?, ?) ON CONFLICT (kind, job) "
                       "DO UPDATE SET holder = excluded.holder, until = excluded.until",
                       (self.KIND, int(row[0]), holder, now + LEASE_S))
        log.info("job_claimed", kind=self.KIND, job=int(row[0]), holder=holder)
        return int(row[0])

    def renew(self, job: int, holder: str) -> bool:
        """The lease of ``holder`` on ``job`` extended; False when another process took it over."""
        with self._db() as db:
            renewed = db.execute("UPDATE leases SET until = ? WHERE kind = ? AND job = ? AND holder = ?",
                                 (database_now(db) + LEASE_S, self.KIND, job, holder))
            return int(renewed.rowcount) > 0

    def holds(self, db: Any, job: int, holder: str) -> None:
        """LeaseLost unless ``holder`` holds ``job`` (in ``db``'s transaction, before a write)."""
        row = db.execute("SELECT holder FROM leases WHERE kind = ? AND job = ?", (self.KIND, job)).fetchone()
        if row is None or row[0] != holder:
            raise LeaseLost(f"{self.KIND} {job} is played by another process now ({row[0] if row else 'none'})")

    def release(self, db: Any, job: int) -> None:
        db.execute("DELETE FROM leases WHERE kind = ? AND job = ?", (self.KIND, job))

    def write_progress(self, job: int, status: str, columns: dict[str, str], holder: str | None) -> None:
        """``job``'s status and ``columns``; with ``holder``, only while that process holds it
        (LeaseLost otherwise), its lease ended with a last status (done, failed), and no claim
        between the check and the write."""
        with self._immediate() if holder is not None else self._db() as db:
            if holder is not None:
                self.holds(db, job, holder)
                if status in ("done", "failed"):
                    self.release(db, job)
            settings = "".join(f", {name} = ?" for name in columns)
            db.execute(f"UPDATE {self.TABLE} SET status = ?{settings} WHERE id = ?", (status, *columns.values(), job))

    def free_in(self, now: float | None = None) -> float | None:
        """Seconds until a job to play can be claimed (0: one can now); None when none is left to play."""
        with self._db() as db:
            now = database_now(db) if now is None else now
            rows = db.execute(f"SELECT t.id, l.until FROM {self.TABLE} t LEFT JOIN leases l ON l.kind = ? AND "
                              "l.job = t.id WHERE t.status IN ('waiting', 'running')", (self.KIND,)).fetchall()
        if not rows:
            return None
        return max(0.0, min((float(r[1]) if r[1] is not None else now) - now for r in rows))


async def take_jobs(queue: Queue, holder: str) -> AsyncIterator[int]:
    """Each job of ``queue`` this process claims, in turn, while any is left to play anywhere: a
    job another process holds is waited for (taken over once its lease runs out) rather than
    left, so a player that dies does not strand it."""
    while True:
        job = await asyncio.to_thread(queue.claim, holder)
        if job is not None:
            yield job
            continue
        wait = await asyncio.to_thread(queue.free_in)
        if wait is None:
            return
        await asyncio.sleep(min(max(wait, 0.2), POLL_S))  # (a job asked meanwhile: taken within POLL_S)


@contextlib.asynccontextmanager
async def leased(queue: Queue, job: int, holder: str) -> AsyncIterator[None]:
    """While the block plays ``job``, its lease is renewed every third of :data:`LEASE_S`; should
    another process have taken it over meanwhile (this one stalled past its lease), the block
    is cancelled and LeaseLost raised: the job's progress is the other's to write."""
    player = asyncio.current_task()
    assert player is not None
    lost = False

    async def renew() -> None:
        nonlocal lost
        while True:
            await asyncio.sleep(LEASE_S / 3)
            try:
                kept = await asyncio.to_thread(queue.renew, job, holder)
            except RosterError as err:  # (the database away: tried again; the writes wait for it too)
                log.warning("job_lease_not_renewed", kind=queue.KIND, job=job, error=str(err))
                continue
            if not kept:
                lost = True
                player.cancel()
                return

    renewer = asyncio.ensure_future(renew())
    try:
        yield
    except asyncio.CancelledError:
        if not lost:
            raise
    finally:
        renewer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewer
        if lost and player.cancelling():
            player.uncancel()  # (the cancellation was this lease's: the player goes on to its next job)
    if lost:
        raise LeaseLost(f"{queue.KIND} {job}: taken over by another process")


# ---------------------------------------------------------------------------- a roster's files


@dataclass(frozen=True)
class Held:
    """A claim another place holds (:meth:`RosterFiles.claim`)."""

    where: str
    renewed_ago: float
    """Seconds since it renewed it."""
    holds_for: float
    """Seconds it holds for, unrenewed."""


class RosterFiles(RosterTables):
    """The documents of a roster that more than one process reads: the organizer's input
    (``final.toml``, ``rubric.toml``) and the state one process writes for the others (the
    ladder's game, the final's snapshot and results).

    In SQLite, files in the roster folder, as they always were: every process is on the
    folder's machine. In PostgreSQL, rows of the roster's schema (table ``roster_files``), so
    web processes and commands on any machine read the same ones; the organizer still writes
    their input as a file in their folder on any machine and stores it (:meth:`store_organizer_file`,
    ``craits final plan``); every process reads the stored copy (:meth:`organizer_file`)."""

    SCHEMA = """
    CREATE TABLE IF NOT EXISTS roster_files (name TEXT PRIMARY KEY, text TEXT NOT NULL, written REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS organizer_files (name TEXT PRIMARY KEY, text TEXT NOT NULL, stored REAL NOT NULL,
                                                source TEXT NOT NULL);
    """

    def __init__(self, where: Roster | str | Path) -> None:
        """``where``: a roster, or its folder (a roster in PostgreSQL when it holds ``store.toml``,
        else the folder's files, a roster there or not)."""
        if not isinstance(where, Roster) and (Path(where) / STORE_FILE).is_file():
            where = Roster(where)
        self.folder = where.folder if isinstance(where, Roster) else Path(where)
        self.stored = isinstance(where, PostgresRoster)
        if isinstance(where, PostgresRoster):
            super().__init__(where)

    def path(self, name: str) -> Path:
        return self.folder / name

    def now(self) -> float:
        """Now by the clock of where the documents are (:func:`database_now`): the one every machine
        compares a claim written in them with."""
        if not self.stored:
            return time.time()
        with self._db() as db:
            return database_now(db)

    def text(self, name: str) -> str | None:
        """The document ``name`` (a path in the roster folder, ``final/snapshot.json``); None if there is none."""
        if not self.stored:
            try:
                return self.path(name).read_text(encoding="utf-8")
            except FileNotFoundError:
                return None
        with self._db() as db:
            row = db.execute("SELECT text FROM roster_files WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, name: str, text: str, *, first: bool = False) -> str:
        """``name`` written whole (``first``: only if there is none yet); returns what it holds now."""
        if not self.stored:
            path = self.path(name)
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, temp = tempfile_in(path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            if not first:
                os.replace(temp, path)
                return text
            try:
                os.link(temp, path)  # (never replaces: two processes at once keep the first one's)
            except FileExistsError:
                pass  # (another process wrote it first: its text is read below)
            finally:
                os.unlink(temp)
            return path.read_text(encoding="utf-8")
        with self._db() as db:
            db.execute("INSERT INTO roster_files (name, text, written) VALUES (?, ?, ?) ON CONFLICT (name) DO "
                       + ("NOTHING" if first else "UPDATE SET text = excluded.text, written = excluded.written"),
                       (name, text, database_now(db)))
            return str(db.execute("SELECT text FROM roster_files WHERE name = ?", (name,)).fetchone()[0])

    def claim(self, name: str, where: str, lease_s: float, *, renewing: str | None = None) -> str | Held:
        """In PostgreSQL, the claim ``name`` taken by ``where`` for ``lease_s`` seconds of the
        database's clock, unless another place holds it and it has not run out; or, with
        ``renewing`` (the mark this place last wrote), renewed, if it is still exactly that mark:
        a place that stalled past its claim finds it lost once another place has taken it, even
        if that one has let it go since. Returns the mark written, or who holds it
        (:class:`Held`). One transaction, the row locked: two places claiming at once never both
        hold it. In SQLite (one machine, nobody to share with) the mark, nothing written."""
        if not self.stored:
            return json.dumps({"where": where})
        with self._db() as db:
            now = database_now(db)
            mark = json.dumps({"where": where, "renewed": now, "until": now + lease_s})
            if renewing is None and db.execute(
                    "INSERT INTO roster_files (name, text, written) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
                    (name, mark, now)).rowcount:
                return mark
            row = db.execute("SELECT text FROM roster_files WHERE name = ? FOR UPDATE", (name,)).fetchone()
            if row is None:  # (renewing a claim gone from the database)
                return Held("no folder (the claim is gone from the roster's database)", 0.0, 0.0)
            held = json.loads(row[0])
            if (row[0] != renewing) if renewing is not None else (held["where"] != where and held["until"] > now):
                return Held(str(held["where"]), now - float(held["renewed"]), max(0.0, float(held["until"]) - now))
            db.execute("UPDATE roster_files SET text = ?, written = ? WHERE name = ?", (mark, now, name))
        return mark

    def let_go(self, name: str, mark: str) -> None:
        """The claim ``name`` given up, if it is still ``mark`` (this place's: another's stays):
        it runs out now, and still says where it was held (a place it was taken from says who took it)."""
        if self.stored:
            with self._db() as db:
                now = database_now(db)
                db.execute("UPDATE roster_files SET text = ?, written = ? WHERE name = ? AND text = ?",
                           (json.dumps({**json.loads(mark), "until": now}), now, name, mark))

    def move(self, name: str, to: str) -> bool:
        """``name`` renamed ``to`` (False: there was none)."""
        if not self.stored:
            try:
                os.replace(self.path(name), self.path(to))
            except FileNotFoundError:
                return False
            return True
        with self._db() as db:
            db.execute("DELETE FROM roster_files WHERE name = ?", (to,))
            return int(db.execute("UPDATE roster_files SET name = ? WHERE name = ?", (to, name)).rowcount) > 0

    def delete(self, name: str) -> None:
        if not self.stored:
            self.path(name).unlink(missing_ok=True)
            return
        with self._db() as db:
            db.execute("DELETE FROM roster_files WHERE name = ?", (name,))

    def organizer_file(self, name: str, check: Callable[[str, str], object] | None = None) -> OrganizerFile | None:
        """The organizer's file ``name`` (None if there is none). In SQLite, this folder's file.
        In PostgreSQL, the copy stored in the roster's database, which only the organizer
        replaces (:meth:`store_organizer_file`, ``craits final plan``): no clock decides, so a
        copy left on another machine, newer by its time or not, changes nothing. This folder's
        file is stored only when none is yet (the first plan, written before any process read
        it; ``check`` first, which raises RosterError for a file that cannot be one); a file
        here that says something else is reported (:attr:`OrganizerFile.note`, logged once)."""
        path = self.path(name)
        try:
            text: str | None = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = None
        except (OSError, UnicodeDecodeError) as err:
            raise RosterError(f"{path}: {err}") from None
        if not self.stored:
            return None if text is None else OrganizerFile(text, str(path))
        with self._db() as db:
            row = self._stored_row(db, name)
            if row is None and text is not None:
                if check is not None:
                    check(text, str(path))
                source = f"{socket.gethostname()}:{path.resolve()}"
                db.execute("INSERT INTO organizer_files (name, text, stored, source) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (name) DO NOTHING", (name, text, database_now(db), source))
                row = self._stored_row(db, name)
                if row is not None and row[0] == text:
                    log.info("organizer_file_stored", file=name, source=source, why="none was stored yet")
        if row is None:
            return None
        stored_text, stored_at, source = str(row[0]), float(row[1]), str(row[2])
        said = f"{name} (as stored in the roster's database on {_when(stored_at)}" + (f", from {source})" if source else ")")
        if text is None or text == stored_text:
            return OrganizerFile(stored_text, said)
        note = (f"{path} differs from the {name} stored in the roster's database on {_when(stored_at)}; the stored "
                f"one holds (every machine reads it); to store this file instead: craits final plan {self.folder}")
        told = (str(path.resolve()), hashlib.sha256(text.encode()).hexdigest(), hashlib.sha256(stored_text.encode()).hexdigest())
        if told not in _TOLD:
            _TOLD.add(told)
            log.warning("organizer_file_differs", file=name, here=str(path), stored_on=_when(stored_at),
                        stored_from=source, used="the stored copy")
        return OrganizerFile(stored_text, said, note)

    def store_organizer_file(self, name: str, text: str, source: Path) -> bool:
        """``text`` made the organizer's file ``name`` (read from ``source``): in PostgreSQL the
        copy every process reads, in SQLite this folder's file. False: it already was."""
        if not self.stored:
            path = self.path(name)
            try:
                if path.read_text(encoding="utf-8") == text:
                    return False
            except FileNotFoundError:
                pass
            self.put(name, text)
            return True
        with self._db() as db:
            row = self._stored_row(db, name)
            if row is not None and row[0] == text:
                return False
            where = f"{socket.gethostname()}:{source.resolve()}"
            db.execute("INSERT INTO organizer_files (name, text, stored, source) VALUES (?, ?, ?, ?) ON CONFLICT (name) "
                       "DO UPDATE SET text = excluded.text, stored = excluded.stored, source = excluded.source",
                       (name, text, database_now(db), where))
        log.info("organizer_file_stored", file=name, source=where, why="the organizer stored it")
        return True

    def _stored_row(self, db: Any, name: str) -> Any:
        """(text, stored, source) of the stored organizer's file ``name``, or None; a copy an
        earlier version kept in ``roster_files`` is taken over as it was."""
        row = db.execute("SELECT text, stored, source FROM organizer_files WHERE name = ?", (name,)).fetchone()
        if row is not None:
            return row
        old = db.execute("SELECT text, written FROM roster_files WHERE name = ?", (name,)).fetchone()
        if old is None:
            return None
        db.execute("INSERT INTO organizer_files (name, text, stored, source) VALUES (?, ?, ?, '') "
                   "ON CONFLICT (name) DO NOTHING", (name, str(old[0]), float(old[1])))
        return db.execute("SELECT text, stored, source FROM organizer_files WHERE name = ?", (name,)).fetchone()


_TOLD: set[tuple[str, str, str]] = set()
"""(this folder's file, its text's hash, the stored text's hash) already reported by this process."""


@dataclass(frozen=True, slots=True)
class OrganizerFile:
    """An organizer's file as the roster's processes read it."""

    text: str
    source: str
    """Where it was read, in words: this folder's file, or the copy stored in the database."""
    note: str = ""
    """A file in this folder that says something else, which is not used: how to make it the one."""


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))
