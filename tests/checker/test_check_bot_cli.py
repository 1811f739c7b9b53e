"""`craits check-bot` on the command line: exit status, the printed report, --json, user mistakes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from server.transport import sandbox
from tests.checker.helpers import BOTS, ROOT
from tests.cli import run_cli


def craits(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=240, env=env
    )


def good_bot_that_first(tmp_path: Path, name: str, first: str) -> Path:
    """A bot script in ``tmp_path`` that runs the line ``first``, then plays well."""
    tmp_path.chmod(0o755)  # (a sandboxed bot reads only what every user may read)
    shutil.copy(BOTS / "_botlib.py", tmp_path)
    script = tmp_path / name
    script.write_text(f"import sys\n{first}\nfrom _botlib import announcing, run\nsys.exit(run(announcing))\n")
    return script


def test_a_passing_bot_exits_0_and_writes_the_json_report(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = craits("check-bot", "--json", str(out), "--", sys.executable, str(BOTS / "good_bot.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 failed" in result.stdout.splitlines()[-1]
    report = json.loads(out.read_text())
    assert report["ok"] is True and report["failed"] == 0 and report["bot_exit_code"] == 0
    assert {c["key"] for c in report["checks"]} >= {"hello", "one-card", "king-sequence", "late-answer", "exit"}


def test_a_failing_bot_exits_1_and_prints_what_it_sent_and_what_was_expected() -> None:
    result = craits("check-bot", "--", sys.executable, str(BOTS / "first_action_bot.py"))
    assert result.returncode == 1
    line = next(line for line in result.stdout.splitlines() if line.startswith("FAIL"))
    assert line.startswith("FAIL  one-card announcement: sent 3H; expected a play that leaves one card")
    assert "1 failed" in result.stdout.splitlines()[-1]


def test_a_bot_that_prints_a_huge_line_is_still_checked(tmp_path: Path) -> None:
    """The checker keeps the tail of a bot's output; one line past the reader's limit is skipped."""
    chatty = good_bot_that_first(tmp_path, "chatty_bot.py", "print('x' * 200_000, flush=True)")
    result = craits("check-bot", "--", sys.executable, str(chatty))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "0 failed" in result.stdout.splitlines()[-1]


def test_no_command_is_a_one_line_user_error() -> None:
    result = craits("check-bot")
    assert result.returncode == 2
    assert result.stderr.strip() == "craits: error: no bot command: use craits check-bot [options] -- COMMAND [ARGS...]"


def test_an_unknown_command_is_a_one_line_user_error() -> None:
    result = craits("check-bot", "--", "no-such-bot-program-xyz")
    assert result.returncode == 2
    assert result.stderr.strip() == "craits: error: cannot run the bot: command not found: no-such-bot-program-xyz"
    missing = craits("check-bot", "--", "./bots/missing.py")
    # A .py script runs with the Python running craits, in check-bot as in craits play: a missing one is named.
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.strip() == "craits: error: cannot run the bot: no such file ./bots/missing.py"


def test_a_program_the_sandbox_does_not_see_is_told_to_be_given_by_its_path(tmp_path: Path) -> None:
    """check-bot takes a command line, which has no allow_read: the advice is what it can do."""
    if (why := sandbox.problem()) is not None:  # (make test installs bwrap: CI must run this)
        if os.environ.get("CI"):
            pytest.fail(f"the sandbox cannot run here, and CI must test it: {why}")
        pytest.skip(f"the sandbox cannot run here: {why}")
    program = tmp_path / "bin" / "mybot"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    env = {**os.environ, "PATH": f"{program.parent}{os.pathsep}{os.environ['PATH']}"}
    result = craits("check-bot", "--", "mybot", env=env)
    assert result.returncode == 2, result.stdout
    assert f"give its path, {program}, for its folder to be the bot's (or --no-sandbox" in result.stderr, result.stderr
    assert "allow_read" not in result.stderr


def test_a_bad_timeout_is_a_one_line_user_error() -> None:
    result = craits("check-bot", "--timeout", "0", "--", sys.executable, "-c", "pass")
    assert result.returncode == 2
    assert result.stderr.strip() == "craits: error: --timeout must be a positive number of seconds"


def test_a_bot_checked_within_a_tournaments_memory_limit_is_told_the_limit_ended_it(tmp_path: Path) -> None:
    """--limit takes a tournament file's [limits]: a bot that holds 300 MB fails within 128 MiB, and
    the report says the limit ended it (within the default 512 MiB the same bot passes)."""
    hungry = good_bot_that_first(tmp_path, "hungry_bot.py", "held = bytearray(300 * 2**20)  # every page touched")
    small = craits("check-bot", "--limit", "memory=128MiB", "--", sys.executable, str(hungry))
    assert small.returncode == 1, small.stdout + small.stderr
    assert "before connecting to CRAITS_SERVER (killed: memory limit 128 MiB)" in small.stdout, small.stdout
    roomy = craits("check-bot", "--", sys.executable, str(hungry))
    assert roomy.returncode == 0, roomy.stdout + roomy.stderr


def test_a_bad_limit_is_a_one_line_user_error(capsys: pytest.CaptureFixture[str]) -> None:
    # (in this process, as `craits` calls main: the tests above run the command itself)
    bot = (sys.executable, str(BOTS / "good_bot.py"))
    for given, said in (
        ("memory=lots", '--limit memory: must be a size like "512 MiB" or a number of bytes, got \'lots\''),
        ("cpu_s=0", "--limit cpu_s: must be a whole number of at least 1, got 0"),
        ("speed=9", "--limit: unknown limit 'speed'; the limits are memory, processes, cpu_s, open_files, tmp, output, output_budget"),
        ("memory", "--limit takes KEY=VALUE, e.g. --limit memory=256MiB; got 'memory'"),
    ):
        code, _, err = run_cli(capsys, "check-bot", "--limit", given, "--", *bot)
        assert (code, err.strip()) == (2, f"craits: error: {said}"), given
    code, _, err = run_cli(capsys, "check-bot", "--no-sandbox", "--limit", "memory=1GiB", "--", *bot)
    assert code == 2
    assert err.strip().endswith("--limit applies to the sandbox; drop --no-sandbox to check the bot within limits")


def test_on_a_terminal_one_line_says_which_check_runs_and_is_cleared_at_the_end() -> None:
    """A bot that uses its time takes minutes to check: the terminal shows where the check is."""
    import os
    import pty

    terminal, stderr = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "check-bot", "--", sys.executable, str(BOTS / "good_bot.py")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True,
    )
    os.close(stderr)
    out, _ = process.communicate(timeout=240)
    shown = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # EIO: the process and its terminal are gone
            break
        if not chunk:
            break
        shown += chunk
    os.close(terminal)
    assert process.returncode == 0, out
    text = shown.decode()
    assert "\r\x1b[Kchecking 1/15: hello ..." in text
    assert "checking 14/15: a whole game of the crazy-eights preset (2 players) ..." in text
    assert "checking 15/15: exit when the stream ends ..." in text
    assert text.endswith("\r\x1b[K")
    assert "checking" not in out, "the report on standard output has no progress in it"


def test_off_a_terminal_there_is_no_progress_line() -> None:
    done = craits("check-bot", "--", sys.executable, str(BOTS / "good_bot.py"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checking" not in done.stderr and "\x1b" not in done.stderr
