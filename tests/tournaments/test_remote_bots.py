"""Bots that connect on their own (a token in the file, no command): the referee says where
it listens, and they play every one of their games; a bad or busy address is a clear error."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from server.cli.tournament import choose_runner
from server.storage.store import Store
from tests.bots.commands import PY_RANDOM
from tests.cli import run_cli, wait_for_line
from tournaments.config import load_config, parse_config
from tournaments.ladder import seatable_bots

ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"referee listening on (127\.0\.0\.1:\d+) \(this machine only\); (.+) connect there")
TOKENS = {"alice": "alice-token-123", "bob": "bob-token-4567"}


def remote_file(tmp_path: Path, address: str = "127.0.0.1:0") -> Path:
    path = tmp_path / "remote.toml"
    path.write_text(
        f'name = "remote"\ntable_size = 3\ndeals = 1\nseed = 3\nconcurrency = 2\naddress = "{address}"\n'
        "[flags]\nshort_game = true\n[clocks]\nconnect_timeout_s = 60.0\n"
        + "".join(f'[[bots]]\nname = "{name}"\ntoken = "{token}"\n' for name, token in TOKENS.items())
        + '[[bots]]\nname = "house"\nbuiltin = "random"\n'
    )
    return path


@contextmanager
def craits(*args: str) -> Iterator[tuple[subprocess.Popen[str], queue.Queue[str]]]:
    """``craits ARGS`` as a process, its standard error line by line in a queue."""
    proc = subprocess.Popen([sys.executable, "-m", "server.cli", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr or ()], daemon=True)
    reader.start()
    try:
        yield proc, lines
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def wait_for_address(lines: queue.Queue[str], timeout_s: float = 60) -> tuple[str, str]:
    """Where the referee says it listens, and which bots connect there."""
    match = wait_for_line(lines, LISTENING, timeout_s)
    return match.group(1), match.group(2)


@contextmanager
def remote_bots(address: str, names: list[str]) -> Iterator[None]:
    """The Python kit's random bot, started by hand for each name, as a student would."""
    procs = [
        subprocess.Popen(
            PY_RANDOM, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "CRAITS_SERVER": address, "CRAITS_TOKEN": TOKENS[name], "CRAITS_BOT_NAME": name},
        )
        for name in names
    ]
    try:
        yield
    finally:
        for proc in procs:  # they wait for the next game (or a referee to come back) until stopped
            proc.terminate()
            proc.wait(timeout=30)


def test_a_tournament_says_where_remote_bots_connect_and_they_play_all_their_games(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with craits("tournament", "run", str(remote_file(tmp_path)), "--out", str(out), "--no-progress") as (proc, lines):
        address, names = wait_for_address(lines)
        assert names == "alice, bob"
        with remote_bots(address, ["alice", "bob"]):
            proc.wait(timeout=120)
    assert proc.returncode == 0, "".join(lines.queue)
    with Store(out / Store.FILENAME) as store:
        results = store.results()
    assert len(results) == 3
    assert {(seat.bot, seat.status) for result in results for seat in result.seats} == {
        ("alice", "ok"), ("bob", "ok"), ("house", "ok")}


def test_a_ladder_says_where_remote_bots_connect(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with craits("ladder", "run", str(remote_file(tmp_path)), "--out", str(out), "--rounds", "1") as (proc, lines):
        address, _ = wait_for_address(lines)
        with remote_bots(address, ["alice", "bob"]):
            proc.wait(timeout=120)
    assert proc.returncode == 0, "".join(lines.queue)
    with Store(out / Store.FILENAME) as store:
        assert all(seat.status == "ok" for result in store.results() for seat in result.seats)


def test_craits_play_says_where_a_remote_seat_connects(tmp_path: Path) -> None:
    with craits("play", "random", f"remote:alice:{TOKENS['alice']}", "--log-dir", str(tmp_path)) as (proc, lines):
        address, names = wait_for_address(lines)
        assert names == "alice"
        with remote_bots(address, ["alice"]):
            out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, "".join(lines.queue)
    assert "alice" in out


def test_a_busy_address_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, stderr = run_cli(capsys, "tournament", "run", str(remote_file(tmp_path)), "--out",
                                  str(tmp_path / "out"), "--address", f"127.0.0.1:{port}")
    assert code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in stderr and "--address" in stderr


@pytest.mark.parametrize("address", ["nonsense", "127.0.0.1:99999", ":50051"])
def test_a_bad_address_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], address: str
) -> None:
    code, _, stderr = run_cli(capsys, "ladder", "run", str(remote_file(tmp_path)), "--out", str(tmp_path / "out"),
                              "--address", address)
    assert code == 2 and f"--address: {address!r} is not HOST:PORT" in stderr
    assert not (tmp_path / "out").exists()
    bad = remote_file(tmp_path, address)
    code, _, stderr = run_cli(capsys, "tournament", "run", str(bad), "--out", str(tmp_path / "out"))
    assert code == 2 and re.search(r"remote\.toml:6: address: .* is not HOST:PORT", stderr), stderr


@pytest.mark.parametrize("example", sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tournaments").rglob("*.toml")))
def test_every_bundled_tournament_file_passes_the_checks_made_before_any_game(example: str) -> None:
    """The checks `craits tournament run` makes before it plays: each bot's command runs here,
    each builtin exists in the runner that will play it (the classroom example's house bot
    once named a builtin only the in-process runner has)."""
    choose_runner("auto", load_config(ROOT / example))


def test_a_ladder_waits_for_remote_bots_it_needs_and_says_so(tmp_path: Path) -> None:
    """alice and bob are needed to fill a table of three beside the house bot: the ladder says
    it waits for them, and plays once they are online."""
    out = tmp_path / "out"
    with craits("ladder", "run", str(remote_file(tmp_path)), "--out", str(out), "--rounds", "1") as (proc, lines):
        address, _ = wait_for_address(lines)
        waiting = wait_for_line(lines, re.compile(r"ladder: waiting for remote bots to connect: (.+)"), 60)
        assert waiting.group(1) == "1 of the 3 needed for a table can play (away: alice, bob)"
        with remote_bots(address, ["alice", "bob"]):
            proc.wait(timeout=120)
    assert proc.returncode == 0, "".join(lines.queue)
    with Store(out / Store.FILENAME) as store:
        results = store.results()
    assert {seat.bot for result in results for seat in result.seats} == {"alice", "bob", "house"}
    assert all(seat.status == "ok" for result in results for seat in result.seats)


def test_a_ladder_seats_a_remote_bot_only_while_it_is_connected(tmp_path: Path) -> None:
    """Offline, alice sits out: no table waits for her, none plays her seat by the default policy
    (before, she was seated in one of the first two rounds: four bots, tables of three)."""
    path = tmp_path / "ladder.toml"
    path.write_text(
        'name = "online"\ntable_size = 3\nseed = 5\naddress = "127.0.0.1:0"\n[flags]\nshort_game = true\n'
        "[clocks]\nconnect_timeout_s = 60.0\n"
        f'[[bots]]\nname = "alice"\ntoken = "{TOKENS["alice"]}"\n'
        + "".join(f'[[bots]]\nname = "house-{n}"\nbuiltin = "random"\n' for n in range(3))
    )
    out = tmp_path / "out"
    with craits("ladder", "run", str(path), "--out", str(out), "--rounds", "2") as (proc, lines):
        wait_for_address(lines)
        proc.wait(timeout=50)  # (less than alice's connect timeout: nobody waited for her)
    assert proc.returncode == 0, "".join(lines.queue)
    with Store(out / Store.FILENAME) as store:
        results = store.results()
    assert len(results) == 6
    assert {seat.bot for result in results for seat in result.seats} == {"house-0", "house-1", "house-2"}
    assert all(seat.status == "ok" for result in results for seat in result.seats)


def test_the_seatable_bots_are_the_launched_ones_and_the_remote_ones_online() -> None:
    text = (
        'name = "online"\ntable_size = 3\nseed = 5\n'
        + "".join(f'[[bots]]\nname = "{name}"\ntoken = "{token}"\n' for name, token in TOKENS.items())
        + '[[bots]]\nname = "house"\nbuiltin = "random"\n[[bots]]\nname = "house-2"\nbuiltin = "random"\n'
    )
    config = parse_config(text, source="test", base_dir=ROOT)
    online: set[str] = set()
    said: list[tuple[str, dict[str, object]]] = []

    class Log:
        def info(self, event: str, **fields: object) -> None:
            said.append((event, fields))

    async def pick(stop: asyncio.Event) -> set[str] | None:
        return await seatable_bots(config, lambda: set(online), stop, Log())

    async def scenario() -> None:
        online.add("alice")  # alice and the two house bots fill a table: bob, away, sits out
        assert await pick(asyncio.Event()) == {"alice", "house", "house-2"}
        online.clear()  # two house bots cannot fill a table of three: wait until someone comes
        waiting = asyncio.create_task(pick(asyncio.Event()))
        await asyncio.sleep(0.2)
        assert not waiting.done() and said[-1][0] == "ladder_waiting"
        online.add("bob")
        assert await asyncio.wait_for(waiting, 5) == {"bob", "house", "house-2"}
        assert said[-1] == ("ladder_resumed", {"online": ["bob"]})
        online.clear()
        stop = asyncio.Event()
        stopped = asyncio.create_task(pick(stop))
        await asyncio.sleep(0.2)
        stop.set()
        assert await asyncio.wait_for(stopped, 5) is None

    asyncio.run(scenario())
