"""Tournaments and ladders on a real PostgreSQL server through the `craits` command:
the same file gives byte-identical standings on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from server.storage.postgres import migrate
from server.storage.replay import is_compact, verify_replay
from tests.cli import run_cli
from tests.tournaments.configs import builtin_tournament, class_folder

ROOT = Path(__file__).resolve().parents[2]
BOTS = {"rand-a": "random", "rand-b": "random", "first": "first", "greedy": "greedy"}


def write_file(tmp_path: Path, name: str = "pgcup", deals: int = 2, seed: int = 11) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(builtin_tournament(name, seed, deals, BOTS), encoding="utf-8")
    return path


def test_the_same_tournament_on_sqlite_and_postgresql_gives_identical_standings(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    file = write_file(tmp_path)
    code, sqlite_out, _ = run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "lite"))
    assert code == 0
    code, pg_out, err = run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "pg"),
                                "--store", pg_url, "--no-progress")
    assert code == 0, err
    assert pg_out == sqlite_out
    for name in ("standings.json", "standings.csv"):
        assert (tmp_path / "pg" / name).read_bytes() == (tmp_path / "lite" / name).read_bytes(), name
    assert not (tmp_path / "pg" / "tournament.db").exists()
    games = json.loads((tmp_path / "pg" / "standings.json").read_text())["games"]
    assert len(games) == 4 * 3 * 2  # 4 tables of 3, 2 deals, 3 rotations
    for game in games:  # every replay came out of the database whole, and the viewer has its page
        assert verify_replay(tmp_path / "pg" / game["replay"]).game_id == game["game_id"]
        assert (tmp_path / "pg" / game["viewer"]).is_file()
    code, out, _ = run_cli(capsys, "tournament", "standings", str(file), "--store", pg_url)
    assert code == 0 and out == sqlite_out


def test_a_killed_coordinator_is_resumed_to_the_same_standings(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    file = write_file(tmp_path, "killed", deals=2)
    migrate(pg_url)
    assert run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "lite"))[0] == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CRAITS_STORE", None)
    coordinator = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "tournament", "run", str(file), "--store", pg_url, "--out",
         str(tmp_path / "pg"), "--no-progress"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while recorded(pg_url, "killed") < 6:
            assert time.monotonic() < deadline and coordinator.poll() is None
            time.sleep(0.05)
        os.kill(coordinator.pid, signal.SIGKILL)  # with its local workers, mid-game
    finally:
        coordinator.kill()
        coordinator.wait()
    assert recorded(pg_url, "killed") < 24
    code, _, err = run_cli(capsys, "tournament", "resume", str(file), "--store", pg_url, "--out",
                           str(tmp_path / "pg"), "--no-progress", "--stalled-after", "2")
    assert code == 0, err
    assert recorded(pg_url, "killed") == 24
    for name in ("standings.json", "standings.csv"):
        assert (tmp_path / "pg" / name).read_bytes() == (tmp_path / "lite" / name).read_bytes(), name


def test_a_ladder_runs_on_postgresql_and_continues(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    file = write_file(tmp_path, "ladderpg")
    code, _, err = run_cli(capsys, "ladder", "run", str(file), "--store", pg_url, "--rounds", "2",
                           "--out", str(tmp_path / "out"))
    assert code == 0, err
    code, _, err = run_cli(capsys, "ladder", "run", str(file), "--store", pg_url, "--rounds", "1",
                           "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert recorded(pg_url, "ladderpg") == 3 * 3  # three rounds of a table of 3 in every rotation
    code, out, _ = run_cli(capsys, "ladder", "standings", "ladderpg", "--store", pg_url)
    assert code == 0 and "greedy" in out
    code, _, err = run_cli(capsys, "tournament", "standings", "ladderpg", "--store", pg_url)
    assert code == 2 and "is a ladder" in err


def test_replay_export_writes_the_stored_replays(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    file = write_file(tmp_path, "exported", deals=1)
    assert run_cli(capsys, "tournament", "run", str(file), "--store", pg_url, "--out", str(tmp_path / "out"),
                   "--no-progress")[0] == 0
    code, _, err = run_cli(capsys, "replay", "export", "exported", "--store", pg_url, "-o", str(tmp_path / "x"))
    assert code == 0 and "12 replay(s) written" in err
    exported = sorted((tmp_path / "x").iterdir())
    for path in exported:  # (format 2: the database holds each replay compressed, as the file is)
        assert path.name.endswith(".jsonl.gz") and is_compact(path), path
        assert path.read_bytes() == (tmp_path / "out" / "replays" / path.name).read_bytes()
    assert verify_replay(exported[0]).game_id == exported[0].name.removesuffix(".jsonl.gz")
    code, _, err = run_cli(capsys, "replay", "export", "nosuch", "--store", pg_url, "-o", str(tmp_path / "y"))
    assert code == 2 and "no such tournament" in err


def recorded(url: str, tournament: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM craits_results WHERE tournament = %s", (tournament,)).fetchone()
    return int(row[0]) if row else 0


def test_crait_store_in_the_environment_picks_postgresql_but_not_for_a_sqlite_folder(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    file = write_file(tmp_path, "envcup", deals=1)
    assert run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "lite"))[0] == 0
    monkeypatch.setenv("CRAITS_STORE", pg_url)
    code, lite_out, _ = run_cli(capsys, "tournament", "standings", str(tmp_path / "lite"))
    assert code == 0 and "envcup" in lite_out  # the folder's own SQLite database
    assert run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "pg"), "--no-progress")[0] == 0
    assert recorded(pg_url, "envcup") == 12
    code, _, err = run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "pg"))
    assert code == 2 and "already holds tournament 'envcup', finished" in err and "--overwrite" in err
    code, _, err = run_cli(capsys, "tournament", "resume", str(tmp_path / "pg"))
    assert code == 2 and "give the tournament's file or its name" in err


def test_a_sandboxed_bot_whose_folder_holds_the_output_is_refused_with_a_store_too(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on SQLite: this command's local workers would launch the bot in the file's folder,
    which holds logs/<name>/ and the replays of the games played so far. Refused before
    anything is stored, with SQLite's message; a resume of a stored one likewise."""
    class_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    migrate(pg_url)
    says = (f"craits: error: bot 'alice' could read the output folder logs/class, which is inside its cwd (by default "
            f"the tournament file's folder) {tmp_path}: the replays there show the deals still to be played; ")
    for command in ("tournament", "ladder"):
        code, _, err = run_cli(capsys, command, "run", "class.toml", "--store", pg_url, "--no-progress"
                               if command == "tournament" else "--rounds=1")
        assert code == 2 and err.strip() == says + (
            'give each bot a folder of its own (cwd = "..." in the file), or put the output elsewhere (--out)'), err
    assert not (tmp_path / "logs").exists()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM craits_tournaments").fetchone() == (0,)
    code, out, err = run_cli(capsys, "tournament", "run", "class.toml", "--store", pg_url, "--no-sandbox",
                             "--no-progress")  # (trusted bots read everything anyway)
    assert code == 0 and "class: 2/2 games (complete)" in out, err
    code, _, err = run_cli(capsys, "tournament", "resume", "class", "--store", pg_url, "--out", "logs/class")
    assert code == 2 and err.strip() == says + "move the folder out of it, and resume it there", err


def test_the_organizers_log_on_postgresql_is_named_for_it_not_for_a_worker(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tournament run --store`` writes its events (the queue's, its local workers') to
    ``organizer.jsonl`` in the output folder and says so; ``worker.jsonl`` is a worker's."""
    file = write_file(tmp_path, "logged", deals=1)
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, "tournament", "run", str(file), "--store", pg_url, "--out", str(out), "--no-progress")
    assert code == 0, err
    assert f"log: {out / 'organizer.jsonl'}\n" in err, err
    events = [json.loads(line)["event"] for line in (out / "organizer.jsonl").read_text().splitlines()]
    assert "games_queued" in events and "game_recorded" in events, events
    assert not (out / "worker.jsonl").exists()
