"""Tables of a roster's database kept by the modules beside the roster (comparisons,
scrimmages, the final, pauses): each says its schema, made on first use, and works in a
connection of its own per piece of work, as :class:`participants.roster.Roster` does."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from participants.roster import Roster, private_file


class RosterTables:
    SCHEMA = ""
    """CREATE TABLE IF NOT EXISTS ...: the subclass's tables."""

    def __init__(self, roster: Roster) -> None:
        self.roster = roster
        private_file(roster.db_path)  # (a roster kept in PostgreSQL has this file only for these tables)
        with self._db() as db:
            db.executescript(self.SCHEMA)

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """A connection for one piece of work, in one transaction."""
        db = sqlite3.connect(self.roster.db_path, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    @contextlib.contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        """A connection in one transaction holding the write lock from its start (``BEGIN
        IMMEDIATE``): a quota's check and the write it allows, with no other writer between."""
        db = sqlite3.connect(self.roster.db_path, timeout=30, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()
