"""`craits worker` processes on a real PostgreSQL server: they split a tournament's games
and the standings are those of the same file on SQLite; a worker killed mid-game loses
nothing, SIGTERM finishes the games in hand, a restarted database is waited for, and a
worker without a bot's files leaves its games to the others."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from procrastinate.jobs import Job

from server.storage.postgres import migrate
from server.transport import sandbox
from tests.cli import run_cli
from tests.machine import fresh_path
from tests.postgres_server import PostgresServer
from tests.tournaments.configs import builtin_tournament
from tournaments.distributed import REFUSED_FAST_TRIES, REFUSED_RETRY_MAX_S, GameRefused, RefusedRetry

ROOT = Path(__file__).resolve().parents[2]
SLOW_BOT = Path(__file__).resolve().parent / "bots" / "slow_bot.py"
HEARTBEAT = ("--heartbeat", "0.5", "--stalled-after", "3")

SLOW_BOTS = """[[bots]]
name = "slow-a"
command = ["python", "slow_bot.py", "0.002"]
cwd = "bots"

[[bots]]
name = "slow-b"
command = ["python", "slow_bot.py", "0.002"]
cwd = "bots"
"""
"""Two deterministic bots that think 2 ms a move (slow_bot.py in the run's bots/ folder)."""
SLOW_FILE = """name = "slowcup"
table_size = 2
deals = 1
seed = 5
concurrency = 2

[flags]
short_game = true

""" + SLOW_BOTS
"""Two games of about five seconds each."""


class Procs:
    """The craits processes a test starts, each in its own session; all killed at the end."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[subprocess.Popen[bytes]] = []

    def craits(self, name: str, *argv: str, cwd: Path | None = None, env: dict[str, str] | None = None,
               ) -> subprocess.Popen[bytes]:
        log = (self.tmp_path / f"{name}.out").open("wb")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **(env or {})}
        env.pop("CRAITS_STORE", None)
        proc = subprocess.Popen([sys.executable, "-m", "server.cli", *argv], cwd=cwd or self.tmp_path, env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.started.append(proc)
        return proc

    def worker(self, name: str, url: str, *extra: str, concurrency: int = 1) -> subprocess.Popen[bytes]:
        return self.craits(name, "worker", "--store", url, "--concurrency", str(concurrency), "--name", name,
                           "--log-dir", str(self.tmp_path / name), *HEARTBEAT, *extra)

    def output(self, name: str) -> str:
        return (self.tmp_path / f"{name}.out").read_text(errors="replace")

    def log_events(self, name: str) -> list[dict[str, Any]]:
        path = self.tmp_path / name / "worker.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def close(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture
def url(pg_url: str) -> str:
    """A fresh database with the craits tables and the queue's."""
    migrate(pg_url)
    return pg_url


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    p = Procs(tmp_path)
    try:
        yield p
    finally:
        p.close()


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]


def live_workers(url: str) -> int:
    rows = query(url, "SELECT count(*) FROM procrastinate_workers WHERE last_heartbeat > now() - interval '3 seconds'")
    return int(rows[0][0])


def doing(url: str) -> list[str]:
    rows = query(url, "SELECT args->>'game_id' FROM procrastinate_jobs WHERE status = 'doing' ORDER BY 1")
    return [r[0] for r in rows]


def recorded(url: str, tournament: str) -> list[tuple[str, str]]:
    """(game, worker) of every recorded game."""
    return [(r[0], r[1]) for r in query(
        url, "SELECT game_id, worker FROM craits_results WHERE tournament = %s ORDER BY game_id", tournament)]


def coordinator(procs: Procs, file: Path, url: str, out: Path, *extra: str, env: dict[str, str] | None = None,
                ) -> subprocess.Popen[bytes]:
    return procs.craits("coordinator", "tournament", "run", str(file), "--store", url, "--out", str(out),
                        "--no-progress", "--local-workers", "0", "--stalled-after", "3", *extra, env=env)


def finished(proc: subprocess.Popen[bytes], procs: Procs, name: str, timeout: float = 120.0) -> int:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{name} did not finish:\n{procs.output(name)[-3000:]}") from None


@pytest.fixture(scope="module")
def slow_reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The slow tournament played in one process on SQLite: its standings files."""
    folder = tmp_path_factory.mktemp("slow-reference")
    file = slow_file(folder)
    subprocess.run([sys.executable, "-m", "server.cli", "tournament", "run", str(file), "--out", str(folder / "out"),
                    "--no-progress"], cwd=folder, check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    return {name: (folder / "out" / name).read_bytes() for name in ("standings.json", "standings.csv")}


def slow_file(folder: Path) -> Path:
    folder.chmod(0o755)  # (pytest makes it 0700; a sandboxed bot's folder must be readable by every user)
    (folder / "bots").mkdir(mode=0o755)  # (a folder of their own: the output beside it is not theirs to read)
    shutil.copy(SLOW_BOT, folder / "bots" / "slow_bot.py")
    path = folder / "slowcup.toml"
    path.write_text(SLOW_FILE, encoding="utf-8")
    return path


def same_standings(out: Path, reference: dict[str, bytes]) -> None:
    for name, data in reference.items():
        assert (out / name).read_bytes() == data, name


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3])
def test_workers_split_the_games_and_the_standings_are_sqlites(
    n: int, tmp_path: Path, url: str, procs: Procs, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "split.toml"
    file.write_text(builtin_tournament("split", 3, 2, {"r1": "random", "r2": "random", "f": "first", "g": "greedy"}))
    assert run_cli(capsys, "tournament", "run", str(file), "--out", str(tmp_path / "lite"))[0] == 0
    assert run_cli(capsys, "store", "migrate", url)[0] == 0  # (already at the layout: says so)
    workers = [procs.worker(f"w{i}", url) for i in range(n)]
    wait_for(f"{n} live workers", lambda: live_workers(url) == n)
    coord = coordinator(procs, file, url, tmp_path / "pg")
    assert finished(coord, procs, "coordinator") == 0, procs.output("coordinator")
    same_standings(tmp_path / "pg", {n: (tmp_path / "lite" / n).read_bytes() for n in ("standings.json", "standings.csv")})
    games = recorded(url, "split")
    assert len(games) == 24 and len({g for g, _ in games}) == 24
    assert len({w for _, w in games}) >= 2, games  # the games were shared out
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    for i, worker in enumerate(workers):
        assert finished(worker, procs, f"w{i}", 30) == 0


def test_a_worker_killed_mid_game_loses_nothing_another_plays_it_again(
    tmp_path: Path, url: str, procs: Procs, slow_reference: dict[str, bytes]
) -> None:
    file = slow_file(tmp_path)
    victim = procs.worker("victim", url, concurrency=2)
    wait_for("the worker", lambda: live_workers(url) == 1)
    coord = coordinator(procs, file, url, tmp_path / "out")
    taken = wait_for("both games in play", lambda: len(doing(url)) == 2 and doing(url))
    time.sleep(1.0)  # the bots are playing
    assert recorded(url, "slowcup") == []
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    procs.worker("heir", url, concurrency=2)
    assert finished(coord, procs, "coordinator") == 0, procs.output("coordinator")
    assert recorded(url, "slowcup") == [(game, "heir") for game in taken]  # once each, by the heir
    same_standings(tmp_path / "out", slow_reference)  # played again from the same seeds
    coordinator_log = (tmp_path / "out" / "organizer.jsonl").read_text().splitlines()
    events = procs.log_events("heir") + [json.loads(line) for line in coordinator_log if line.strip()]
    requeued = {e["game"] for e in events if e["event"] == "stalled_game_requeued"}  # (by the heir or the coordinator)
    assert requeued == set(taken)


def test_sigterm_lets_a_worker_finish_its_games_first(tmp_path: Path, url: str, procs: Procs) -> None:
    file = slow_file(tmp_path)
    worker = procs.worker("polite", url, concurrency=2)
    wait_for("the worker", lambda: live_workers(url) == 1)
    coord = coordinator(procs, file, url, tmp_path / "out")
    taken = wait_for("both games in play", lambda: len(doing(url)) == 2 and doing(url))
    worker.send_signal(signal.SIGTERM)
    assert finished(worker, procs, "polite", 60) == 0, procs.output("polite")
    assert recorded(url, "slowcup") == [(game, "polite") for game in taken]
    assert finished(coord, procs, "coordinator") == 0


def test_a_restarted_database_is_waited_for_and_nothing_is_half_written(
    tmp_path: Path, url: str, pg_server: PostgresServer, procs: Procs, slow_reference: dict[str, bytes]
) -> None:
    file = slow_file(tmp_path)
    worker = procs.worker("steady", url, concurrency=2)
    wait_for("the worker", lambda: live_workers(url) == 1)
    coord = coordinator(procs, file, url, tmp_path / "out")
    wait_for("both games in play", lambda: len(doing(url)) == 2)
    time.sleep(0.5)
    pg_server.stop("immediate")  # as if the server died
    time.sleep(3.0)
    pg_server.start()
    assert finished(coord, procs, "coordinator") == 0, procs.output("coordinator")
    assert worker.poll() is None, procs.output("steady")  # paused, never crashed
    said = procs.output("steady")  # (warnings are events, not tracebacks)
    assert "Traceback" not in said, said
    assert sorted(g for g, _ in recorded(url, "slowcup")) == ["d0001-t00001-r1", "d0001-t00001-r2"]
    same_standings(tmp_path / "out", slow_reference)
    events = [e["event"] for e in procs.log_events("steady")]
    assert "database_lost" in events or "store_retry" in events, events


def test_a_worker_started_before_its_database_waits_for_it_but_not_for_one_that_does_not_exist(
    tmp_path: Path, url: str, pg_server: PostgresServer, procs: Procs
) -> None:
    """At boot, or in a compose file, a worker may start before PostgreSQL: it says once that it
    waits and takes games once the database is there. A database that does not exist (or a
    wrong password) is no reason to wait: one line, at once."""
    pg_server.stop("fast")
    try:
        early = procs.worker("early", url)
        said = wait_for("the worker says it waits", lambda: "is not reachable yet" in procs.output("early"))
        assert said and early.poll() is None, procs.output("early")
    finally:
        pg_server.start()
    wait_for("the worker, once the database is up", lambda: live_workers(url) == 1)
    assert procs.output("early").count("is not reachable yet") == 1, procs.output("early")
    assert "Traceback" not in procs.output("early")
    refused = procs.worker("refused", url.rsplit("/", 1)[0] + "/no_such_database")
    assert refused.wait(timeout=30) == 2, procs.output("refused")
    out = procs.output("refused")
    assert "is not reachable yet" not in out and out.count("\n") == 1 and "cannot connect" in out, out


def test_a_worker_without_a_bots_files_refuses_its_games_and_leaves_them_to_others(
    tmp_path: Path, url: str, procs: Procs
) -> None:
    file = slow_file(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()  # a machine where the bots' files are not
    bare = procs.worker("bare", url, "--files", str(elsewhere), concurrency=2)
    wait_for("the worker", lambda: live_workers(url) == 1)
    coord = coordinator(procs, file, url, tmp_path / "out", "--wait-for-workers")  # (an organizer adding machines)
    refusals = wait_for("a refusal", lambda: [e for e in procs.log_events("bare") if e["event"] == "game_refused"])
    assert "'bots' is not a folder" in refusals[0]["reason"] and "elsewhere/bots" in refusals[0]["reason"], refusals[0]
    assert recorded(url, "slowcup") == []
    procs.worker("equipped", url, concurrency=2)
    wait_for("both workers", lambda: live_workers(url) == 2)
    # The bare worker leaves once the equipped one is there: while both run they race for each
    # refused game, and each race the bare one wins doubles the game's wait (up to 30 s), so on
    # a loaded machine the run took from 10 s to 98 s after the equipped worker came (measured),
    # against the 120 s this test gives it. Holding no game, the bare worker stops at once.
    bare.send_signal(signal.SIGTERM)
    assert finished(bare, procs, "bare", 60) == 0, procs.output("bare")
    assert finished(coord, procs, "coordinator") == 0, procs.output("coordinator")
    assert {w for _, w in recorded(url, "slowcup")} == {"equipped"}
    if sandbox.problem() is None:
        assert "craits worker equipped: the bots it launches run sandboxed (bwrap works here)" in procs.output("equipped")


def test_when_every_worker_refuses_for_a_missing_bot_file_the_run_says_why_and_stops_at_once(
    tmp_path: Path, url: str, procs: Procs
) -> None:
    """Waiting would not bring the bots' files: without --wait-for-workers the organizer hears
    each worker's reason and the run stops, its games left queued for a worker that has them."""
    file = slow_file(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    procs.worker("bare", url, "--files", str(elsewhere), concurrency=2)
    wait_for("the worker", lambda: live_workers(url) == 1)
    coord = coordinator(procs, file, url, tmp_path / "out")
    assert finished(coord, procs, "coordinator", 60) == 1
    said = procs.output("coordinator")
    assert "slowcup: every connected worker refuses games it cannot play" in said, said
    assert re.search(r"\n  worker bare refused \d+ game\(s\) \(last \S+\): .*'bots' is not a folder", said), said
    assert "0/2 games are recorded; continue with: craits tournament resume slowcup --store URL" in said, said
    assert "--wait-for-workers" in said
    assert recorded(url, "slowcup") == []
    assert query(url, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo' AND args->>'tournament' = %s",
                 "slowcup")[0][0] == 2  # (still queued)


def test_a_worker_plays_a_file_served_over_tls_without_its_certificate_and_announces_none(
    tmp_path: Path, url: str, procs: Procs
) -> None:
    """The file's certificate and key stay on the organizer's machine: a worker's referee serves
    only its own launched bots, through its Unix socket, and has no certificate to hand out."""
    from server.transport.tls import self_signed

    made = self_signed(tmp_path / "organizer", "127.0.0.1")
    file = tmp_path / "secure.toml"
    file.write_text(builtin_tournament("secure", 3, 1, {"r1": "random", "r2": "random"}, table_size=2)
                    .replace("[flags]", 'tls_cert = "organizer/referee-cert.pem"\n'
                             'tls_key = "organizer/referee-key.pem"\n\n[flags]'))
    assert made.cert_path == tmp_path / "organizer" / "referee-cert.pem"
    elsewhere = tmp_path / "elsewhere"  # (another machine: the bots' files, no organizer/)
    elsewhere.mkdir()
    coord = coordinator(procs, file, url, tmp_path / "out")
    procs.worker("far", url, "--files", str(elsewhere), "--runner", "grpc")
    assert finished(coord, procs, "coordinator") == 0, procs.output("coordinator")
    assert {w for _, w in recorded(url, "secure")} == {"far"}
    assert "TLS:" not in procs.output("far")


def test_a_worker_that_cannot_sandbox_says_so_at_start_and_the_run_stops_with_its_reason(
    tmp_path: Path, url: str, procs: Procs
) -> None:
    file = slow_file(tmp_path)
    bare = procs.craits("nobwrap", "worker", "--store", url, "--concurrency", "2", "--name", "nobwrap", "--log-dir",
                        str(tmp_path / "nobwrap"), *HEARTBEAT, env={"PATH": fresh_path(tmp_path / "bin")})
    wait_for("the worker", lambda: live_workers(url) == 1)
    lines = procs.output("nobwrap").splitlines()
    said = [i for i, line in enumerate(lines)
            if line.startswith("craits worker nobwrap: warning: cannot sandbox launched bots here: bwrap not found")]
    playing = [i for i, line in enumerate(lines) if line.startswith("craits worker nobwrap: playing the games queued")]
    assert said and playing and said[0] < playing[0], lines  # (before it takes a game)
    coord = coordinator(procs, file, url, tmp_path / "out")
    assert finished(coord, procs, "coordinator", 60) == 1
    said = procs.output("coordinator")
    assert re.search(r"\n  worker nobwrap refused \d+ game\(s\) \(last \S+\): cannot sandbox launched bots: bwrap "
                     r"not found", said), said
    assert recorded(url, "slowcup") == [] and bare.poll() is None


def test_a_ladder_keeps_running_while_workers_come_and_go(tmp_path: Path, url: str, procs: Procs) -> None:
    file = tmp_path / "ladder.toml"
    file.write_text(builtin_tournament("comego", 8, 1, {"r1": "random", "r2": "random", "f": "first", "g": "greedy"}))
    procs.worker("early", url)
    wait_for("the worker", lambda: live_workers(url) == 1)
    ladder = procs.craits("ladder", "ladder", "run", str(file), "--store", url, "--rounds", "12", "--out",
                          str(tmp_path / "out"), "--local-workers", "0", "--stalled-after", "3")
    wait_for("some rounds", lambda: len(recorded(url, "comego")) >= 3)
    procs.started[0].send_signal(signal.SIGTERM)
    assert finished(procs.started[0], procs, "early", 30) == 0
    procs.worker("late", url)
    assert finished(ladder, procs, "ladder") == 0, procs.output("ladder")
    games = recorded(url, "comego")
    assert len(games) == 12 * 3 and {w for _, w in games} == {"early", "late"}
    assert "round 12:" in procs.output("ladder")
    bots = {"r1": "random", "r2": "random", "f": "first", "g": "greedy", "newcomer": "first"}
    file.write_text(builtin_tournament("comego", 8, 1, bots))  # a bot joins: the worker reads the file again
    again = procs.craits("again", "ladder", "run", str(file), "--store", url, "--rounds", "1", "--out",
                         str(tmp_path / "out"), "--local-workers", "0", "--stalled-after", "3")
    assert finished(again, procs, "again") == 0, procs.output("again")
    newest = query(url, "SELECT seats FROM craits_games WHERE tournament = 'comego' ORDER BY ordinal DESC LIMIT 1")
    assert "newcomer" in json.loads(newest[0][0]) and len(recorded(url, "comego")) == 13 * 3


def test_a_worker_or_store_command_given_a_wrong_place_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Mistakes caught before any connection: a --files folder that is not there (every game
    would be refused, forever), a --log-dir under a file, --tls on a worker, a URL of another
    database."""
    nowhere = "postgresql://nobody@127.0.0.1:1/none"
    (tmp_path / "afile").write_text("")
    cases = [
        (("worker", "--store", nowhere, "--files", str(tmp_path / "bots")), f"--files {tmp_path / 'bots'}: no such folder"),
        (("worker", "--store", nowhere, "--log-dir", str(tmp_path / "afile")),
         f"--log-dir {tmp_path / 'afile'}: cannot write the log there: File exists"),
        (("worker", "--store", nowhere, "--tls", "self-signed"),  # (accepted, and it protected nothing)
         "--tls, --tls-cert and --tls-key have nothing to protect on a worker: its referee serves only the bots"),
        (("store", "migrate", "mysql://root:pw@db/craits"), "'mysql://root:***@db/craits' is not a PostgreSQL URL"),
        (("store", "list", "sqlite:///tmp/x.db"), "'sqlite:///tmp/x.db' is not a PostgreSQL URL"),
    ]
    for argv, says in cases:
        code, _, err = run_cli(capsys, *argv)
        assert code == 2, (argv, err)
        assert err.startswith(f"craits: error: {says}") and len(err.splitlines()) == 1, err


def test_the_worker_host_script_takes_the_workers_paths_from_where_it_is_started(tmp_path: Path) -> None:
    """deploy/worker-host.sh from the bots' machine folder: ``--files bots`` is that folder's
    bots/ (it was the project's, where no such folder is), so the worker goes on to the store."""
    (tmp_path / "bots").mkdir()
    env = {**os.environ, "CRAITS_STORE": "postgresql://nobody@127.0.0.1:1/none", "CRAITS_DATABASE_WAIT_S": "1"}
    done = subprocess.run(["bash", str(ROOT / "deploy" / "worker-host.sh"), "--files", "bots", "--log-dir", "logs"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 2, done.stderr
    assert "no such folder" not in done.stderr and "cannot connect" in done.stderr, done.stderr
    assert (tmp_path / "logs" / "worker.jsonl").exists(), "its log is where it was started"


def test_games_back_from_a_killed_worker_or_a_lost_database_are_not_said_to_be_refused(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """They wait in the queue as a refused game does, but no worker refused them (none noted why)."""
    from server.cli.tournament_pg import _tellers
    from server.storage.postgres import Refusal
    from tournaments.distributed import WorkerSettings

    on_refused, _ = _tellers("cup", False, WorkerSettings(), "craits tournament resume cup --store URL")
    on_refused(2, [])
    assert capsys.readouterr().err == ""
    on_refused(3, [Refusal("far", "bot 'x': cannot run it", 1, "d0001-t00001-r1", 0.0)])
    assert "cup: 3 game(s) refused by a worker" in capsys.readouterr().err


def test_a_ladder_stopped_by_a_database_lost_between_rounds_says_how_to_continue() -> None:
    from server.cli.tournament_pg import _errors
    from server.errors import UserError
    from server.storage.store import StoreError

    said = r"the database is unreachable: refused; once it is back, continue with: craits ladder run c.toml --store URL$"
    with pytest.raises(UserError, match=said), _errors("craits ladder run c.toml --store URL"):
        raise StoreError("db (tournament class): reading the results: the database is unreachable: refused")


def test_the_stalled_games_watcher_ends_when_cancelled_even_inside_a_database_wait() -> None:
    """procrastinate's pool, waiting for a database back from a long outage, turns the
    cancellation into a ConnectorException; the watcher went on, and the worker that cancelled
    it waited for it for ever (no heartbeat, no game: the whole queue stalled)."""
    from procrastinate import exceptions as pq_exceptions

    from tournaments.distributed import watch_stalled

    class Waiting:
        """The connector of a queue whose pool is waiting for its database."""

        def __init__(self) -> None:
            self.asked = asyncio.Event()
            self.swallowed = False

        async def execute_query_all_async(self, *_: Any, **__: Any) -> list[Job]:
            self.asked.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                if self.swallowed:
                    raise
                self.swallowed = True  # (once is enough: the worker cancels its watcher once)
                raise pq_exceptions.ConnectorException("Database error.") from None
            return []

    class App:
        connector = Waiting()

    async def main() -> bool:
        watcher = asyncio.create_task(watch_stalled(App(), 30.0, 0.0))  # type: ignore[arg-type]
        await App.connector.asked.wait()
        watcher.cancel()
        await asyncio.wait({watcher}, timeout=30)
        ended = watcher.cancelled()
        if not watcher.done():  # (the bug: it went on, and waited to be asked again)
            watcher.cancel()
            await asyncio.wait({watcher}, timeout=30)
        return ended

    assert asyncio.run(main())


def test_a_game_no_worker_can_play_is_said_once_not_a_log_line_each_time_and_waits_longer(
    tmp_path: Path, url: str, procs: Procs
) -> None:
    """A worker lacking the bots' files refuses the same games again and again: its log says so
    once (then at most once a minute), not once per refusal for as long as nobody fixes it; the
    coordinator says so on its terminal; past a few refusals a game waits longer each time."""
    file = slow_file(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    procs.worker("bare", url, "--files", str(elsewhere), concurrency=2)
    coordinator(procs, file, url, tmp_path / "out", "--wait-for-workers")

    def refusals() -> int:
        rows = query(url, "SELECT coalesce(sum(attempts), 0) FROM procrastinate_jobs WHERE args->>'tournament' = %s",
                     "slowcup")
        return int(rows[0][0])

    wait_for("the two games refused five times in all", lambda: refusals() >= 5)
    logged = [e for e in procs.log_events("bare") if e["event"] == "game_refused"]
    assert 1 <= len(logged) < refusals(), logged
    assert "'bots' is not a folder" in logged[0]["reason"] and "waits longer each time" in logged[0]["retry"]
    assert recorded(url, "slowcup") == []
    said = wait_for("the coordinator says so, and why", lambda: [
        line for line in procs.output("coordinator").splitlines() if "refused by a worker" in line
        or re.match(r"  worker \S+ refused \d+ game\(s\) \(last \S+\): .*'bots' is not a folder", line)])
    assert "slowcup: " in said[0] and len(said) == 2, said
    noted = query(url, "SELECT worker, games FROM craits_refusals WHERE tournament = %s", "slowcup")
    assert len(noted) == 1 and noted[0][1] >= 1 and noted[0][0] in said[1]

    retry = RefusedRetry()

    def wait_s(attempts: int) -> float:
        before = datetime.now(UTC)
        decision = retry.get_retry_decision(exception=GameRefused("no bot here"), job=Job(
            id=1, queue="craits", lock=None, queueing_lock=None, task_name="craits.play_game", attempts=attempts))
        assert decision is not None and decision.retry_at is not None
        return (decision.retry_at - before).total_seconds()

    seconds = [wait_s(n) for n in range(16)]
    assert all(s < 3.5 for s in seconds[:REFUSED_FAST_TRIES]), "a worker that can play it gets it soon"
    assert seconds[REFUSED_FAST_TRIES + 2] >= 8.0 and seconds[15] >= REFUSED_RETRY_MAX_S, seconds
    assert all(s <= REFUSED_RETRY_MAX_S + 2.5 for s in seconds), seconds
    assert retry.get_retry_decision(exception=ValueError("a bug"), job=Job(
        id=1, queue="craits", lock=None, queueing_lock=None, task_name="craits.play_game")) is None


def test_the_connections_a_worker_and_the_organizer_hold_are_what_the_readme_says(
    tmp_path: Path, url: str, procs: Procs
) -> None:
    """README (Many machines) and deploy/compose.yaml size PostgreSQL's max_connections from
    this: a worker keeps up to --concurrency + 5 connections, the organizer's command about 6."""
    concurrency = 2
    dbname = url.rsplit("/", 1)[1]

    def held() -> int:
        rows = query(url, "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid != pg_backend_pid()",
                     dbname)
        return int(rows[0][0])

    procs.worker("counted", url, concurrency=concurrency)
    wait_for("the worker", lambda: live_workers(url) == 1)
    coord = coordinator(procs, slow_file(tmp_path), url, tmp_path / "out")
    most = 0
    while coord.poll() is None:
        most = max(most, held())
        time.sleep(0.05)
    assert coord.returncode == 0, procs.output("coordinator")
    assert len(recorded(url, "slowcup")) == 2
    assert 0 < most <= (concurrency + 5) + 6, most
    compose = (ROOT / "deploy" / "compose.yaml").read_text(encoding="utf-8")
    assert '"max_connections=500"' in compose and "--concurrency + 5 connections" in compose


def test_an_organizer_that_gives_up_on_a_lost_database_says_how_to_continue(
    tmp_path: Path, url: str, pg_server: PostgresServer, procs: Procs
) -> None:
    """The database gone for longer than ``tournament run --store`` waits (as long as the workers,
    a day; here $CRAITS_DATABASE_WAIT_S says 3 s): said once when it goes, then one line that
    says what happened and that the games wait in the queue for ``resume``."""
    worker = procs.worker("steady", url, concurrency=2)
    wait_for("the worker", lambda: live_workers(url) == 1)
    coord = coordinator(procs, slow_file(tmp_path), url, tmp_path / "out", env={"CRAITS_DATABASE_WAIT_S": "3"})
    wait_for("both games in play", lambda: len(doing(url)) == 2)
    pg_server.stop("immediate")
    try:
        code = finished(coord, procs, "coordinator", timeout=180)
    finally:
        pg_server.start()
    said = procs.output("coordinator")
    assert code == 2, said
    assert "Traceback" not in said, said
    waiting = [line for line in said.splitlines() if "waiting for it as the workers do" in line]
    assert len(waiting) == 1 and "the database is unreachable" in waiting[0], said
    assert waiting[0].endswith("(up to 3 s): Ctrl-C stops this command, the games stay queued, and "
                               "`craits tournament resume slowcup --store URL` continues"), said
    error = [line for line in said.splitlines() if line.startswith("craits: error:")]
    assert len(error) == 1 and "the database is unreachable" in error[0], said
    assert error[0].endswith("continue with: craits tournament resume slowcup --store URL"), said
    assert worker.poll() is None, "the worker waits for the database"
    resumed = procs.craits("resume", "tournament", "resume", "slowcup", "--store", url, "--out", str(tmp_path / "out"),
                           "--no-progress", "--local-workers", "0")
    assert finished(resumed, procs, "resume") == 0, procs.output("resume")
    assert len(recorded(url, "slowcup")) == 2


def test_store_list_of_an_empty_store_says_so(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "store", "list", url)
    assert (code, out) == (0, "")
    assert err.endswith(": no tournament or ladder yet\n"), err


def test_an_organizer_waits_for_a_lost_database_as_the_workers_do_and_ctrl_c_stops_it(
    tmp_path: Path, url: str, pg_server: PostgresServer, procs: Procs
) -> None:
    """``tournament run --store`` playing the games itself (no worker running) loses its
    database: it says once that it waits as long as the workers (a day) and how to stop and
    continue; Ctrl-C then stops it (its games in hand are left to be played again) and a
    resume finishes the tournament."""
    file = slow_file(tmp_path)
    coord = procs.craits("coordinator", "tournament", "run", str(file), "--store", url, "--out",
                         str(tmp_path / "out"), "--no-progress", "--stalled-after", "3")
    wait_for("both games in play", lambda: len(doing(url)) == 2)
    pg_server.stop("immediate")
    try:
        said = wait_for("the organizer says it waits", lambda: [
            line for line in procs.output("coordinator").splitlines() if "waiting for it as the workers do" in line])
        assert said[0].startswith("slowcup: ") and "(up to 24 h)" in said[0], said
        coord.send_signal(signal.SIGINT)
        code = finished(coord, procs, "coordinator", timeout=120)
    finally:
        pg_server.start()
    output = procs.output("coordinator")
    assert code == 2 and "Traceback" not in output, output
    assert len([line for line in output.splitlines() if "waiting for it as the workers do" in line]) == 1, output
    error = [line for line in output.splitlines() if line.startswith("craits: error:")]
    assert len(error) == 1 and "stopped while waiting for it" in error[0], output
    assert error[0].endswith("continue with: craits tournament resume slowcup --store URL"), output
    resumed = procs.craits("resume", "tournament", "resume", "slowcup", "--store", url, "--out", str(tmp_path / "out"),
                           "--no-progress", "--stalled-after", "3")
    assert finished(resumed, procs, "resume") == 0, procs.output("resume")
    assert len(recorded(url, "slowcup")) == 2


def test_a_lost_database_is_a_few_log_lines_not_one_a_second(
    tmp_path: Path, url: str, pg_server: PostgresServer, procs: Procs
) -> None:
    """While the database is gone, psycopg's pools say "error connecting" at every attempt
    (about once a second) and craits retries as often: each kind of line is logged once, then
    at most once a minute with a count; the first line stays, and one line says it is back."""
    procs.worker("patient", url, concurrency=2)
    wait_for("the worker", lambda: live_workers(url) == 1)
    coord = coordinator(procs, slow_file(tmp_path), url, tmp_path / "out")
    wait_for("both games in play", lambda: len(doing(url)) == 2)
    pg_server.stop("immediate")
    try:
        time.sleep(10.0)  # (an outage of many reconnection attempts)
    finally:
        pg_server.start()
    assert finished(coord, procs, "coordinator") == 0, procs.output("coordinator")
    assert len(recorded(url, "slowcup")) == 2
    organizer = [json.loads(line) for line in (tmp_path / "out" / "organizer.jsonl").read_text().splitlines()]
    for name, events in (("worker", procs.log_events("patient")), ("organizer", organizer)):
        kinds = [e["event"].split(":")[0] for e in events]
        noisy = {kind: kinds.count(kind) for kind in set(kinds) if kinds.count(kind) > 1
                 and kind in ("store_retry", "database_lost", "error connecting in 'pool-1'",
                              "error connecting in 'pool-2'", "error connecting in 'pool-3'")}
        assert not noisy, (name, noisy)
    kinds = [e["event"] for e in procs.log_events("patient")]
    assert any(kind.startswith("error connecting") for kind in kinds), kinds  # (the first one is kept)
    assert [e for e in organizer if e["event"] == "database_back"], organizer
    worker_back = [e for e in procs.log_events("patient") if e["event"] in ("store_reconnected", "worker_started")]
    assert len(worker_back) >= 2, worker_back  # (started, and back)
