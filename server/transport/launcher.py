"""Launching bot processes, and making sure none outlives its game.

A launched bot gets the referee's address and its own token in the environment
(``CRAITS_SERVER=host:port``, ``CRAITS_TOKEN``, ``CRAITS_BOT_NAME``) and connects
like any remote bot. Each bot runs in its own session (process group), so
:meth:`LaunchedBot.stop` can end the bot *and* anything it started: SIGTERM to
the group, a short wait, then SIGKILL; a process the bot started in a session of its
own is found by the launch's mark in its environment (:data:`LAUNCH_MARK`).

Given a :class:`~server.transport.sandbox.Sandbox`, the bot runs in it instead
(:mod:`server.transport.sandbox`): it connects through the referee's Unix socket, gets an
environment of its own, and bwrap's ``--die-with-parent`` and PID namespace replace both the
parent-death wrapper and the hunt for strays.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from craits import grpc_io

from server.logging import get_logger
from server.transport.commands import CPP_KIT, JAVA_KIT, JS_KIT, JS_KIT_BOT, KITS_BUILD, kit_command
from server.transport.sandbox import Jail, Limits, Sandbox, bot_folder, unreadable

log = get_logger()


@functools.cache
def _setpriv() -> str | None:
    """util-linux's ``setpriv``, if it can set the parent-death signal (Linux only).

    Bots start as ``setpriv --pdeathsig TERM -- COMMAND``: if the referee dies, even by
    SIGKILL, the kernel sends the bot SIGTERM, so no bot outlives a killed tournament.

    Not a ``preexec_fn`` calling prctl: that forces a plain fork() of a process full of
    gRPC threads, and gRPC's fork handlers then sometimes abort the child before its exec
    (seen as bots dying with SIGABRT under load). Without ``preexec_fn`` the child is
    spawned with vfork and runs no fork handlers. Where setpriv is missing, bots start
    unwrapped and a killed referee may leave them running. Looked up once, on first use.

    One window stays open: setpriv sets the signal just before it execs the bot, so a
    referee killed in the millisecond after a launch can leave that bot behind; the bundled
    kits then exit on their own once the referee has been gone for their reconnect window.
    """
    if not sys.platform.startswith("linux"):
        return None
    path = shutil.which("setpriv")
    usage = ""
    if path is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            usage = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=5).stdout
    if path is None or "--pdeathsig" not in usage:
        log.warning("no_parent_death_signal", why="setpriv with --pdeathsig (util-linux) not found",
                    effect="a referee killed with SIGKILL may leave its bots running")
        return None
    return path



def _program(command: Sequence[str], cwd: str | os.PathLike[str] | None, path: str | None) -> str:
    """The executable ``command`` runs, checked here so that a wrapped command still fails
    at launch with a clear message (rather than with setpriv's exit code later)."""
    program = command[0]
    if os.sep in program:
        full = program if os.path.isabs(program) or cwd is None else os.path.join(cwd, program)
        if not os.path.exists(full):
            raise LaunchError(f"{program} does not exist")
        if os.path.isdir(full) or not os.access(full, os.X_OK):
            raise LaunchError(f"{program} is not executable")
        return full
    found = shutil.which(program, path=path)
    if found is None:
        raise LaunchError(f"command not found: {program}")
    return found


_SCRIPT_RUNNERS = {"node": (".js", ".mjs", ".cjs")}
"""Programs whose first non-option argument is a script file (python* is handled apart)."""


def command_problem(command: Sequence[str], cwd: str | os.PathLike[str] | None = None) -> str | None:
    """Why ``command`` cannot run here ("command not found: X", "no such file bot.py", ...),
    or None: its program is missing or not executable, or (for python and node) the script
    it is given does not exist.

    Checked before a game or a tournament starts, so that a typo is reported at once
    instead of as a bot that never connects, game after game."""
    if command[:1] == [JS_KIT] and not (JS_KIT_BOT.parent / "node_modules").is_dir():
        return f"{JS_KIT}: the JavaScript kit is not set up on this machine (make setup, or npm ci in {JS_KIT_BOT.parent})"
    if command[:1] in ([JAVA_KIT], [CPP_KIT]) and not (KITS_BUILD / ("java" if command[0] == JAVA_KIT else "cpp")).is_dir():
        return f"{command[0]}: the kit is not built on this machine (make kits)"
    command = kit_command(command)
    try:
        program = _program(command, cwd, os.environ.get("PATH"))
    except LaunchError as err:
        return str(err)
    name = os.path.basename(program)
    suffixes = (".py",) if name.startswith("python") else _SCRIPT_RUNNERS.get(name)
    script = next((arg for arg in command[1:] if not arg.startswith("-")), None)
    if suffixes is None or script is None or not script.endswith(suffixes):
        return None
    if "-m" in command[1:] or "-c" in command[1:] or "-e" in command[1:]:
        return None  # a module or inline code, not a script file
    full = script if os.path.isabs(script) or cwd is None else os.path.join(cwd, script)
    if not os.path.isfile(full):
        where = f" (in {cwd})" if cwd is not None and not os.path.isabs(script) else ""
        return f"no such file {script}{where}"
    return None


class LaunchError(Exception):
    """The command could not be started at all (no such file, not executable)."""


KIT_TLS_VARIABLES = ("CRAITS_TLS", "CRAITS_TLS_CA")
"""What tells the kits to connect over TLS: a launched bot never inherits them from the referee's
environment (an organizer's shell set up to test a bot against a remote referee, say)."""


def bot_env(server: str, token: str, name: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a launched bot: ours, plus where to connect and who it is."""
    env = dict(os.environ)
    for kit_tls in KIT_TLS_VARIABLES:  # (it connects through the referee's Unix socket or loopback, in plain text)
        env.pop(kit_tls, None)
    if grpc_io.chosen:  # this process's choice of gRPC's I/O, not the user's: a bot makes its own
        env.pop("GRPC_EXPERIMENTS", None)
    if grpc_io.quieted:
        env.pop("GRPC_VERBOSITY", None)
    env.update(extra or {})
    env["CRAITS_SERVER"] = server
    env["CRAITS_TOKEN"] = token
    env["CRAITS_BOT_NAME"] = name
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


DEFAULT_OUTPUT_LIMIT = Limits().output
"""Bytes of a launched bot's stdout and stderr kept per game; the rest is discarded."""
_CHUNK = 64 * 1024
_DISCARD_PAUSE_S = 0.1
"""Past its limit a bot's output is read at most one chunk per pause: it costs the referee
nothing, and a bot that keeps printing is slowed by its full pipe instead of filling a disk."""


async def _copy_output(stream: asyncio.StreamReader, out: IO[bytes], limit: int, name: str) -> None:
    """Copy a bot's output to its log file, up to ``limit`` bytes, then discard the rest."""
    kept = 0
    try:
        while chunk := await stream.read(_CHUNK):
            if kept >= limit:
                await asyncio.sleep(_DISCARD_PAUSE_S)
                continue
            out.write(chunk[: limit - kept])
            kept += len(chunk)
            if kept >= limit:
                out.write(f"\n[craits: this bot's output passed {limit} bytes; the rest of it is discarded]\n".encode())
                log.warning("bot_output_truncated", bot=name, limit=limit)
            out.flush()
    except (OSError, ValueError) as err:  # the log file's disk is full or it was closed
        log.warning("bot_output_not_written", bot=name, error=str(err))
    finally:
        with contextlib.suppress(OSError):
            out.close()


def make_room(logs: Sequence[Path], budget: int, reserve: int) -> str:
    """Before a bot's new launch writes up to ``reserve`` bytes: remove its oldest ``logs``
    (oldest first) until they and the new one fit in ``budget`` bytes, so a bot that prints
    much and is launched often (one that exits after every game) cannot fill the disk launch
    by launch. Returns the line its new log gets saying what went ("" when nothing did)."""
    held = []
    for path in logs:
        with contextlib.suppress(OSError):
            held.append((path, path.stat().st_size))
    total = sum(size for _, size in held)
    dropped = freed = 0
    for path, size in held:
        if total + reserve <= budget:
            break
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        total -= size
        dropped += 1
        freed += size
    if not dropped:
        return ""
    return (f"[craits: {dropped} older log(s) of this bot removed ({freed / 2**20:.1f} MiB): its output is kept "
            f"up to {budget / 2**20:.0f} MiB over all its launches, the newest first]")


CPU_POLL_S = 0.25
"""How often a sandboxed bot's CPU seconds are looked at (where they are counted per game)."""

LAUNCH_MARK = "CRAITS_LAUNCH"
"""An environment variable set to a fresh random value for each launch: what a process the
bot started carries, so it can be found (and only it: not another referee's bot that
happens to have been given the same token)."""


def _kill_strays(launch: str) -> None:
    """SIGKILL what a bot started outside its process group (a child that called setsid):
    every process whose environment still carries the bot's launch mark. Linux only (/proc);
    a process that cleared its environment escapes this (containers or cgroups would be
    needed for that)."""
    if not launch or not os.path.isdir("/proc"):
        return
    mark = f"{LAUNCH_MARK}={launch}".encode()
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as environ:
                if mark in environ.read().split(b"\0"):
                    os.kill(int(entry.name), signal.SIGKILL)
                    log.warning("bot_stray_killed", pid=int(entry.name), why="left running outside its bot's group")
        except OSError:  # gone meanwhile, or not ours to read
            continue


class Child:
    """A started process as the launcher uses asyncio's: ``pid``, ``returncode`` (set as soon as it
    exits) and ``await wait()``, whatever the event loop.

    Started by ``subprocess.Popen``, which on Linux starts it with vfork() and exec: the event
    loop's own way may be a plain fork() (uvloop's is, libuv's), which in a process full of
    gRPC's threads runs gRPC's fork handlers (see _setpriv). Its exit is seen through a pidfd
    the loop watches (Linux 5.3), elsewhere by a thread that waits for it, as asyncio's own
    child watcher does."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.returncode: int | None = None
        self._loop = asyncio.get_running_loop()
        self._exited: asyncio.Future[int] = self._loop.create_future()
        self._fd = -1
        try:
            self._fd = os.pidfd_open(popen.pid)
            self._loop.add_reader(self._fd, self._reap)
        except (AttributeError, OSError, NotImplementedError):
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            threading.Thread(target=self._wait_in_thread, name=f"wait-{popen.pid}", daemon=True).start()

    def _reap(self) -> None:
        code = self._popen.poll()
        if code is not None:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
            self._set(code)

    def _wait_in_thread(self) -> None:
        code = self._popen.wait()
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._set, code)

    def _set(self, code: int) -> None:
        self.returncode = code
        if not self._exited.done():
            self._exited.set_result(code)

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def kill(self) -> None:
        """SIGKILL the process (not its group), unless it has been seen to exit."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


class LaunchedBot:
    """One bot process in its own process group."""

    def __init__(self, process: Child, command: Sequence[str],
                 output: IO[bytes] | None = None, copier: asyncio.Task[None] | None = None,
                 pipe: asyncio.ReadTransport | None = None, launch: str = "", jail: Jail | None = None) -> None:
        self.process = process
        self.command = tuple(command)
        self.pid = process.pid
        self.launch = launch
        self._strays_killed = False
        self._output = output
        self._copier = copier
        self._pipe = pipe
        self.jail = jail
        self._cpu_watch: asyncio.Task[None] | None = None
        self._exit: asyncio.Task[int] | None = None
        self._notes: list[str] = []
        if jail is not None and jail.cpu_group is not None:
            jail.new_game()
            self._cpu_watch = asyncio.get_running_loop().create_task(self._watch_cpu(jail))

    @classmethod
    async def start(
        cls,
        command: Sequence[str],
        *,
        server: str,
        token: str,
        name: str,
        cwd: str | os.PathLike[str] | None = None,
        output_path: str | os.PathLike[str] | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        extra_env: Mapping[str, str] | None = None,
        sandbox: Sandbox | None = None,
        allow_read: Sequence[str] = (),
    ) -> LaunchedBot:
        """Start ``command`` (in ``sandbox``, with ``allow_read`` visible, if given: then
        ``server`` is not used); its stdout and stderr go to ``output_path`` (or nowhere), up to
        ``output_limit`` bytes."""
        if not command:
            raise LaunchError(f"bot {name}: empty command")
        command = kit_command(command)
        jail: Jail | None = None
        try:
            _program(command, cwd, {**os.environ, **(extra_env or {})}.get("PATH"))
        except LaunchError as err:
            raise LaunchError(f"bot {name}: cannot run {' '.join(command)!r}: {err}") from None
        if sandbox is not None:
            folder = bot_folder(command, cwd)
            if folder is not None and (why := unreadable(folder)):
                raise LaunchError(f"bot {name}: {why}")
            env = sandbox.env(token, name, extra_env)
            launch = ""
            jail = sandbox.confine(command, cwd=cwd, allow_read=allow_read)
            argv: tuple[str, ...] = tuple(jail.argv)
            cwd = None  # (bwrap changes into the bot's folder)
        else:
            env = bot_env(server, token, name, extra_env)
            launch = env[LAUNCH_MARK] = secrets.token_hex(16)
            setpriv = _setpriv()
            argv = (setpriv, "--pdeathsig", "TERM", "--", *command) if setpriv else tuple(command)
        output: IO[bytes] | None = None
        if output_path is not None:
            Path(output_path).parent.mkdir(parents=True, exist_ok=True)
            output = open(output_path, "ab")  # noqa: SIM115 - closed in stop()
        # The output pipe is made here, not by asyncio: a pipe of asyncio's own would keep
        # process.wait() from returning while anything the bot started still holds it open.
        read_end, write_end = os.pipe() if output is not None else (-1, subprocess.DEVNULL)
        try:
            process = Child(subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                stderr=write_end,
                start_new_session=True,
            ))
        except OSError as err:
            if output is not None:
                output.close()
                os.close(read_end)
            if jail is not None:
                jail.release()
            raise LaunchError(f"bot {name}: cannot run {' '.join(command)!r}: {err.strerror or err}") from None
        finally:
            if output is not None:
                os.close(write_end)
        log.info("bot_launched", bot=name, pid=process.pid, command=list(command), sandboxed=jail is not None)
        if output is None:
            return cls(process, command, launch=launch, jail=jail)
        reader = asyncio.StreamReader()
        pipe, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_end, "rb", buffering=0)
        )
        copier = asyncio.create_task(_copy_output(reader, output, output_limit, name))
        return cls(process, command, output, copier, pipe, launch, jail)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def exited(self) -> int:
        """Wait for the process to exit; its code. May be cancelled any number of times: every
        caller waits on one ``process.wait()`` (asyncio keeps each cancelled ``process.wait()``
        in the process's transport until the process exits, so a bot kept between games, whose
        watcher each game cancels, would pile them up for as long as it lives)."""
        if self.process.returncode is not None:
            return self.process.returncode
        if self._exit is None or self._exit.cancelled():
            self._exit = asyncio.ensure_future(self.process.wait())
        await asyncio.wait((self._exit,))
        return self._exit.result()

    def new_game(self, game_id: str = "") -> None:
        """The bot is kept for another game (a process pool): its CPU seconds count afresh, and
        its log gets a line ``[craits: game GAME_ID]`` where that game's output starts (so a
        participant can be shown their bot's output game by game)."""
        if self.jail is not None:
            self.jail.new_game()
        if game_id and self._output is not None and not self._output.closed:
            with contextlib.suppress(OSError, ValueError):
                self._output.write(f"\n[craits: game {game_id}]\n".encode())
                self._output.write("".join(f"{note}\n" for note in self._notes).encode())
                self._output.flush()
        self._notes.clear()

    def note(self, line: str) -> None:
        """Write ``line`` into the bot's log after the next game's mark (where its owner sees it
        with that game's output)."""
        self._notes.append(line)

    async def _watch_cpu(self, jail: Jail) -> None:
        """Stop the bot when its game's CPU seconds pass its sandbox's limit."""
        while self.alive:
            await asyncio.sleep(CPU_POLL_S)
            if self.alive and jail.over_cpu():
                log.warning("bot_cpu_limit", pid=self.pid, cpu_s=jail.limits.cpu_s)
                self._signal_group(signal.SIGKILL)
                return

    def verdict(self) -> str:
        """Why the bot ended if one of its sandbox's limits ended it ("killed: memory limit 512 MiB"), else ""."""
        return self.jail.verdict(self.process.returncode) if self.jail is not None else ""

    async def stop(self, grace_s: float = 1.0) -> int | None:
        """End the bot and its process group: wait ``grace_s`` for a clean exit, then TERM, then KILL.

        Safe to call twice and from a cancelled task (it shields its own waiting).
        """
        try:
            await asyncio.shield(self._stop(grace_s))
        except asyncio.CancelledError:
            self.kill_now()
            raise
        return self.process.returncode

    async def _stop(self, grace_s: float) -> None:
        try:
            if self.alive:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.exited(), grace_s)
            if self.alive:
                self._signal_group(signal.SIGTERM)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.exited(), 1.0)
            # Whatever the bot started in its group goes too, even after the bot exited.
            self._signal_group(signal.SIGKILL)
            self._kill_strays()
            if self.alive:
                await self.exited()
            if self._copier is not None:  # the last of the output (a process outside the group may hold the pipe)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._copier), 1.0)
        finally:
            self._stop_copier()

    def kill_now(self) -> None:
        """SIGKILL the whole group at once (no waiting; for cancellation and exit paths)."""
        self._signal_group(signal.SIGKILL)
        self._kill_strays()
        self._stop_copier()

    def _kill_strays(self) -> None:
        if self.jail is not None:  # a sandbox's processes die with it; its cgroup is emptied
            self.jail.release()
        elif not self._strays_killed:  # (once: it reads all of /proc)
            self._strays_killed = True
            _kill_strays(self.launch)

    def _stop_copier(self) -> None:
        if self._cpu_watch is not None:
            self._cpu_watch.cancel()
            self._cpu_watch = None
        if self._copier is not None:
            self._copier.cancel()
            self._copier = None
        if self._pipe is not None:
            self._pipe.close()  # (a process that escaped the group now gets EPIPE)
            self._pipe = None
        if self._output is not None:
            self._output.close()
            self._output = None

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


def python_command(path: str) -> list[str]:
    """The command that runs a Python script with this interpreter."""
    return [sys.executable, path]
