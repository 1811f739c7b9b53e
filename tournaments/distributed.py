"""Games played by workers on many machines, through a queue in the PostgreSQL store.

A tournament (or a ladder) on a PostgreSQL store is a schedule in the database, and
each of its unplayed games is a job of procrastinate's queue in the same database
(task ``craits.play_game``, arguments ``tournament`` and ``game_id``). Whoever runs
``craits worker --store URL`` takes jobs, plays each game through its own referee and
records it; ``craits tournament run FILE --store URL`` stores the schedule, queues the
games, follows the progress and writes the standings (with its own local workers when
no other is running).

* **A worker plays with its own files**: the tournament file is read from the database
  and its bot commands are resolved on the worker, relative to the file's stored path.
  A worker lacking a bot's files (or program) refuses that game: it logs why and puts
  the job back for the others, after ``REFUSED_RETRY_S``, longer after each refusal.
* **Exactly once**: a game is recorded in one transaction with its replay, and only
  once (``PostgresStore.record_games_once``): a late duplicate is dropped and logged.
* **Batches**: a worker takes as many games as it has free slots in one statement and
  finishes the games that end together in one (:class:`BatchedJobs`); a game taken is the
  worker's from the start, so a batch goes back to the queue as a game in hand does. The
  games that start together read their slots in one statement, and those that end together
  are recorded in one (:class:`Gathered`), each game whole or not at all.
* **Killed workers**: a worker sends a heartbeat every ``heartbeat_s``; the jobs of a
  worker silent for ``stalled_s`` go back to the queue (every worker and the
  coordinator look for them), and another worker plays the game again from its seed. A
  worker's connections carry its tag (``application_name``, kept in ``craits_workers`` with
  its name): one whose heartbeat is late and whose connections are all closed was killed,
  and the coordinator names it and puts its games back at once (:func:`find_gone_workers`),
  within seconds rather than ``stalled_s``.
* **Bots that connect on their own** (a file's ``token`` bots, a roster participant's own
  bot) connect to the coordinator, which hosts the bot port as a SQLite run does: the games
  that seat one are not queued but played by the coordinator itself (:func:`play_hosted`),
  the others go to the queue. Such a game is a pending game of the store like any other: a
  coordinator killed mid-game plays it again on resume. Workers bind a port of their own
  on 127.0.0.1 for their launched bots, never the file's ``address`` (the coordinator's).
* **SIGTERM** (or Ctrl-C): the worker takes no new game and finishes the ones it has.
* **A lost database**: the worker's recording waits and retries with backoff (the game's
  result is kept in memory); the worker itself reconnects with backoff; nothing is half
  written, and a job left "doing" by a broken connection comes back as a stalled job. The
  coordinator waits as long (``DATABASE_WAIT_S``); the lines an outage repeats are logged
  once, then once a minute.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import datetime
import functools
import json
import logging
import math
import os
import random
import shutil
import socket
import tempfile
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import procrastinate
import psycopg
import psycopg_pool
from procrastinate import exceptions as pq_exceptions
from procrastinate import manager as pq_manager
from procrastinate import retry as pq_retry
from procrastinate import worker as pq_worker

from server.errors import UserError
from server.logging import Throttle, get_logger
from server.spec import GameRecord, GameSpec
from server.storage.bot_files import CACHE_MAX, FileCache, FilesUnavailable
from server.storage.postgres import NOW, GoneWorker, PostgresStore, Refusal, redact
from server.storage.replay import REPLAY_SUFFIX
from server.storage.settings import DATABASE_WAIT_ENV
from server.storage.store import GameSlot, StoreError, Unreachable
from server.transport.launcher import command_problem
from server.transport.tls import TLSRequest
from tournaments.config import (
    RESOLVED_PREFIX,
    BotEntry,
    TournamentConfig,
    key_for,
    parse_config,
    schedule_for,
)
from tournaments.ladder import bot_rows
from tournaments.runner import (
    LADDER_SCHEDULE,
    RunGame,
    RunnerFactory,
    TournamentError,
    settings_of,
    stored_deals,
)
from tournaments.schedule import schedule_digest, shares_deals

TASK = "craits.play_game"
QUEUE = "craits"
REFUSED_RETRY_S = 1.0
"""A refused game waits this long (and a random bit) before this or any worker takes it again;
after ``REFUSED_FAST_TRIES`` refusals, twice as long after each, up to ``REFUSED_RETRY_MAX_S``."""
REFUSED_FAST_TRIES = 8
"""Refusals retried at once: a worker that has the files takes a game a bare worker refused
within a few tries (each a coin toss between them), so only a game that nobody plays slows."""
REFUSED_RETRY_MAX_S = 30.0
REFUSED_LOG_EVERY_S = 60.0
"""A worker logs a refusal once, then the same refusal (tournament and reason) at most this
often, with how many games it refused meanwhile: a bot that runs on no worker is not a log
line per game per second for as long as nobody looks."""

HOSTED = "coordinator"
"""The worker named for the games the coordinator played itself (:func:`play_hosted`)."""

REASONS_SHOWN = 5
"""Refusal reasons said at once (each worker may have its own)."""

DATABASE_WAIT_S = 24 * 3600.0
"""How long a worker, and the organizer's ``tournament run|resume --store``, wait for a lost
database before they give up (``$CRAITS_DATABASE_WAIT_S`` seconds, if set)."""
STILL_LOST_EVERY_S = 60.0
"""While the database is lost, the organizer's terminal says it still waits this often."""

log = get_logger(component="worker")


def database_wait_s() -> float:
    """``DATABASE_WAIT_S``, or ``$CRAITS_DATABASE_WAIT_S`` when it is set."""
    text = os.environ.get(DATABASE_WAIT_ENV, "").strip()
    if not text:
        return DATABASE_WAIT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise UserError(f"${DATABASE_WAIT_ENV}: {text!r} is not a positive number of seconds")
    return value


class GameRefused(Exception):
    """This worker cannot play the game (a bot's files are missing here)."""


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    concurrency: int = 2
    heartbeat_s: float = 2.0
    stalled_s: float = 30.0
    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    work_dir: Path | None = None
    """Where games write their replays before they are stored (default: a temporary folder)."""
    files_dir: Path | None = None
    """Where the tournament files' relative paths (bot commands, cwd) are resolved on this
    machine (default: the folder the file was in when the tournament was started)."""
    database_wait_s: float = field(default_factory=database_wait_s)
    """How long a lost database is waited for (recording a game, following the progress)."""
    cache_dir: Path | None = None
    """Where the bots fetched from the store by their hash (a roster's versions) are unpacked,
    kept for later games (default: server.storage.bot_files.default_cache_dir)."""
    cache_max: int = CACHE_MAX
    """Bytes of unpacked bots the cache keeps: past that the least recently used go (not those in a game)."""


class _QueueLogs(logging.Handler):
    """Forwards the queue's and psycopg's records to craits' handlers, each kind (logger and
    message template) once, then at most once a minute with how many it held back: a pool
    that cannot connect says so about once a second for as long as the database is gone."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.throttle = Throttle()

    def emit(self, record: logging.LogRecord) -> None:
        held = self.throttle.allow((record.name, str(record.msg)))
        if held is None:
            return
        if held:
            record.msg, record.args = f"{record.getMessage()} (and {held} more like it since the last)", None
        for handler in logging.getLogger("craits").handlers:
            if record.levelno >= handler.level:
                handler.handle(record)


_queue_logs = _QueueLogs()


def adopt_queue_logs() -> None:
    """procrastinate's and psycopg's warnings and errors (a lost connection, say) go where
    craits' own events go (``server.logging``), not to standard error as bare tracebacks; so
    do asyncio's about the queue's tasks that a lost database left failed and unawaited."""
    for name in ("procrastinate", "psycopg", "asyncio"):
        other = logging.getLogger(name)
        other.handlers[:] = [_queue_logs]
        other.setLevel(logging.WARNING)
        other.propagate = False


def queue_logs_held() -> dict[str, int]:
    """The database is back: the next trouble of the queue is said at once, and the event that
    says it is back tells how many of its lines were held back meanwhile."""
    held = _queue_logs.throttle.reset()
    return {"queue_lines_not_logged": held} if held else {}


def queueing_lock(tournament: str, game_id: str) -> str:
    return f"craits/{tournament}/{game_id}"


POOL_RECONNECT_S = 10.0
"""How long the queue's pool tries to replace a lost connection before it gives that try up; the
next use of the pool starts another. The pool waits twice as long after each failed attempt
(1, 2, 4 ... s): left to its default (5 minutes) it was waiting a minute between attempts
after a 90 s outage, and the queue stayed deaf (no heartbeat, no game) that long after the
database was back."""


CHECKED_WITHIN_S = 1.0
"""A pooled connection handed back this recently is lent again without a check: the pool's check
is a round trip of its own before every statement, a quarter of the queue's round trips. One
that died since fails its statement as one that dies during it does (the worker reconnects)."""

_returned_at: weakref.WeakKeyDictionary[psycopg.AsyncConnection[Any], float] = weakref.WeakKeyDictionary()


async def _autocommit(conn: psycopg.AsyncConnection[Any]) -> None:
    """The queue's statements each stand alone: without a transaction around each, it costs no
    ``BEGIN`` and ``COMMIT`` round trips (two of every three the queue made)."""
    await conn.set_autocommit(True)


async def _check_unless_fresh(conn: psycopg.AsyncConnection[Any]) -> None:
    if time.monotonic() - _returned_at.get(conn, -math.inf) > CHECKED_WITHIN_S:
        await psycopg_pool.AsyncConnectionPool.check_connection(conn)


async def _note_returned(conn: psycopg.AsyncConnection[Any]) -> None:
    _returned_at[conn] = time.monotonic()


def _queue_pool(**kwargs: Any) -> psycopg_pool.AsyncConnectionPool:
    """procrastinate's pool, its connections in autocommit and checked only when idle a while."""
    return psycopg_pool.AsyncConnectionPool(
        **{**kwargs, "configure": _autocommit, "check": _check_unless_fresh, "reset": _note_returned})


def make_app(url: str, *, pool_size: int = 4, tag: str = "", concurrency: int = 1) -> procrastinate.App:
    """The queue's app; ``tag``: the ``application_name`` of its connections (a worker's, by
    which it is known to be gone once they are all closed: :func:`find_gone_workers`);
    ``concurrency``: the games its worker plays at once, the most it takes in one batch
    (:class:`BatchedJobs`)."""
    kwargs: dict[str, Any] = {"connect_timeout": 5, **({"application_name": tag} if tag else {})}
    connector = procrastinate.PsycopgConnector(conninfo=url, min_size=1, max_size=pool_size, kwargs=kwargs,
                                               reconnect_timeout=POOL_RECONNECT_S, pool_factory=_queue_pool)
    app = procrastinate.App(connector=connector)
    app.job_manager = BatchedJobs(connector, concurrency)
    return app


_TAKE_SQL = """
UPDATE procrastinate_jobs SET status = 'doing', worker_id = %(worker_id)s
 WHERE id IN (SELECT id FROM procrastinate_jobs
               WHERE status = 'todo' AND lock IS NULL AND queue_name = ANY(%(queues)s::varchar[])
                 AND (scheduled_at IS NULL OR scheduled_at <= now())
               ORDER BY priority DESC, id ASC LIMIT %(n)s FOR UPDATE SKIP LOCKED)
RETURNING *
"""

_DONE_SQL = "DELETE FROM procrastinate_jobs WHERE id = ANY(%(ids)s) AND status IN ('todo', 'doing') RETURNING id"


FLUSHERS = 2
"""Statements of one kind (finishing jobs, reading slots, recording games) a worker runs at once:
the calls that come while both run go together in the next (one at a time, a game waited behind
a whole batch: a slot held the longer)."""


A = TypeVar("A")
R = TypeVar("R")


class Gathered(Generic[A, R]):
    """A group commit: calls that come while ``at_once`` batches are under way wait, and go
    together in the next batch, so a quiet worker waits for nothing and a busy one makes one
    round trip for many games. ``run`` gets a batch's items and returns each one's outcome in
    order (an exception: that call raises it); an exception of its own fails the whole batch."""

    def __init__(self, run: Callable[[list[A]], Awaitable[Sequence[R | BaseException]]],
                 at_once: int = FLUSHERS) -> None:
        self.run = run
        self.at_once = at_once
        self._waiting: list[tuple[A, asyncio.Future[R]]] = []
        self._running = 0
        """Batches under way: counted down by the batch's own task as it finds nothing waiting,
        in the same step (a done callback, a step later, left a call that came in between
        waiting for good: no batch started for it, none running to take it)."""
        self._tasks: set[asyncio.Task[None]] = set()

    async def __call__(self, item: A) -> R:
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, done))
        if self._running < self.at_once:
            self._running += 1
            task = asyncio.create_task(self._drain())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await asyncio.shield(done)  # (a caller cancelled: its item goes with its batch all the same)

    async def _drain(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                try:
                    outcomes = await self.run([item for item, _ in batch])
                except BaseException as err:  # (the database lost, say: every call of the batch says so)
                    if isinstance(err, asyncio.CancelledError):  # (and those waiting for a next batch)
                        batch, self._waiting = batch + self._waiting, []
                    for _, done in batch:
                        if not done.done():
                            done.cancel() if isinstance(err, asyncio.CancelledError) else done.set_exception(err)
                    if isinstance(err, asyncio.CancelledError):
                        raise
                    continue
                for (_, done), outcome in zip(batch, outcomes, strict=True):
                    if done.done():
                        continue
                    if isinstance(outcome, BaseException):
                        done.set_exception(outcome)
                    else:
                        done.set_result(outcome)
        finally:
            self._running -= 1


class BatchedJobs(pq_manager.JobManager):
    """procrastinate's jobs, taken and finished many at once: its worker asks for one job per
    free slot, one round trip each, and finishes each in a statement of its own (the queue's
    ceiling was those round trips, one after the other: bench/distributed.py).

    * **Taking**: asked for a job, it takes as many as the worker has free slots (``concurrency``
      less the jobs handed out and not finished) in one statement, hands out the first and keeps
      the others for the next asks, which follow at once. The jobs kept are ``doing`` under the
      worker's id from the start, so a worker that dies holding them loses none: the coordinator
      puts every ``doing`` job of a gone worker back (:func:`find_gone_workers`), and a stopping
      worker puts back those it did not start (:meth:`release_held`).
    * **Finishing**: the games succeeded while ``FLUSHERS`` finishing statements run are finished
      by the next one, together (a group commit): no wait is added when the queue is quiet.

    Two workers never take the same job: each statement takes rows still ``todo``, locked
    (``SKIP LOCKED``) until it commits. A job that has a ``lock`` (none of ours) is left to
    procrastinate's own fetch, which orders them."""

    def __init__(self, connector: Any, concurrency: int = 1) -> None:
        super().__init__(connector)
        self.concurrency = max(1, concurrency)
        self.held: list[procrastinate.jobs.Job] = []
        """Jobs taken and not yet handed out (``doing`` under this worker's id)."""
        self.out: set[int] = set()
        """Jobs handed out and not yet finished or retried."""
        self._finish: Gathered[int, None] = Gathered(self._delete_done)
        self.finished: set[int] = set()
        """Jobs whose game's recording finished them (:meth:`finished_in_record`): nothing left to do."""

    finish_in_record = True
    """A game's job is finished by the statement that records the game
    (``PostgresStore.record_games_once``'s ``jobs``), not by a statement of its own: one
    statement fewer a game for the database and the worker's event loop."""

    def finished_in_record(self, job_id: int) -> None:
        """This job's game is recorded and the recording finished it: :meth:`finish_job` has
        nothing to write."""
        self.finished.add(job_id)

    async def fetch_job(self, queues: Any, worker_id: int) -> procrastinate.jobs.Job | None:
        if not self.held:
            n = max(1, self.concurrency - len(self.out))
            rows = await self.connector.execute_query_all_async(
                _TAKE_SQL, queues=list(queues) if queues is not None else [QUEUE], worker_id=worker_id, n=n)
            self.held = sorted((procrastinate.jobs.Job.from_row(r) for r in rows), key=lambda j: (-j.priority, j.id or 0))
            if not self.held:
                return await super().fetch_job(queues, worker_id)  # (a job with a lock, if any)
        job = self.held.pop(0)
        assert job.id is not None
        self.out.add(job.id)
        return job

    async def release_held(self, held: list[procrastinate.jobs.Job] | None = None) -> int:
        """Put back in the queue the jobs taken and not started (the worker stops), as they
        were: to be taken at once, their attempts unchanged. Returns how many. ``held``: those
        a previous connection kept (the database was lost), if still under that worker's id
        (if not, they came back as stalled already, and may be another worker's now)."""
        if held is None:
            held, self.held = self.held, []
        if not held:
            return 0
        rows = await self.connector.execute_query_all_async(
            "UPDATE procrastinate_jobs SET status = 'todo', worker_id = NULL WHERE id = ANY(%(ids)s)"
            " AND status = 'doing' AND worker_id = %(worker_id)s RETURNING id",
            ids=[j.id for j in held], worker_id=held[0].worker_id)
        return len(rows)

    async def finish_job(self, job: procrastinate.jobs.Job, status: procrastinate.jobs.Status,
                         delete_job: bool) -> None:
        assert job.id is not None
        try:
            if job.id in self.finished and status == procrastinate.jobs.Status.SUCCEEDED and delete_job:
                return
            if status != procrastinate.jobs.Status.SUCCEEDED or not delete_job:
                await super().finish_job(job, status, delete_job)
                return
            await self._finish(job.id)
        finally:
            self.out.discard(job.id)
            self.finished.discard(job.id)

    async def retry_job(self, job: procrastinate.jobs.Job, *args: Any, **kwargs: Any) -> None:
        try:
            await super().retry_job(job, *args, **kwargs)
        finally:
            self.out.discard(job.id or 0)

    async def _delete_done(self, ids: list[int]) -> list[BaseException | None]:
        """Finish these succeeded jobs in one statement."""
        rows = await self.connector.execute_query_all_async(_DONE_SQL, ids=ids)
        found = {r["id"] for r in rows}
        return [None if job_id in found else pq_exceptions.ConnectorException(  # (as procrastinate's own finish says it)
                    f'Job was not found or not in "doing" or "todo" status (job id: {job_id})') for job_id in ids]


# ------------------------------------------------------------------ tournaments in the store


def start_tournament_pg(
    config: TournamentConfig, source_text: str, source_path: str, url: str, *, overwrite: bool = False
) -> PostgresStore:
    """Store the tournament and its whole schedule in the database at ``url``."""
    store = PostgresStore(url, config.name)
    try:
        row = store.tournament()
        if row is not None and not overwrite:
            done, total = store.counts()
            what = "ladder" if row.schedule_digest == LADDER_SCHEDULE else "tournament"
            state = "finished" if row.finished_at else f"started ({done}/{total} games recorded)"
            raise TournamentError(
                f"{redact(url)} already holds {what} {config.name!r}, {state}; continue it with "
                f"`craits tournament resume FILE --store URL`, or start again with --overwrite"
            )
        if row is not None:
            forget(store)
        key = key_for(config)
        schedule = schedule_for(config, key)
        store.create_tournament(
            name=config.name, source_text=source_text, source_path=source_path,
            schedule_digest=schedule_digest(schedule), settings=settings_of(config), bots=bot_rows(config, {}),
            games=(GameSlot(g.game_id, g.ordinal, g.table, g.deal, g.rotation, g.seed, g.seats) for g in schedule),
            deal_key=key,
        )
        return store
    except BaseException:
        store.close()
        raise


def forget(store: PostgresStore) -> None:
    """Delete a tournament, its results and its queued games (``--overwrite``)."""
    store.delete_tournament()
    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute(
            "DELETE FROM procrastinate_jobs WHERE task_name = %s AND args->>'tournament' = %s AND status != 'doing'",
            (TASK, store.name),
        )


def open_tournament_pg(url: str, name: str, *, ladder: bool = False, readonly: bool = False,
                       ) -> tuple[TournamentConfig, PostgresStore]:
    """A tournament (or ladder) of the database, its configuration re-read from the stored file text."""
    store = PostgresStore(url, name, readonly=readonly)
    try:
        row = store.tournament()
        if row is None:
            raise TournamentError(f"{redact(url)} holds no tournament or ladder named {name!r}")
        is_ladder = row.schedule_digest == LADDER_SCHEDULE
        if is_ladder != ladder:
            raise TournamentError(
                f"{name!r} in {redact(url)} is a {'ladder' if is_ladder else 'tournament'}: use "
                f"`craits {'ladder' if is_ladder else 'tournament'} ...` with it")
        config = parse_config(row.source_text, source=row.source_path, base_dir=Path(row.source_path).resolve().parent)
        config = stored_deals(config, row)
        if not ladder and schedule_digest(schedule_for(config, row.deal_key)) != row.schedule_digest:
            raise TournamentError(f"{store.path}: the stored schedule does not match its tournament file; "
                                  "the database is damaged")
        return config, store
    except BaseException:
        store.close()
        raise


# ------------------------------------------------------------------ the coordinator's side


async def enqueue_pending(app: procrastinate.App, store: PostgresStore, hosted: Collection[str] = ()) -> int:
    """Queue every unplayed game that has no job waiting or running, but those seating one of
    the ``hosted`` bots (the coordinator plays them); returns how many."""
    queued = await _queued_games(app, store.name)
    pending = [g for g in await asyncio.to_thread(store.pending_games)
               if g.game_id not in queued and not set(g.seats) & set(hosted)]
    if not pending:
        return 0
    jobs = [
        procrastinate.jobs.Job(
            id=None, queue=QUEUE, lock=None, queueing_lock=queueing_lock(store.name, g.game_id),
            task_name=TASK, priority=0, task_kwargs={"tournament": store.name, "game_id": g.game_id},
        )
        for g in pending
    ]
    try:
        await app.job_manager.batch_defer_jobs_async(jobs)
    except pq_exceptions.AlreadyEnqueued:
        n = 0  # (a race with another coordinator: one by one, skipping those already queued)
        for job in jobs:
            with contextlib.suppress(pq_exceptions.AlreadyEnqueued):
                await app.job_manager.defer_job_async(job)
                n += 1
        return n
    return len(jobs)


async def _queued_games(app: procrastinate.App, tournament: str) -> set[str]:
    rows = await app.connector.execute_query_all_async(
        "SELECT args->>'game_id' AS game_id FROM procrastinate_jobs WHERE task_name = %(task)s"
        " AND status IN ('todo', 'doing') AND args->>'tournament' = %(tournament)s",
        task=TASK, tournament=tournament,
    )
    return {r["game_id"] for r in rows}


HEARD = "greatest(coalesce(w.last_heartbeat, '-infinity'), pg_postmaster_start_time())"
"""When a worker was last heard of, as the queue's SQL says it: its last heartbeat, or the
database's start if that is later. A restarted database (an outage) heard no heartbeat while
it was down: every worker counts as just heard of, and has ``stalled_s`` to reconnect, record
the games it held meanwhile and beat again before its games count as stalled (taken earlier
by another worker, such a game was played twice, the second copy dropped)."""


async def live_workers(app: procrastinate.App, within_s: float) -> int:
    row = await app.connector.execute_query_one_async(
        f"SELECT count(*) AS n FROM procrastinate_workers w WHERE {HEARD} > now() - make_interval(secs => %(s)s)",
        s=within_s,
    )
    return int(row["n"])


async def requeue_stalled(app: procrastinate.App, stalled_s: float) -> int:
    """Put back in the queue the games of workers silent for ``stalled_s`` (since :data:`HEARD`),
    and those of workers the queue forgot (their worker is NULL: pruned by a worker starting)
    once the database has been up that long."""
    stalled = await app.connector.execute_query_all_async(
        "SELECT j.id, j.args, j.worker_id FROM procrastinate_jobs j LEFT JOIN procrastinate_workers w"
        f" ON w.id = j.worker_id WHERE j.status = 'doing' AND j.task_name = %(task)s AND {HEARD}"
        " < now() - make_interval(secs => %(s)s)", task=TASK, s=stalled_s)
    return await _requeue(app, stalled)


async def _requeue(app: procrastinate.App, jobs: list[dict[str, Any]]) -> int:
    """Put these jobs (their id, args and worker_id) back in the queue, to be taken at once."""
    n = 0
    for job in jobs:
        with contextlib.suppress(psycopg.Error, pq_exceptions.ConnectorException):
            await app.job_manager.retry_job_by_id_async(job["id"], retry_at=datetime.datetime.now(datetime.UTC))
            n += 1
            log.warning("stalled_game_requeued", job=job["id"], game=job["args"].get("game_id"),
                        tournament=job["args"].get("tournament"), worker=job["worker_id"])
    return n


async def announce_worker(app: procrastinate.App, worker: pq_worker.Worker, name: str, tag: str) -> None:
    """Once the queue has given ``worker`` its id, note its name and tag beside it
    (``craits_workers``), for the coordinator to name it should it die."""
    while worker.worker_id is None:
        await asyncio.sleep(0.05)
    try:
        await app.connector.execute_query_async(
            "INSERT INTO craits_workers (queue_id, name, tag, host, started_at) VALUES (%(id)s, %(name)s, %(tag)s,"
            f" %(host)s, {NOW}) ON CONFLICT (queue_id) DO NOTHING",
            id=worker.worker_id, name=name, tag=tag, host=socket.gethostname())
    except (psycopg.Error, pq_exceptions.ConnectorException) as err:  # (it is then named by its queue id)
        log.warning("worker_not_announced", worker=name, error=" ".join(str(err).split()))


_GONE_SQL = """
SELECT w.id AS queue_id, c.name, c.host, NOW::float AS now,
       extract(epoch FROM now() - w.last_heartbeat)::float AS silent_s,
       extract(epoch FROM now() - HEARD)::float AS unheard_s,
       (c.tag IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM pg_stat_activity a WHERE a.application_name = c.tag)) AS closed,
       w.last_heartbeat > pg_postmaster_start_time() AS beat_since_start,
       EXISTS (SELECT 1 FROM craits_workers c2 JOIN procrastinate_workers w2 ON w2.id = c2.queue_id
                WHERE c2.tag = c.tag AND w2.id > w.id) AS renewed,
       (SELECT coalesce(array_agg(j.id ORDER BY j.id), '{}') FROM procrastinate_jobs j
         WHERE j.worker_id = w.id AND j.status = 'doing') AS jobs
  FROM procrastinate_workers w LEFT JOIN craits_workers c ON c.queue_id = w.id
 WHERE w.last_heartbeat < now() - make_interval(secs => %(quiet)s)
""".replace("HEARD", HEARD).replace("NOW", NOW)


async def find_gone_workers(app: procrastinate.App, heartbeat_s: float, stalled_s: float) -> list[GoneWorker]:
    """The workers that are gone: each is forgotten by the queue, its games in hand are put
    back at once, and it is noted gone in ``craits_workers`` (for the board).

    Gone is a heartbeat late by two beats with every one of the worker's connections closed
    (a killed process's are closed by its system at once: found within seconds), or silent
    for ``stalled_s`` (since :data:`HEARD`). Closed connections count only for a worker that
    has beaten since the database started: after a restart every worker is reconnecting."""
    quiet = 2 * heartbeat_s + 1
    rows = await app.connector.execute_query_all_async(_GONE_SQL, quiet=quiet)
    gone = []
    for row in rows:
        closed = bool(row["closed"]) and bool(row["beat_since_start"])
        if row["renewed"] or (not closed and row["unheard_s"] < stalled_s):
            continue  # (renewed: the same process registered again, after a lost connection: not gone)
        forgot = await app.connector.execute_query_one_async(
            "WITH gone AS (DELETE FROM procrastinate_workers WHERE id = %(id)s"
            " AND last_heartbeat < now() - make_interval(secs => %(quiet)s) RETURNING id) SELECT count(*) AS n FROM gone",
            id=row["queue_id"], quiet=quiet)
        if not forgot["n"]:
            continue  # (it answered meanwhile, or another coordinator forgot it)
        held = await app.connector.execute_query_all_async(  # (their worker forgotten: NULL now)
            "SELECT id, args, worker_id FROM procrastinate_jobs WHERE status = 'doing' AND worker_id IS NULL"
            " AND id = ANY(%(ids)s) ORDER BY id", ids=list(row["jobs"]))
        await _requeue(app, held)
        why = "its connections closed" if closed else f"no heartbeat for {row['silent_s']:.0f} s"
        games = tuple(f"{j['args'].get('tournament')}/{j['args'].get('game_id')}" for j in held)
        worker = GoneWorker(row["name"] or f"#{row['queue_id']}", row["host"] or "?", row["now"], why, games)
        await app.connector.execute_query_async(
            "UPDATE craits_workers SET gone_at = %(at)s, gone_why = %(why)s, games = %(games)s WHERE queue_id = %(id)s",
            at=worker.gone_at, why=why, games=json.dumps(list(games)), id=row["queue_id"])
        gone.append(worker)
    return gone


async def watch_stalled(app: procrastinate.App, stalled_s: float, every_s: float) -> None:
    """Requeue stalled games every ``every_s`` until cancelled, also when the cancellation came
    while the queue's connection pool waited (for a database lost a minute, say), which turns it
    into one of its errors: swallowed here, it kept this loop, and the worker, waiting for good."""
    while True:
        await asyncio.sleep(every_s)
        try:
            await requeue_stalled(app, stalled_s)
        except (psycopg.Error, pq_exceptions.ConnectorException, OSError) as err:
            log.warning("stalled_check_failed", error=str(err))
        if (task := asyncio.current_task()) is not None and task.cancelling():
            raise asyncio.CancelledError


# ------------------------------------------------------------------ the worker's side


class GameWorker:
    """Plays the jobs a procrastinate worker hands it: one referee per tournament."""

    def __init__(self, url: str, settings: WorkerSettings, runner_for: Callable[[TournamentConfig], RunnerFactory],
                 *, hosts_remote: bool = False) -> None:
        self.url = url
        self.hosts_remote = hosts_remote
        """The coordinator's player of :func:`play_hosted`: its runner hosts the bot port, and
        seats the bots that connect on their own; a worker's binds a port of its own for its
        launched bots (:func:`without_remote`)."""
        self.settings = settings
        self.runner_for = runner_for
        self._own_dir = settings.work_dir is None
        self.work_dir = settings.work_dir or Path(tempfile.mkdtemp(prefix="craits-worker-"))
        self._stores: dict[str, list[PostgresStore]] = {}
        """Every store (a connection each) opened per tournament; ``_free`` those not in a call.
        A call takes a free one or opens another, so the games in hand record at once, each on
        its own connection (one shared connection recorded one game at a time: the queue's
        ceiling, bench/distributed.py)."""
        self._free: dict[str, list[PostgresStore]] = {}
        self._runners: dict[str, tuple[TournamentConfig, RunGame]] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        self._exits = contextlib.AsyncExitStack()
        self.played = 0
        self.duplicates = 0
        self.in_hand = 0
        """Games being played now (a stopping worker waits for these, and only these)."""
        self.refusals = RefusalLog()
        self.files = FileCache(url, settings.cache_dir, settings.cache_max)
        self._digests: dict[tuple[str, str], str] = {}
        """(tournament, bot) -> the hash of the bot's files in the store (a roster's version)."""
        self._giving_up = threading.Event()
        """Set by :meth:`stop_waiting`: a connection being opened is not waited for either."""
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None
        """Where the store's calls run, a game's each at once (:meth:`_in_thread`)."""
        self._reads: dict[str, Gathered[str, tuple[GameSlot | None, bool, dict[str, str]]]] = {}
        self._records: dict[str, Gathered[tuple[GameRecord, int | None], bool]] = {}
        """Per tournament, the games' slots read and their records written many at once (a
        batch taken together starts together, and instant games end together)."""

    def stop_waiting(self) -> None:
        """Give up the database at once, if it is lost: a game being recorded is left to come
        back as a stalled job (the organizer stopped while the database was gone)."""
        self._giving_up.set()
        for stores in self._stores.values():
            for store in stores:
                store.stop_waiting.set()

    async def aclose(self) -> None:
        await self._exits.aclose()
        if self._threads is not None:
            self._threads.shutdown(wait=False)  # (their calls are done: the games' tasks are)
            self._threads = None
        for stores in self._stores.values():
            for store in stores:
                store.close()
        self._stores.clear()
        self._free.clear()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    async def _store_call(self, tournament: str, method: str, *args: Any, **kwargs: Any) -> Any:
        free = self._free.setdefault(tournament, [])
        if free:
            store = free.pop()
        else:
            store = await self._in_thread(self._open_store, tournament)
            self._stores.setdefault(tournament, []).append(store)
        try:
            return await self._in_thread(getattr(store, method), *args, **kwargs)
        finally:
            free.append(store)

    async def _read_slot(self, tournament: str, game_id: str) -> tuple[GameSlot | None, bool, dict[str, str]]:
        """A game's slot (None: not in the schedule), whether it is recorded, and the bots' tokens:
        the games asked for together read in one statement."""
        if (reads := self._reads.get(tournament)) is None:
            async def read(game_ids: list[str]) -> list[tuple[GameSlot | None, bool, dict[str, str]]]:
                games, tokens = await self._store_call(tournament, "games_to_play", game_ids)
                return [(*games[g], tokens) if g in games else (None, False, {}) for g in game_ids]

            reads = self._reads[tournament] = Gathered(read)
        return await reads(game_id)

    async def _record(self, tournament: str, record: GameRecord, job: int | None = None) -> bool:
        """Record a game once (False: recorded already), the games ending together in one statement;
        ``job``: the queue's job it was played for, finished in that statement once it is recorded."""
        if (records := self._records.get(tournament)) is None:
            async def write(batch: list[tuple[GameRecord, int | None]]) -> list[bool | Exception]:
                return await self._store_call(  # type: ignore[no-any-return]
                    tournament, "record_games_once", [r for r, _ in batch], worker=self.settings.name,
                    jobs=[j for _, j in batch])

            records = self._records[tournament] = Gathered(write)
        return await records((record, job))

    async def _in_thread(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``call`` in a thread of this worker's own: asyncio's shared pool has ``cpus + 4`` threads,
        so on two cores the 7th game to be taken or recorded at once waited for a thread."""
        if self._threads is None:
            self._threads = concurrent.futures.ThreadPoolExecutor(self.settings.concurrency + 2,
                                                                  thread_name_prefix="craits-store")
        return await asyncio.get_running_loop().run_in_executor(self._threads, functools.partial(call, *args, **kwargs))

    def _open_store(self, tournament: str) -> PostgresStore:
        """A new connection for a call (a game taken while the database is lost, restarting or
        not yet back): waited for as a recording waits (``database_wait_s``), not a failed game."""
        deadline = time.monotonic() + self.settings.database_wait_s
        delay, said = 0.2, False
        while True:
            try:
                return PostgresStore(self.url, tournament, retry_s=self.settings.database_wait_s, create=False)
            except Unreachable as err:
                if time.monotonic() + delay > deadline or self._giving_up.is_set():
                    raise
                if not said:
                    said = True
                    log.warning("store_retry", what="opening a connection", error=str(err), retry_in_s=delay)
                self._giving_up.wait(delay)
                delay = min(delay * 2, 5.0)

    async def _runner(self, tournament: str, seats: tuple[str, ...], tokens: dict[str, str],
                      ) -> tuple[TournamentConfig, RunGame]:
        """The tournament's file as stored, and the runner this worker keeps open for it. The
        file is read again when a game seats a bot it does not know (a ladder's new bot)."""
        lock = self._opening.setdefault(tournament, asyncio.Lock())
        async with lock:
            known = self._runners.get(tournament)
            if known is not None and set(seats) <= set(known[0].bot_names):
                return known
            row = await self._store_call(tournament, "tournament")
            if row is None:
                raise GameRefused(f"tournament {tournament!r} is not in {redact(self.url)}")
            base_dir = self.settings.files_dir or Path(row.source_path).parent
            try:
                config = parse_config(row.source_text, source=row.source_path, base_dir=base_dir,
                                      bot_port=self.hosts_remote)
            except UserError as err:  # (a bot's cwd missing here)
                raise GameRefused(str(err)) from None
            if not self.hosts_remote:
                config = without_remote(config)
            config = await self._with_stored_bots(tournament, config, seats, tokens, known[0] if known else None)
            if known is not None:  # (a runner plays any bot its games' specs name)
                self._runners[tournament] = (config, known[1])
            else:
                factory = self.runner_for(config)
                run_game = await self._exits.enter_async_context(factory(config, self.work_dir / tournament))
                self._runners[tournament] = (config, run_game)
            return self._runners[tournament]

    async def _with_stored_bots(self, tournament: str, config: TournamentConfig, seats: tuple[str, ...],
                                tokens: dict[str, str], known: TournamentConfig | None) -> TournamentConfig:
        """``config`` with the seated bots that are not in its file but whose files are in the
        store by their hash (a roster's versions), run from this worker's cache, where each game
        fetches and holds them (:meth:`_holding`). On the coordinator, a roster participant's own
        bot too (its stored token is the resolver's)."""
        kept = [b for b in known.bots if b.name not in config.bot_names] if known is not None else []
        wanted = [name for name in seats if name not in config.bot_names and name not in {b.name for b in kept}]
        if wanted:
            stored = await self._store_call(tournament, "bot_files")
            for name in wanted:
                if name not in stored:
                    if self.hosts_remote and tokens.get(name, "").startswith(RESOLVED_PREFIX):
                        kept.append(BotEntry(name=name, token=tokens[name]))
                    continue  # (else spec_for says it is not in the tournament)
                digest, command = stored[name]
                self._digests[(tournament, name)] = digest
                kept.append(BotEntry(name=name, command=command, cwd=str(self.files.path(digest))))
        return dataclasses.replace(config, bots=(*config.bots, *kept)) if kept else config

    async def _holding(self, tournament: str, seats: tuple[str, ...], held: contextlib.ExitStack) -> None:
        """The stored versions seated in a game, unpacked in the cache (fetched and checked if
        not there) and kept from eviction until ``held`` closes. Files missing, damaged or with
        no room to unpack refuse the game, for another worker to take."""
        for name in dict.fromkeys(seats):
            digest = self._digests.get((tournament, name))
            if digest is not None:
                try:
                    await asyncio.to_thread(held.enter_context, self.files.hold(digest))
                except FilesUnavailable as err:
                    raise GameRefused(f"bot {name!r}: {err}") from None

    async def note_refusal(self, tournament: str, game_id: str, reason: str) -> None:
        """Say in the store why this worker refused a game, for the organizer to tell (a store
        that cannot be written, or a tournament that is not in it: the log has said it)."""
        with contextlib.suppress(StoreError, psycopg.Error):
            await self._store_call(tournament, "note_refusal", self.settings.name, reason, game_id)

    async def play(self, tournament: str, game_id: str, job: int | None = None) -> str:
        """Play a game and record it: "recorded", "duplicate dropped" (both finish ``job``, the
        queue's job it was played for, in the recording), "already recorded" or "not scheduled"."""
        self.in_hand += 1
        try:
            return await self._play(tournament, game_id, job)
        finally:
            self.in_hand -= 1

    async def _play(self, tournament: str, game_id: str, job: int | None) -> str:
        bound = log.bind(tournament=tournament, game=game_id, worker=self.settings.name)
        slot, done, tokens = await self._read_slot(tournament, game_id)
        if slot is None:
            bound.warning("game_not_scheduled")
            return "not scheduled"
        if done:
            bound.info("game_already_recorded")
            return "already recorded"
        config, run_game = await self._runner(tournament, slot.seats, tokens)
        with contextlib.ExitStack() as held:
            await self._holding(tournament, slot.seats, held)
            check_bots(config, slot)
            spec = spec_for(config, slot, tokens, self.work_dir / tournament / "replays")
            began = time.monotonic()
            record = await run_game(spec)
        if record.game_id != slot.game_id:
            raise StoreError(f"the runner returned game {record.game_id!r} for {slot.game_id!r}")
        recorded = await self._record(tournament, record, job)
        if spec.replay_path is not None:
            with contextlib.suppress(OSError):
                Path(spec.replay_path).unlink()
        if not recorded:
            self.duplicates += 1
            bound.warning("duplicate_result_dropped", digest=record.digest)
            return "duplicate dropped"
        self.played += 1
        bound.info("game_recorded", seats=list(slot.seats), totals=[str(t) for t in record.result.totals],
                   aborted=record.aborted or None, duration_s=round(time.monotonic() - began, 4))
        return "recorded"


def without_remote(config: TournamentConfig) -> TournamentConfig:
    """A worker's view of a file: no bot that connects on its own (they connect to the
    coordinator, which plays their games) and so no ``address`` of theirs to bind, nor their
    TLS: its launched bots are told a free port on 127.0.0.1, as on a file without remote bots
    (a self-signed certificate made there would be announced as one to hand out)."""
    return dataclasses.replace(config, bots=tuple(b for b in config.bots if b.kind != "remote"), address=None,
                               tls=TLSRequest())


def check_bots(config: TournamentConfig, slot: GameSlot) -> None:
    """Refuse a game whose bots' programs or scripts are not on this machine."""
    bots = {b.name: b for b in config.bots}
    for name in slot.seats:
        bot = bots.get(name)
        if bot is not None and bot.command is not None and (problem := command_problem(bot.command, bot.cwd)):
            raise GameRefused(f"bot {name!r}: cannot run {' '.join(bot.command)!r} on this machine: {problem}")


def spec_for(config: TournamentConfig, slot: GameSlot, tokens: dict[str, str], replay_dir: Path) -> GameSpec:
    bots = {b.name: b for b in config.bots}
    missing = [name for name in slot.seats if name not in bots]
    if missing:
        raise GameRefused(f"game {slot.game_id}: bot(s) {', '.join(missing)} are no longer in the tournament file")
    return GameSpec(
        game_id=slot.game_id,
        config=config.game,
        seed=slot.seed,
        seats=tuple(bots[name].spec(tokens[name]) for name in slot.seats),
        clocks=config.clocks,
        replay_path=replay_dir / f"{slot.game_id}{REPLAY_SUFFIX}",
        tournament=config.name,
        shared_deal=shares_deals(config.duplicate),
    )


class RefusedRetry(pq_retry.BaseRetryStrategy):
    """A refused game goes back to the queue for ``refused_wait_s`` plus up to two seconds,
    at random: the refusing worker polls in step with its refusal, so without the jitter it
    would always be the first to take the game again; other failures are not retried."""

    def get_retry_decision(self, *, exception: BaseException, job: procrastinate.jobs.Job,
                           ) -> pq_retry.RetryDecision | None:
        if not isinstance(exception, GameRefused):
            return None
        wait = refused_wait_s(job.attempts)
        return pq_retry.RetryDecision(retry_in={"milliseconds": int(1000 * (wait + random.uniform(0.0, 2.0)))})


def refused_wait_s(attempts: int) -> float:
    """How long a game refused ``attempts + 1`` times waits (before the jitter)."""
    slower = max(0, attempts - REFUSED_FAST_TRIES + 1)
    return float(min(REFUSED_RETRY_S * 2 ** min(slower, 16), REFUSED_RETRY_MAX_S))


class RefusalLog:
    """Logs each kind of refusal (tournament, reason) once, then at most every ``every_s``."""

    def __init__(self, every_s: float = REFUSED_LOG_EVERY_S) -> None:
        self.throttle = Throttle(every_s)

    def refused(self, worker: str, tournament: str, game_id: str, reason: str) -> None:
        held = self.throttle.allow((tournament, reason))
        if held is None:
            return
        log.error("game_refused", tournament=tournament, game=game_id, worker=worker, reason=reason,
                  **({"also_refused_since": held} if held else {}),
                  retry=f"soon, by this or another worker; after {REFUSED_FAST_TRIES} refusals a game waits "
                  f"longer each time, up to {REFUSED_RETRY_MAX_S:g} s")


def register_task(app: procrastinate.App, game_worker: GameWorker) -> None:
    @app.task(
        name=TASK, queue=QUEUE,
        retry=RefusedRetry(), pass_context=True,
    )
    async def play_game(context: procrastinate.JobContext, tournament: str, game_id: str) -> str:
        jobs = context.app.job_manager
        batched = jobs if isinstance(jobs, BatchedJobs) and jobs.finish_in_record else None
        job = context.job.id if batched is not None else None
        try:
            outcome = await game_worker.play(tournament, game_id, job)
            if batched is not None and job is not None and outcome in FINISHED_IN_RECORD:
                batched.finished_in_record(job)
            return outcome
        except GameRefused as err:
            game_worker.refusals.refused(game_worker.settings.name, tournament, game_id, str(err))
            await game_worker.note_refusal(tournament, game_id, str(err))
            raise


FINISHED_IN_RECORD = ("recorded", "duplicate dropped")
"""What :meth:`GameWorker.play` says when the recording statement finished the game's job."""


class _Worker(pq_worker.Worker):
    """procrastinate's worker, less the context it builds for its log records when nobody logs
    them: four dicts of the job's fields a game (3-4% of the loop's work a game at the queue's
    ceiling), built whether logged or not; craits logs the queue's warnings and errors by their
    message alone (:func:`adopt_queue_logs`)."""

    def _log_extra(self, action: str, context: Any, job_result: Any, **kwargs: Any) -> dict[str, Any]:
        if self.logger.isEnabledFor(logging.INFO):
            return super()._log_extra(action, context, job_result, **kwargs)
        return {"action": action}


def procrastinate_worker(app: procrastinate.App, settings: WorkerSettings) -> pq_worker.Worker:
    return _Worker(
        app, queues=[QUEUE], name=settings.name, concurrency=settings.concurrency,
        install_signal_handlers=False, update_heartbeat_interval=settings.heartbeat_s,
        stalled_worker_timeout=settings.stalled_s, fetch_job_polling_interval=1.0,
        abort_job_polling_interval=max(1.0, settings.heartbeat_s), shutdown_graceful_timeout=None,
        delete_jobs="successful",
    )


STOP_GRACE_S = 10.0
"""How long a stopped worker with no game in hand waits for the queue library to let it go."""


class WorkerService:
    """``craits worker``: a procrastinate worker that survives the database going away.

    ``stop()`` (SIGTERM, Ctrl-C) takes no new game and returns once the games in hand
    are recorded. A lost connection stops the inner worker (its games are finished and
    recorded when the database is back); it is started again with backoff."""

    def __init__(self, url: str, settings: WorkerSettings,
                 runner_for: Callable[[TournamentConfig], RunnerFactory]) -> None:
        self.url = url
        self.settings = settings
        self.game_worker = GameWorker(url, settings, runner_for)
        self._stop = asyncio.Event()
        self._current: pq_worker.Worker | None = None
        self.tag = f"craits-worker-{os.urandom(8).hex()}"
        """The ``application_name`` of this process's queue connections (:func:`find_gone_workers`)."""
        self._unreleased: list[list[procrastinate.jobs.Job]] = []
        """Jobs taken and not started that a lost database kept from being put back: put back
        by the next connection (at most one batch: a connection takes none before that)."""

    async def _release(self, jobs: BatchedJobs, held: list[procrastinate.jobs.Job] | None = None) -> None:
        """Put back the jobs ``jobs`` took and did not start (``held``: a previous connection's),
        or keep them for the next connection when the database is lost."""
        batch = list(jobs.held) if held is None else held
        try:
            released = await jobs.release_held(held)
        except (psycopg.Error, pq_exceptions.ConnectorException, OSError):
            self._unreleased[:] = [batch]
            return
        if released:
            log.info("games_put_back", worker=self.settings.name, games=released,
                     why="taken in a batch, not started")

    def stop(self) -> None:
        self._stop.set()
        if self._current is not None:
            self._current.stop()  # type: ignore[no-untyped-call]

    async def run_until_stopped(self, grace_s: float = STOP_GRACE_S) -> bool:
        """:meth:`run`, and once stopped with no game in hand, at most ``grace_s`` more seconds
        for the queue's shutdown: past that the worker leaves anyway (its games are all
        recorded, its heartbeat stops and the queue forgets it) and logs where the shutdown
        was waiting. False when it had to leave that way."""
        main = asyncio.create_task(self.run())
        if not await self.wait_stopped(main, grace_s):
            return False
        main.result()
        return True

    async def wait_stopped(self, main: asyncio.Task[None], grace_s: float = STOP_GRACE_S) -> bool:
        """Wait for ``main`` (:meth:`run`) to end, and once stopped with no game in hand at most
        ``grace_s`` more seconds: False (logged, with where it waits) when the queue's shutdown
        is stuck (after a long database outage, say)."""
        idle_since: float | None = None
        while not main.done():
            await asyncio.wait({main}, timeout=0.25)
            if main.done() or not self._stop.is_set() or self.game_worker.in_hand:
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= grace_s:
                stacks = {
                    task.get_name(): " <- ".join(
                        f"{frame.f_code.co_name}:{frame.f_lineno}" for frame in task.get_stack(limit=8)
                    )
                    for task in asyncio.all_tasks() if task is not asyncio.current_task()
                }
                log.error("worker_stop_stuck", worker=self.settings.name, waited_s=grace_s, tasks=stacks,
                          effect="the worker leaves without waiting for the queue's shutdown")
                return False
        return True

    async def run(self) -> None:
        delay = 0.5
        bound = log.bind(worker=self.settings.name, store=redact(self.url))
        loop = asyncio.get_running_loop()
        previous = loop.get_exception_handler()

        def unretrieved(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            # A job whose end could not be written (the database went away) fails in a task
            # procrastinate does not await: the job stays "doing" and comes back as stalled.
            error = context.get("exception") or context.get("message")
            bound.warning("background_task_failed", error=" ".join(str(error).split()) or repr(error))

        loop.set_exception_handler(unretrieved)
        lost, retries = False, Throttle()
        try:
            while not self._stop.is_set():
                app = make_app(self.url, pool_size=self.settings.concurrency + 3, tag=self.tag,
                               concurrency=self.settings.concurrency)
                register_task(app, self.game_worker)
                try:
                    async with app.open_async():
                        worker = procrastinate_worker(app, self.settings)
                        self._current = worker
                        watcher = asyncio.create_task(
                            watch_stalled(app, self.settings.stalled_s, self.settings.heartbeat_s))
                        announcing = asyncio.create_task(announce_worker(app, worker, self.settings.name, self.tag))
                        try:
                            if self._stop.is_set():
                                return
                            if self._unreleased:
                                await self._release(app.job_manager, self._unreleased.pop())  # type: ignore[arg-type]
                            bound.info("worker_started", concurrency=self.settings.concurrency,
                                       **(queue_logs_held() if lost else {}))
                            lost = False
                            retries.reset()
                            await worker.run()  # type: ignore[no-untyped-call]
                            if self._stop.is_set():
                                return
                        finally:
                            self._current = None
                            await self._release(app.job_manager)  # type: ignore[arg-type]
                            announcing.cancel()
                            watcher.cancel()
                            with contextlib.suppress(asyncio.CancelledError):
                                await watcher
                            with contextlib.suppress(asyncio.CancelledError):
                                await announcing
                        delay = 0.5
                except (psycopg.Error, pq_exceptions.ConnectorException, OSError) as err:
                    if self._stop.is_set():
                        return
                    lost = True
                    if (held := retries.allow("database_lost")) is not None:  # (once, then once a minute)
                        bound.warning("database_lost", error=" ".join(str(err).split()), retry_in_s=delay,
                                      **({"also_failed_since": held} if held else {}))
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
                delay = min(delay * 2, 10.0)
        finally:
            bound.info("worker_stopped", played=self.game_worker.played, duplicates=self.game_worker.duplicates)
            await self.game_worker.aclose()
            loop.set_exception_handler(previous)


# ------------------------------------------------------------------ the coordinator


async def failed_games(app: procrastinate.App, tournament: str) -> list[tuple[str, str]]:
    """(game, worker) of this tournament's jobs that failed (the worker's log says why)."""
    rows = await app.connector.execute_query_all_async(
        "SELECT args->>'game_id' AS game_id, coalesce(w.id::text, '?') AS worker FROM procrastinate_jobs j"
        " LEFT JOIN procrastinate_workers w ON w.id = j.worker_id WHERE task_name = %(task)s"
        " AND status = 'failed' AND args->>'tournament' = %(tournament)s",
        task=TASK, tournament=tournament,
    )
    return [(r["game_id"], r["worker"]) for r in rows]


async def refused_games(app: procrastinate.App, tournament: str) -> int:
    """How many of this tournament's games a worker has refused and wait for another try."""
    row = await app.connector.execute_query_one_async(
        "SELECT count(*) AS n FROM procrastinate_jobs WHERE task_name = %(task)s AND status = 'todo'"
        " AND attempts > 0 AND args->>'tournament' = %(tournament)s",
        task=TASK, tournament=tournament,
    )
    return int(row["n"])


async def clear_failed(app: procrastinate.App, tournament: str) -> None:
    await app.connector.execute_query_async(
        "DELETE FROM procrastinate_jobs WHERE task_name = %(task)s AND status IN ('failed', 'cancelled', 'aborted')"
        " AND args->>'tournament' = %(tournament)s",
        task=TASK, tournament=tournament,
    )


@dataclass
class Followed:
    recorded: int
    scheduled: int
    failed: list[tuple[str, str]]
    stopped: bool
    refused: list[Refusal] = field(default_factory=list)
    """Why every connected worker refused games, when that stopped the following (a refusal
    does not change by waiting: a bot's program or files missing, no sandbox)."""


def refusal_lines(refusals: list[Refusal]) -> str:
    """One indented line per worker and reason (the first ``REASONS_SHOWN``), each after a newline."""
    why = "".join(f"\n  worker {r.worker} refused {r.games} game(s) (last {r.last_game}): {r.reason}"
                  for r in refusals[:REASONS_SHOWN])
    if len(refusals) > REASONS_SHOWN:
        why += f"\n  ... and {len(refusals) - REASONS_SHOWN} more reasons (the workers' logs: game_refused)"
    return why


def refusals_text(name: str, refusals: list[Refusal]) -> str:
    """Why a run stopped: every connected worker refused games, with each worker's reasons and the way on."""
    return (f"{name}: every connected worker refuses games it cannot play, and waiting will not change that:"
            f"{refusal_lines(refusals)}\nthe games stay queued: fix the workers' machines (`craits doctor` there) "
            "or start a worker that can play them (or run with --wait-for-workers to wait for one)")


def everyone_refused(refusals: list[Refusal], live: int, within_s: float, now: float | None = None) -> bool:
    """Whether each of the ``live`` workers connected now has refused a game lately: as many
    workers as are alive have noted a refusal in the last ``within_s`` (a worker refusing a
    game sees it back within seconds, so its note stays fresh while it keeps refusing; a
    worker that has gone stops refreshing its own)."""
    now = time.time() if now is None else now
    recent = {r.worker for r in refusals if r.last_at >= now - within_s}
    return live > 0 and len(recent) >= live


@contextlib.asynccontextmanager
async def _kept(run_game: RunGame) -> AsyncIterator[RunGame]:
    yield run_game  # (the coordinator's runner: it opened it, it closes it)


async def play_hosted(url: str, store: PostgresStore, games: list[str], run_game: RunGame,
                      settings: WorkerSettings) -> list[tuple[str, str]]:
    """Play ``games`` (each seats a bot that connects on its own) on the coordinator's
    ``run_game``, whose referee hosts the bot port, ``settings.concurrency`` at a time; each
    recorded once, as a worker records. Returns (game, ``HOSTED``) of those that failed
    (logged: ``hosted_game_failed``). Cancelled, the games in flight stay unrecorded."""
    player = GameWorker(url, settings, lambda config: lambda c, out: _kept(run_game), hosts_remote=True)
    slots = asyncio.Semaphore(max(1, settings.concurrency))
    failed: list[tuple[str, str]] = []

    async def one(game_id: str) -> None:
        async with slots:
            try:
                await player.play(store.name, game_id)
            except Exception as err:  # (a launched bot seated beside it that cannot run here, say)
                log.error("hosted_game_failed", tournament=store.name, game=game_id, error=str(err) or repr(err))
                failed.append((game_id, HOSTED))

    try:
        await asyncio.gather(*(one(g) for g in games))
    finally:
        await player.aclose()
    return failed


async def play_queued(
    url: str,
    store: PostgresStore,
    *,
    local_workers: int | None,
    settings: WorkerSettings,
    runner_for: Callable[[TournamentConfig], RunnerFactory],
    on_progress: Callable[[int, int], None] | None = None,
    on_refused: Callable[[int, list[Refusal]], None] | None = None,
    on_database: Callable[[str | None], None] | None = None,
    on_gone: Callable[[GoneWorker], None] | None = None,
    stop: asyncio.Event | None = None,
    poll_s: float = 0.25,
    wait_for_workers: bool = True,
    hosted: RunGame | None = None,
) -> Followed:
    """Queue the unplayed games of ``store``'s tournament and follow them until every one
    is recorded, a game fails, or ``stop`` is set. ``local_workers``: games this process
    plays at once itself; None: ``settings.concurrency`` as soon as no worker is alive
    (at the start, or later, when the last one has gone), else none. ``on_refused`` is told,
    every heartbeat while games wait for a worker that can play them, how many, and why the
    workers refused them since this call began (what they noted in the store).
    A lost database is waited for as the workers wait (``settings.database_wait_s``), then a
    ``StoreError``; ``on_database`` is told when it is lost (why), again every
    ``STILL_LOST_EVERY_S`` while it is, and when it is back (None). ``on_gone`` is told of each
    worker found gone (killed: :func:`find_gone_workers`), whose games go back to the queue.
    ``stop`` set while it is lost raises a ``StoreError`` at once: the games stay queued.
    Without ``wait_for_workers``, the following stops as soon as every connected worker has
    refused games (:func:`everyone_refused`): nobody is playing them, and waiting will not
    change that; ``Followed.refused`` says why, and the games stay queued.
    ``hosted``: the coordinator's runner, whose referee the bots that connect on their own
    connect to; the games seating one are played on it (:func:`play_hosted`), not queued."""
    stop = stop or asyncio.Event()
    started = await asyncio.to_thread(store.now)  # (the refusals are stamped by the database's clock)
    app = make_app(url)
    register_task(app, GameWorker(url, settings, runner_for))  # (the task must be known to defer it)
    async with app.open_async():
        await clear_failed(app, store.name)
        await requeue_stalled(app, settings.stalled_s)
        remote = await asyncio.to_thread(store.remote_bots)
        own = [g.game_id for g in await asyncio.to_thread(store.pending_games) if set(g.seats) & remote]
        if own and hosted is None:
            raise TournamentError(f"{store.name}: {len(own)} game(s) seat bots that connect on their own "
                                  f"({', '.join(sorted(remote))}): only the command that hosts their port plays them")
        queued = await enqueue_pending(app, store, remote)
        log.info("games_queued", tournament=store.name, queued=queued, local_workers=local_workers,
                 **({"played_here": len(own)} if own else {}))
        hosting = (asyncio.create_task(play_hosted(url, store, own, hosted, settings))
                   if own and hosted is not None else None)
        service: WorkerService | None = None
        serving: asyncio.Task[None] | None = None

        async def start_local(n: int) -> None:
            nonlocal service, serving
            log.info("local_workers_started", tournament=store.name, concurrency=n)
            service = WorkerService(url, dataclasses.replace(settings, concurrency=n), runner_for)
            serving = asyncio.create_task(service.run())

        if local_workers:
            await start_local(local_workers)
        last_check = -math.inf
        failed: list[tuple[str, str]] = []
        given_up: list[Refusal] = []
        wait_s, seen = 0.02, -1  # (a short wait after progress, longer while nothing moves)
        lost_since: float | None = None
        said_at = 0.0
        retry_s, store.retry_s = store.retry_s, min(store.retry_s, 2.0)  # (the long wait is this loop's)
        try:
            while True:
                try:
                    recorded, scheduled = await asyncio.to_thread(store.counts)
                except StoreError as err:
                    if lost_since is None:
                        lost_since = said_at = time.monotonic()
                        log.warning("database_lost", tournament=store.name, error=str(err),
                                    waits_s=settings.database_wait_s)
                        if on_database is not None:
                            on_database(str(err))
                    elif time.monotonic() - said_at >= STILL_LOST_EVERY_S:
                        said_at = time.monotonic()
                        log.warning("database_still_lost", tournament=store.name,
                                    lost_s=round(said_at - lost_since), error=str(err))
                        if on_database is not None:
                            on_database(str(err))
                    if stop.is_set():
                        raise StoreError(f"{err}; stopped while waiting for it") from None
                    if time.monotonic() - lost_since >= settings.database_wait_s:
                        raise
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(stop.wait(), poll_s)
                    continue
                if lost_since is not None:
                    log.info("database_back", tournament=store.name, lost_s=round(time.monotonic() - lost_since, 1),
                             **queue_logs_held())
                    lost_since = None
                    if on_database is not None:
                        on_database(None)
                wait_s, seen = (0.02, recorded) if recorded != seen else (min(wait_s * 2, poll_s), seen)
                if on_progress is not None:
                    on_progress(recorded, scheduled)
                if recorded >= scheduled or stop.is_set():
                    break
                if hosting is not None and hosting.done() and (failed := hosting.result()):
                    break
                if serving is not None and serving.done():
                    serving.result()  # (a local worker that crashed says why)
                    raise StoreError("the local worker stopped")
                if time.monotonic() - last_check >= settings.heartbeat_s:
                    last_check = time.monotonic()
                    with contextlib.suppress(psycopg.Error, pq_exceptions.ConnectorException):
                        if local_workers is None and service is None and not await live_workers(app, settings.stalled_s):
                            await start_local(settings.concurrency)
                        for gone in await find_gone_workers(app, settings.heartbeat_s, settings.stalled_s):
                            log.warning("worker_gone", worker=gone.name, host=gone.host, why=gone.why,
                                        games=list(gone.games), effect="its games in hand are back in the queue")
                            if on_gone is not None:
                                on_gone(gone)
                        await requeue_stalled(app, settings.stalled_s)
                        failed = await failed_games(app, store.name)
                        if hosting is not None and hosting.done():
                            failed += hosting.result()
                        if failed:
                            break
                        if waiting := await refused_games(app, store.name):
                            with contextlib.suppress(StoreError):
                                refusals = await asyncio.to_thread(store.refusals, started)
                                if not wait_for_workers and everyone_refused(
                                        refusals, await live_workers(app, settings.stalled_s), settings.stalled_s,
                                        await asyncio.to_thread(store.now)):
                                    given_up = refusals
                                    log.error("every_worker_refused", tournament=store.name, refused=waiting,
                                              reasons=sorted({r.reason for r in refusals}))
                                    break
                                if on_refused is not None:
                                    on_refused(waiting, refusals)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait_s)
        finally:
            store.retry_s = retry_s
            if hosting is not None and not hosting.done():  # (stopped: as a SQLite run, its games in flight
                hosting.cancel()                              # are cancelled, left to the next resume)
                with contextlib.suppress(asyncio.CancelledError):
                    await hosting
            if service is not None and serving is not None:
                service.stop()
                if lost_since is not None or not await service.wait_stopped(serving):
                    # (the database gone: the games in hand cannot be recorded, and come back as stalled
                    # jobs; the queue's graceful shutdown would wait for its pool's timeouts; or, after a
                    # long outage, stuck on its jobs requeued meanwhile: cancelled again)
                    service.game_worker.stop_waiting()
                    while not serving.done():
                        serving.cancel()
                        await asyncio.wait({serving}, timeout=0.5)
                with contextlib.suppress(asyncio.CancelledError):
                    serving.result()
        with contextlib.suppress(StoreError):  # (lost again just now: the loop's last figures)
            recorded, scheduled = await asyncio.to_thread(store.counts)
        return Followed(recorded, scheduled, failed, stop.is_set() and recorded < scheduled, given_up)
