"""The referee and the kit run grpc.aio on uvloop's event loop where it is installed, and a
launched bot's exit is seen the same on either loop (craits.grpc_io.run, launcher.Child)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from craits import grpc_io

ROOT = Path(__file__).resolve().parents[2]
HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


def _loop_of_run() -> str:
    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__.split(".")[0]

    return grpc_io.run(which())


@pytest.mark.skipif(not HAS_UVLOOP, reason="uvloop is not installed")
def test_run_is_on_uvloop_unless_the_environment_asks_for_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(grpc_io.LOOP_ENV, raising=False)
    assert (_loop_of_run(), grpc_io.loop_name()) == ("uvloop", "uvloop")
    monkeypatch.setenv(grpc_io.LOOP_ENV, "asyncio")
    assert (_loop_of_run(), grpc_io.loop_name()) == ("asyncio", "asyncio")


LAUNCH = """
import asyncio, sys
from craits import grpc_io
import grpc
from server.transport.launcher import LaunchedBot

async def main():
    server = grpc.aio.server()  # gRPC's threads running, as in a referee
    server.add_insecure_port("127.0.0.1:0")
    await server.start()
    quick = await LaunchedBot.start([sys.executable, "-c", "raise SystemExit(3)"],
                                    server="127.0.0.1:1", token="t", name="quick")
    slow = await LaunchedBot.start([sys.executable, "-c", "import time; time.sleep(60)"],
                                   server="127.0.0.1:1", token="t", name="slow")
    first = await asyncio.wait_for(quick.exited(), 30)
    again = await quick.exited()
    assert slow.alive
    code = await asyncio.wait_for(slow.stop(grace_s=0.2), 30)
    await server.stop(0)
    print("result", type(asyncio.get_running_loop()).__module__.split(".")[0], first, again, quick.returncode, code)

grpc_io.run(main())
"""


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_a_launched_bots_exit_is_seen_on_either_loop_and_no_fork_handler_runs(loop: str) -> None:
    if loop == "uvloop" and not HAS_UVLOOP:
        if os.environ.get("CI"):
            pytest.fail("uvloop is a dependency of the referee (pyproject.toml): under CI it must be installed")
        pytest.skip("uvloop is not installed")
    env = {"PYTHONPATH": str(ROOT), grpc_io.LOOP_ENV: loop, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", LAUNCH],
                          env=env, capture_output=True, text=True, timeout=90, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    result = next(line for line in done.stdout.splitlines() if line.startswith("result "))
    name, first, again, returncode, stopped = result.split()[1:]
    assert (name, first, again, returncode) == (loop, "3", "3", "3")
    assert int(stopped) != 0  # ended by the referee's TERM (or KILL), not on its own
    assert "fork" not in done.stderr, done.stderr  # gRPC logs a fork() it meets while its threads are busy


def test_a_watched_process_pipe_stays_blocking_so_a_message_is_read_whole() -> None:
    """uvloop's add_reader makes a descriptor non-blocking; a worker's message that arrived in
    parts (larger than the socket's buffer) was then read half, with EAGAIN, and the worker taken
    for dead: a ladder with --web stopped at a game relayed from a worker (server.transport.workers)."""
    import multiprocessing
    import os
    import pickle
    import struct
    import threading
    import time

    from server.transport.workers import watch_connection

    message = ("live", "x" * 100_000)
    frame = pickle.dumps(message)
    frame = struct.pack("!i", len(frame)) + frame

    def send_in_two_parts(fd: int) -> None:
        os.write(fd, frame[:1000])
        time.sleep(0.3)
        os.write(fd, frame[1000:])

    async def main() -> object:
        ours, theirs = multiprocessing.Pipe(duplex=True)
        loop = asyncio.get_running_loop()
        got: asyncio.Future[object] = loop.create_future()

        def readable() -> None:
            loop.remove_reader(ours.fileno())
            try:
                got.set_result(ours.recv())
            except OSError as err:
                got.set_result(err)

        watch_connection(loop, ours, readable)
        threading.Thread(target=send_in_two_parts, args=(theirs.fileno(),), daemon=True).start()
        return await asyncio.wait_for(got, 10)

    assert grpc_io.run(main()) == message
