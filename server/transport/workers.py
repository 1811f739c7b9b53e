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
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from server.logging import configure_logging, get_logger
from server.spec import GameRecord, GameSpec
from server.storage.replay.writer import REPLAY_TAP
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


def default_workers() -> int:
    """Referee processes a tournament may use: one per core it may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------- live games

RELAY_S = 0.05
"""How long a worker gathers its games' tap records before sending them in one message."""


class _RelayOut:
    """The worker's side of the relay: its games' tap records, sent to the tournament in batches."""

    def __init__(self, send: Any) -> None:
        self.send = send
        self.items: list[tuple[str, str, Any]] = []
        self._timer: asyncio.TimerHandle | None = None

    def tap(self, writer: Any) -> _RelayTap:
        """A replay writer's tap (``REPLAY_TAP``): says the game started, returns its relay."""
        relayed = _RelayTap(self, writer)
        self.add(("start", relayed.game_id, {"path": str(writer.path), "header": writer.header,
                                             "start_events": list(writer.start_events)}))
        return relayed

    def add(self, item: tuple[str, str, Any]) -> None:
        self.items.append(item)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(RELAY_S, self.flush)

    def flush(self) -> None:
        """Send what is gathered now (before a game's record, so its end arrives first)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.items:
            items, self.items = self.items, []
            try:
                self.send(("live", items))
            except Exception:  # (say, a record that cannot be pickled): the pages miss it, the game goes on
                log.exception("live_relay_not_sent", records=len(items))


class _RelayTap:
    """One game's tap in a worker: what the tournament's tap needs, in picklable pieces."""

    def __init__(self, out: _RelayOut, writer: Any) -> None:
        self.out = out
        self.game_id = str(writer.game_id or writer.path.stem)
        self.state = writer.state
        self.hands_seen = 0

    def decision(self, fields: tuple[Any, ...], raw_events: list[Any]) -> None:
        results = self.state.hand_results
        ended = tuple(results[self.hands_seen:])
        self.hands_seen = len(results)
        self.out.add(("decision", self.game_id, (fields, list(raw_events), ended)))

    def finish(self, record: Any) -> None:
        self.out.add(("finish", self.game_id, record))

    def abort(self) -> None:
        self.out.add(("abort", self.game_id, None))


class _RelayedWriter:
    """What a tap reads of a replay writer, for a game a worker plays: the tournament's tap is
    handed this, then the worker's records in order."""

    def __init__(self, game_id: str, path: str, header: dict[str, Any], start_events: list[Any]) -> None:
        self.game_id = game_id
        self.path = Path(path)
        self.header = header
        self.start_events = start_events
        self.state = SimpleNamespace(hand_results=[])
        """Grows by the hands a relayed decision ended, before the tap is told of it."""


# --------------------------------------------------------------------------- the worker's side


def worker_main(conn: Connection, setup: WorkerSetup, number: int) -> None:
    """A worker process: serve games from ``conn`` until told to close (or the pipe closes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_logging(setup.log_dir, name=setup.log_name, console=False)
    asyncio.run(_serve(conn, setup, number))


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

    with bound(worker=number):
        arena = await Arena.start("127.0.0.1:0", setup.options)
        arena.keep_bots(setup.restart)
        loop.add_reader(conn.fileno(), readable)
        games: dict[int, asyncio.Task[None]] = {}

        def send(message: tuple[Any, ...]) -> None:
            with contextlib.suppress(OSError, ValueError):
                conn.send(message)

        relay = _RelayOut(send)

        async def play(job: int, spec: GameSpec, live: bool) -> None:
            if live:  # (this task's context only: the other games keep theirs)
                REPLAY_TAP.set(relay.tap)
            try:
                try:
                    record = await arena.run_game(spec)
                finally:
                    relay.flush()
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
        self.live: dict[str, tuple[_RelayedWriter, Any]] = {}
        """Its games in progress that the tournament watches: their stand-in writer and tap."""
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
        asyncio.get_running_loop().add_reader(parent.fileno(), self._readable, worker)
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
                    self._relayed(worker, message[1])
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

    def _relayed(self, worker: _Worker, items: list[tuple[str, str, Any]]) -> None:
        """Hand a worker's tap records to the tournament's tap, as its own games' writers do."""
        for kind, game_id, payload in items:
            try:
                if kind == "start":
                    if worker.tap is not None:
                        writer = _RelayedWriter(game_id, **payload)
                        worker.live[game_id] = (writer, worker.tap(writer))
                    continue
                entry = worker.live.get(game_id)
                if entry is None:
                    continue
                writer, tap = entry
                if kind == "decision":
                    fields, raw_events, ended = payload
                    writer.state.hand_results.extend(ended)
                    tap.decision(fields, raw_events)
                else:
                    del worker.live[game_id]
                    if kind == "finish":
                        tap.finish(payload)
                    else:
                        tap.abort()
            except Exception:  # a watcher's failure never stops a game: this game is not shown further
                log.exception("live_relay_failed", worker=worker.number, game=game_id)
                worker.live.pop(game_id, None)

    def _lost(self, worker: _Worker, why: str) -> None:
        if worker.dead:
            return
        for game_id in list(worker.live):  # (what the pages showed of them ends here)
            self._relayed(worker, [("abort", game_id, None)])
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
            await _join(worker.process)
            self._lost(worker, "closed")
            with contextlib.suppress(OSError):
                worker.conn.close()


async def _join(process: Any, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
    """Wait for a worker process to exit; kill it when it does not."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while process.is_alive() and loop.time() < deadline:
        await asyncio.sleep(0.05)
    if process.is_alive():
        process.kill()
        await asyncio.sleep(0.05)
    process.join(0)

