"""The web server in a process of its own, beside the referee's (``--web``).

Serving 200 spectators is mostly aiohttp answering requests (each game brings one per
spectator) and the tick's writes: on the referee's event loop that work took ~10% of its
decisions/s. So :class:`WebProcess` runs :class:`~server.web.app.WebServer` and its
:class:`~server.web.live.LiveHub` in a child process, and the referee's process only gathers
its games' tap records (:class:`~server.storage.replay.relay.Relay`) and sends them to the
child in one message every :data:`~server.storage.replay.relay.RELAY_S`; the child hands them
to its hub in order (:class:`~server.storage.replay.relay.Replayer`), and its board reads the
store itself, as it always did (:class:`~server.web.board.BoardPlace`). A spectator is
therefore at most the relay interval and one tick (``tick_s``) behind the game.

The games never wait for the web process:

* the batches are sent by a thread of the referee's process, so a child that reads slowly
  blocks that thread's write, never the event loop; meanwhile the records wait in the relay,
  up to :data:`MAX_BACKLOG`; past it a game that has more is relayed as aborted and no more
  of it is sent (its spectators see it end: better than a referee whose memory grows, or
  whose games slow down, with the spectators' appetite);
* a web process that dies is reported once (a warning, and a line on stderr), and the games
  go on with nothing relayed.

The child runs at a lower CPU priority (:data:`WEB_NICE`): when the cores are busy the kernel
serves the referee and the bots first, whose clocks count, and the spectators' pages a
moment later, which nobody can tell. Not lower still (nice 19, ``SCHED_IDLE``): on a machine
the games keep busy the pages would hardly be served and would fall behind until games are
cut off, and on ``bench/web.py`` neither made the referee faster. It is started with ``spawn`` (a process with gRPC's
threads must not fork), ignores SIGINT (Ctrl-C reaches the whole process group: the referee
decides what it means) and ends when told to or when its pipe to the referee closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from server.errors import UserError
from server.logging import configure_logging, get_logger
from server.storage.replay.relay import RELAY_S, Relay, Replayer
from server.storage.replay.writer import REPLAY_TAP
from server.transport.workers import join_process, watch_connection
from server.web.app import WebOptions, WebServer
from server.web.board import Board, BoardPlace
from server.web.live import LiveHub

log = get_logger()

WEB_NICE = 10
"""How much lower the web process's CPU priority is than the referee's (``os.nice``)."""
MAX_BACKLOG = 50_000
"""Records (about one per decision) that may wait for a slow web process before games are cut off."""
READY_TIMEOUT_S = 60.0
"""How long the web process may take to start (its board reads the store once first)."""
CLOSE_TIMEOUT_S = 10.0
MESSAGES_PER_READ = 16
"""Batches the web process applies before its event loop runs anything else (its tick)."""


@dataclass(frozen=True, slots=True)
class WebSetup:
    """What the web process needs: plain values, sent to a new interpreter."""

    options: WebOptions
    board: BoardPlace | None = None
    title: str = "Craits Arena"
    log_dir: str | None = None
    nice: int = WEB_NICE


# --------------------------------------------------------------------------- the web process


def web_main(conn: Connection, setup: WebSetup) -> None:
    """The web process: serve the pages, apply the relayed records, until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(setup.nice)
    configure_logging(setup.log_dir, name="web", console=False)
    try:
        asyncio.run(_serve(conn, setup))
    except Exception:  # a bug of ours: in the log, not a traceback over the tournament's output
        log.exception("web_process_failed")
        sys.exit(1)


async def _serve(conn: Connection, setup: WebSetup) -> None:
    loop = asyncio.get_running_loop()

    def send(message: tuple[Any, ...]) -> None:
        with contextlib.suppress(OSError, ValueError):  # the referee is gone: nobody to tell
            conn.send(message)

    hub = LiveHub()
    try:
        board = None if setup.board is None else Board(setup.board.source())
        server = WebServer(hub, board, setup.options, title=setup.title)
        url = await server.start()
    except UserError as err:
        send(("error", str(err)))
        return
    except Exception as err:
        log.exception("web_process_start_failed")
        send(("error", f"the web server could not start: {type(err).__name__}: {err}"))
        return
    games = Replayer(process="web")
    stopped = loop.create_future()

    def readable() -> None:
        try:
            for _ in range(MESSAGES_PER_READ):
                if not conn.poll():
                    return
                message = conn.recv()
                if message[0] != "live":  # "stop"
                    break
                games.apply(message[1], hub.tap)
            else:
                return  # (more is waiting: the loop calls again after its other work)
        except (EOFError, OSError):  # the referee's process is gone
            pass
        loop.remove_reader(conn.fileno())
        if not stopped.done():
            stopped.set_result(None)

    watch_connection(loop, conn, readable)
    log.info("web_process_started", pid=os.getpid(), url=url)
    send(("ready", url, os.getpid()))
    try:
        await stopped
    finally:
        games.abort_all()
        await server.stop()
        send(("closed", {"most_spectators": server.most_spectators, "dropped": server.dropped}))
        log.info("web_process_stopped", pid=os.getpid())


# --------------------------------------------------------------------------- the referee's side


class WebProcess:
    """The referee's handle on its web process (see the module docstring): :meth:`start`,
    then :meth:`installed` around the games to show, then :meth:`close`."""

    def __init__(self, setup: WebSetup) -> None:
        self.setup = setup
        self.url = ""
        self.pid = 0
        self.stats: dict[str, Any] = {}
        """What the web process said as it stopped (``most_spectators``, ``dropped``)."""
        self.lost = ""
        """Why the web process went away before it was told to (empty while it serves)."""
        self._wake = threading.Event()
        self.relay = Relay(self._wake.set, max_backlog=MAX_BACKLOG)
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._conn: Connection | None = None
        self._thread: threading.Thread | None = None
        self._ready: asyncio.Future[tuple[Any, ...]] | None = None
        self._stopping = False
        self._report: asyncio.Task[None] | None = None

    async def start(self) -> str:
        """Start the web process and wait until it listens; its URL. A busy or bad address
        (or any other reason it cannot serve) is a :class:`UserError`, in one line."""
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        conn, child = self._context.Pipe(duplex=True)
        self._process = self._context.Process(target=web_main, args=(child, self.setup), name="craits-web",
                                              daemon=True)
        self._process.start()
        child.close()
        self._conn = conn
        watch_connection(loop, conn, self._readable)
        try:
            message = await asyncio.wait_for(asyncio.shield(self._ready), READY_TIMEOUT_S)
        except TimeoutError:
            message = ("error", f"the web server did not start within {READY_TIMEOUT_S:g} s")
        if message[0] != "ready":
            self._stopping = True
            await self._end()
            raise UserError(message[1])
        _, self.url, self.pid = message
        self._thread = threading.Thread(target=self._send_batches, name="craits-web-relay", daemon=True)
        self._thread.start()
        log.info("web_process_ready", pid=self.pid, url=self.url)
        return self.url

    @contextlib.contextmanager
    def installed(self) -> Iterator[WebProcess]:
        """Games whose replay writer is made inside this block (this task, the tasks it starts,
        the threads ``asyncio.to_thread`` runs for it) are relayed to the web process."""
        token = REPLAY_TAP.set(self.relay.tap)
        try:
            yield self
        finally:
            REPLAY_TAP.reset(token)

    async def close(self) -> None:
        """Send what is left and tell the web process to stop; kill it if it does not within
        :data:`CLOSE_TIMEOUT_S`."""
        self._stopping = True
        self._wake.set()
        await self._end()

    # ---- the sending thread

    def _send_batches(self) -> None:
        """Every :data:`RELAY_S` while records come: send what the relay gathered, in one
        message (a blocking write, on this thread: see the module docstring)."""
        assert self._conn is not None
        while True:
            self._wake.wait()
            if not self._stopping:
                time.sleep(RELAY_S)  # (gather an interval's worth)
            self._wake.clear()
            items = self.relay.take()
            try:
                if items and not self.relay.closed:
                    self._conn.send(("live", items))
                if self._stopping:
                    self._conn.send(("stop",))
            except (OSError, ValueError):  # the web process is gone: the loop's reader says so
                self.relay.closed = True
                return
            except Exception:  # (a record that cannot be pickled): the pages miss it, the games go on
                log.exception("live_relay_not_sent", records=len(items))
                continue
            if self._stopping:
                return

    # ---- the loop's side

    def _readable(self) -> None:
        """What the web process says: ready (or why not), its figures as it stops, or EOF."""
        assert self._conn is not None and self._ready is not None
        try:
            while self._conn.poll():
                message = self._conn.recv()
                if message[0] in ("ready", "error"):
                    if not self._ready.done():
                        self._ready.set_result(message)
                elif message[0] == "closed":
                    self.stats = message[1]
        except (EOFError, OSError):
            asyncio.get_running_loop().remove_reader(self._conn.fileno())
            self.relay.closed = True
            if not self._ready.done():
                self._ready.set_result(("error", "the web server exited before it was ready (see its log, web.jsonl)"))
            elif not self._stopping:
                self._lose("")
        except Exception as err:  # an unreadable message: the web process cannot be trusted any more
            self._process.kill()
            why = f"sent a message that cannot be read ({type(err).__name__}: {err})"
            if not self._ready.done():
                self._ready.set_result(("error", f"the web server {why}"))
            else:
                self._lose(why)

    def _lose(self, why: str) -> None:
        """The web process went away mid-run: nothing more is relayed, and it is said once
        (with its exit status, once it is known: the report does not hold up the loop)."""
        if self.lost:
            return
        self.lost = why or "exited"
        self.relay.closed = True
        assert self._conn is not None
        asyncio.get_running_loop().remove_reader(self._conn.fileno())
        self._report = asyncio.get_running_loop().create_task(self._report_loss(why))

    async def _report_loss(self, why: str) -> None:
        for _ in range(20):
            if self._process.exitcode is not None:
                break
            await asyncio.sleep(0.05)
        code = self._process.exitcode
        if not why:
            why = ("exited" if code is None else f"was killed (signal {-code})" if code < 0
                   else f"exited with code {code}")
        self.lost = why
        log.warning("web_process_lost", pid=self.pid, why=why)
        print(f"web: the web server (pid {self.pid}) {why}; the games go on without it", file=sys.stderr, flush=True)

    async def _end(self) -> None:
        """Wait for the web process to exit (killed past the timeout), then for the sending thread."""
        if self._process is not None:
            await join_process(self._process, CLOSE_TIMEOUT_S)
        thread = self._thread
        if thread is not None:  # (a write it is blocked in fails at once now that the process is gone)
            self._wake.set()
            for _ in range(500):
                if not thread.is_alive():
                    break
                await asyncio.sleep(0.01)
        if self._report is not None:
            await self._report
        if self._conn is not None:
            if not self.lost:
                self._readable()  # (its last words, if the loop has not read them yet)
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._conn.fileno())
            with contextlib.suppress(OSError):
                self._conn.close()
            self._conn = None
