"""The adaptive schedule: tables picked from the results so far, until the stop is met.

``schedule = "adaptive"`` with ``stop = "settled" | "top:K" | "pair:A,B"`` (see
``tournaments.anytime``) plays batches of tables until the rule's verdicts are all in, or
``max_games`` is reached:

* **a table** seats the pair the rule waits for most (``StopRule.needs``: how far its
  interval still has to move; two neighbours whose pair interval is open, for ``settled``),
  then bots that meet the seated ones in open pairs (a chain of open neighbours A-B-C-D serves
  three pairs at once) or another open pair, and fills the seats left uniformly from all the
  other bots; a pair's verdict compares the two on the same tables, whoever fills them. Its
  deal is played in every seat rotation (a unit of the intervals);
* **a batch** is as many tables as keep the file's ``concurrency`` busy; the next batch is
  picked only once every game of this one is recorded, so every decision (which tables,
  whether to stop) reads finished games only, and the intervals, valid at any time, stay
  valid at the moment of stopping;
* **seeded and resumable**: a table's seating and deal come from the tournament seed and
  the table's number (``tournaments.schedule.derive_seed``), and the open pairs from the
  games recorded before its batch; the batch's games are stored before they are played.
  Stopped or killed, ``craits tournament resume`` plays the rest of the batch first and then
  goes on exactly as an uninterrupted run would (the file's ``concurrency``, not
  ``--concurrency``, sets the batch, so a resume with another one picks the same tables).
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from server.storage.store import GameSlot, TournamentStore
from tournaments.anytime import StopRule
from tournaments.config import TournamentConfig
from tournaments.runner import (
    LOG_NAME,
    RunnerFactory,
    RunSummary,
    TournamentRunner,
    event_log,
    install_stop_handlers,
    standings_tally,
)
from tournaments.schedule import derive_seed, rotate
from tournaments.standings import Tally


def pick_table(
    bots: Sequence[str], table_size: int, open_pairs: Mapping[tuple[str, str], float] | Sequence[tuple[str, str]],
    seed: int, table_no: int,
) -> tuple[str, ...]:
    """The seating of table ``table_no`` (its first rotation). ``open_pairs``: the pairs the
    stop still waits for, each with its need (``StopRule.needs``; a plain list: all alike).
    The pair in most need first; then, seat by seat, the bot that meets the seated ones in the
    most need (a chain of open neighbours A-B-C-D serves three pairs at one table), or another
    open pair whole; seats no open pair can use are drawn uniformly from the rest of ``bots``.
    Ties are broken by a seeded draw; the seating is shuffled by it too."""
    rng = random.Random(derive_seed(seed, "adaptive", table_no))
    need: dict[frozenset[str], float] = {}
    for pair in open_pairs:
        weight = open_pairs[pair] if isinstance(open_pairs, Mapping) else 1.0
        need[frozenset(pair)] = max(need.get(frozenset(pair), 0.0), weight + 1e-9)  # (settled: not listed)
    order = {b: rng.random() for b in bots}  # the seeded tie-break
    seated: list[str] = []
    while len(seated) < table_size:
        gains = {c: sum(need.get(frozenset((c, s)), 0.0) for s in seated) for c in bots if c not in seated}
        best = max(gains, key=lambda c: (gains[c], order[c]), default=None)
        whole = [p for p in need if not p & set(seated)] if table_size - len(seated) >= 2 else []
        pair = max(whole, key=lambda p: (need[p], max(order[b] for b in p)), default=None)
        if pair is not None and (best is None or need[pair] > gains[best]):
            seated += sorted(pair, key=lambda b: order[b])
        elif best is not None and gains[best] > 0:
            seated.append(best)
        else:
            break
    rest = [b for b in bots if b not in seated]
    seated += rng.sample(rest, table_size - len(seated))
    rng.shuffle(seated)
    return tuple(seated)


def table_games(table_no: int, seating: tuple[str, ...], key: bytes | int, first_ordinal: int,
                duplicate: str = "none") -> list[GameSlot]:
    """A new table ``table_no``, played in every rotation of ``seating``: one deal for all of
    them (``duplicate`` "table" or "tournament"), or a deal for each game ("none"). ``key``: the
    run's deal key (an int: a run stored before deal keys, its file's seed)."""
    shared = derive_seed(key, "adaptive-deal", table_no)
    return [
        GameSlot(
            game_id=f"a{table_no + 1:06d}-r{rotation + 1}",
            ordinal=first_ordinal + rotation,
            table=table_no,
            deal=table_no,
            rotation=rotation,
            seed=derive_seed(key, "adaptive-deal", table_no, "rotation", rotation) if duplicate == "none" else shared,
            seats=rotate(seating, rotation),
        )
        for rotation in range(len(seating))
    ]


def tables_per_batch(config: TournamentConfig) -> int:
    """Tables whose games keep the file's concurrency busy (at least one)."""
    return max(1, -(-config.concurrency // config.table_size))


class AdaptiveBook:
    """What the adaptive schedule knows of its store: the standings' tally of the recorded
    games (read once, then each batch's), the next table's number and ordinal."""

    def __init__(self, config: TournamentConfig, store: TournamentStore) -> None:
        self.config = config
        self.store = store
        self.rule = StopRule.parse(config.stop, config.bot_names)
        self.tally: Tally = standings_tally(config, config.bot_names)
        row = store.tournament()
        self.key: bytes | int = config.seed if row is None or row.deal_key is None else row.deal_key
        games = store.games()
        self.next_table = max((g.table for g in games), default=-1) + 1
        self.next_ordinal = max((g.ordinal for g in games), default=-1) + 1

    def update(self) -> None:
        """Add the games recorded since the last look (a whole batch: none is pending then)."""
        for result in self.store.results(after=self.tally.last_ordinal):
            self.tally.add(result)

    def finished(self) -> str | None:
        """Why the tournament is over (its stop met, or max_games reached), or None."""
        if self.rule.met(self.tally.anytime):
            return f"stop {str(self.rule)!r} met: {self.rule.describe(self.tally.anytime)}"
        _, scheduled = self.store.counts()
        if scheduled + self.config.table_size > self.config.max_games:
            return (f"max_games ({self.config.max_games}) reached before stop {str(self.rule)!r} was met: "
                    f"{self.rule.describe(self.tally.anytime)}")
        return None

    def new_batch(self) -> list[GameSlot]:
        """The next batch's games, stored (see the module docstring)."""
        config = self.config
        _, scheduled = self.store.counts()
        room = (config.max_games - scheduled) // config.table_size
        open_pairs = self.rule.needs(self.tally.anytime)
        games: list[GameSlot] = []
        for _ in range(min(tables_per_batch(config), room)):
            seating = pick_table(config.bot_names, config.table_size, open_pairs, config.seed, self.next_table)
            games += table_games(self.next_table, seating, self.key, self.next_ordinal, config.duplicate)
            self.next_table += 1
            self.next_ordinal += config.table_size
        self.store.add_games(games)
        return games


def adaptive_finished(config: TournamentConfig, store: TournamentStore) -> str | None:
    """Why a stored adaptive tournament is over, or None if it has games to play."""
    done, scheduled = store.counts()
    if done < scheduled:
        return None
    book = AdaptiveBook(config, store)
    book.update()
    return book.finished()


async def play_adaptive(
    config: TournamentConfig,
    store: TournamentStore,
    out_dir: Path,
    runner: RunnerFactory,
    *,
    concurrency: int | None = None,
    progress: bool | None = None,
    stop: asyncio.Event | None = None,
    handle_signals: bool = True,
    pages: bool = True,
) -> RunSummary:
    """Play batches until the stop is met, max_games is reached, or ``stop`` is set (SIGINT or
    SIGTERM set it too); the games in flight then stay unrecorded, for a resume. ``pages``:
    write each game's viewer page as it is recorded (as ``runner.play`` does)."""
    started = time.monotonic()
    stop = stop or asyncio.Event()
    current: list[TournamentRunner] = []

    def request_stop() -> None:
        stop.set()
        for batch in current:
            batch.request_stop()

    stopper = asyncio.ensure_future(_relay(stop, request_stop))
    restore = install_stop_handlers(request_stop) if handle_signals else (lambda: None)
    played = 0
    why: str | None = None
    talk = progress is not False
    try:
        with event_log(out_dir / LOG_NAME) as log:
            log = log.bind(tournament=config.name)
            async with runner(config, out_dir) as run_game:
                book = AdaptiveBook(config, store)
                said = ""
                while not stop.is_set():
                    if store.pending_games():
                        batch = TournamentRunner(config, store, run_game, out_dir, concurrency=concurrency,
                                                 progress=False, handle_signals=False, pages=pages)
                        current[:] = [batch]
                        summary = await batch.run()
                        played += summary.played
                        if not summary.complete:
                            break
                    book.update()
                    why = book.finished()
                    if why is not None:
                        break
                    state = book.rule.describe(book.tally.anytime)
                    if talk and state != said:
                        said = state
                        print(f"{config.name}: {store.counts()[0]} games: {state}", file=sys.stderr, flush=True)
                    games = book.new_batch()
                    log.info("adaptive_batch", tables=sorted({g.table for g in games}),
                             seats=[list(g.seats) for g in games if g.rotation == 0], state=state)
                recorded, _ = store.counts()
                if why is not None:
                    store.mark_finished()
                    log.info("adaptive_finished", why=why, recorded=recorded)
                    print(f"{config.name}: {why}", file=sys.stderr, flush=True)  # (the result, not progress)
    finally:
        restore()
        stopper.cancel()
    recorded, scheduled = store.counts()
    total = recorded if why is not None else max(config.max_games, scheduled)
    return RunSummary(played, recorded, total, why is None and stop.is_set(), time.monotonic() - started)


async def _relay(stop: asyncio.Event, request_stop: Callable[[], None]) -> None:
    """A stop set from outside (a test, the caller) stops the batch in flight too."""
    await stop.wait()
    request_stop()

