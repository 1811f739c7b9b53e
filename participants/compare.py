"""Version against version: "did my change help?"

A participant names two of their admitted versions, A (the old) and B (the new). Both play
the same deals, each deal in every seat rotation, against the same panel of house bots (the
builtin policies, seeded by the deal and the seat, so they play the same way for both): the
only difference between A's games and B's is the version. Per deal, each version's placing
and points are averaged over the rotations; the difference B - A of those averages is one
observation, and the comparison reports its plain mean with an anytime-valid 95 % interval
(the betting confidence sequence of :mod:`participants.confidence`, betting against 0), so
the participant may watch it deal after deal and stop as soon as it says something, without
watching biasing it.

The verdict is on the placing (lower is better): **better** when the whole interval of B - A
is below 0 (0 ruled out), **worse** when it is above, **not yet told apart** otherwise.
Points (lower is better too) are shown beside as a plain average, with no interval: a fixed-count
interval there (it was a normal one) holds only at a number of deals fixed in advance, and beside
a verdict watched deal after deal it excluded 0 while the verdict said "not yet told apart".

Comparisons are kept in the roster's database (table ``comparisons``) and played by
``python -m participants.compare ROSTER``, a process the web pages start (as they start the
admission), one comparison at a time, in the bots' sandbox. A comparison interrupted midway
continues from its last whole deal: deal ``k``'s seed is fixed by the comparison and ``k``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import secrets
import sqlite3
import statistics
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from participants.confidence import ConfidenceSequence
from participants.roster import Roster, RosterError, Version
from participants.settings import DEFAULT_GAMES, DEFAULT_PANEL
from participants.tables import (
    LEASES,
    LeaseLost,
    Queue,
    RosterFiles,
    database_now,
    lease_holder,
    leased,
    take_jobs,
)
from server.engine import ConfigError, Flags, GameConfig, make_config
from server.game.policies import POLICY_NAMES
from server.spec import BotSpec, Clocks, GameRecord, GameSpec, SeatStatus
from tournaments.schedule import derive_seed, rotate

HOUSE = POLICY_NAMES
"""The house bots a panel may hold (the referee's builtin policies)."""
MAX_GAMES = 2000
ALPHA = 0.05
VERDICTS = ("better", "worse", "not yet told apart")

SCHEMA = """
CREATE TABLE IF NOT EXISTS comparisons (
    id INTEGER PRIMARY KEY, participant TEXT NOT NULL, a INTEGER NOT NULL, b INTEGER NOT NULL,
    panel TEXT NOT NULL, games INTEGER NOT NULL, until_told INTEGER NOT NULL, seed INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'waiting', created REAL NOT NULL, deals TEXT NOT NULL DEFAULT '[]',
    message TEXT NOT NULL DEFAULT ''
);
""" + LEASES

GameRunner = Callable[[GameSpec], Awaitable[GameRecord]]


@dataclass(frozen=True, slots=True)
class Deal:
    """One deal played in every rotation by A and by B: their average placing and points."""

    a_placing: float
    b_placing: float
    a_points: float
    b_points: float
    a_faults: int
    """Games of the deal in which A's seat did not end ``ok`` (struck out, disconnected...)."""
    b_faults: int


@dataclass(frozen=True, slots=True)
class Difference:
    mean: float
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Summary:
    deals: int
    games: int
    placing: Difference
    """B's average placing minus A's (below 0: B places better), with the anytime-valid interval."""
    points: Difference
    """B's average points minus A's (below 0: B scores fewer, which is better): the plain average,
    no interval (``low``/``high`` infinite; None in the JSON): only anytime-valid intervals are shown."""
    verdict: str
    a_faults: int
    b_faults: int


class PlacingSequence:
    """B - A's placing difference, fed deal by deal: its mean, its anytime-valid interval and
    the verdict. A deal's difference lies in [-spread, spread] (spread: the table size less
    one), mapped onto [0, 1] for the interval, where "told apart" is the interval leaving 1/2
    (the sequence's centre, which it bets against: see :mod:`participants.confidence`)."""

    def __init__(self, table_size: int, alpha: float = ALPHA, interval: str = "betting") -> None:
        self.spread = table_size - 1
        self._sequence = ConfidenceSequence(alpha, centre=0.5, interval=interval)

    def add(self, deal: Deal) -> None:
        self._sequence.add((deal.b_placing - deal.a_placing + self.spread) / (2 * self.spread))

    @property
    def verdict(self) -> str:
        found = self._sequence.interval()  # (its ends are ruled out: an end at 1/2 has ruled 1/2 out)
        return "better" if found.high <= 0.5 else "worse" if found.low >= 0.5 else "not yet told apart"

    @property
    def placing(self) -> Difference:
        found, spread = self._sequence.interval(), self.spread
        if not found.count:
            return Difference(0.0, -spread, spread)
        return Difference(*(v * 2 * spread - spread for v in (found.mean, found.low, found.high)))


def summarize(deals: Sequence[Deal], table_size: int, alpha: float = ALPHA) -> Summary:
    """The comparison so far: the differences B - A with their intervals, and the verdict."""
    sequence = PlacingSequence(table_size, alpha)
    for deal in deals:
        sequence.add(deal)
    gaps = [d.b_points - d.a_points for d in deals]
    mean = statistics.fmean(gaps) if gaps else 0.0
    return Summary(len(deals), len(deals) * 2 * table_size, sequence.placing, Difference(mean, -math.inf, math.inf),
                   sequence.verdict, sum(d.a_faults for d in deals), sum(d.b_faults for d in deals))


LADDER_GAME = "game.json"
"""The game its ladder plays (preset and flags), written as the ladder starts: in the roster
folder, or in the database of a roster kept in PostgreSQL (:class:`participants.tables.RosterFiles`),
where comparisons and scrimmages played on other machines read it."""


def write_ladder_game(roster: Roster | Path, game: GameConfig) -> None:
    """Keep the ladder's game beside its roster, for the comparisons and scrimmages played apart."""
    flags = {k: v for k, v in asdict(game.flags).items() if v != getattr(Flags(), k)}  # (those the file set)
    if flags.get("decks") == (2 if game.players > 5 else 1):
        del flags["decks"]  # (the default for the ladder's table: a table of another size gets its own)
    text = json.dumps({"preset": game.preset, "flags": flags}, sort_keys=True)
    files = RosterFiles(roster)
    if files.text(LADDER_GAME) != text:
        files.put(LADDER_GAME, text)


def ladder_game(roster: Roster | Path | None, players: int) -> GameConfig:
    """The game of the ladder of ``roster`` (or its folder) at a table of ``players`` (the short
    game before any ladder ran): a comparison or a scrimmage plays what the ladder plays."""
    held: dict[str, Any] = {"preset": "craits", "flags": {"short_game": True}}
    if roster is not None:
        with contextlib.suppress(OSError, ValueError):
            held = dict(json.loads(RosterFiles(roster).text(LADDER_GAME) or json.dumps(held)))
    try:
        return make_config(held.get("preset", "craits"), players, **held.get("flags", {}))
    except (ConfigError, TypeError) as err:
        raise CompareError(f"the ladder's game cannot be played at a table of {players}: {err}") from None


async def play_deal(run_game: GameRunner, a: BotSpec, b: BotSpec, panel: Sequence[BotSpec], *, seed: int,
                    number: int, game: Roster | Path | None = None, replays: Path | None = None, at_once: int = 2,
                    tag: str = "cmp") -> Deal:
    """Deal ``number``: A's and B's games, each in every rotation against ``panel``, in the
    game of the ladder of the roster ``game`` (None: the short game)."""
    table = 1 + len(panel)
    config = ladder_game(game, table)
    gate = asyncio.Semaphore(at_once)

    async def one(side: str, bot: BotSpec, rotation: int) -> tuple[float, float, bool]:
        seating = rotate((bot.name, *(p.name for p in panel)), rotation)
        by_name = {bot.name: bot, **{p.name: p for p in panel}}
        game_id = f"{tag}-d{number + 1}-{side}-r{rotation + 1}"
        # A and B meet the same deal from the same seat, each process once: one deal per rotation
        deal_seed = derive_seed(seed, "compare-deal", number, "rotation", rotation)
        spec = GameSpec(game_id, config, deal_seed, tuple(by_name[n] for n in seating), Clocks(),
                        None if replays is None else replays / f"{game_id}.jsonl", tournament="compare",
                        shared_deal=True)
        async with gate:
            record = await run_game(spec)
        if record.aborted:
            raise CompareError(f"game {game_id} could not be played: {record.aborted}")
        seat = seating.index(bot.name)
        return (record.result.placings[seat], record.result.totals[seat],
                record.seats[seat].status != SeatStatus.OK)

    played = await asyncio.gather(*(one(side, bot, r) for side, bot in (("a", a), ("b", b)) for r in range(table)))
    a_games, b_games = played[:table], played[table:]
    return Deal(statistics.fmean(g[0] for g in a_games), statistics.fmean(g[0] for g in b_games),
                statistics.fmean(g[1] for g in a_games), statistics.fmean(g[1] for g in b_games),
                sum(g[2] for g in a_games), sum(g[2] for g in b_games))


async def compare(run_game: GameRunner, a: BotSpec, b: BotSpec, panel: Sequence[BotSpec], *, seed: int,
                  games: int, until_told: bool = True, done: Sequence[Deal] = (),
                  on_deal: Callable[[list[Deal]], None] | None = None, **deal_options: Any) -> list[Deal]:
    """Deals until ``games`` games are played, or (``until_told``) the verdict is no longer
    "not yet told apart"; ``done``: the deals of an interrupted run, continued from."""
    if a.name == b.name:
        raise CompareError("compare two different versions")
    table = 1 + len(panel)
    deals = list(done)
    sequence = PlacingSequence(table)
    for deal in deals:
        sequence.add(deal)
    total = max(1, math.ceil(games / (2 * table)))
    while len(deals) < total:
        if until_told and sequence.verdict != "not yet told apart":
            break
        deals.append(await play_deal(run_game, a, b, panel, seed=seed, number=len(deals), **deal_options))
        sequence.add(deals[-1])
        if on_deal is not None:
            on_deal(deals)
    return deals


class CompareError(RosterError):
    """A comparison that cannot be made as asked (the message says why)."""


# ------------------------------------------------------------------ kept in the roster


@dataclass(frozen=True, slots=True)
class Comparison:
    id: int
    participant: str
    a: int
    b: int
    panel: tuple[str, ...]
    games: int
    until_told: bool
    seed: int
    status: str
    """waiting, running, done or failed."""
    created: float
    deals: tuple[Deal, ...]
    message: str

    @property
    def table_size(self) -> int:
        return 1 + len(self.panel)

    def summary(self) -> Summary:
        return summarize(self.deals, self.table_size)

    def to_dict(self) -> dict[str, Any]:
        s = self.summary()
        return {"id": self.id, "a": self.a, "b": self.b, "panel": list(self.panel), "games_wanted": self.games,
                "until_told": self.until_told, "status": self.status, "message": self.message,
                "deals": s.deals, "games": s.games, "verdict": s.verdict, "placing": asdict(s.placing),
                "points": {k: v if math.isfinite(v) else None for k, v in asdict(s.points).items()},
                "faults": {"a": s.a_faults, "b": s.b_faults}}


_COLUMNS = "id, participant, a, b, panel, games, until_told, seed, status, created, deals, message"


def _comparison(row: Sequence[Any]) -> Comparison:
    deals = tuple(Deal(**d) for d in json.loads(row[10]))
    return Comparison(row[0], row[1], row[2], row[3], tuple(json.loads(row[4])), row[5], bool(row[6]), row[7],
                      row[8], row[9], deals, row[11])


class Comparisons(Queue):
    """The comparisons of a roster (beside its participants, in its database), each played by
    one process at a time (:class:`participants.tables.Queue`)."""

    SCHEMA = SCHEMA
    TABLE = "comparisons"
    KIND = "compare"

    def ask(self, name: str, a: int, b: int, *, games: int = DEFAULT_GAMES, until_told: bool = True,
            panel: Sequence[str] = DEFAULT_PANEL) -> Comparison:
        """A new comparison of ``name``'s versions ``a`` and ``b``, waiting to be played."""
        for number in (a, b):
            version = self.roster.version(name, number)
            if version is None or version.status != "admitted":
                raise CompareError(f"{name} has no admitted version v{number}")
        if a == b:
            raise CompareError("compare two different versions")
        if not 1 <= games <= MAX_GAMES:
            raise CompareError(f"games: from 1 to {MAX_GAMES}, got {games}")
        panel = tuple(panel)
        if not 1 <= len(panel) <= 5 or (unknown := [p for p in panel if p not in HOUSE]):
            raise CompareError(f"opponents: 1 to 5 of the house bots {', '.join(HOUSE)}"
                               + (f" (not {', '.join(unknown)})" if len(panel) <= 5 and unknown else ""))
        with self._immediate() as db:  # (one at a time: the check and the insert with no other ask between)
            waiting = db.execute("SELECT id FROM comparisons WHERE participant = ? AND status IN ('waiting', 'running')"
                                 " ORDER BY id LIMIT 1", (name,)).fetchone()
            if waiting:
                raise CompareError(f"your comparison {waiting[0]} is still playing: one at a time (it plays beside "
                                   "the ladder, on the same machine)")
            cursor = db.execute("INSERT INTO comparisons (participant, a, b, panel, games, until_told, seed, created) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                (name, a, b, json.dumps(panel), games, int(until_told),
                                 secrets.randbits(63), database_now(db)))  # (secret: its deals come from it)
            made = self.get(int(cursor.lastrowid or 0), db=db)
        assert made is not None
        return made

    def get(self, ident: int, *, db: sqlite3.Connection | None = None) -> Comparison | None:
        if db is None:
            with self._db() as db:
                return self.get(ident, db=db)
        row = db.execute(f"SELECT {_COLUMNS} FROM comparisons WHERE id = ?", (ident,)).fetchone()
        return None if row is None else _comparison(row)

    def of(self, name: str) -> list[Comparison]:
        """``name``'s comparisons, newest first."""
        with self._db() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM comparisons WHERE participant = ? ORDER BY id DESC", (name,))
            return [_comparison(r) for r in rows]

    def pending(self) -> list[Comparison]:
        with self._db() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM comparisons WHERE status IN ('waiting', 'running') ORDER BY id")
            return [_comparison(r) for r in rows]

    def record(self, ident: int, status: str, deals: Sequence[Deal], message: str = "",
               holder: str | None = None) -> None:
        """The comparison's progress; ``holder``: written only while that process holds it
        (LeaseLost otherwise), and its lease ended with a last status (done, failed)."""
        self.write_progress(ident, status, {"deals": json.dumps([asdict(d) for d in deals]), "message": message},
                            holder)


# ------------------------------------------------------------------ playing them


def version_spec(roster: Roster, version: Version) -> BotSpec:
    """The version as a launched bot, from its built folder on this machine (:meth:`Roster.bot_dir`)."""
    return BotSpec(name=version.bot, token="", command=version.command, cwd=str(roster.bot_dir(version)))


def house_specs(panel: Sequence[str]) -> tuple[BotSpec, ...]:
    return tuple(BotSpec(name=f"house-{p}-{i + 1}", token="", builtin=p) for i, p in enumerate(panel))


async def play_pending(roster: Roster, run_game: GameRunner | None = None) -> list[Comparison]:
    """Play every comparison still waiting (or interrupted), oldest first, each claimed by this
    process alone (one another process holds is taken over if its lease runs out, from its last
    whole deal); each deal is recorded as it ends, so its page shows the interval growing narrower."""
    from server.transport.service import Arena, ArenaOptions  # (the referee: only this process needs it)

    store = Comparisons(roster)
    holder = lease_holder()
    finished = []
    arena = None
    try:
        async for ident in take_jobs(store, holder):
            job = store.get(ident)
            assert job is not None
            if run_game is None:
                if arena is None:
                    arena = await Arena.start("127.0.0.1:0", ArenaOptions(bot_log_dir=roster.folder / "compare" / "bots",
                                                                          sandbox="bwrap"))
                    arena.keep_bots()
                run_game = arena.run_game
            try:
                async with leased(store, ident, holder):
                    if await _play_one(roster, store, job, run_game, holder):
                        finished.append(job.id)
            except LeaseLost as err:  # (this process stalled past its lease: the other one plays it)
                print(f"comparison {job.id}: {err}", file=sys.stderr, flush=True)
    finally:
        if arena is not None:
            await arena.shutdown(grace_s=0)
    return [c for c in (store.get(i) for i in finished) if c is not None]


async def _play_one(roster: Roster, store: Comparisons, job: Comparison, run_game: GameRunner, holder: str) -> bool:
    """Play ``job`` (from its last whole deal), recording each deal as it ends; True once done."""
    versions = [roster.version(job.participant, n) for n in (job.a, job.b)]
    if any(v is None or v.status != "admitted" for v in versions):
        store.record(job.id, "failed", job.deals, "a version is no longer admitted", holder)
        return False
    try:
        a, b = (version_spec(roster, v) for v in versions if v is not None)
    except RosterError as err:
        store.record(job.id, "failed", job.deals, str(err), holder)
        return False
    store.record(job.id, "running", job.deals, holder=holder)
    played: list[Deal] = list(job.deals)

    def keep(deals: list[Deal]) -> None:
        played[:] = deals  # (what a failure keeps)
        store.record(job.id, "running", deals, holder=holder)

    try:
        deals = await compare(run_game, a, b, house_specs(job.panel), seed=job.seed, games=job.games,
                              until_told=job.until_told, done=job.deals, tag=f"cmp{job.id}",
                              replays=roster.folder / "compare" / str(job.id), on_deal=keep, game=roster)
    except CompareError as err:  # (LeaseLost is not one: it goes up, and the other player records)
        store.record(job.id, "failed", played, str(err), holder)
        return False
    store.record(job.id, "done", deals, holder=holder)
    return True


def verdict_words(verdict: str, a: int, b: int, points_low: float | None = None,
                  points_high: float | None = None) -> str:
    """The verdict as a student reads it, about placing (what it is on), with the points only as a
    hint: "not yet told apart" beside a points interval that excludes 0 read as a contradiction."""
    if verdict == "better":
        return f"v{b} places better than v{a} (sure, at 95 %)"
    if verdict == "worse":
        return f"v{b} places worse than v{a} (sure, at 95 %)"
    said = f"v{b} and v{a}: not yet separated on placing (play more games, or they are about even)"
    if points_low is None or points_high is None or not (math.isfinite(points_low) and math.isfinite(points_high)):
        return said
    if points_high < 0 or points_low > 0:
        leaning = b if points_high < 0 else a
        said += f"; on points v{leaning} leads so far, a hint only: a bot can score fewer points and still place worse"
    return said


def describe(job: Comparison) -> str:
    """The comparison in a few lines, as ``craits compare`` prints it."""
    s = job.summary()
    return (f"{verdict_words(s.verdict, job.a, job.b, s.points.low, s.points.high)} after {s.games} games "
            f"({s.deals} deals, every seat, against "
            f"{', '.join(job.panel)})\n"
            f"  placing v{job.b} - v{job.a}: {s.placing.mean:+.3f}  (95% anytime interval {s.placing.low:+.3f} .. "
            f"{s.placing.high:+.3f}, its ends ruled out; below 0 is better)\n"
            f"  points  v{job.b} - v{job.a}: {s.points.mean:+.1f}  (a plain average, no interval: the verdict reads "
            "placing)"
            + (f"\n  faults: v{job.a} {s.a_faults}, v{job.b} {s.b_faults}" if s.a_faults or s.b_faults else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m participants.compare", description=__doc__)
    parser.add_argument("roster", help="the roster folder")
    args = parser.parse_args(argv)
    for job in asyncio.run(play_pending(Roster(args.roster))):
        print(f"comparison {job.id}: {job.summary().verdict}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
