"""Bots that connect on their own, on a PostgreSQL store: they connect to the organizer's
command (``tournament run|ladder run --store``), which plays their games itself; the
other games go to the queue, for any worker."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from server.storage.postgres import PostgresStore, migrate
from tests.bots.commands import PY_RANDOM
from tests.cli import run_cli
from tests.participants.conftest import LADDER

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def own_bot(port: int, token: str) -> Iterator[None]:
    """The Python kit's random bot, started by hand with a token, as a student would (before the
    organizer's command: it tries again until the referee is there)."""
    bot = subprocess.Popen(PY_RANDOM, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "CRAITS_SERVER": f"127.0.0.1:{port}", "CRAITS_TOKEN": token})
    try:
        yield
    finally:
        bot.kill()
        bot.wait()


def seats(pg_url: str, name: str) -> list[tuple[tuple[str, str], ...]]:
    """(bot, status) of each seat of each game recorded (none while the tournament is not stored)."""
    with PostgresStore(pg_url, name, readonly=True) as store:
        return [tuple((seat.bot, seat.status) for seat in result.seats) for result in store.results()]


def test_a_token_bot_plays_its_games_on_the_organizers_command_and_the_others_go_to_the_queue(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """alice is away at first: the queue plays the table without her while hers wait for her
    (120 s); the organizer's command is killed then, and its resume plays hers once she is there."""
    port = free_port()
    file = tmp_path / "far.toml"
    file.write_text(
        f'name = "far"\ntable_size = 3\ndeals = 1\nseed = 3\nconcurrency = 2\naddress = "127.0.0.1:{port}"\n'
        '[flags]\nshort_game = true\n[clocks]\nconnect_timeout_s = 120.0\n[[bots]]\nname = "alice"\n'
        'token = "alice-token-123"\n' + "".join(f'[[bots]]\nname = "house-{n}"\nbuiltin = "random"\n' for n in range(3)))
    out = tmp_path / "out"
    migrate(pg_url)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CRAITS_STORE", None)
    organizer = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "tournament", "run", str(file), "--store", pg_url, "--out", str(out),
         "--no-progress", "--local-workers", "1"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(seats(pg_url, "far")) < 3:  # (the table of the house bots, played by the local worker)
            assert time.monotonic() < deadline and organizer.poll() is None
            time.sleep(0.1)
        os.kill(organizer.pid, signal.SIGKILL)  # (alice's games in hand: they wait for her)
    finally:
        organizer.kill()
        organizer.wait()
    assert [bot for game in seats(pg_url, "far") for bot, _ in game if bot == "alice"] == []
    with own_bot(port, "alice-token-123"):
        code, _, err = run_cli(capsys, "tournament", "resume", str(file), "--store", pg_url, "--out", str(out),
                               "--no-progress", "--local-workers", "1")
    assert code == 0, err
    assert f"referee listening on 127.0.0.1:{port} (this machine only); alice connect there" in err
    games = seats(pg_url, "far")
    assert len(games) == 4 * 3  # 4 tables of 3 of the 4 bots, 3 rotations each
    assert sum(("alice", "ok") in game for game in games) == 3 * 3  # (played by alice herself, not the default policy)
    assert all(status == "ok" for game in games for _, status in game)
    queued = [(e["queued"], e.get("played_here")) for e in map(json.loads, (out / "organizer.jsonl").read_text()
                                                               .splitlines()) if e["event"] == "games_queued"]
    assert queued == [(3, 9), (0, 9)]  # (the table without alice: the queue's; hers: this command's)


def test_a_participants_own_bot_plays_on_a_ladder_in_postgresql(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, said, err = run_cli(capsys, "roster", "add", str(tmp_path / "roster"), "alice", "--store", pg_url)
    assert code == 0, err
    token = said.split()[1]
    port = free_port()
    file = tmp_path / "class.toml"
    file.write_text(LADDER.replace('roster = "roster"\n', f'roster = "roster"\naddress = "127.0.0.1:{port}"\n'))
    with own_bot(port, token):
        code, _, err = run_cli(capsys, "ladder", "run", str(file), "--store", pg_url, "--rounds", "2",
                               "--out", str(tmp_path / "out"), "--local-workers", "0")
    assert code == 0, err
    games = seats(pg_url, "class")
    assert len(games) == 2 * 2 and all(sorted(game) == [("alice", "ok"), ("house", "ok")] for game in games), games
    with PostgresStore(pg_url, "class", readonly=True) as store:
        assert store.bot_tokens()["alice"] == "resolved:alice"  # (her token itself is never stored)
    events = [json.loads(line)["event"] for line in (tmp_path / "out" / "organizer.jsonl").read_text().splitlines()]
    assert "games_queued" in events and "bot_connected" in events  # (the log operators.md names, the referee's too)
    assert not (tmp_path / "out" / "referee.jsonl").exists()
