"""Plays a tournament's pending games, many at once, recording each as it finishes.

The runner is injected: anything with the shape ``async run_game(spec) ->
GameRecord`` plays the games (``tournaments.local.LocalRunner`` in-process, the
referee's gRPC runner for real bots). This module only schedules, persists and
reports; it launches no bot itself.

**Contract for a run_game** (the referee's runner honours it):

* It owns every process and connection it opens for a game. When it returns,
  raises, or is *cancelled*, those processes have exited: terminate them in a
  ``finally``. The runner cancels a game once and then waits for it, so the
  cancellation may land on an ``await`` inside that ``finally``: send the kill
  synchronously first (``killpg``), and if a wait is interrupted, wait again.
* A bot that a game launches gets ``CRAITS_SERVER`` (host:port of the referee),
  ``CRAITS_TOKEN`` (its token) and ``CRAITS_BOT_NAME`` in its environment.
* A game it could play but not finish (every bot gone, say) comes back as a
  ``GameRecord`` with ``aborted`` set: recorded as a status, not retried. An
  exception means the infrastructure failed: the tournament stops, nothing is
  recorded for that game, and ``craits tournament resume`` plays it again.

The runner's side: at most ``concurrency`` games in flight; each finished game
is written in one transaction before the next result is looked at; on SIGINT or
SIGTERM, or when a game raises, it stops starting games, cancels the ones in
flight (they are not recorded) and awaits them, so their clean-up always runs
before ``run`` returns. Only SIGKILL of the tournament skips that: a launched
bot must then notice its stream closing and exit (the bot kits do).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import structlog

from server.logging import AppendedFile, get_logger
from server.spec import GameRecord, GameSpec
from server.storage.replay import REPLAY_SUFFIX
from server.storage.store import GameSlot, Store, StoreError, TournamentRow, TournamentStore
from tournaments.config import TournamentConfig, TournamentFileError, key_for, parse_config, schedule_for
from tournaments.local import LocalRunner
from tournaments.pages import write_game_pages
from tournaments.schedule import schedule_digest, shares_deals
from tournaments.standings import Standings, Tally, read_priors

RunGame = Callable[[GameSpec], Awaitable[GameRecord]]
RunnerFactory = Callable[[TournamentConfig, Path], AbstractAsyncContextManager[RunGame]]
"""Builds the game runner for a tournament writing under an output folder."""

log = get_logger()

LOG_NAME = "tournament.log"
LADDER_SCHEDULE = "ladder"
"""Stored in place of a ladder's schedule digest: its schedule grows round by round."""
REPLAY_DIR = "replays"


class TournamentError(Exception):
    """The tournament cannot go on (a game's runner failed, a database clash)."""


@dataclass(frozen=True, slots=True)
class RunSummary:
    played: int
    """Games recorded by this run."""
    recorded: int
    scheduled: int
    stopped: bool
    """Stopped by a signal before the end."""
    elapsed_s: float

    @property
    def complete(self) -> bool:
        return self.recorded == self.scheduled


# ------------------------------------------------------------------ set-up


LOCK_NAME = "tournament.lock"


@contextlib.contextmanager
def folder_lock(out_dir: Path) -> Iterator[None]:
    """Hold the output folder for this process while it plays (created if need be).

    Two processes in one folder would play the same games and write the same replay
    files. The lock is the kernel's (flock): it goes with the process, even on SIGKILL."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise TournamentError(f"{out_dir} is a file: the output must be a folder") from None
    except OSError as err:
        raise TournamentError(f"cannot create the output folder {out_dir}: {err.strerror or err}") from None
    try:
        fd = os.open(out_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise TournamentError(f"cannot write in {out_dir}: {err.strerror or err}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise TournamentError(
                f"{out_dir} is in use by another craits process (pid {holder}): wait for it to finish, "
                f"or stop it and resume"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def start_tournament(
    config: TournamentConfig, source_text: str, source_path: str, out_dir: Path, *, overwrite: bool = False
) -> Store:
    """Create ``out_dir/tournament.db`` holding the tournament and its whole schedule."""
    db = out_dir / Store.FILENAME
    if db.exists():
        with Store(db) as existing:
            row = existing.tournament()
            done, total = existing.counts()
        if row is not None and not overwrite and row.schedule_digest == LADDER_SCHEDULE:
            raise TournamentError(
                f"{out_dir} holds ladder {row.name!r}; give the tournament another --out, or replace it with --overwrite"
            )
        if row is not None and not overwrite:  # (no row: a run killed before its schedule was stored)
            state = "finished" if row.finished_at else f"started ({done}/{total} games recorded)"
            raise TournamentError(
                f"{out_dir} already holds tournament {row.name!r}, {state}; "
                f"continue it with `craits tournament resume {out_dir}`, or start again with --overwrite"
            )
        clear_output(out_dir)
    key = key_for(config)
    schedule = schedule_for(config, key)
    store = Store.in_dir(out_dir)
    bots = []
    for bot in config.bots:
        token = bot.token or ("builtin" if bot.builtin else secrets.token_urlsafe(18))
        bots.append((bot.name, bot.kind, token))
    store.create_tournament(
        name=config.name,
        source_text=source_text,
        source_path=source_path,
        schedule_digest=schedule_digest(schedule),
        settings=settings_of(config),
        bots=bots,
        games=(GameSlot(g.game_id, g.ordinal, g.table, g.deal, g.rotation, g.seed, g.seats) for g in schedule),
        deal_key=key,
    )
    return store


def clear_output(out_dir: Path) -> None:
    """Delete an earlier run's database, logs, replays and what was made of them: standings,
    viewer pages, the launched bots' output (``--overwrite``), none of which may pass for the
    new run's."""
    for name in (Store.FILENAME, Store.FILENAME + "-wal", Store.FILENAME + "-shm", LOG_NAME,
                 "standings.json", "standings.csv", "referee.jsonl", "organizer.jsonl"):  # (the last: --store's)
        (out_dir / name).unlink(missing_ok=True)
    for folder in (REPLAY_DIR, "viewer", "bots"):
        shutil.rmtree(out_dir / folder, ignore_errors=True)


def settings_of(config: TournamentConfig) -> dict[str, Any]:
    return {
        "bots": list(config.bot_names),
        "table_size": config.table_size,
        "game": config.game.to_dict(),
        "schedule": config.schedule,
        "deals": config.deals,
        "games_per_bot": config.games_per_bot,
        "seed": config.seed,
        "duplicate": config.duplicate,
        "concurrency": config.concurrency,
        "clocks": asdict(config.clocks),
    } | ({"stop": config.stop, "confidence": config.confidence, "max_games": config.max_games,
          "tie_within": config.tie_within} if config.schedule == "adaptive" else {})


def open_tournament(out_dir: Path, *, readonly: bool = False) -> tuple[TournamentConfig, Store]:
    """Reopen a tournament from its folder, its configuration re-read from the stored file text."""
    db = out_dir / Store.FILENAME
    if not db.is_file():
        raise TournamentError(f"{out_dir}: no {Store.FILENAME} here; is this a tournament's output folder?")
    store = Store(db, readonly=readonly)
    row = store.tournament()
    if row is None:
        store.close()
        raise TournamentError(
            f"{db}: the run stopped before its schedule was stored; start it again with `craits tournament run FILE`"
        )
    if row.schedule_digest == LADDER_SCHEDULE:
        store.close()
        raise TournamentError(f"{out_dir} holds a ladder, not a tournament: use `craits ladder ...` with it")
    try:  # (to read it, the bots' folders need not be there any more)
        config = parse_config(row.source_text, source=row.source_path, base_dir=Path(row.source_path).resolve().parent,
                              check_paths=not readonly)
    except TournamentFileError as err:
        store.close()
        raise TournamentError(f"{out_dir}: the tournament plays its file as stored when it started, which no longer "
                              f"fits here: {err} (put the bots where they were to resume it)") from None
    config = stored_deals(config, row)
    if schedule_digest(schedule_for(config, row.deal_key)) != row.schedule_digest:
        store.close()
        raise TournamentError(f"{db}: the stored schedule does not match its tournament file; the database is damaged")
    return config, store


def stored_deals(config: TournamentConfig, row: TournamentRow) -> TournamentConfig:
    """``config`` as its run was stored: a run from before deal keys (no key) shared its deals
    as the default then was (``duplicate = "tournament"``), so it resumes with its seeds."""
    if row.deal_key is None and "duplicate" in row.settings:
        return replace(config, duplicate=row.settings["duplicate"])
    return config


def standings_tally(config: TournamentConfig, bots: Sequence[str], *, ladder: bool = False) -> Tally:
    """An empty tally of ``bots`` for this file's game (its partnerships, its sense of the totals):
    the one place a tournament's, a ladder's (``ladder``: a field that grows) and a board's
    standings start from."""
    return Tally(bots, partnerships=config.game.partnerships, lower_wins=not config.game.crazy_eights,
                 confidence=config.confidence, tie_within=config.tie_within, stop=config.stop,
                 priors=read_priors(config.roster), open_field=ladder)


def standings_of(config: TournamentConfig, store: TournamentStore, bots: Sequence[str], *,
                 by_rating: bool = False, ladder: bool = False) -> Standings:
    """The standings of every game recorded in ``store`` (read in schedule order)."""
    _, scheduled = store.counts()
    tally = standings_tally(config, bots, ladder=ladder)
    for result in store.results():
        tally.add(result)
    return tally.standings(name=config.name, games_scheduled=scheduled, by_rating=by_rating)


def load_standings(config: TournamentConfig, store: TournamentStore) -> Standings:
    return standings_of(config, store, config.bot_names)


def write_standings(
    standings: Standings, out_dir: Path, games: list[dict[str, Any]] | None = None
) -> tuple[Path, Path]:
    """``standings.json`` and ``standings.csv`` in the output folder (written atomically).

    ``games`` (see ``tournaments.pages.game_links``) lists every game with its replay
    and viewer page, so the export links each result to the game behind it.
    """
    paths = (out_dir / "standings.json", out_dir / "standings.csv")
    document = standings.to_dict()
    if games is not None:
        document["games"] = games
    texts = (json.dumps(document, indent=2, sort_keys=True) + "\n", standings.to_csv())
    for path, text in zip(paths, texts, strict=True):
        tmp = path.with_suffix(path.suffix + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
    return paths


@contextlib.asynccontextmanager
async def local_runner(config: TournamentConfig, out_dir: Path, workers: int = 0) -> AsyncIterator[RunGame]:
    """The in-process runner as a ``RunnerFactory``."""
    for bot in config.bots:
        if bot.builtin is None:
            raise TournamentError(
                f"bot {bot.name!r} is a {bot.kind} bot; the local runner plays only builtin bots (use --runner grpc)"
            )
    runner = LocalRunner(workers)
    try:
        yield runner
    finally:
        runner.close()


# ------------------------------------------------------------------ running


class Progress:
    """A one-line progress bar on a terminal: games done, the rate of the last minute and the
    time left at that rate (not the rate since the start: the first games also launch every
    bot, and a 100-bot run's first estimate was a fifth of its speed). Anywhere else (a log
    file, a pipe) one line once the first ``estimate_after_s`` seconds of games have measured
    this machine's speed; nothing with ``enabled=False``."""

    RATE_WINDOW_S = 60.0

    def __init__(
        self, total: int, done: int, stream: TextIO | None = None, enabled: bool | None = None,
        estimate_after_s: float = 10.0,
    ) -> None:
        self.stream = stream or sys.stderr
        terminal = self.stream.isatty()
        self.enabled = terminal if enabled is None else enabled
        self.estimate_after_s: float | None = estimate_after_s if enabled is None and not terminal else None
        self.total = total
        self.start_done = done
        self.done = done
        self.started = time.monotonic()
        self._samples: deque[tuple[float, int]] = deque([(self.started, done)])
        """(time, games done) over the last ``RATE_WINDOW_S``, and the one before it."""
        self._drawn = 0.0

    def advance(self, n: int = 1, now: float | None = None) -> None:
        self.done += n
        now = time.monotonic() if now is None else now
        self._samples.append((now, self.done))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self.RATE_WINDOW_S:
            self._samples.popleft()
        if self.estimate_after_s is not None and now - self.started >= self.estimate_after_s:
            self.estimate_after_s = None
            if self.done < self.total:
                self.stream.write(self.estimate(now) + "\n")
                self.stream.flush()
        if self.enabled and (now - self._drawn >= 0.1 or self.done >= self.total):
            self._drawn = now
            self.stream.write("\r" + self.line(now) + "\x1b[K")
            self.stream.flush()

    def line(self, now: float | None = None) -> str:
        since, done_then = self._samples[0]
        elapsed = (now or time.monotonic()) - since
        played = self.done - done_then
        fraction = self.done / self.total if self.total else 1.0
        bar = "#" * int(fraction * 30)
        rate = played / elapsed if elapsed > 0 else 0.0
        if played and rate > 0:
            eta = _clock((self.total - self.done) / rate)
        else:
            eta = "--:--"
        return f"[{bar:<30}] {self.done}/{self.total} {fraction:4.0%}  {rate:.1f} games/s  ETA {eta}"

    def estimate(self, now: float | None = None) -> str:
        """The time the rest will take at the speed of the games played so far."""
        elapsed = (now or time.monotonic()) - self.started
        played = self.done - self.start_done
        rate = played / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        if rate <= 0:
            return f"speed: not measured yet; {left} games left"
        return (f"speed: {rate:.2f} games/s over the first {played} games ({elapsed:.0f} s); "
                f"the {left} games left take about {_clock(left / rate)} at this speed")

    def close(self) -> None:
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


class TournamentRunner:
    """Plays the pending games of ``store`` with ``run_game``; see the module docstring."""

    def __init__(
        self,
        config: TournamentConfig,
        store: TournamentStore,
        run_game: RunGame,
        out_dir: Path,
        *,
        concurrency: int | None = None,
        progress: bool | None = None,
        handle_signals: bool = True,
        pending: Sequence[GameSlot] | None = None,
        pages: bool = False,
    ) -> None:
        """``pending``: the games to play, when the caller knows them (a ladder's new rounds:
        finding the unrecorded games reads the whole schedule, which grows for weeks);
        None: every game of the store that is not recorded. ``pages``: write each recorded
        game's viewer page while the next games play (:class:`PageWriter`)."""
        self.config = config
        self.store = store
        self.run_game = run_game
        self._pending = None if pending is None else list(pending)
        self._pages = PageWriter(out_dir) if pages else None
        self.out_dir = out_dir
        self.concurrency = concurrency or config.concurrency
        self.progress_enabled = progress
        self.handle_signals = handle_signals
        self._stop = asyncio.Event()
        self._tokens = store.bot_tokens()
        self._bots = {b.name: b for b in config.bots}

    def request_stop(self) -> None:
        """Start no more games; cancel the ones in flight (they stay unrecorded)."""
        self._stop.set()

    def spec_for(self, slot: GameSlot) -> GameSpec:
        return GameSpec(
            game_id=slot.game_id,
            config=self.config.game,
            seed=slot.seed,
            seats=tuple(self._bots[name].spec(self._tokens[name]) for name in slot.seats),
            clocks=self.config.clocks,
            replay_path=self.out_dir / REPLAY_DIR / f"{slot.game_id}{REPLAY_SUFFIX}",
            tournament=self.config.name,
            shared_deal=shares_deals(self.config.duplicate),
        )

    async def run(self) -> RunSummary:
        started = time.monotonic()
        pending = self.store.pending_games() if self._pending is None else self._pending
        done_before, scheduled = self.store.counts()
        progress = Progress(scheduled, done_before, enabled=self.progress_enabled)
        with event_log(self.out_dir / LOG_NAME) as log:
            log = log.bind(tournament=self.config.name)
            log.info(
                "tournament_started", pending=len(pending), recorded=done_before, scheduled=scheduled,
                concurrency=self.concurrency,
            )
            played = 0
            failed = False  # once a game fails, no worker starts another
            slots = iter(pending)

            async def worker() -> None:
                nonlocal failed
                try:
                    await play_slots()
                except asyncio.CancelledError:
                    raise
                except BaseException:
                    failed = True
                    raise

            async def play_slots() -> None:
                nonlocal played
                for slot in slots:
                    if self._stop.is_set() or failed:
                        return
                    spec = self.spec_for(slot)
                    began = time.monotonic()
                    try:
                        record = await self.run_game(spec)
                    except asyncio.CancelledError:
                        raise
                    except Exception as err:
                        log.error("game_failed", game=slot.game_id, seats=list(slot.seats), error=repr(err))
                        raise TournamentError(f"game {slot.game_id} failed: {err}") from err
                    if record.game_id != slot.game_id:
                        raise TournamentError(f"the runner returned game {record.game_id!r} for {slot.game_id!r}")
                    try:
                        self.store.record_game(record)
                    except StoreError as err:
                        raise TournamentError(str(err)) from err
                    played += 1
                    if self._pages is not None:
                        self._pages.add(slot.game_id)
                    log.info(
                        "game_recorded", game=slot.game_id, seats=list(slot.seats),
                        totals=[str(t) for t in record.result.totals], placings=list(record.result.placings),
                        statuses=[str(s.status) for s in record.seats], aborted=record.aborted or None,
                        duration_s=round(time.monotonic() - began, 4),
                    )
                    progress.advance()

            restore = self._install_signal_handlers()
            workers = [asyncio.create_task(worker()) for _ in range(min(self.concurrency, len(pending)))]
            stopper = asyncio.create_task(self._stop.wait())
            try:
                remaining = set(workers)
                while remaining:
                    finished, _ = await asyncio.wait(remaining | {stopper}, return_when=asyncio.FIRST_COMPLETED)
                    for task in finished & remaining:
                        remaining.discard(task)
                        task.result()  # a failed game stops the tournament here
                    if stopper in finished:
                        break
            finally:
                stopper.cancel()
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, stopper, return_exceptions=True)
                restore()
                if self._pages is not None:
                    await self._pages.finish()
                progress.close()
                recorded, _ = self.store.counts()
                stopped = self._stop.is_set() and recorded < scheduled
                if recorded == scheduled:
                    self.store.mark_finished()
                log.info(
                    "tournament_stopped" if recorded < scheduled else "tournament_finished",
                    played=played, recorded=recorded, scheduled=scheduled,
                    elapsed_s=round(time.monotonic() - started, 3),
                )
        return RunSummary(played, recorded, scheduled, stopped, time.monotonic() - started)

    def _install_signal_handlers(self) -> Callable[[], None]:
        if not self.handle_signals:
            return lambda: None
        return install_stop_handlers(self.request_stop)


class PageWriter:
    """Writes recorded games' viewer pages on a thread while the next games play, a batch at a
    time, so that the run's end only lists them: a page holds its whole replay, and a 100-bot
    competition's 3,900 pages took 15 minutes after its last game. The games never wait for it
    (the referee's own work is in its worker processes)."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self._ids: list[str] = []
        self._task: asyncio.Future[None] | None = None

    def add(self, game_id: str) -> None:
        self._ids.append(game_id)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        while self._ids:
            batch, self._ids = self._ids, []
            try:
                await asyncio.to_thread(write_game_pages, self.out_dir, batch)
            except Exception:  # a bug of ours: the run's end writes what is missing, and the log says why
                log.exception("viewer_pages_failed", games=len(batch))

    async def finish(self) -> None:
        """Wait for the pages of every game added so far."""
        while self._ids or (self._task is not None and not self._task.done()):
            if self._task is None or self._task.done():
                self._task = asyncio.ensure_future(self._drain())
            await asyncio.shield(self._task)


def install_stop_handlers(
    on_stop: Callable[[], None], on_signal: Callable[[signal.Signals], None] | None = None
) -> Callable[[], None]:
    """SIGINT and SIGTERM call ``on_stop`` once (after ``on_signal(which)``); a second one
    interrupts at once. Returns the function that removes the handlers."""
    loop = asyncio.get_running_loop()
    installed: list[int] = []

    def restore() -> None:
        while installed:
            loop.remove_signal_handler(installed.pop())

    def first_signal(sig: signal.Signals) -> None:
        if on_signal is not None:
            on_signal(sig)
        on_stop()
        restore()  # a second Ctrl-C interrupts at once

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no support
            loop.add_signal_handler(sig, first_signal, sig)
            installed.append(sig)
    return restore


@contextlib.contextmanager
def event_log(path: Path) -> Any:
    """One JSON object per line: what happened, with the game and seats bound."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with AppendedFile(path) as stream:  # (reopened when logrotate moves it away)
        yield structlog.wrap_logger(
            structlog.WriteLogger(stream),
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.JSONRenderer(sort_keys=True),
            ],
        )


async def play(
    config: TournamentConfig,
    store: TournamentStore,
    out_dir: Path,
    runner: RunnerFactory,
    *,
    concurrency: int | None = None,
    progress: bool | None = None,
) -> RunSummary:
    """Open the runner, play what is pending, close the runner (and its processes)."""
    async with runner(config, out_dir) as run_game:
        return await TournamentRunner(
            config, store, run_game, out_dir, concurrency=concurrency, progress=progress, pages=True
        ).run()
