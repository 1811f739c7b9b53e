"""Issue 15: a launched bot reaches only its referee. Each hostile bot plays a whole game
legally while it tries one escape; the attempt fails, and the game and the other seats
finish normally."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from server.transport import sandbox

from .conftest import blocked, play, victim_folder


def test_a_bot_cannot_read_the_tournament_database(tmp_path: Path) -> None:
    out = tmp_path / "logs"
    out.mkdir()
    db = out / "tournament.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE tokens (bot TEXT, token TEXT)")
        connection.execute("INSERT INTO tokens VALUES ('victim', 'the-victims-token')")
    db.chmod(0o644)  # readable by every user: only the sandbox's view keeps it out
    played = play(tmp_path, "read", db, out / "referee.jsonl")
    assert "No such file or directory" in blocked(played, "read")
    played.others_finished_normally()


def test_a_bot_cannot_read_another_bots_folder(tmp_path: Path) -> None:
    secret = victim_folder(tmp_path) / "secret.txt"
    played = play(tmp_path, "read", secret, secret.parent)
    blocked(played, "read")
    played.others_finished_normally()


def test_a_bot_cannot_read_root_only_files_although_the_referee_is_root(tmp_path: Path) -> None:
    played = play(tmp_path, "read", "/etc/shadow", "/root/.bash_history", "/proc/1/environ", "/proc/kcore")
    blocked(played, "read")
    played.others_finished_normally()


def test_a_bot_cannot_read_another_processes_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The referee's environment (which a token or a database password may be in), and any
    other process's: none is visible, and none is passed on to the bot."""
    secret = f"referee-secret-{secrets.token_hex(8)}"
    monkeypatch.setenv("CRAITS_TEST_SECRET", secret)
    played = play(tmp_path, "environ", secret)
    assert "the secret is in none of the" in blocked(played, "environ")
    played.others_finished_normally()


def test_a_bot_cannot_kill_or_trace_a_process_outside_its_sandbox(tmp_path: Path) -> None:
    with subprocess.Popen(["sleep", "120"]) as outsider:
        try:
            played = play(tmp_path, "signal", outsider.pid)
            assert outsider.poll() is None, "the bot killed a process outside its sandbox"
        finally:
            outsider.kill()
    said = blocked(played, "signal")
    assert "kill: No such process" in said and "ptrace: No such process" in said
    played.others_finished_normally()


def test_a_bot_cannot_open_a_tcp_connection_not_even_to_the_referees_port(tmp_path: Path) -> None:
    accepted: list[object] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0.2)
        done = threading.Event()

        def accept() -> None:
            while not done.is_set():
                try:
                    accepted.append(listener.accept())
                except TimeoutError:
                    continue

        thread = threading.Thread(target=accept)
        thread.start()
        try:
            played = play(tmp_path, "connect", listener.getsockname()[1], 50051)
        finally:
            done.set()
            thread.join()
    said = blocked(played, "connect")  # its own network namespace: its own loopback, nothing listening
    assert "Connection refused" in said or "Network is unreachable" in said, said
    assert accepted == []
    played.others_finished_normally()


def test_a_bot_cannot_write_into_logs_or_a_replay(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    targets = [logs / "referee.jsonl", logs / "bots" / "planted.log", tmp_path / "replays" / "g-write.jsonl",
               victim_folder(tmp_path) / "secret.txt"]
    for path in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        path.chmod(0o666)  # writable by every user: only the sandbox's view keeps it out
    played = play(tmp_path, "write", *targets)
    blocked(played, "write")
    for path in [*targets, *(tmp_path / "replays").iterdir()]:
        assert b"written by a hostile bot" not in path.read_bytes(), path
    played.others_finished_normally()


def test_a_bot_cannot_start_500_processes(tmp_path: Path) -> None:
    played = play(tmp_path, "fork", 500)
    said = blocked(played, "fork")
    started = int(said.split("after ")[1].split(" ")[0])
    assert started < sandbox.Limits().processes, said
    played.others_finished_normally()


def test_a_bot_that_allocates_4_gib_is_stopped_at_its_memory_limit(tmp_path: Path) -> None:
    played = play(tmp_path, "allocate", 4 * 2**30)
    limit = sandbox.size_text(sandbox.Limits().memory)
    if f"bot process killed: memory limit {limit}" not in played.hostile.events:  # a memory cgroup kills it
        assert "MemoryError" in blocked(played, "allocate")  # an address-space limit refuses it
    played.others_finished_normally()


def test_a_bot_cannot_write_2_gib_to_its_tmp(tmp_path: Path) -> None:
    played = play(tmp_path, "fill-tmp", 2 * 2**30)
    said = blocked(played, "fill-tmp")
    assert f"after {sandbox.Limits().tmp // 2**20} MiB: No space left on device" in said, said
    played.others_finished_normally()


def test_a_bot_that_burns_cpu_between_its_turns_is_stopped_at_its_cpu_limit(tmp_path: Path) -> None:
    played = play(tmp_path, "burn", limits=sandbox.Limits(cpu_s=1), short_game=False)
    assert "bot process killed: CPU limit 1 s" in played.hostile.events, played.hostile
    assert "ESCAPED" not in played.said
    played.others_finished_normally()


def test_a_process_a_bot_leaves_behind_in_a_session_of_its_own_dies_with_it(tmp_path: Path) -> None:
    tag = f"{time.time() % 1000 + 1000:.6f}"  # a sleep no other process has
    played = play(tmp_path, "setsid", tag)
    assert "left a process behind" in played.said
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", tag.encode()]:
                left.append(pid)
        except OSError:
            continue
    for pid in left:
        os.kill(int(pid), signal.SIGKILL)
    assert left == [], "a process of the bot outlived its game"
    played.others_finished_normally()


def test_a_bot_kept_for_another_game_gets_its_cpu_seconds_afresh(tmp_path: Path) -> None:
    """For a process pool: the CPU limit is one of a game, not of the process's life."""
    import asyncio
    import sys

    from server.transport.launcher import LaunchedBot

    tmp_path.chmod(0o755)
    work = "import time\nend = time.process_time() + 4\nwhile time.process_time() < end: pass\nprint('worked 4 s')\n"
    socket_path = sandbox.socket_path()
    Path(socket_path).touch()
    box = sandbox.Sandbox(socket_path, sandbox.Limits(cpu_s=2))

    async def one(games: bool) -> str:
        bot = await LaunchedBot.start((sys.executable, "-c", work), server="", token="t", name="busy", cwd=tmp_path,
                                      sandbox=box)
        while games and bot.alive:  # a "game" of about one CPU second each
            await asyncio.sleep(1)
            bot.new_game()
        await bot.process.wait()
        await bot.stop(0)
        return bot.verdict()

    try:
        probe = box.confine(("true",), cwd=tmp_path)
        counted_per_game = probe.cpu_group is not None
        probe.release()
        if not counted_per_game:
            if os.environ.get("CI"):
                pytest.fail("no cpuacct cgroup can be made here, and CI must test per-game CPU seconds")
            pytest.skip("no cpuacct cgroup here: CPU seconds are counted per launch")
        assert asyncio.run(one(games=False)) == "killed: CPU limit 2 s"
        assert asyncio.run(one(games=True)) == ""
    finally:
        sandbox.remove_socket(socket_path)
