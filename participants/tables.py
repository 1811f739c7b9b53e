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
``lastrowid``, and in a schema, 64-bit integers and double-precision times)."""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from participants.roster import PostgresRoster, Roster, immediate, private_file


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

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return list(self._cursor.fetchall())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor.fetchall() if self._cursor.description else [])
