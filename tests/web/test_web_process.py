"""The web server in a process of its own (``--web``): another pid at a lower priority, fed
the games played here; a web process that stops reading or dies never holds up or stops a
game; an address it cannot listen on is one line before anything is played."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from server.errors import UserError
from server.storage.replay import load_records
from server.storage.store import Store
from server.web.app import WebOptions
from server.web.live import public_records
from server.web.process import WEB_NICE, WebProcess, WebSetup
from server.web.serve import watching
from tests.web.conftest import start_craits, tournament_file
from tests.web.test_web_server import _open, _play, _read_all, _records


async def _get(url: str) -> Any:
    """The JSON at ``url`` (a 404's too)."""
    def get() -> Any:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            return json.loads(err.read())

    return await asyncio.to_thread(get)


def _port(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


def test_the_web_server_is_another_process_at_a_lower_priority_and_shows_the_games_played_here(
    tmp_path: Path,
) -> None:
    asyncio.run(_another_process(tmp_path))


async def _another_process(tmp_path: Path) -> None:
    async with watching(WebOptions(port=0), title="t") as web:
        assert web is not None
        assert web.pid != os.getpid() and web.pid in {p.pid for p in multiprocessing.active_children()}
        assert os.getpriority(os.PRIO_PROCESS, web.pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + WEB_NICE)
        game = asyncio.create_task(asyncio.to_thread(_play, tmp_path / "g1.jsonl", "g1", 50, 0.01))
        for _ in range(500):
            if [g for g in (await _get(web.url + "api/games"))["live"] if g["game_id"] == "g1"]:
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("g1 was never listed live")
        reader, writer = await _open(_port(web.url), "/api/games/g1/events")
        text, decisions = await asyncio.gather(_read_all(reader), game)
        writer.close()
        streamed = _records(text)
        assert len(streamed) == decisions + 3, "header, start, every decision, result"
        assert streamed == public_records(load_records(tmp_path / "g1.jsonl"))
    assert web.stats["most_spectators"] >= 1, "it said its figures as it stopped"
    assert web.pid not in {p.pid for p in multiprocessing.active_children()}, "it is gone with the block"


def test_a_web_process_that_stops_reading_never_holds_up_a_game(tmp_path: Path) -> None:
    """Stopped (SIGSTOP), it reads nothing: the games go on at their pace, and once the records
    waiting for it pass the bound, a game is cut off; it shows as aborted when the web process
    reads again."""
    asyncio.run(_stops_reading(tmp_path))


async def _stops_reading(tmp_path: Path) -> None:
    web = WebProcess(WebSetup(WebOptions(port=0)))
    await web.start()
    web.relay.max_backlog = 5000  # (a game here makes ~1900 records in 0.1 s; the pipe holds ~2 games)
    with web.installed():
        await asyncio.to_thread(_play, tmp_path / "whole.jsonl", "whole")
    played: list[str] = []
    os.kill(web.pid, signal.SIGSTOP)
    try:
        with web.installed():
            for n in range(1, 40):
                started = time.monotonic()
                await asyncio.wait_for(asyncio.to_thread(_play, tmp_path / f"g{n}.jsonl", f"g{n}", seed=n), 30)
                assert time.monotonic() - started < 10, "a game never waits for the web process"
                played.append(f"g{n}")
                if web.relay.cut:
                    break
        assert web.relay.cut == 1, "the pipe's buffers filled, then the relay's backlog, and a game was cut off"
    finally:
        os.kill(web.pid, signal.SIGCONT)
    try:
        cut = played[-1]
        for _ in range(500):
            game = await _get(web.url + f"api/games/{cut}")
            if game.get("state") == "over":
                break
            await asyncio.sleep(0.02)
        assert game["state"] == "over" and game["aborted"], game
        whole = await _get(web.url + "api/games/whole")
        assert whole["state"] == "over" and not whole["aborted"], "the game played before it stopped was shown whole"
    finally:
        await web.close()


def test_an_address_the_web_process_cannot_listen_on_is_a_user_error_and_no_process_stays(tmp_path: Path) -> None:
    asyncio.run(_cannot_listen())


async def _cannot_listen() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UserError, match=f"--web 127.0.0.1:{port}: the port is in use"):
            async with watching(WebOptions(port=port)):
                raise AssertionError("nothing runs when the web server cannot listen")
    assert not [p for p in multiprocessing.active_children() if p.name == "craits-web"]


# --------------------------------------------------------------------------- the command line


def test_an_address_that_passes_the_early_check_but_not_the_web_process_is_one_line_and_nothing_is_played(
    tmp_path: Path,
) -> None:
    """Port 0 is not probed early; an address that is not this machine's is refused by the web
    process: one line, and no game is played."""
    config = tournament_file(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "tournament", "run", str(config), "--out", str(tmp_path / "out"),
         "--web", "203.0.113.7:0"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("craits: error: --web 203.0.113.7:0: cannot listen there")
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "out").rglob("*.jsonl.tmp")) and not list((tmp_path / "out").glob("replays/*"))
    with Store(tmp_path / "out" / Store.FILENAME, readonly=True) as store:
        assert store.counts()[0] == 0, "no game was played"


def test_a_tournament_goes_on_when_its_web_process_is_killed(tmp_path: Path) -> None:
    """Killed mid-tournament, the web process is reported once (a warning in the log, a line on
    stderr) and every game is still played and recorded."""
    config = tournament_file(tmp_path, name="killcup")
    out = tmp_path / "out"
    running = start_craits(["tournament", "run", str(config), "--out", str(out), "--web", "127.0.0.1:0",
                            "--no-progress"], tmp_path)
    try:
        running.wait_for("a game live", lambda: running.get("/api/games")["live"])
        log = out / "referee.jsonl"
        ready = running.wait_for("the web process's pid in the log", lambda: log.is_file() and [
            json.loads(line) for line in log.read_text().splitlines() if '"web_process_ready"' in line])
        pid = ready[0]["pid"]
        assert pid != running.process.pid
        os.kill(pid, signal.SIGKILL)
        with Store(out / Store.FILENAME, readonly=True) as store:
            done, total = store.counts()
        assert done < total, "killed mid-tournament"
        assert running.process.wait(timeout=300) == 0, "".join(running.lines[-20:])
    finally:
        running.stop()
    with Store(out / Store.FILENAME, readonly=True) as store:
        done, total = store.counts()
    assert done == total > 0, "every game was played and recorded"
    assert len(list((out / "replays").glob("*.jsonl.gz"))) == total
    said = "".join(running.lines)
    assert said.count(f"web: the web server (pid {pid}) was killed (signal 9); the games go on without it") == 1
    assert "Traceback" not in said
    lost = [json.loads(line) for line in log.read_text().splitlines() if '"web_process_lost"' in line]
    assert len(lost) == 1 and lost[0]["level"] == "warning" and lost[0]["pid"] == pid
