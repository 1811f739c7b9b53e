"""Referee worker processes: a tournament's games on every core.

One referee process plays every game on one event loop, so on a machine with more cores
than that it leaves them idle while the bots wait for it. :class:`RefereeWorkers` spreads
the games over worker processes: each has its own event loop, its own referee
(:class:`~server.transport.service.Arena` on an ephemeral port of 127.0.0.1) and its own
pool of launched bots. The tournament's own referee counts as the first worker: a game
goes to the worker with the fewest games in progress (of those, the one that already runs
most of its bots: it has their processes), and a new worker process is started
only when every worker is busy, up to one per core (``max_workers``). So a tournament at
``--concurrency 1`` starts none, and one at ``--concurrency N`` at most ``min(N, cores) - 1``.

Games with a bot that connects on its own are played by the tournament's own referee: that
is where the bot was told to connect.

A worker plays the game it is sent exactly as the tournament's referee would (the same
code writes the same replay file), and sends back the :class:`GameRecord`; the tournament's
runner records it in its store, so the store keeps one writer. When the tournament's process
watches its games (a replay tap is set: ``--web``), a worker relays what its replay writer
tells its tap, in batches every :data:`RELAY_S`, and the tournament's process hands it to its
own tap as if the game were played there: every game in progress is live on the pages. Workers are started with
``spawn``, never ``fork``: a process with gRPC's threads must not fork. A worker ignores
SIGINT (the tournament decides what Ctrl-C means and cancels the games), and ends when told
to or when its pipe to the tournament closes; its bots end with it (parent-death signal).
A worker that dies fails its games in progress: the tournament stops, and ``resume``
plays them again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import os
import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from craits import grpc_io

from server.logging import configure_logging, get_logger
from server.spec import GameRecord, GameSpec
from server.storage.replay.relay import RELAY_S, Relay, Replayer
from server.storage.replay.writer import REPLAY_TAP
from server.transport.cores import one_core
from server.transport.pool import RestartPolicy
from server.transport.service import Arena, ArenaClosed, ArenaError, ArenaOptions

log = get_logger()

READY_TIMEOUT_S = 60.0
"""How long a new worker may take to start its referee."""
CLOSE_TIMEOUT_S = 15.0


class WorkerError(Exception):
    """A worker process failed (died, or did not start)."""


@dataclass(frozen=True, slots=True)
class WorkerSetup:
    """What a worker needs to play games as the tournament's referee would."""

    options: ArenaOptions
    restart: RestartPolicy
    log_dir: str | None = None
    log_name: str = "referee"
    cores: tuple[int, ...] = ()
    """The cores the tournament's process may use (its own thread is pinned to one by the time a
    worker starts: see :mod:`server.transport.cores`)."""


def watch_connection(loop: asyncio.AbstractEventLoop, conn: Connection, callback: Any, *args: Any) -> None:
    """``loop.add_reader`` for a ``multiprocessing`` connection, which is read and written with
    blocking calls (a message is one frame, read whole). uvloop's ``add_reader`` (libuv's
    ``uv_poll_init``) makes the descriptor non-blocking: a message larger than the socket's
    buffer (a worker's relay of a game in progress) then fails half read with EAGAIN, which
    looked like the worker had died and stopped the tournament. Made blocking again here."""
    loop.add_reader(conn.fileno(), callback, *args)
    os.set_blocking(conn.fileno(), True)


def default_workers() -> int:
    """Referee processes a tournament may use: one per core it may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------- the worker's side


def worker_main(conn: Connection, setup: WorkerSetup, number: int) -> None:
    """A worker process: serve games from ``conn`` until told to close (or the pipe closes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_logging(setup.log_dir, name=setup.log_name, console=False)
    grpc_io.run(_serve(conn, setup, number))


async def _serve(conn: Connection, setup: WorkerSetup, number: int) -> None:
    from server.logging import bound

    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[Any] = asyncio.Queue()

    def readable() -> None:
        try:
            while conn.poll():
                inbox.put_nowait(conn.recv())
        except (EOFError, OSError):
            loop.remove_reader(conn.fileno())
            inbox.put_nowait(("close",))

    with bound(worker=number), one_core(number, setup.cores):
        arena = await Arena.start("127.0.0.1:0", setup.options)
        arena.keep_bots(setup.restart)
        watch_connection(loop, conn, readable)
        games: dict[int, asyncio.Task[None]] = {}

        def send(message: tuple[Any, ...]) -> None:
            with contextlib.suppress(OSError, ValueError):
                conn.send(message)

        relay = Relay(lambda: loop.call_later(RELAY_S, flush))  # (its games are played on this loop)

        def flush() -> None:
            """Send what is gathered now (also before a game's record, so its end arrives first)."""
            items = relay.take()
            if items:
                try:
                    send(("live", items))
                except Exception:  # (say, a record that cannot be pickled): the pages miss it, the game goes on
                    log.exception("live_relay_not_sent", records=len(items))

        async def play(job: int, spec: GameSpec, live: bool) -> None:
            if live:  # (this task's context only: the other games keep theirs)
                REPLAY_TAP.set(relay.tap)
            try:
                try:
                    record = await arena.run_game(spec)
                finally:
                    flush()
            except asyncio.CancelledError:
                send(("cancelled", job))
                raise
            except ArenaClosed as err:
                send(("error", job, "closed", str(err)))
            except ArenaError as err:
                send(("error", job, "arena", str(err)))
            except Exception as err:  # a bug of ours: the tournament stops and says so
                log.exception("worker_game_failed", game=spec.game_id)
                send(("error", job, "internal", f"{type(err).__name__}: {err}"))
            else:
                try:
                    with contextlib.suppress(OSError, ValueError):  # the tournament is gone: nobody to tell
                        conn.send(("done", job, record))
                except Exception as err:  # a record that cannot be pickled: a bug of ours, said
                    log.exception("worker_record_not_sent", game=spec.game_id)
                    send(("error", job, "internal", f"the record could not be sent: {type(err).__name__}: {err}"))
            finally:
                games.pop(job, None)

        log.info("referee_worker_started", pid=os.getpid(), address=arena.target)
        send(("ready", os.getpid()))
        try:
            while True:
                message = await inbox.get()
                kind = message[0]
                if kind == "game":
                    live = len(message) > 3 and bool(message[3])
                    games[message[1]] = asyncio.create_task(play(message[1], message[2], live))
                elif kind == "cancel":
                    task = games.get(message[1])
                    if task is not None:
                        task.cancel()
                    else:
                        send(("cancelled", message[1]))
                else:  # "close"
                    break
        finally:
            for task in list(games.values()):
                task.cancel()
            await asyncio.gather(*games.values(), return_exceptions=True)
            with contextlib.suppress(Exception):
                loop.remove_reader(conn.fileno())
            await arena.shutdown(grace_s=0)
            send(("closed",))
            log.info("referee_worker_stopped", pid=os.getpid())


# --------------------------------------------------------------------------- the tournament's side


class _Worker:
    """The tournament's handle on one worker process."""

    def __init__(self, number: int, process: Any, conn: Connection) -> None:
        self.number = number
        self.process = process
        self.conn = conn
        self.pending: dict[int, asyncio.Future[tuple[Any, ...]]] = {}
        self.ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.dead = False
        self.bots: set[str] = set()
        """The launched bots it has played (it keeps their processes)."""
        self.relayed = Replayer(worker=number)
        """Its games in progress that the tournament watches, handed to :attr:`tap`."""
        self.tap: Any = None
        """The tournament's replay tap when it watches this worker's games."""

    @property
    def load(self) -> int:
        return len(self.pending)


class RefereeWorkers:
    """Plays games on the tournament's referee and on worker processes; see the module docstring.

    ``run_game`` has the runner's contract (``tournaments.runner``)."""

    def __init__(self, local: Arena, setup: WorkerSetup, max_workers: int | None = None) -> None:
        self.local = local
        self.setup = setup
        self.max_workers = default_workers() if max_workers is None else max(1, max_workers)
        self.workers: list[_Worker] = []
        self._local_load = 0
        self._local_bots: set[str] = set()
        self._jobs = itertools.count(1)
        self._starting: asyncio.Task[_Worker] | None = None
        self._context = multiprocessing.get_context("spawn")

    async def __call__(self, spec: GameSpec) -> GameRecord:
        return await self.run_game(spec)

    def online_bots(self) -> set[str]:
        """The bots connected on their own to the tournament's referee now (where they connect)."""
        return self.local.connected_bots()

    async def run_game(self, spec: GameSpec) -> GameRecord:
        worker = await self._choose(spec)
        if worker is None:
            self._local_load += 1
            try:
                return await self.local.run_game(spec)
            finally:
                self._local_load -= 1
        return await self._remote_game(worker, spec)

    async def _choose(self, spec: GameSpec) -> _Worker | None:
        """The worker for ``spec`` (None: the tournament's own referee)."""
        if any(not bot.command and not bot.builtin for bot in spec.seats):
            return None  # a bot that connects on its own connects here
        live = [w for w in self.workers if not w.dead]
        loads = [self._local_load, *(w.load for w in live)]
        least = min(loads)
        bots = {bot.name for bot in spec.seats if bot.command}
        if least > 0 and 1 + len(live) < self.max_workers:
            chosen: _Worker | None = await self._start_worker()
        else:  # among the least busy, the one that already runs most of these bots
            slots: list[tuple[_Worker | None, set[str]]] = [(None, self._local_bots), *((w, w.bots) for w in live)]
            chosen = max(
                (slot for slot, load in zip(slots, loads, strict=True) if load == least),
                key=lambda slot: len(bots & slot[1]),
            )[0]
        (self._local_bots if chosen is None else chosen.bots).update(bots)
        return chosen

    async def _start_worker(self) -> _Worker:
        number = len(self.workers) + 1
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=worker_main, args=(child, self.setup, number), name=f"craits-referee-{number}", daemon=True
        )
        process.start()
        child.close()
        worker = _Worker(number, process, parent)
        self.workers.append(worker)
        watch_connection(asyncio.get_running_loop(), parent, self._readable, worker)
        try:
            pid = await asyncio.wait_for(asyncio.shield(worker.ready), READY_TIMEOUT_S)
        except TimeoutError:
            self._lost(worker, f"did not start within {READY_TIMEOUT_S:g} s")
            raise WorkerError(f"referee worker {number} did not start within {READY_TIMEOUT_S:g} s") from None
        log.info("referee_worker_ready", worker=number, pid=pid)
        return worker

    async def _remote_game(self, worker: _Worker, spec: GameSpec) -> GameRecord:
        job = next(self._jobs)
        reply: asyncio.Future[tuple[Any, ...]] = asyncio.get_running_loop().create_future()
        worker.pending[job] = reply
        tap = REPLAY_TAP.get()
        if tap is not None:
            worker.tap = tap
        try:
            self._send(worker, ("game", job, spec, tap is not None))
            message = await asyncio.shield(reply)
        except asyncio.CancelledError:
            # Cancelled by the tournament: the worker cancels the game (and stops its bots)
            # before this returns, as the runner's contract asks.
            if not reply.done() and not worker.dead:
                self._send(worker, ("cancel", job))
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, WorkerError):
                    await asyncio.wait_for(asyncio.shield(reply), CLOSE_TIMEOUT_S)
            raise
        finally:
            worker.pending.pop(job, None)
        kind = message[0]
        if kind == "done":
            record: GameRecord = message[2]
            return record
        if kind == "error":
            error = ArenaClosed if message[2] == "closed" else ArenaError if message[2] == "arena" else WorkerError
            raise error(message[3])
        if kind == "cancelled":
            raise WorkerError(f"game {spec.game_id} was cancelled by referee worker {worker.number}")
        raise WorkerError(f"referee worker {worker.number} answered {kind!r}")

    def _send(self, worker: _Worker, message: tuple[Any, ...]) -> None:
        try:
            worker.conn.send(message)
        except (OSError, ValueError) as err:
            self._lost(worker, f"cannot be reached: {err}")
            raise WorkerError(f"referee worker {worker.number} cannot be reached: {err}") from None

    def _readable(self, worker: _Worker) -> None:
        try:
            while worker.conn.poll():
                message = worker.conn.recv()
                kind = message[0]
                if kind == "ready":
                    if not worker.ready.done():
                        worker.ready.set_result(message[1])
                elif kind == "closed":
                    if not worker.closed.done():
                        worker.closed.set_result(None)
                elif kind == "live":
                    worker.relayed.apply(message[1], worker.tap)
                else:
                    reply = worker.pending.get(message[1])
                    if reply is not None and not reply.done():
                        reply.set_result(message)
        except (EOFError, OSError):
            code = worker.process.exitcode
            self._lost(worker, "exited" if code is None else f"exited with code {code}")
        except Exception as err:  # an unreadable message: the worker cannot be trusted any more
            self._lost(worker, f"sent a message that cannot be read ({type(err).__name__}: {err})")
            worker.process.kill()

    def _lost(self, worker: _Worker, why: str) -> None:
        if worker.dead:
            return
        worker.relayed.abort_all()  # (what the pages showed of them ends here)
        worker.dead = True
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(worker.conn.fileno())
        failure = WorkerError(f"referee worker {worker.number} (pid {worker.process.pid}) {why}")
        if worker.pending or not worker.closed.done():
            log.warning("referee_worker_lost", worker=worker.number, pid=worker.process.pid, why=why,
                        games=len(worker.pending))
        for reply in worker.pending.values():
            if not reply.done():
                reply.set_exception(failure)
        for future in (worker.ready, worker.closed):
            if not future.done():
                future.set_exception(failure)
                future.exception()  # retrieved: nobody may be waiting

    async def close(self) -> None:
        """Tell every worker to stop its games and bots, and wait for it to exit."""
        for worker in self.workers:
            if not worker.dead:
                with contextlib.suppress(WorkerError):
                    self._send(worker, ("close",))
        for worker in self.workers:
            if not worker.dead:
                with contextlib.suppress(asyncio.TimeoutError, WorkerError):
                    await asyncio.wait_for(asyncio.shield(worker.closed), CLOSE_TIMEOUT_S)
            await join_process(worker.process)
            self._lost(worker, "closed")
            with contextlib.suppress(OSError):
                worker.conn.close()


async def join_process(process: Any, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
    """Wait for a child process (a ``multiprocessing`` one) to exit, without holding up the
    event loop; kill it when it does not within ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while process.is_alive() and loop.time() < deadline:
        await asyncio.sleep(0.05)
    if process.is_alive():
        process.kill()
        await asyncio.sleep(0.05)
    process.join(0)

