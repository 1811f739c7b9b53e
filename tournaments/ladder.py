"""A continuous ladder: the bots of a tournament file play round after round until stopped.

A tournament plays a schedule fixed in advance. A ladder grows its schedule one round at a
time, so it can run for days, take in a bot added to its file, and rank everyone as it goes:

* **a round** is one table: a new deal played in every seat rotation, so each bot of the
  table meets the same cards from every seat (a tournament's duplicate deals, in small);
* **rounds at once**: enough tables of distinct bots to keep the file's concurrency busy
  (``ceil(concurrency / table_size)``, as far as the bots go: :func:`next_rounds`), so a
  ladder of 30 bots on 8 cores plays 8 games at a time, not one table's 3 or 4;
* **who plays** is :func:`pick_table` (pure, seeded by the file's seed and the round): the
  bot that has played the fewest rounds, then, from those that have played the fewest, the
  ones whose ratings are closest to its own (less than a rating point apart counts as equally
  close), then the ones it has met least, then the round's seeded draw. Every bot plays about
  as often as every other, and mostly against bots of its strength. A bot that joins late
  is credited with the rounds an average bot played before it came (:meth:`LadderBook.credited`),
  so it plays at the field's rate rather than at every round until it has caught up, and in
  its first rounds it meets the bots it has met least first (``newcomers``), so its first
  games spread over the field;
* **who may play**: launched and builtin bots always; a bot that connects on its own only
  while its stream is open (:func:`seatable_bots`), so a student's bot that is away sits
  out instead of costing its table a connect timeout and losing games to the default
  policy; back, it has played least and plays next. Too few online to fill a table, the
  ladder waits and says so. (With workers on a PostgreSQL store too: such bots connect to
  the ladder's own process, which plays their games, ``tournaments.distributed``.)
* **ratings** are the tournament's standings (OpenSkill Plackett-Luce), ordered by rating
  ordinal, written to ``standings.json``/``.csv`` after every round;
* **nothing is lost**: a round's games are stored before they are played and every game is
  recorded in one transaction (``server.storage.store``). Stopped (Ctrl-C, SIGTERM) or killed, the
  ladder continues where it was with the same command, the interrupted round first.
* **a lost database is waited for** (PostgreSQL): between rounds the ladder reads and writes
  its store on a thread (:class:`Patience`), so the bots and the pages are served meanwhile, and
  waits for a database that is gone for as long as it is gone, saying so once a minute; Ctrl-C
  stops it. During a round the queue waits likewise (``tournaments.distributed``).

The file is read afresh at every start: bots may join (having played least, they play
next) or leave (their results stay in the standings; their unplayed games are dropped),
clocks and concurrency may change; the game itself (table size, preset, flags) may not,
as the ratings compare results of one game.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import itertools
import json
import random
import secrets
import signal
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from server.storage.replay.format import write_text_atomic
from server.storage.store import GameSlot, Store, TournamentStore, Unreachable
from tournaments.config import TournamentConfig, key_for, parse_config
from tournaments.pages import write_game_pages
from tournaments.runner import (
    LADDER_SCHEDULE,
    LOG_NAME,
    RunGame,
    RunnerFactory,
    RunSummary,
    TournamentError,
    TournamentRunner,
    clear_output,
    event_log,
    install_stop_handlers,
    settings_of,
    standings_of,
    standings_tally,
    write_standings,
)
from tournaments.schedule import derive_seed, rotate
from tournaments.standings import Standings, read_priors

T = TypeVar("T")

KIND = "ladder"
"""``settings["kind"]`` of a ladder's database."""


@dataclass(frozen=True, slots=True)
class LadderRound:
    number: int
    """1 for the ladder's first round."""
    seats: tuple[str, ...]
    """The seating of the first rotation."""
    games: tuple[GameSlot, ...]


@dataclass(frozen=True, slots=True)
class LadderSummary:
    rounds: int
    """New rounds this run played to the end."""
    games: int
    """Games this run recorded (an interrupted round's included)."""
    stopped: bool
    """Stopped by a signal."""
    why: str = ""
    """Why it stopped, in words: "Ctrl-C", "SIGTERM", "--rounds 20", "waiting for bots"."""


STATE_FILE = "ladder.json"
"""A ladder's output folder says in it whether the ladder runs, or how and when it last
stopped, for ``ladder standings`` and the board (a ladder has no end: its standings are
never "complete", and a normal stop is not an incomplete one)."""


def write_state(out_dir: Path, *, running: bool, rounds: int = 0, why: str = "", store: Any = None) -> None:
    """Record whether the ladder runs, or why it stopped, and when, in its folder (atomically;
    a write that fails changes nothing: the standings then say less), and in ``store`` when it
    keeps it (PostgreSQL: ``ladder standings`` on another machine reads it there; a database
    lost at that moment keeps the last it had)."""
    state = {"running": running, "rounds": rounds, "why": why, "at": time.time()}
    with contextlib.suppress(OSError):
        write_text_atomic(out_dir / STATE_FILE, json.dumps(state, sort_keys=True) + "\n")
    if store is not None and hasattr(store, "set_run_state"):
        from server.storage.store import StoreError

        with contextlib.suppress(StoreError):
            store.set_run_state(state)


def read_state(out_dir: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((out_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def rounds_played(games: Sequence[GameSlot], pending: Collection[str]) -> int:
    """Rounds (a ladder's tables) every game of which is recorded (``pending``: the ids of those that are not)."""
    tables = {g.table for g in games}
    unfinished = {g.table for g in games if g.game_id in pending}
    return len(tables - unfinished)


def ladder_status(out_dir: Path | None, store: TournamentStore) -> str:
    """How a ladder stands, for its standings' title: "ladder: 70 rounds played, 210 games; the
    last run stopped after 12 new rounds (Ctrl-C, 2026-11-26 17:52 UTC)", or "running since",
    or only the rounds and games where neither its folder nor its store says (an older ladder)."""
    games = store.games()
    pending = {g.game_id for g in store.pending_games()}
    rounds = rounds_played(games, pending)
    done = len(games) - len(pending)
    text = f"ladder: {rounds} round{'' if rounds == 1 else 's'} played, {done} games"
    states = [read_state(out_dir) if out_dir is not None else None,
              store.run_state() if hasattr(store, "run_state") else None]  # (the latest of the two)
    state = max((s for s in states if s is not None), key=lambda s: float(s.get("at", 0)), default=None)
    if state is not None:
        at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(state.get("at", 0))))
        if state.get("running"):
            text += f"; running since {at} (or killed: then `ladder run` continues it)"
        else:
            last = int(state.get("rounds") or 0)
            text += (f"; the last run stopped after {last} new round{'' if last == 1 else 's'} "
                     f"({state.get('why') or 'stopped'}, {at})")
    if pending:
        games = f"{len(pending)} unplayed game{'' if len(pending) == 1 else 's'}"
        text += f"; the {games} of an interrupted round {'is' if len(pending) == 1 else 'are'} played first when it continues"
    return text


# ------------------------------------------------------------------ matchmaking (pure)


def pick_table(
    bots: Sequence[str],
    table_size: int,
    *,
    rounds_played: Mapping[str, float],
    ordinals: Mapping[str, float],
    met: Mapping[frozenset[str], int],
    seed: int,
    round_no: int,
    newcomers: Collection[str] = (),
) -> tuple[str, ...]:
    """The bots of round ``round_no``, the first seat first (see the module docstring).
    ``newcomers``: bots in their first rounds; one that sits first meets the bots it has met
    least before those closest in rating, so its first games spread over the field."""
    if len(set(bots)) != len(bots):
        raise ValueError("bot names must be distinct")
    if len(bots) < table_size:
        raise ValueError(f"{len(bots)} bots cannot fill a table of {table_size}")
    rng = random.Random(derive_seed(seed, "ladder", round_no))
    draw = {bot: rng.random() for bot in sorted(bots)}
    first = min(bots, key=lambda b: (rounds_played.get(b, 0), draw[b]))
    rating = ordinals.get(first, 0.0)

    spread = first in newcomers

    def preference(bot: str) -> tuple[float, int, int, float]:
        gap = int(abs(ordinals.get(bot, 0.0) - rating))
        times = met.get(frozenset((first, bot)), 0)
        return (rounds_played.get(bot, 0), *((times, gap) if spread else (gap, times)), draw[bot])

    others = sorted((b for b in bots if b != first), key=preference)
    return (first, *others[: table_size - 1])


def make_round(round_no: int, seats: tuple[str, ...], key: bytes | int, first_ordinal: int,
               duplicate: str = "none") -> LadderRound:
    """One new table, played in every rotation of ``seats``: a deal for each game ("none"), or
    one for them all. ``key``: the ladder's deal key (an int: a ladder stored before deal keys)."""
    shared = derive_seed(key, "ladder-deal", round_no)
    games = tuple(
        GameSlot(
            game_id=f"round{round_no:06d}-r{rotation + 1}",
            ordinal=first_ordinal + rotation,
            table=round_no - 1,
            deal=round_no - 1,
            rotation=rotation,
            seed=derive_seed(key, "ladder-deal", round_no, "rotation", rotation) if duplicate == "none" else shared,
            seats=rotate(seats, rotation),
        )
        for rotation in range(len(seats))
    )
    return LadderRound(round_no, seats, games)


NEWCOMER_ROUNDS = 3
"""A bot's first rounds, in which it meets the bots it has met least before those of its rating."""


def entry_rounds(games: Sequence[GameSlot]) -> dict[str, int]:
    """The round (1 for the first) in which each bot of a ladder's schedule first sat."""
    entered: dict[str, int] = {}
    for game in sorted(games, key=lambda g: g.table):
        for bot in game.seats:
            entered.setdefault(bot, game.table + 1)
    return entered


def history(games: Sequence[GameSlot]) -> tuple[Counter[str], Counter[frozenset[str]], int]:
    """From a ladder's schedule: rounds played by each bot, rounds each pair shared, and
    the number of the next round."""
    rounds: dict[int, frozenset[str]] = {}
    for game in games:
        rounds.setdefault(game.table, frozenset(game.seats))
    played: Counter[str] = Counter()
    met: Counter[frozenset[str]] = Counter()
    for seated in rounds.values():
        played.update(seated)
        met.update(frozenset(pair) for pair in itertools.combinations(sorted(seated), 2))
    return played, met, max(rounds, default=-1) + 2


# ------------------------------------------------------------------ the database


def open_ladder(
    config: TournamentConfig, source_text: str, source_path: str, out_dir: Path, *, overwrite: bool = False,
    store: TournamentStore | None = None,
) -> TournamentStore:
    """The ladder in ``out_dir`` (created if there is none), its bots updated from ``config``;
    ``store``: the ladder in that store instead (PostgreSQL), where ``overwrite`` is the caller's."""
    if store is None:
        if overwrite:
            clear_output(out_dir)
        store = Store.in_dir(out_dir)
    try:
        row = store.tournament()
        if row is None:
            store.create_tournament(
                name=config.name, source_text=source_text, source_path=source_path,
                schedule_digest=LADDER_SCHEDULE, settings={**settings_of(config), "kind": KIND},
                bots=bot_rows(config, {}), games=(), deal_key=key_for(config),
            )
            return store
        if row.schedule_digest != LADDER_SCHEDULE:
            raise TournamentError(
                f"{out_dir} holds tournament {row.name!r}, not a ladder; give the ladder another --out, "
                f"or replace the tournament with --overwrite"
            )
        stored = _flat({"table_size": row.settings.get("table_size"), "game": row.settings.get("game")})
        wanted = _flat({"table_size": config.table_size, "game": json.loads(json.dumps(config.game.to_dict()))})
        if stored != wanted:
            changed = sorted(k for k in stored.keys() | wanted.keys() if stored.get(k) != wanted.get(k))
            if "table_size" in changed:
                changed.remove("players")  # the same number, said once
            raise TournamentError(
                f"{source_path}: the ladder in {out_dir} plays {_settings_text(stored, changed)}; this file asks "
                f"for {_settings_text(wanted, changed)}. Ratings compare results of one game: give a new ladder "
                f"another --out, or start this one again with --overwrite"
            )
        store.set_bots(bot_rows(config, store.bot_tokens()), source_text, source_path)
        return store
    except BaseException:
        store.close()
        raise


def bot_rows(config: TournamentConfig, tokens: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(name, kind, token): the file's token, else the one stored, else a new one."""
    rows = []
    for bot in config.bots:
        token = bot.token or ("builtin" if bot.builtin else tokens.get(bot.name) or secrets.token_urlsafe(18))
        rows.append((bot.name, bot.kind, token))
    return rows


def _flat(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"game": {"flags": {"short_game": true}}} -> {"short_game": true}: the names a file uses."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, Mapping):
            flat.update(_flat(value))
        else:
            flat[key] = value
    return flat


def _settings_text(settings: Mapping[str, Any], keys: Sequence[str]) -> str:
    return ", ".join(f"{key} = {json.dumps(settings.get(key))}" for key in keys)


def ladder_standings(
    config: TournamentConfig, store: TournamentStore, out_dir: Path | None = None, *, with_status: bool = False
) -> Standings:
    """Every bot the ladder has known, ordered by rating (from every recorded game); for a
    terminal (``out_dir`` given, or ``with_status``), titled with how the ladder stands
    (:func:`ladder_status`: a ladder is never "complete", nor "INCOMPLETE" after a stop)."""
    standings = standings_of(config, store, store.bot_names(), by_rating=True, ladder=True)
    if out_dir is None and not with_status:
        return standings
    return dataclasses.replace(standings, status=ladder_status(out_dir, store))


class LadderBook:
    """What a running ladder knows of its store, kept up to date as it goes: the rounds each
    bot played and the pairs that met (for :func:`pick_table`), and the standings' running
    :class:`~tournaments.standings.Tally`. Read whole once; then each new round and each
    newly recorded game is added, so a round costs the same after weeks of rounds as after
    one, where reading and rating every game again grew with the ladder (about 36 µs per
    recorded game at every round: 15 s a round after a day at 5 games/s)."""

    def __init__(self, config: TournamentConfig, store: TournamentStore) -> None:
        self.config = config
        self.store = store
        row = store.tournament()
        key = None if row is None else row.deal_key
        self.key: bytes | int = config.seed if key is None else key
        """The ladder's deal key (a ladder stored before deal keys: its file's seed, its rounds'
        rotations sharing a deal as they did then)."""
        self.duplicate = config.duplicate if key is not None else "table"
        games = store.games()
        self.played, self.met, self.number = history(games)
        self.entered = entry_rounds(games)
        self.next_ordinal = max((g.ordinal for g in games), default=-1) + 1
        self._start_tally()

    def update(self, config: TournamentConfig) -> None:
        """The ladder's bots as they are now (a roster's new versions): new ones are stored,
        and join the standings unrated, from their priors (:func:`~tournaments.standings.read_priors`)."""
        self.config = config
        known = set(self.tally.bots)
        new = [bot.name for bot in config.bots if bot.name not in known]
        if not new:
            return
        row = self.store.tournament()
        assert row is not None
        self.store.set_bots(bot_rows(config, self.store.bot_tokens()), row.source_text, row.source_path)
        priors = read_priors(config.roster)
        for name in new:
            self.tally.add_bot(name, priors.get(name))

    def _start_tally(self) -> None:
        self.tally = standings_tally(self.config, self.store.bot_names(), ladder=True)

    def standings(self) -> Standings:
        """The standings of every game recorded now: :func:`ladder_standings`, from the tally."""
        done, scheduled = self.store.counts()
        for result in self.store.results(after=self.tally.last_ordinal):
            self.tally.add(result)
        if self.tally.games != done:  # a game earlier in the schedule was recorded late (an
            self._start_tally()       # interrupted round, played on resume): rate them all again
            for result in self.store.results():
                self.tally.add(result)
        return self.tally.standings(name=self.config.name, games_scheduled=scheduled, by_rating=True)

    def new_round(self, standings: Standings, available: Collection[str] | None = None) -> LadderRound:
        """Pick the next table from the rounds so far and the ratings (among the ``available``
        bots: None for all), and store its games."""
        config = self.config
        bots = config.bot_names if available is None else tuple(b for b in config.bot_names if b in available)
        seats = pick_table(
            bots, config.table_size,
            rounds_played=self.credited(bots), ordinals={row.bot: row.rating_ordinal for row in standings.rows},
            met=self.met, seed=config.seed, round_no=self.number,
            newcomers={b for b in bots if self.played.get(b, 0) < NEWCOMER_ROUNDS},
        )
        new = make_round(self.number, seats, self.key, self.next_ordinal, self.duplicate)
        self.store.add_games(new.games)
        self.played.update(seats)
        for bot in seats:
            self.entered.setdefault(bot, self.number)
        self.met.update(frozenset(pair) for pair in itertools.combinations(sorted(set(seats)), 2))
        self.number += 1
        self.next_ordinal += len(new.games)
        return new

    def credited(self, bots: Sequence[str]) -> dict[str, int]:
        """Rounds played, plus a late entrant's share of the rounds played before it came: the
        ``(R - 1) * table_size / bots`` rounds an average bot of this field played in the
        ``R - 1`` rounds before its first (rounded down: 0 for the ladder's first bots). So a
        bot that joins late, a participant's new version say, plays at the field's rate, not
        at every round until it has caught up with bots that have played for weeks."""
        share = self.config.table_size / max(len(bots), 1)
        return {b: self.played.get(b, 0) + int((self.entered.get(b, self.number) - 1) * share) for b in bots}

    def new_rounds(self, standings: Standings, available: Collection[str] | None, count: int) -> list[LadderRound]:
        """Up to ``count`` new rounds, each seating bots none of the others seat (one at least),
        each picked as :meth:`new_round` picks, after the ones before it."""
        free = set(self.config.bot_names if available is None else available)
        picked: list[LadderRound] = []
        while len(picked) < count and (not picked or len(free) >= self.config.table_size):
            try:
                new = self.new_round(standings, free)
            except Unreachable:
                if not picked:
                    raise
                break  # (those picked are stored: they are played, the others picked next time)
            free.difference_update(new.seats)
            picked.append(new)
        return picked


def next_round(
    config: TournamentConfig, store: TournamentStore, standings: Standings, available: Collection[str] | None = None
) -> LadderRound:
    """The next table, picked and stored as a running ladder does (:meth:`LadderBook.new_round`)."""
    return LadderBook(config, store).new_round(standings, available)


def next_rounds(
    config: TournamentConfig, store: TournamentStore, standings: Standings, available: Collection[str] | None,
    count: int,
) -> list[LadderRound]:
    """Up to ``count`` new tables of distinct bots (:meth:`LadderBook.new_rounds`)."""
    return LadderBook(config, store).new_rounds(standings, available, count)


def tables_at_once(config: TournamentConfig, concurrency: int | None = None) -> int:
    """How many rounds (tables of distinct bots) to play at once: enough to keep
    ``concurrency`` games (the file's when None) going."""
    games = concurrency or config.concurrency
    return max(1, -(-games // config.table_size))


def drop_departed(config: TournamentConfig, store: TournamentStore) -> list[str]:
    """Unplayed games that seat a bot no longer in the file are dropped; returns their ids."""
    present = set(config.bot_names)
    gone = [g.game_id for g in store.pending_games() if not present.issuperset(g.seats)]
    if gone:
        store.drop_pending(gone)
    return gone


# ------------------------------------------------------------------ running


STILL_LOST_EVERY_S = 60.0
"""While the database is lost, the ladder says it still waits this often."""
PATIENCE_TRY_S = 2.0
"""How long one try of a store operation retries on its own before :class:`Patience` waits on
(short: a stop is heard within about that)."""


class StoppedWaiting(Exception):
    """Stopped (Ctrl-C, SIGTERM) while waiting for a lost database."""


class Patience:
    """A ladder's store operations between rounds, riding out a lost database.

    A PostgreSQL store's operation runs on a thread, so the event loop goes on serving the
    bots that connect and the pages; one that finds the database unreachable
    (:class:`~server.storage.store.Unreachable`) is tried again until it succeeds, for as long
    as the database is gone, saying so when it goes, once every ``say_every_s`` while it is
    gone and when it is back (on the terminal and in the log). ``stop`` set meanwhile raises
    :class:`StoppedWaiting`. A SQLite store's operation runs here, as it always did (its
    connection belongs to this thread, and its file does not go away)."""

    def __init__(self, name: str, store: TournamentStore, stop: asyncio.Event, log: Any,
                 say_every_s: float = STILL_LOST_EVERY_S) -> None:
        self.name = name
        self.threaded = not isinstance(store, Store)
        self.stop = stop
        self.log = log
        self.say_every_s = say_every_s

    async def __call__(self, what: str, call: Callable[[], T]) -> T:
        lost_at = said_at = 0.0
        while True:
            try:
                result = await asyncio.to_thread(call) if self.threaded else call()
            except Unreachable as err:
                now = time.monotonic()
                if not lost_at:
                    lost_at = said_at = now
                    self.log.warning("database_lost", what=what, error=str(err))
                    self._say(f"{what}: {err}; waiting for it as long as it takes (Ctrl-C stops the ladder, "
                              "which continues where it was with the same command)")
                elif now - said_at >= self.say_every_s:
                    said_at = now
                    self.log.warning("database_still_lost", what=what, lost_s=round(now - lost_at), error=str(err))
                    self._say(f"still waiting for the database (lost {round(now - lost_at)} s ago, {what})")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stop.wait(), PATIENCE_TRY_S / 2)
                if self.stop.is_set():
                    raise StoppedWaiting(what) from None
                continue
            if lost_at:
                lost_s = round(time.monotonic() - lost_at)
                self.log.info("database_back", what=what, lost_s=lost_s)
                self._say(f"the database is back after {lost_s} s; the ladder goes on")
            return result

    def _say(self, text: str) -> None:
        print(f"{self.name}: {text}", file=sys.stderr, flush=True)



async def run_ladder(
    config: TournamentConfig,
    store: TournamentStore,
    out_dir: Path,
    runner: RunnerFactory,
    *,
    rounds: int | None = None,
    concurrency: int | None = None,
    on_round: Callable[[LadderRound, Standings], None] | None = None,
    handle_signals: bool = True,
    play_pending: Callable[[asyncio.Event, RunGame], Awaitable[RunSummary]] | None = None,
    entrants: Callable[[Standings], TournamentConfig] | None = None,
) -> LadderSummary:
    """Play the unplayed games, then new rounds until ``rounds`` new ones are played (None:
    until SIGINT or SIGTERM, which stop the round in flight, its games unrecorded). After each
    round the standings are written to the output folder and ``on_round`` is called.
    ``play_pending(stop, run_game)``: plays the stored games that are not recorded instead of
    ``runner`` (the queue of a PostgreSQL store, for workers on other machines; ``run_game``,
    the runner's, for the games of the bots that connect to it).
    ``entrants(standings)``: the bots afresh before each new round (a roster's admitted
    versions, ``participants.entrants``): bots join without a restart; too few to fill a
    table, the ladder waits for more and says so."""
    stop = asyncio.Event()
    current: list[TournamentRunner] = []
    at_once = tables_at_once(config, concurrency)

    def request_stop() -> None:
        stop.set()
        for game_runner in current:
            game_runner.request_stop()

    played_rounds = recorded = 0
    short = False
    why: list[str] = []

    def on_signal(sig: signal.Signals) -> None:
        why.append("Ctrl-C" if sig == signal.SIGINT else sig.name)

    pages: asyncio.Future[int] | None = None
    restore = install_stop_handlers(request_stop, on_signal) if handle_signals else (lambda: None)
    write_state(out_dir, running=True, store=store)
    retry_s = getattr(store, "retry_s", None)
    if retry_s is not None:  # (a PostgreSQL store: a lost database is Patience's to wait for)
        store.retry_s = min(retry_s, PATIENCE_TRY_S)  # type: ignore[attr-defined]
    try:
        with event_log(out_dir / LOG_NAME) as log:
            log = log.bind(ladder=config.name)
            patiently = Patience(config.name, store, stop, log)
            async with runner(config, out_dir) as run_game:
                book = await patiently("reading the ladder", lambda: LadderBook(config, store))
                standings = await patiently("reading the results", book.standings)
                online = getattr(run_game, "online_bots", None)
                while not stop.is_set():
                    new: list[LadderRound] = []
                    done, scheduled = await patiently("counting the games", store.counts)
                    if done == scheduled:
                        if rounds is not None and played_rounds >= rounds:
                            break
                        if entrants is not None:
                            config = await patiently("reading the roster", functools.partial(entrants, standings))
                            await patiently("storing the bots", functools.partial(book.update, config))
                        available = await seatable_bots(config, online, stop, log)
                        if available is None:
                            break
                        if len(available) < config.table_size:  # (a roster's versions are still to come)
                            if not short:
                                short = True
                                log.info("ladder_waiting", bots=sorted(available), needed=config.table_size)
                                print(f"ladder: waiting for bots: {len(available)} of the {config.table_size} needed "
                                      "for a table are admitted", file=sys.stderr, flush=True)
                            with contextlib.suppress(TimeoutError):
                                await asyncio.wait_for(stop.wait(), WAIT_POLL_S)
                            continue
                        short = False
                        count = at_once if rounds is None else min(at_once, rounds - played_rounds)
                        new = await patiently("storing the next rounds",
                                              functools.partial(book.new_rounds, standings, available, count))
                        for picked in new:
                            log.info("ladder_round", round=picked.number, seats=list(picked.seats))
                    if play_pending is not None:
                        summary = await play_pending(stop, run_game)
                    else:
                        game_runner = TournamentRunner(
                            config, store, run_game, out_dir, concurrency=concurrency, progress=False,
                            handle_signals=False,  # (new rounds: their games are all that is unrecorded)
                            pending=[g for r in new for g in r.games] if new else None,
                        )
                        current[:] = [game_runner]
                        summary = await game_runner.run()
                    recorded += summary.played
                    if not summary.complete:
                        break
                    standings = await patiently("reading the results", book.standings)
                    write_standings(standings, out_dir)
                    if play_pending is None:  # (a PostgreSQL store's replays are exported at the end)
                        # This round's viewer pages, on a thread while the next round plays: stopping
                        # after weeks then lists the games rather than writing a page for each.
                        if pages is not None:
                            await pages
                        pages = asyncio.ensure_future(
                            asyncio.to_thread(write_game_pages, out_dir, [g.game_id for r in new for g in r.games]))
                    played_rounds += len(new)
                    if on_round is not None:
                        for picked in new:
                            on_round(picked, standings)
                    if new and config.pause_s and not (rounds is not None and played_rounds >= rounds):
                        with contextlib.suppress(TimeoutError):  # (the file's pace; a stop ends the pause)
                            await asyncio.wait_for(stop.wait(), config.pause_s)
                if pages is not None:
                    await pages
    except StoppedWaiting:  # (stopped while the database was gone: said, and the state says why)
        retry_s = None  # (what follows, the standings, fails fast if it is still gone)
    finally:
        restore()
        if retry_s is not None:
            store.retry_s = retry_s  # type: ignore[attr-defined]
        if not why:
            why.append(f"--rounds {rounds}" if rounds is not None and played_rounds >= rounds
                       else "stopped" if stop.is_set() else "an error")
        write_state(out_dir, running=False, rounds=played_rounds, why=why[0], store=store)
    return LadderSummary(played_rounds, recorded, stop.is_set(), why[0])


WAIT_POLL_S = 0.5
"""How often a ladder short of online bots looks again."""


async def seatable_bots(
    config: TournamentConfig, online: Callable[[], set[str]] | None, stop: asyncio.Event, log: Any
) -> set[str] | None:
    """The bots a new round may seat: every launched and builtin bot, and the remote bots
    connected now (one that is away would cost its table a wait and then play by the default
    policy). Waits, saying so once, while too few are online to fill a table; None if
    stopped meanwhile. ``online``: the runner's connected bots (None: take every bot)."""
    remote = {bot.name for bot in config.remote_bots}
    if online is None or not remote:
        return set(config.bot_names)
    said = False
    while True:
        away = remote - online()
        available = set(config.bot_names) - away
        if len(available) >= config.table_size:
            if said:
                log.info("ladder_resumed", online=sorted(available & remote))
            return available
        if not said:
            said = True
            log.info("ladder_waiting", away=sorted(away), needed=config.table_size, available=len(available))
            print(f"ladder: waiting for remote bots to connect: {len(available)} of the {config.table_size} "
                  f"needed for a table can play (away: {', '.join(sorted(away))})", file=sys.stderr, flush=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), WAIT_POLL_S)
        if stop.is_set():
            return None


def reopen_ladder(out_dir: Path) -> tuple[TournamentConfig, Store]:
    """A ladder's folder, read-only, with its file as last read (for its standings)."""
    db = out_dir / Store.FILENAME
    if not db.is_file():
        raise TournamentError(f"{out_dir}: no {Store.FILENAME} here; is this a ladder's output folder?")
    store = Store(db, readonly=True)
    try:
        row = store.tournament()
        if row is None or row.schedule_digest != LADDER_SCHEDULE:
            raise TournamentError(f"{out_dir} holds a tournament, not a ladder: use `craits tournament standings`")
        config = parse_config(row.source_text, source=row.source_path, base_dir=Path(row.source_path).resolve().parent,
                              check_paths=False)  # (read only: its bots' folders need not be there any more)
    except BaseException:
        store.close()
        raise
    return config, store
