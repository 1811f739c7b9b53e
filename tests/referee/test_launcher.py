"""No bot outlives its referee, even one killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

PARENT = """
import asyncio, sys, time
from server.launcher import LaunchedBot

async def main():
    bot = await LaunchedBot.start([sys.executable, "-c", "import time; time.sleep(120)"],
                                  server="127.0.0.1:1", token="t", name="sleeper")
    print(bot.pid, flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie waiting for init to reap it counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux-only")
def test_a_launched_bot_dies_when_its_referee_is_killed() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        line = ""
        while not line.strip().isdigit():  # skip the referee's own log lines
            line = parent.stdout.readline()
            assert line, "the parent exited before launching the bot"
        bot_pid = int(line)
        assert _alive(bot_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(bot_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(bot_pid), "the bot outlived its killed referee"
    finally:
        parent.kill()
