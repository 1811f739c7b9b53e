"""No bot outlives its referee, even one killed with SIGKILL."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time

import pytest

from .conftest import gone_within, pid_alive

SLEEPER = "import time; time.sleep(120)"
PARENT = f"SLEEPER = {SLEEPER!r}" + """
import asyncio, sys, time
from server.transport.launcher import LaunchedBot

async def main():
    bot = await LaunchedBot.start([sys.executable, "-c", SLEEPER],
                                  server="127.0.0.1:1", token="t", name="sleeper")
    print(bot.pid, flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


def _running_the_bot(pid: int) -> bool:
    """True once the launched process runs the bot's command (no longer its setpriv wrapper)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[1:3] == [b"-c", SLEEPER.encode()]
    except FileNotFoundError:
        return False


def _describe(pid: int) -> str:
    """What the kernel says of a process (its command, parent and signal masks), for a failure."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = f.read().replace(b"\0", b" ").decode(errors="replace")
        with open(f"/proc/{pid}/status") as f:
            status = [line.strip() for line in f if line.startswith(("PPid", "SigIgn", "SigBlk", "State"))]
    except OSError as err:
        return str(err)
    return f"{command!r} {status}"


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
        # The parent-death signal is set by setpriv just before it execs the bot: a referee
        # killed in that instant (microseconds after launch) can still leave its bot behind.
        # That window is not what this test is about, so it waits for the bot's own program.
        deadline = time.monotonic() + 10
        while not _running_the_bot(bot_pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pid_alive(bot_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert gone_within(bot_pid), f"the bot outlived its killed referee: {_describe(bot_pid)}"
    finally:
        parent.kill()


def test_a_command_that_cannot_run_is_refused_at_launch_with_the_reason(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from server.transport.launcher import LaunchedBot, LaunchError

    not_executable = tmp_path / "bot.py"
    not_executable.write_text("print('hi')\n")
    cases = {
        ("no-such-bot-program-xyz",): "command not found: no-such-bot-program-xyz",
        ("./missing_bot.py",): "./missing_bot.py does not exist",
        ("./bot.py",): "./bot.py is not executable",
    }
    for command, reason in cases.items():
        with pytest.raises(LaunchError, match=reason):
            asyncio.run(LaunchedBot.start(command, server="127.0.0.1:1", token="t", name="b", cwd=tmp_path))


def test_a_relative_command_runs_in_the_bots_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from server.transport.launcher import LaunchedBot

    script = tmp_path / "bot.sh"
    script.write_text("#!/bin/sh\necho \"$CRAITS_BOT_NAME ran in $(pwd)\"\n")
    script.chmod(0o755)
    out = tmp_path / "out.log"

    async def run() -> int | None:
        bot = await LaunchedBot.start(["./bot.sh"], server="127.0.0.1:1", token="t", name="shell",
                                      cwd=tmp_path, output_path=out)
        return await bot.stop()

    assert asyncio.run(run()) == 0
    assert out.read_text().strip() == f"shell ran in {tmp_path}"


def test_a_command_is_checked_before_it_is_needed_including_the_script_it_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """What `craits play`, `craits check-bot` and a tournament refuse before any game starts."""
    from server.transport.launcher import command_problem

    (tmp_path / "bot.py").write_text("print('hi')\n")
    (tmp_path / "bot.js").write_text("console.log('hi')\n")
    python = sys.executable
    assert command_problem(["no-such-bot-program-xyz"]) == "command not found: no-such-bot-program-xyz"
    assert command_problem([python, "bot.py"], cwd=tmp_path) is None
    assert command_problem([python, "-u", "bot.py"], cwd=tmp_path) is None
    assert command_problem([python, "bots.py"], cwd=tmp_path) == f"no such file bots.py (in {tmp_path})"
    assert command_problem([python, str(tmp_path / "gone.py")]) == f"no such file {tmp_path / 'gone.py'}"
    assert command_problem([python, "-m", "my_bot.py"]) is None  # a module, not a file
    assert command_problem([python, "-c", "print(1)"]) is None
    assert command_problem(["./bot.py"], cwd=tmp_path) == "./bot.py is not executable"
    if shutil.which("node"):
        assert command_problem(["node", "bot.js"], cwd=tmp_path) is None
        assert command_problem(["node", "bot2.js"], cwd=tmp_path) == f"no such file bot2.js (in {tmp_path})"


def test_a_bot_that_prints_without_end_fills_its_log_only_to_the_limit(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A flood of output costs a bounded log file; the bot is slowed by its pipe, not killed."""
    import asyncio

    from server.transport.launcher import LaunchedBot

    out = tmp_path / "out.log"
    chatty = "import sys\nsys.stdout.write('started\\n')\nwhile True:\n    sys.stdout.write('x' * 4096)\n"

    async def run() -> tuple[bool, int | None]:
        bot = await LaunchedBot.start([sys.executable, "-c", chatty], server="127.0.0.1:1", token="t",
                                      name="chatty", output_path=out, output_limit=100_000)
        await asyncio.sleep(1.0)
        alive = bot.alive
        return alive, await bot.stop(0.1)

    alive, code = asyncio.run(run())
    assert alive  # still running after passing the limit many times over
    text = out.read_text()
    assert text.startswith("started\n")
    assert text.endswith("[craits: this bot's output passed 100000 bytes; the rest of it is discarded]\n")
    assert len(text) < 100_000 + 200
    assert code is not None
