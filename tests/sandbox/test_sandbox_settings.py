"""The sandbox's settings: the tournament file's keys, the command line, and refusing to run
launched bots unsandboxed when bwrap cannot run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from server.transport import sandbox
from tests.cli import run_cli
from tournaments.config import TournamentFileError, parse_config

HEAD = """name = "t"
table_size = 2
deals = 1
"""


def bots(*extra: str) -> str:
    return HEAD + '[[bots]]\nname = "house"\nbuiltin = "random"\n\n[[bots]]\nname = "mine"\n' + "\n".join(extra) + "\n"


def error(text: str, base: Path) -> str:
    with pytest.raises(TournamentFileError) as caught:
        parse_config(text, source="t.toml", base_dir=base)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_limits_sandbox_and_allow_read_are_read_from_the_file(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)  # (a bot's folder must be readable by every user)
    (tmp_path / "jdk").mkdir()
    text = bots('command = ["python", "-m", "craits_bot.examples.random_bot"]', 'allow_read = ["jdk"]')
    text = text.replace("deals = 1\n", 'deals = 1\nsandbox = "bwrap"\n[limits]\nmemory = "1 GiB"\nprocesses = 32\n'
                        'cpu_s = 90\ntmp = "16M"\nopen_files = 100\noutput = 65536\n')
    config = parse_config(text, base_dir=tmp_path)
    assert config.sandbox == "bwrap"
    assert config.limits == sandbox.Limits(memory=2**30, processes=32, cpu_s=90, open_files=100, tmp=16 * 2**20,
                                           output=65536)
    assert config.bots[1].allow_read == (str(tmp_path / "jdk"),)
    assert config.bots[1].spec("t0ken").allow_read == (str(tmp_path / "jdk"),)
    assert parse_config(bots('builtin = "first"')).sandbox == "bwrap"  # the default


@pytest.mark.parametrize(("change", "expected"), [
    ('sandbox = "docker"', "t.toml:4: sandbox: must be one of bwrap, none, got 'docker'"),
    ('[limits]\nmemory = "lots"', "t.toml:5: limits.memory: must be a size like \"512 MiB\" or a number of bytes, got 'lots'"),
    ("[limits]\nprocesses = 0", "t.toml:5: limits.processes: must be a whole number of at least 1, got 0"),
    ('[limits]\ncpu = 5', "t.toml:5: limits.cpu: unknown key; did you mean 'cpu_s'?"),
    ('[limits]\ntmp = -1', "t.toml:5: limits.tmp: must be above 0, got -1"),
])
def test_a_bad_sandbox_setting_is_one_line_naming_file_line_and_key(tmp_path: Path, change: str, expected: str) -> None:
    text = bots('builtin = "first"').replace("deals = 1\n", f"deals = 1\n{change}\n", 1)
    if change.startswith("[limits]"):  # a table goes after the keys it would swallow
        text = HEAD + change + "\n" + bots('builtin = "first"')[len(HEAD):]
    assert error(text, tmp_path) == expected


def test_an_allow_read_path_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    text = bots('command = ["python", "-m", "craits_bot.examples.random_bot"]', 'allow_read = ["no/such/jdk"]')
    assert error(text, tmp_path) == (f"t.toml:11: bots[2].allow_read: 'no/such/jdk' does not exist "
                                     f"(resolved to {tmp_path / 'no/such/jdk'})")


def test_a_bot_command_outside_its_folder_is_refused_unless_unsandboxed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp_path.chmod(0o755)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "bot.py").write_text("print('hi')\n")
    (tmp_path / "mine").mkdir()
    text = bots('command = ["python", "../elsewhere/bot.py"]', 'cwd = "mine"')
    file = tmp_path / "t.toml"
    file.write_text(text)
    (why,) = parse_config(text, source="t.toml", base_dir=tmp_path).unsandboxable
    assert why.startswith(f"t.toml:10: bots[2].command: {tmp_path / 'elsewhere' / 'bot.py'} is outside the bot's "
                          f"folder {tmp_path / 'mine'}: a sandboxed bot sees only its own folder")
    code, _, stderr = run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "out"))
    assert code == 2 and stderr == f"craits: error: {file}:10: bots[2].command: {why.split(': ', 2)[2]}\n"
    assert not (tmp_path / "out").exists()
    allowed = text.replace('cwd = "mine"', 'cwd = "mine"\nallow_read = ["elsewhere"]')
    assert parse_config(allowed, base_dir=tmp_path).bots[1].allow_read == (str(tmp_path / "elsewhere"),)


@pytest.mark.parametrize(("text", "size"), [
    (1048576, 2**20), ("512M", 512 * 2**20), ("512 MiB", 512 * 2**20), ("2 GiB", 2 * 2**30), ("64KiB", 65536),
    ("100", 100), ("100 bytes", 100), ("1 gb", 2**30),
])
def test_sizes_are_written_as_people_write_them(text: object, size: int) -> None:
    assert sandbox.parse_size(text) == size
    assert sandbox.parse_size(sandbox.size_text(size).replace(" bytes", "")) == size


def test_without_bwrap_launched_bots_are_refused_with_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Never silently unsandboxed: a tournament with launched bots does not start."""
    tmp_path.chmod(0o755)
    file = tmp_path / "t.toml"
    file.write_text(bots('command = ["python", "-m", "craits_bot.examples.random_bot"]'))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    sandbox.problem.cache_clear()
    try:
        code, _, stderr = run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "out"))
    finally:
        sandbox.problem.cache_clear()
    assert code == 2 and stderr.count("\n") == 1
    assert stderr.startswith("craits: error: cannot sandbox launched bots: bwrap not found (Debian package bubblewrap); "
                             "install bubblewrap, or for bots you trust set sandbox = \"none\" in the tournament file "
                             "(--no-sandbox on the command line)")
    assert not (tmp_path / "out" / "tournament.db").exists()


def test_no_sandbox_plays_and_says_once_what_the_bot_can_reach(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = run_cli(capsys, "play", "--no-sandbox", "--log-dir", str(tmp_path), "first",
                                f"{sys.executable} -m craits_bot.examples.random_bot")
    assert code == 0, stderr
    assert stderr.count(sandbox.UNSANDBOXED) == 1
    assert "the database, logs, replays, other bots' files and tokens" in sandbox.UNSANDBOXED


def test_play_sandboxes_its_command_bots_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, stderr = run_cli(capsys, "play", "--log-dir", str(tmp_path), "first",
                                f"{sys.executable} -m craits_bot.examples.random_bot", "--json")
    assert code == 0, stderr
    assert "without a sandbox" not in stderr
    events = [json.loads(line) for line in (tmp_path / "play.jsonl").read_text().splitlines()]
    launched = [e for e in events if e["event"] == "bot_launched"]
    assert launched and all(e["sandboxed"] for e in launched)
    summary = json.loads(out.splitlines()[0])
    assert summary["aborted"] == "" and summary["statuses"] == ["ok", "ok"]


def test_a_sandboxed_bot_may_write_its_tmp_and_use_posix_semaphores(tmp_path: Path) -> None:
    """What a well-behaved bot may need: a scratch /tmp, /dev/shm (multiprocessing, node)."""
    import asyncio

    from server.transport.launcher import LaunchedBot

    tmp_path.chmod(0o755)
    work = ("import multiprocessing, os\nlock = multiprocessing.Lock()\nwith lock:\n"
            "    open('/tmp/scratch', 'w').write('x' * 2**20)\nprint(os.getuid() != 0, os.path.getsize('/tmp/scratch'))\n")
    socket_path = sandbox.socket_path()
    Path(socket_path).touch()

    async def main() -> int | None:
        bot = await LaunchedBot.start((sys.executable, "-c", work), server="", token="t", name="fine", cwd=tmp_path,
                                      output_path=tmp_path / "out.log", sandbox=sandbox.Sandbox(socket_path))
        code = await bot.process.wait()
        await bot.stop(0)
        return code

    try:
        code = asyncio.run(main())
    finally:
        sandbox.remove_socket(socket_path)
    assert code == 0, (tmp_path / "out.log").read_text()
    assert (tmp_path / "out.log").read_text().split() == ["True", str(2**20)]


def test_a_command_lines_files_are_readable_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guide's `craits check-bot -- node clients/js/bot.js --strategy my_strategy.js`: the
    strategy, named relative to where craits runs, is outside the JS bot's folder."""
    from tests.bots.commands import ROOT, need_node

    need_node()
    tmp_path.chmod(0o755)
    (tmp_path / "my_strategy.js").write_text((ROOT / "clients" / "js" / "strategies" / "heuristic.js").read_text()
                                             .replace("require('./", f"require('{ROOT}/clients/js/strategies/"))
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "check-bot", "--", "node", str(ROOT / "clients" / "js" / "bot.js"),
                           "--strategy", "my_strategy.js")
    assert code == 0, out
    assert "0 failed" in out.splitlines()[-1]
