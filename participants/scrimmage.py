"""Scrimmages: unrated games a participant asks for, against opponents they choose.

An opponent is another participant (their version playing on the ladder now) or a house bot
(a builtin policy). The games seat the asker's playing version and the opponents, the seats
rotating from game to game; they are recorded here, in the roster's database (table
``scrimmages``) with their replays under ``scrimmage/ID/``, and nowhere else: never in the
ladder's store, so never in its ratings or standings. The asker and every participant whose
version played see them on their pages.

Each participant may ask for at most :func:`quota` games per rolling hour (``craits roster
set scrimmage_games_per_hour=N``; default :data:`GAMES_PER_HOUR`). They are played by
``python -m participants.scrimmage ROSTER``, started by the web pages, at a lower scheduling
priority than the ladder (``nice`` :data:`NICE`) and one game at a time, so ladder games keep
the machine first.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from participants.compare import HOUSE, GameRunner, ladder_game, version_spec
from participants.roster import ORGANIZER, PostgresRoster, Roster, RosterError
from participants.tables import LEASES, LeaseLost, Queue, database_now, lease_holder, leased, take_jobs
from server.spec import BotSpec, Clocks, GameSpec
from tournaments.schedule import derive_seed

GAMES_PER_HOUR = 30
QUOTA_KEY = "scrimmage_games_per_hour"
NICE = 10

SCHEMA = """
CREATE TABLE IF NOT EXISTS scrimmages (
    id INTEGER PRIMARY KEY, participant TEXT NOT NULL, seats TEXT NOT NULL, games INTEGER NOT NULL,
    seed INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'waiting', created REAL NOT NULL,
    results TEXT NOT NULL DEFAULT '[]', message TEXT NOT NULL DEFAULT ''
);
""" + LEASES


class ScrimmageError(RosterError):
    """A scrimmage that cannot be played as asked (the message says why)."""


@dataclass(frozen=True, slots=True)
class Scrimmage:
    id: int
    participant: str
    seats: tuple[str, ...]
    """The bots as seated in the first game: the asker's version first, then the opponents
    (``NAME.vN`` for a participant's version, ``house-POLICY`` for a house bot)."""
    games: int
    seed: int
    status: str
    """waiting, running, done or failed."""
    created: float
    results: tuple[dict[str, Any], ...]
    """Per game played: game_id, bots (seat order), placings, totals, statuses."""
    message: str

    def participants(self) -> set[str]:
        """Who may see it: the asker and every participant whose version played."""
        return {self.participant} | {bot.rpartition(".v")[0] for bot in self.seats if not bot.startswith("house-")}


def quota(roster: Roster) -> int:
    return int(roster.limits().get(QUOTA_KEY, GAMES_PER_HOUR))


def _row(row: Sequence[Any]) -> Scrimmage:
    return Scrimmage(row[0], row[1], tuple(json.loads(row[2])), row[3], row[4], row[5], row[6],
                     tuple(json.loads(row[7])), row[8])


_COLUMNS = "id, participant, seats, games, seed, status, created, results, message"


class Scrimmages(Queue):
    """The scrimmages of a roster, each played by one process at a time (:class:`participants.tables.Queue`)."""

    SCHEMA = SCHEMA
    TABLE = "scrimmages"
    KIND = "scrimmage"

    def used(self, name: str, now: float | None = None, *, db: sqlite3.Connection | None = None) -> int:
        """Games ``name`` asked for in the last hour."""
        if db is None:
            with self._db() as db:
                return self.used(name, now, db=db)
        since = (database_now(db) if now is None else now) - 3600
        return int(db.execute("SELECT COALESCE(SUM(games), 0) FROM scrimmages WHERE participant = ? AND created > ?",
                              (name, since)).fetchone()[0])

    def ask(self, name: str, opponents: Sequence[str], games: int, now: float | None = None) -> Scrimmage:
        """``games`` games of ``name``'s playing version against ``opponents`` (participants'
        names or house bots), within the hourly quota."""
        mine = {v.participant: v for v in self.roster.active()}
        if name not in mine:
            raise ScrimmageError(f"{name} has no admitted version to play")
        if not 1 <= len(opponents) <= 4:
            raise ScrimmageError("choose 1 to 4 opponents (a table seats 2 to 5)")
        seats = [mine[name].bot]
        for opponent in opponents:
            if opponent in HOUSE:
                seats.append(f"house-{opponent}")
            elif opponent in mine and opponent != name and opponent != ORGANIZER:
                seats.append(mine[opponent].bot)
            else:
                raise ScrimmageError(f"{opponent!r}: not a participant with an admitted version, nor a house bot "
                                     f"({', '.join(HOUSE)})")
        if len(set(seats)) != len(seats):
            if any(seats.count(s) > 1 for s in seats if not s.startswith("house-")):
                raise ScrimmageError("each participant may sit only once at the table")
            seats = [s if seats.index(s) == i else f"{s}-{i + 1}" for i, s in enumerate(seats)]
        if games < 1:
            raise ScrimmageError("ask for at least 1 game")
        most = quota(self.roster)
        with self._immediate() as db:  # (the quota's check and the request it allows: parallel asks meet one count)
            created = database_now(db) if now is None else now
            left = most - self.used(name, created, db=db)
            if games > left:
                raise ScrimmageError(f"{games} games would pass your quota of {most} scrimmage games an "
                                     f"hour: {max(left, 0)} left now")
            cursor = db.execute("INSERT INTO scrimmages (participant, seats, games, seed, created) VALUES (?, ?, ?, ?, ?)",
                                (name, json.dumps(seats), games, secrets.randbits(63), created))  # (secret: its deals)
            made = self.get(int(cursor.lastrowid or 0), db=db)
        assert made is not None
        return made

    def get(self, ident: int, *, db: sqlite3.Connection | None = None) -> Scrimmage | None:
        if db is None:
            with self._db() as db:
                return self.get(ident, db=db)
        row = db.execute(f"SELECT {_COLUMNS} FROM scrimmages WHERE id = ?", (ident,)).fetchone()
        return None if row is None else _row(row)

    def involving(self, name: str) -> list[Scrimmage]:
        """The scrimmages ``name`` asked for or played in, newest first."""
        with self._db() as db:
            rows = [_row(r) for r in db.execute(f"SELECT {_COLUMNS} FROM scrimmages ORDER BY id DESC")]
        return [s for s in rows if name in s.participants()]

    def pending(self) -> list[Scrimmage]:
        with self._db() as db:
            return [_row(r) for r in db.execute(
                f"SELECT {_COLUMNS} FROM scrimmages WHERE status IN ('waiting', 'running') ORDER BY id")]

    def record(self, ident: int, status: str, results: Sequence[dict[str, Any]], message: str = "",
               holder: str | None = None) -> None:
        """The scrimmage's progress; ``holder``: written only while that process holds it
        (LeaseLost otherwise), and its lease ended with a last status (done, failed)."""
        self.write_progress(ident, status, {"results": json.dumps(list(results)), "message": message}, holder)

    def replay_path(self, job: Scrimmage, game_id: str) -> Path:
        return self.roster.folder / "scrimmage" / str(job.id) / f"{game_id}.jsonl"

    def replay_file(self, job: Scrimmage, game_id: str) -> Path:
        """The game's replay on this machine: where it was played, else (a roster in PostgreSQL,
        played on another machine) fetched from the database by the hash its result keeps."""
        path = self.replay_path(job, game_id)
        digest = next((g.get("replay") for g in job.results if g.get("game_id") == game_id), None)
        if path.exists() or not digest or not isinstance(self.roster, PostgresRoster):
            return path
        self.roster.fetch_kept(str(digest), path)
        return path


def _kept_replay(roster: Roster, path: Path) -> dict[str, str]:
    """A roster in PostgreSQL keeps the game's replay in its database too (``replay``: its hash),
    for the pages served on other machines (:meth:`Scrimmages.replay_file`)."""
    if not isinstance(roster, PostgresRoster):
        return {}
    try:
        return {"replay": roster.keep_file(path.read_bytes())}
    except OSError:  # (no replay written: the page says it is not kept)
        return {}


def _specs(roster: Roster, seats: Sequence[str]) -> list[BotSpec] | None:
    """The seats' bots now (None when a version in it is no longer admitted)."""
    specs = []
    for bot in seats:
        if bot.startswith("house-"):
            specs.append(BotSpec(name=bot, token="", builtin=bot.split("-")[1]))
            continue
        name, _, number = bot.rpartition(".v")
        version = roster.version(name, int(number))
        if version is None or version.status != "admitted":
            return None
        specs.append(version_spec(roster, version))
    return specs


async def play(store: Scrimmages, job: Scrimmage, run_game: GameRunner,
               holder: str | None = None) -> list[dict[str, Any]]:
    """The scrimmage's games, one at a time, each recorded as it ends (continuing an interrupted
    one); ``holder``: the process holding its lease (:meth:`Scrimmages.record`)."""
    try:
        specs = _specs(store.roster, job.seats)
        if specs is None:
            store.record(job.id, "failed", job.results, "a version in it is no longer admitted", holder)
            return list(job.results)
        table = len(specs)
        config = ladder_game(store.roster, table)  # (the ladder's preset and flags)
    except LeaseLost:
        raise
    except RosterError as err:
        store.record(job.id, "failed", job.results, str(err), holder)
        return list(job.results)
    results = list(job.results)
    store.record(job.id, "running", results, holder=holder)
    for number in range(len(results), job.games):
        order = [(seat + number) % table for seat in range(table)]  # (as tournaments.schedule.rotate seats them)
        game_id = f"scrim{job.id}-g{number + 1}"
        spec = GameSpec(game_id, config, derive_seed(job.seed, "scrimmage", number),
                        tuple(specs[i] for i in order), Clocks(), store.replay_path(job, game_id),
                        tournament="scrimmage")
        record = await run_game(spec)
        results.append({"game_id": game_id, "bots": [job.seats[i] for i in order],
                        "placings": list(record.result.placings), "totals": list(record.result.totals),
                        "statuses": [str(s.status) for s in record.seats], "aborted": record.aborted,
                        **_kept_replay(store.roster, store.replay_path(job, game_id))})
        store.record(job.id, "running", results, holder=holder)
    store.record(job.id, "done", results, holder=holder)
    return results


async def play_pending(roster: Roster, run_game: GameRunner | None = None) -> list[int]:
    """Play every scrimmage waiting (or interrupted), oldest first, each claimed by this process
    alone (one another process holds is taken over if its lease runs out)."""
    from server.transport.service import Arena, ArenaOptions  # (the referee: only this process needs it)

    store = Scrimmages(roster)
    holder = lease_holder()
    arena = None
    done = []
    try:
        async for ident in take_jobs(store, holder):
            job = store.get(ident)
            assert job is not None
            if run_game is None:
                arena = await Arena.start("127.0.0.1:0", ArenaOptions(
                    bot_log_dir=roster.folder / "scrimmage" / "bots", sandbox="bwrap"))
                arena.keep_bots()
                run_game = arena.run_game
            try:
                async with leased(store, ident, holder):
                    await play(store, job, run_game, holder)
                done.append(ident)
            except LeaseLost as err:  # (this process stalled past its lease: the other one plays it)
                print(f"scrimmage {ident}: {err}", file=sys.stderr, flush=True)
    finally:
        if arena is not None:
            await arena.shutdown(grace_s=0)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m participants.scrimmage", description=__doc__)
    parser.add_argument("roster", help="the roster folder")
    args = parser.parse_args(argv)
    with contextlib.suppress(OSError):
        os.nice(NICE)  # (below the ladder's games)
    for ident in asyncio.run(play_pending(Roster(args.roster))):
        print(f"scrimmage {ident}: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
