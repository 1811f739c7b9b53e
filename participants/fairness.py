"""Fairness guards on a roster's ladder: a version that faults in most of its games is paused.

A faulting game is one the version's seat ended struck out, disconnected or never
connected (the standings' bad statuses: the default policy played for it). Past
:data:`MIN_GAMES` games, a version faulting in more than :data:`FAULT_SHARE` of them is
**paused**: it sits out the ladder's next rounds (:class:`participants.entrants.RosterEntrants`
leaves it out) instead of eating the ladder's time and its tables' games, and its owner's
page says why. Submitting a new version is the way back (a paused version stays paused).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from participants.roster import Version, split_bot
from participants.tables import RosterTables, database_now
from tournaments.standings import BAD_STATUSES, BotStanding

MIN_GAMES = 6
FAULT_SHARE = 0.5

SCHEMA = """
CREATE TABLE IF NOT EXISTS paused (
    version INTEGER PRIMARY KEY, participant TEXT NOT NULL, number INTEGER NOT NULL, note TEXT NOT NULL, paused REAL NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class Pause:
    participant: str
    number: int
    note: str
    paused: float


def faulty(row: BotStanding) -> bool:
    """Whether a standings row shows a version faulting in most of its games."""
    bad = sum(row.issues.get(status, 0) for status in BAD_STATUSES)
    return row.games >= MIN_GAMES and bad > FAULT_SHARE * row.games


class Pauses(RosterTables):
    SCHEMA = SCHEMA

    def check(self, rows: Iterable[BotStanding]) -> list[Version]:
        """Pause the versions whose rows show them faulting in most of their games; returns the newly paused."""
        paused = self.paused_ids()
        newly = []
        for row in rows:
            owner = split_bot(row.bot)
            if owner is None or not faulty(row):
                continue
            version = self.roster.version(*owner)
            if version is None or version.id in paused:
                continue
            bad = {s: row.issues.get(s, 0) for s in BAD_STATUSES if row.issues.get(s, 0)}
            note = (f"paused: it faulted in {sum(bad.values())} of its {row.games} games ("
                    + ", ".join(f"{s.replace('_', ' ')} {n}" for s, n in bad.items())
                    + "); see its games' output, fix it and submit a new version")
            with self._db() as db:
                db.execute("INSERT OR IGNORE INTO paused (version, participant, number, note, paused) "
                           "VALUES (?, ?, ?, ?, ?)", (version.id, version.participant, version.number, note,
                                                                    database_now(db)))
            newly.append(version)
        return newly

    def paused_ids(self) -> set[int]:
        with self._db() as db:
            return {row[0] for row in db.execute("SELECT version FROM paused")}

    def of(self, name: str) -> list[Pause]:
        with self._db() as db:
            rows = db.execute("SELECT participant, number, note, paused FROM paused WHERE participant = ? "
                              "ORDER BY number", (name,))
            return [Pause(*r) for r in rows]
