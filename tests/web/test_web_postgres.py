"""The board served from a PostgreSQL store: the same pages as from SQLite for the same
tournament, updated as workers record games, and one-line errors for a bad store.

Uses the real PostgreSQL server of ``tests/conftest.py`` (skipped without it, unless CI is set).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from server.storage.postgres import PostgresStore, migrate
from server.storage.replay import load_records, verify_replay
from server.web.board import LIVE_ELSEWHERE, LIVE_HERE
from tests.cli import run_cli
from tests.postgres_server import PostgresServer
from tests.tournaments.configs import builtin_tournament
from tests.web.conftest import Running, start_craits, tournament_file
from tournaments.config import load_config
from tournaments.distributed import start_tournament_pg

BOTS = {"rand-a": "random", "rand-b": "random", "first": "first", "greedy": "greedy"}


def _served(running: Running) -> dict[str, Any]:
    """Everything the board's JSON API says of a finished tournament."""
    games = running.get("/api/games")
    progress = running.get("/api/progress")
    return {
        "standings": running.get("/api/standings"),
        "games": games,
        "bots": {bot: running.get(f"/api/bots/{bot}") for bot in BOTS},
        "game": running.get(f"/api/games/{games['recorded'][5]['game_id']}"),
        "progress": {k: progress[k] for k in ("name", "kind", "done", "total", "finished")},
    }


def _page(running: Running, path: str) -> str:
    with urllib.request.urlopen(running.url + path.lstrip("/"), timeout=10) as response:
        return str(response.read().decode())


def test_the_board_from_postgresql_is_the_board_from_sqlite(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "samecup.toml"
    file.write_text(builtin_tournament("samecup", 11, 2, BOTS), encoding="utf-8")
    assert run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "lite"), "--no-progress")[0] == 0
    code, _, err = run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "pg"), "--store", pg_url,
                           "--no-progress")
    assert code == 0, err
    lite = start_craits(["web", str(tmp_path / "lite"), "--address", "127.0.0.1:0"], tmp_path)
    pg = start_craits(["web", pg_url, "--address", "127.0.0.1:0"], tmp_path)  # the URL alone: its one tournament
    try:
        from_lite, from_pg = _served(lite), _served(pg)
        assert from_pg == from_lite
        assert from_pg["progress"] == {"name": "samecup", "kind": "tournament", "done": 24, "total": 24,
                                       "finished": True}
        assert len(from_pg["games"]["recorded"]) == 24 and all(g["replay"] for g in from_pg["games"]["recorded"])
        assert from_pg["bots"]["greedy"]["ratings"], "the rating plot has its points"

        game_id = from_pg["games"]["recorded"][3]["game_id"]
        replay = tmp_path / "from-pg.jsonl.gz"
        with urllib.request.urlopen(f"{pg.url}api/games/{game_id}/replay", timeout=10) as response:
            replay.write_bytes(response.read())
        with PostgresStore(pg_url, "samecup", readonly=True) as store:
            assert replay.read_bytes() == store.replay(game_id), "the replay is the database's copy"
        assert verify_replay(replay).game_id == game_id
        lite_replay = load_records(tmp_path / "lite" / "replays" / f"{game_id}.jsonl.gz")
        assert [(r.get("n"), r.get("action")) for r in load_records(replay)] == [
            (r.get("n"), r.get("action")) for r in lite_replay
        ], "the same game, move for move"
        assert f"Craits replay {game_id}" in _page(pg, f"/games/{game_id}")
        assert LIVE_ELSEWHERE in _page(pg, "/") and LIVE_ELSEWHERE not in _page(lite, "/")
        assert pg.status("/bots/nobody") == 404 and pg.status("/api/games/nope/replay") == 404
    finally:
        assert lite.stop() == 0 and pg.stop() == 0


def _stream_events(url: str, into: list[tuple[str, Any]], stop: threading.Event) -> None:
    """Collect the board's server-sent events (kind, data) until ``stop``."""
    with urllib.request.urlopen(url + "api/stream", timeout=120) as response:
        kind = ""
        while not stop.is_set():
            line = response.readline().decode()
            if not line:
                return
            if line.startswith("event: "):
                kind = line[7:].strip()
            elif line.startswith("data: "):
                into.append((kind, json.loads(line[6:])))


def test_the_board_on_postgresql_follows_the_workers_as_they_record_games(tmp_path: Path, pg_url: str) -> None:
    """The coordinator queues the games and plays none (``--local-workers 0``); a ``craits
    worker --web`` plays them, live on its own pages; the coordinator's ``--web`` and ``craits
    web NAME --store URL`` both show the games as they are recorded."""
    file = tournament_file(tmp_path, deals=2, delay=0.004, name="followed")
    coordinator = start_craits(
        ["tournament", "run", str(file), "--store", pg_url, "--local-workers", "0", "--out", str(tmp_path / "out"),
         "--no-progress", "--web", "127.0.0.1:0"], tmp_path,
    )
    viewer = start_craits(["web", "followed", "--store", pg_url, "--address", "127.0.0.1:0"], tmp_path)
    events: list[tuple[str, Any]] = []
    stop = threading.Event()
    listener = threading.Thread(target=_stream_events, args=(viewer.url, events, stop), daemon=True)
    worker = None
    try:
        for running in (coordinator, viewer):
            progress = running.get("/api/progress")
            assert (progress["done"], progress["total"], progress["finished"]) == (0, 6, False)
        assert LIVE_HERE in _page(coordinator, "/") and LIVE_ELSEWHERE in _page(viewer, "/")
        listener.start()
        worker = start_craits(  # (with --web: the games it plays are live on its own pages)
            ["worker", "--store", pg_url, "--concurrency", "1", "--log-dir", str(tmp_path / "logs"),
             "--web", "127.0.0.1:0"], tmp_path,
        )
        playing = worker.wait_for("a game live on the worker's pages", lambda: worker.get("/api/games")["live"])
        assert playing[0]["bots"] and playing[0]["game_id"].startswith("d0001-")
        seen = coordinator.wait_for("a game recorded, seen by the coordinator's board",
                                    lambda: coordinator.get("/api/progress")["done"])
        assert 0 < seen < 6, "the board showed the tournament while it was played"
        assert coordinator.get("/api/games")["live"] == [], "the worker's games are not live here"
        viewer.wait_for("every game recorded", lambda: viewer.get("/api/progress")["done"] == 6, timeout=120)
        assert coordinator.process.wait(timeout=60) == 0, "".join(coordinator.lines[-20:])
        viewer.wait_for("the end of the tournament", lambda: viewer.get("/api/progress")["finished"])
        standings = viewer.get("/api/standings")
        assert standings["games_recorded"] == 6
        assert json.loads((tmp_path / "out" / "standings.json").read_text())["standings"] == standings["standings"]
        viewer.wait_for("the last standings streamed",
                        lambda: any(k == "standings" and d["games_recorded"] == 6 for k, d in events))
        recorded = [d["games_recorded"] for k, d in events if k == "standings"]
        assert recorded[0] < 6 and recorded == sorted(recorded), "the stream followed the games as they came"
        done = [d["done"] for k, d in events if k == "progress"]
        assert done[-1] == 6 and len(set(done)) > 1
        assert len(worker.get("/api/games")["recorded"]) == 6, "the worker's pages list the games it finished"
    finally:
        stop.set()
        if worker is not None:
            worker.process.terminate()
            worker.process.wait(timeout=60)
        coordinator.stop()
        assert viewer.stop() == 0


def _craits(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CRAITS_STORE"}
    return subprocess.run([sys.executable, "-m", "server.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["web", "mysql://root@127.0.0.1/craits"], "is not a PostgreSQL URL"),
        (["web", "somecup", "--store", "sqlite:///tmp/x.db"], "is not a PostgreSQL URL"),
        (["web", "postgresql://postgres@127.0.0.1:1/nothing"], "cannot connect"),
        (["web", "somecup"], "a tournament's name needs --store URL"),
    ],
)
def test_a_bad_store_is_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    done = _craits(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_database_without_that_tournament_is_one_line(tmp_path: Path, pg_url: str) -> None:
    bare = _craits("web", pg_url, cwd=tmp_path)
    assert bare.returncode == 2 and "no craits tables" in bare.stderr and "Traceback" not in bare.stderr
    migrate(pg_url)
    empty = _craits("web", pg_url, cwd=tmp_path)
    assert empty.returncode == 2 and "holds no tournament or ladder" in empty.stderr
    named = _craits("web", "nosuch", "--store", pg_url, cwd=tmp_path)
    assert named.returncode == 2 and "holds no tournament or ladder named 'nosuch'" in named.stderr
    for name in ("one", "two"):  # stored and scheduled, not played
        file = tmp_path / f"{name}.toml"
        file.write_text(builtin_tournament(name, 1, 1, BOTS), encoding="utf-8")
        start_tournament_pg(load_config(file), file.read_text(), str(file), pg_url).close()
    several = _craits("web", pg_url, cwd=tmp_path)
    assert several.returncode == 2 and "holds 2 tournaments and ladders (one, two): name one" in several.stderr


def test_a_stopped_database_makes_a_replay_page_wait_not_crash(
    tmp_path: Path, pg_url: str, pg_server: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The database stops under ``craits web NAME --store URL``: a replay it has not read yet
    is a 503 page saying to try again (one log line, no traceback); the board stays up and
    the page comes back with the database."""
    file = tmp_path / "downcup.toml"
    file.write_text(builtin_tournament("downcup", 2, 1, BOTS), encoding="utf-8")
    code, _, err = run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "out"), "--store", pg_url,
                           "--no-progress")
    assert code == 0, err
    viewer = start_craits(["web", "downcup", "--store", pg_url, "--address", "127.0.0.1:0"], tmp_path)
    try:
        game = viewer.get("/api/games")["recorded"][0]["game_id"]
        pg_server.stop("immediate")
        try:
            for path in (f"/games/{game}", f"/api/games/{game}/replay"):
                with pytest.raises(urllib.error.HTTPError) as failed:
                    urllib.request.urlopen(viewer.url + path.lstrip("/"), timeout=60)
                body = failed.value.read().decode()
                assert failed.value.code == 503 and "try again in a moment" in body, (path, body)
                assert "127.0.0.1" not in body, "the page does not say where the database is"
            assert viewer.status("/api/standings") == 200, "the board is served from what was read"
        finally:
            pg_server.start()
        assert viewer.status(f"/games/{game}") == 200
    finally:
        assert viewer.stop() == 0
    output = "".join(viewer.lines)
    assert "Traceback" not in output and "Error handling request" not in output, output
    assert "web_store_unavailable" in output
