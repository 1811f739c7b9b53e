"""Tournaments and ladders on a real PostgreSQL server through the `craits` command:
the same file gives byte-identical standings on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.storage.replay import verify_replay
from tests.cli import run_cli
from tests.tournaments.configs import builtin_tournament

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
