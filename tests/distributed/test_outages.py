"""A competition on PostgreSQL rides out its faults: a worker killed outright is named on the
organizer's terminal and on the board within seconds and its game is played again; a database
stopped between rounds or in the middle of one is waited for, however long, and the ladder and
its workers go on by themselves with nothing lost and nothing played twice."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from server.storage.postgres import PostgresStore, migrate
from server.web.board import Board, postgres_source
from tests.cli import run_cli
from tests.distributed.test_workers import (
    ROOT,
    SLOW_BOTS,
    Procs,
    finished,
    live_workers,
    query,
    recorded,
    slow_file,
    wait_for,
)
from tests.postgres_server import PostgresServer

LONG_OUTAGE_S = 90.0
"""The issue's outage: longer than the minute a store operation retried on its own (the ladder
then stopped), than the queue's pool timeouts (30 s), and than a worker's backoff."""

SLOW_LADDER = """name = "slowladder"
table_size = 2
seed = 9
concurrency = 2

[flags]
short_game = true

""" + SLOW_BOTS
"""A ladder of two bots that think 2 ms a move: a round is two games of about five seconds."""


@pytest.fixture
def url(pg_url: str) -> str:
    migrate(pg_url)
    return pg_url


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    p = Procs(tmp_path)
    try:
        yield p
    finally:
        p.close()


def worker(procs: Procs, name: str, url: str, *extra: str, concurrency: int = 2) -> Any:
    """A worker with the default heartbeat and --stalled-after (2 s, 30 s)."""
    return procs.craits(name, "worker", "--store", url, "--concurrency", str(concurrency), "--name", name,
                        "--log-dir", str(procs.tmp_path / name), *extra)


def doing(url: str, tournament: str) -> list[str]:
    rows = query(url, "SELECT args->>'game_id' FROM procrastinate_jobs WHERE status = 'doing'"
                 " AND args->>'tournament' = %s ORDER BY 1", tournament)
    return [r[0] for r in rows]


def played_once_each(procs: Procs, workers: list[str], url: str, tournament: str) -> None:
    """Every game recorded once, and played to its end once: no worker recorded or dropped a
    second copy of any game (a game played twice ends as a duplicate dropped)."""
    games = [g for g, _ in recorded(url, tournament)]
    assert len(games) == len(set(games))
    ends = Counter(e["game"] for name in workers for e in procs.log_events(name)
                   if e["event"] in ("game_recorded", "duplicate_result_dropped"))
    assert set(ends) == set(games) and set(ends.values()) == {1}, ends


def test_a_killed_worker_is_named_within_seconds_and_its_game_played_again(
    tmp_path: Path, url: str, procs: Procs
) -> None:
    """With the default --stalled-after (30 s) a killed worker's games waited half a minute and
    nobody said why; its connections close when it dies, and that is enough to name it."""
    file = slow_file(tmp_path)
    worker(procs, "victim", url)
    wait_for("the worker", lambda: live_workers(url) == 1)
    coord = procs.craits("coordinator", "tournament", "run", str(file), "--store", url, "--out",
                         str(tmp_path / "out"), "--no-progress", "--local-workers", "0")
    taken = wait_for("both games in play", lambda: len(doing(url, "slowcup")) == 2 and doing(url, "slowcup"))
    assert compose_worker_health(url, "victim") == 0  # (deploy/compose.yaml's check, on this worker)
    os.kill(procs.started[0].pid, signal.SIGKILL)
    killed = time.monotonic()
    procs.started[0].wait()
    said = wait_for("the organizer names the worker", lambda: [
        line for line in procs.output("coordinator").splitlines() if "worker victim" in line], timeout=30)
    assert time.monotonic() - killed < 10.0, said
    assert re.fullmatch(r"slowcup: worker victim on \S+ is gone \(its connections closed\); its game\(s\) in hand "
                        r"\(d0001-t00001-r1, d0001-t00001-r2\) are back in the queue for another worker", said[0]), said
    board = Board(postgres_source(url, "slowcup"))
    try:
        board.refresh()
        gone = board.snapshot.progress["workers_gone"]
    finally:
        board.close()
    assert [(g["name"], g["why"], g["games"]) for g in gone] == [("victim", "its connections closed", taken)]
    assert compose_worker_health(url, "victim") == 1
    worker(procs, "heir", url)
    assert finished(coord, procs, "coordinator") == 0, procs.output("coordinator")
    assert recorded(url, "slowcup") == [(game, "heir") for game in taken]


def compose_worker_health(url: str, name: str) -> int:
    """The exit status of deploy/compose.yaml's health check of a worker (its heartbeat in the
    database), run here for the worker ``name``."""
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text(encoding="utf-8"))
    test = compose["services"]["worker"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"], f"the worker's health check is a python -c: {test}"
    code = test[3]
    env = {**os.environ, "CRAITS_STORE": url, "HOSTNAME": name}
    return subprocess.run([sys.executable, "-c", code], env=env, check=False, timeout=30).returncode


def test_the_ladder_waits_out_a_database_stopped_between_rounds_and_goes_on(
    tmp_path: Path, url: str, pg_server: PostgresServer, procs: Procs, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The server is stopped at the very moment the ladder reads a round's results (the
    ladder's own reading of them starts the outage, so it cannot fall anywhere else) and
    started again 90 s later. The ladder used to block its event loop in a minute of retries
    there, then stop; now it says it waits, serves on, and plays its rounds when the database is
    back. (Any outage longer than the 2 s a store call retries on its own takes this same path.)"""
    folder = tmp_path
    slow_file(folder)  # (the bots' folder)
    file = folder / "ladder.toml"
    file.write_text(SLOW_LADDER.replace("0.002", "0"))
    worker(procs, "steady", url)
    wait_for("the worker", lambda: live_workers(url) == 1)
    reads = 0
    outage: list[threading.Thread] = []
    results = PostgresStore.results

    def stop_the_server_on_the_second_read(self: PostgresStore, after: int = -1) -> Any:
        nonlocal reads
        reads += 1
        if reads == 2:  # (the first is at the start; the second, after round 1)
            pg_server.stop("immediate")
            outage.append(threading.Thread(target=lambda: (time.sleep(LONG_OUTAGE_S), pg_server.start())))
            outage[0].start()
        return results(self, after)

    monkeypatch.setattr(PostgresStore, "results", stop_the_server_on_the_second_read)
    try:
        code, _, err = run_cli(capsys, "ladder", "run", str(file), "--store", url, "--rounds", "3", "--out",
                               str(tmp_path / "out"), "--local-workers", "0")
    finally:
        for thread in outage:
            thread.join()
    assert code == 0, err
    lines = err.splitlines()
    lost = [i for i, line in enumerate(lines) if "waiting for it as long as it takes" in line]
    back = [i for i, line in enumerate(lines) if re.fullmatch(r"slowladder: the database is back after (8\d|9\d|1\d\d) "
                                                               r"s; the ladder goes on", line)]
    still = [i for i, line in enumerate(lines) if re.fullmatch(r"slowladder: still waiting for the database \(lost "
                                                                r"(6\d|7\d|8\d) s ago, reading the results\)", line)]
    assert len(lost) == 1 and len(still) == 1 and len(back) == 1 and lost[0] < still[0] < back[0], err  # (once a minute)
    assert lines[lost[0]].startswith("slowladder: reading the results: ") and "unreachable" in lines[lost[0]], err
    assert "stopped after 3 new round(s) (--rounds 3;" in err, err
    played_once_each(procs, ["steady"], url, "slowladder")
    assert len(recorded(url, "slowladder")) == 3 * 2
    code, out, _ = run_cli(capsys, "ladder", "standings", "slowladder", "--store", url)
    assert code == 0 and "the last run stopped after 3 new rounds (--rounds 3, " in out, out


def test_a_ladder_and_its_workers_ride_out_a_database_stopped_90_s_mid_round(
    tmp_path: Path, url: str, pg_server: PostgresServer, procs: Procs
) -> None:
    """The server dies while both games of a round are being played and is back 90 s later: the
    workers keep their results until they can record them, the ladder waits (saying so, then
    once a minute) and goes on to its last round; every game is recorded once, played once."""
    slow_file(tmp_path)
    file = tmp_path / "ladder.toml"
    file.write_text(SLOW_LADDER)
    for name in ("w1", "w2"):
        worker(procs, name, url, concurrency=1)
    wait_for("the workers", lambda: live_workers(url) == 2)
    ladder = procs.craits("ladder", "ladder", "run", str(file), "--store", url, "--rounds", "3", "--out",
                          str(tmp_path / "out"), "--local-workers", "0")
    wait_for("round 2 in play", lambda: len(doing(url, "slowladder")) == 2 and len(recorded(url, "slowladder")) == 2,
             timeout=120)
    time.sleep(1.0)
    pg_server.stop("immediate")
    try:
        time.sleep(LONG_OUTAGE_S)
    finally:
        pg_server.start()
    assert finished(ladder, procs, "ladder", timeout=240) == 0, procs.output("ladder")
    said = procs.output("ladder")
    assert "Traceback" not in said, said
    assert len([line for line in said.splitlines() if "waiting for it as the workers do" in line]) == 1, said
    assert [line for line in said.splitlines() if re.fullmatch(
        r"slowladder: still waiting for the database \(lost (6\d|7\d|8\d) s ago\): Ctrl-C stops this command, the "
        r"games stay queued", line)], said  # (once a minute)
    assert re.search(r"slowladder: the database is back after (8\d|9\d|1\d\d) s", said), said
    assert "round 3:" in said
    for name in ("w1", "w2"):
        assert procs.started[("w1", "w2").index(name)].poll() is None, procs.output(name)  # waited, never crashed
    played_once_each(procs, ["w1", "w2"], url, "slowladder")
    assert len(recorded(url, "slowladder")) == 3 * 2
    events = [json.loads(line) for line in (tmp_path / "out" / "organizer.jsonl").read_text().splitlines()]
    assert not [e for e in events if e["event"] == "worker_gone"], "a worker reconnecting is not a worker gone"
