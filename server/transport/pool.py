"""Launched bots kept between games: a small pool of processes per bot.

Starting a Python bot costs a quarter of a second of CPU (an interpreter, grpc, the kit):
more than the bot spends on a whole game. So a tournament keeps each launched bot's
processes up between games, as chess engine tournaments keep their engines running. A
process plays one game after another on its stream (every game message carries its
``game_id``; see docs/protocol.md), under a token of its own that the referee accepts for
as long as the process is in the pool.

A bot has at most as many processes as it has games at once: a game takes an idle process
of its bot (the one used last), or launches one when none is idle. At most ``max_idle``
processes wait idle (every bot together): past that, the one idle longest is stopped. After the game the
process goes back to the pool, unless:

* its game went wrong for it (struck out, disconnected, never connected) or it exited:
  it is stopped, and its next game launches a fresh process;
* the tournament asks for a fresh process every game (``restart = "game"``): then there
  is no pool at all (:class:`RestartPolicy`);
* it has played ``restart_after_games`` games, or its resident memory (``VmRSS`` in
  ``/proc``) is above ``restart_above_mb``: stopped, with the reason in the log.

**A deal met once per process.** With duplicate deals several games play one deal; a process
that has played a deal is never given another game of it (an idle process of the bot that
has not met it is, else a fresh one is launched), so nothing a bot remembers tells it the
cards of a game it plays. Each process has a public instance id, written per seat in the
replays (``seat_reports[].instances``), so anyone can check that from the replays.

An idle process that exits, or whose stream closes, is noticed when its bot's next game
asks for it: it is stopped and replaced by a fresh one, with a log line, so a bot that
dies or goes quiet between games costs no game (not even its own). Only the pool starts
and stops processes; how a process is started is the referee's business (it hands the pool
its one way of starting a bot, through :class:`~server.transport.launcher.LaunchedBot`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from server.logging import get_logger
from server.spec import BotSpec
from server.transport.launcher import LaunchedBot, make_room

if TYPE_CHECKING:
    from server.game.seats import Session

log = get_logger()


DEFAULT_ABOVE_MB = 1024
"""A kept process above this resident memory gets replaced after its game: a bot that leaks
cannot take the machine over a long tournament (one that needs more than this simply gets a
fresh process every game, as without a pool)."""


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """When a launched bot gets a fresh process (a tournament file's ``restart`` keys)."""

    every_game: bool = False
    """``restart = "game"``: a fresh process for every game (no pool)."""
    after_games: int = 0
    """``restart_after_games``: a fresh process after this many games (0: never)."""
    above_mb: int = DEFAULT_ABOVE_MB
    """``restart_above_mb``: a fresh process once the resident memory passes this (0: no ceiling)."""


def rss_mb(pid: int) -> float | None:
    """Resident memory in MiB (``VmRSS`` of /proc) of process ``pid`` and every process under it
    (a sandboxed bot runs below its bwrap), or None when ``pid`` is gone."""
    total_kb = 0
    seen: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        kb = _vm_rss_kb(current)
        if kb is None:
            if current == pid:
                return None
            continue
        total_kb += kb
        todo.extend(_children(current))
    return total_kb / 1024


def _vm_rss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return 0  # a zombie or a kernel thread: no resident set


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                found.extend(int(child) for child in handle.read().split())
        except (OSError, ValueError):
            continue
    return found


def file_part(name: str) -> str:
    """A bot's name as its kept processes' log files are named (server.web.participants finds them so)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:64] or "bot"


class PooledBot:
    """One launched process of a bot, with the token it plays every game under."""

    def __init__(self, key: tuple[object, ...], name: str, token: str, process: LaunchedBot, number: int) -> None:
        self.key = key
        self.name = name
        self.token = token
        self.process = process
        self.number = number
        """The how-many-th process of this bot (1, 2, ...), for the log."""
        self.games = 0
        """Games it has been given."""
        self.busy = False
        self.released = 0
        """When it last went idle (the pool's count of releases)."""
        self.lost = asyncio.Event()
        """Set when its stream ends (the game it plays decides what that means)."""
        self.instance = secrets.token_hex(6)
        """Its public id, in the replays of its games (never its token)."""
        self.deals: set[int] = set()
        """The seeds of the deals it has played: it plays none of them again."""

    @property
    def pid(self) -> int:
        return self.process.pid


SessionOf = Callable[[str], "Session | None"]
"""The open stream of a token, or None (the Arena's view of its tokens)."""
StartBot = Callable[[BotSpec, str, "Path | None"], Awaitable[LaunchedBot]]
"""Starts a bot's process with a token and an output file (the referee's way of starting one:
the launcher, and whatever wraps it); raises LaunchError."""


class BotPool:
    """Per-bot pools of launched processes for one referee; see the module docstring."""

    def __init__(
        self,
        *,
        start: StartBot,
        register: Callable[[str, str], None],
        unregister: Callable[[str], None],
        session_of: SessionOf,
        policy: RestartPolicy | None = None,
        log_dir: Path | None = None,
        stop_grace_s: float = 2.0,
        max_idle: int = 64,
        output_budget: int = 0,
        output_limit: int = 0,
    ) -> None:
        self.policy = policy or RestartPolicy()
        self._start = start
        self._register = register
        self._unregister = unregister
        self._session_of = session_of
        self.log_dir = log_dir
        self.stop_grace_s = stop_grace_s
        self.max_idle = max_idle
        """Idle processes kept at most (every bot): past it the one idle longest is stopped."""
        self._released = 0
        self._idle: dict[tuple[object, ...], list[PooledBot]] = {}
        self._all: set[PooledBot] = set()
        self._numbers: dict[str, int] = {}
        self._stopping: set[asyncio.Task[None]] = set()
        self.launches = 0
        """Processes started so far (every bot)."""
        self.closed = False
        self.output_budget = output_budget
        """Bytes of one bot's logs kept across its launches (0: no budget); each launch reserves
        ``output_limit`` of it (launcher.make_room)."""
        self.output_limit = output_limit
        self._logs: dict[PooledBot, Path] = {}
        self._exits: dict[str, int] = {}
        """Processes of each bot that ended on their own (exited or closed their stream; not stopped by the pool)."""

    @staticmethod
    def key_of(bot: BotSpec) -> tuple[object, ...]:
        return (bot.name, bot.command, bot.cwd)

    def processes(self, bot: BotSpec | None = None) -> list[PooledBot]:
        """The pool's live processes (of ``bot``), idle or busy."""
        key = None if bot is None else self.key_of(bot)
        return [p for p in self._all if key is None or p.key == key]

    async def acquire(self, bot: BotSpec, game_id: str, deal: int | None = None) -> PooledBot:
        """A process of ``bot`` for game ``game_id`` of deal ``deal`` (its seed): an idle one that
        is still connected and has not played that deal, else a new one. Raises LaunchError when
        a new one cannot be started."""
        if self.closed:
            raise RuntimeError("the bot pool is closed")
        key = self.key_of(bot)
        idle = self._idle.get(key, [])
        for pooled in reversed(list(idle)):  # (the one used last first)
            if deal is not None and deal in pooled.deals:
                continue  # (it keeps waiting for a game of another deal)
            idle.remove(pooled)
            why = self._unfit(pooled)
            if why is None:
                pooled.lost.clear()
                pooled.busy = True
                pooled.games += 1
                if deal is not None:
                    pooled.deals.add(deal)
                return pooled
            log.warning("bot_replaced", bot=pooled.name, pid=pooled.pid, why=why, game=game_id,
                        effect="a fresh process plays its next game")
            self._retire(pooled)
        pooled = await self._launch(bot, key, game_id)
        if deal is not None:
            pooled.deals.add(deal)
        return pooled

    def release(self, pooled: PooledBot, *, fit: bool, why: str = "") -> None:
        """Give back a process after its game. ``fit`` False (its game went wrong for it, or the
        game did not end normally): it is stopped, ``why`` says why."""
        pooled.busy = False
        if self.closed:
            self._retire(pooled)
            return
        reason = why if not fit else self._worn(pooled)
        if reason:  # a fault (or a leak) is a warning; a planned restart is news
            fault = not fit or reason.startswith("resident memory")
            (log.warning if fault else log.info)("bot_restarting", bot=pooled.name, pid=pooled.pid,
                                                 games=pooled.games, why=reason)
            self._retire(pooled)
            return
        self._released += 1
        pooled.released = self._released
        self._idle.setdefault(pooled.key, []).append(pooled)
        idle = [p for processes in self._idle.values() for p in processes]
        if len(idle) > self.max_idle:
            oldest = min(idle, key=lambda p: p.released)
            log.info("bot_restarting", bot=oldest.name, pid=oldest.pid, games=oldest.games,
                     why=f"idle longest of more than {self.max_idle} idle processes")
            self._retire(oldest)

    def stream_ended(self, token: str) -> None:
        """The stream of ``token`` ended (the referee's news)."""
        for pooled in self._all:
            if pooled.token == token:
                pooled.lost.set()

    def kill_now(self, pooled: PooledBot) -> None:
        """SIGKILL a process at once (a cancelled game): it leaves the pool."""
        pooled.process.kill_now()
        self._retire(pooled)

    async def close(self) -> None:
        """Stop every process (their streams end with OK first, so they exit on their own)."""
        self.closed = True
        for pooled in list(self._all):
            self._retire(pooled)
        if self._stopping:
            await asyncio.gather(*self._stopping, return_exceptions=True)

    def kill_all(self) -> None:
        self.closed = True
        for pooled in list(self._all):
            pooled.process.kill_now()
            self._retire(pooled)

    # ------------------------------------------------------------------ inside

    def _unfit(self, pooled: PooledBot) -> str | None:
        """Why an idle process cannot play its bot's next game, or None."""
        code = pooled.process.returncode
        if code is not None:
            return f"it exited between games (code {code})"
        session = self._session_of(pooled.token)
        if session is None or session.closed:
            return "its stream closed between games (no Hello since)"
        return None

    def _worn(self, pooled: PooledBot) -> str:
        """Why a process that played well is restarted anyway ('' when it is kept)."""
        policy = self.policy
        if not pooled.process.alive:
            return f"it exited (code {pooled.process.returncode})"
        if policy.after_games and pooled.games >= policy.after_games:
            return f"played {pooled.games} games (restart_after_games = {policy.after_games})"
        if policy.above_mb:
            rss = rss_mb(pooled.pid)
            if rss is not None and rss > policy.above_mb:
                return f"resident memory {rss:.0f} MB is above restart_above_mb = {policy.above_mb}"
        return ""

    async def _launch(self, bot: BotSpec, key: tuple[object, ...], game_id: str) -> PooledBot:
        assert bot.command is not None
        number = self._numbers[bot.name] = self._numbers.get(bot.name, 0) + 1
        token = secrets.token_urlsafe(24)
        out = None
        if self.log_dir is not None:
            out = self.log_dir / f"{file_part(bot.name)}-{number}-{game_id}.log"
        notes = [self._make_room(bot.name)] if out is not None and self.output_budget else []
        if exits := self._exits.get(bot.name):  # (said in its log, which its owner sees with the game)
            notes.append(f"[craits: this bot's process ended after its game (it exited or closed its stream) {exits} "
                         f"time(s) in {number - 1} launch(es): each time the next game starts it afresh (slower, and "
                         "its output counts against its budget again); a bot may play game after game in one process]")
            log.warning("bot_exits_after_its_games", bot=bot.name, exits=exits, launches=number,
                        effect="a fresh process every game")
        self._register(token, bot.name)
        try:
            process = await self._start(bot, token, out)
        except BaseException:
            self._unregister(token)
            raise
        for note in filter(None, notes):
            process.note(note)
        self.launches += 1
        pooled = PooledBot(key, bot.name, token, process, number)
        pooled.busy = True
        pooled.games = 1
        self._all.add(pooled)
        if out is not None:
            self._logs[pooled] = out
        return pooled

    def _make_room(self, name: str) -> str:
        """Room in ``name``'s output budget for a new launch: its oldest logs (of earlier runs
        too), not those of its processes still running, go first."""
        assert self.log_dir is not None
        mine = re.compile(rf"{re.escape(file_part(name))}-\d+-.*\.log")
        live = set(self._logs.values())
        with contextlib.suppress(OSError):
            logs = [p for p in self.log_dir.iterdir() if mine.fullmatch(p.name) and p not in live]
            return make_room(sorted(logs, key=_mtime), self.output_budget, self.output_limit)
        return ""

    def _retire(self, pooled: PooledBot) -> None:
        """Take a process out of the pool and stop it in the background."""
        if pooled not in self._all:
            return
        self._all.discard(pooled)
        self._logs.pop(pooled, None)
        if (pooled.process.returncode is not None or pooled.lost.is_set()) and not self.closed:  # (it left on its own)
            self._exits[pooled.name] = self._exits.get(pooled.name, 0) + 1
        idle = self._idle.get(pooled.key)
        if idle is not None and pooled in idle:
            idle.remove(pooled)
        self._unregister(pooled.token)  # its stream ends with OK: the bot exits on its own
        task = asyncio.ensure_future(self._stop(pooled))
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def _stop(self, pooled: PooledBot) -> None:
        with contextlib.suppress(Exception):
            await pooled.process.stop(self.stop_grace_s)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
