"""The queue takes and finishes games many at once (``BatchedJobs``), on a real PostgreSQL
server: two workers taking batches at the same moment never take the same game, a worker
stopping puts back the games it took and did not start, and a worker killed holding a batch
is named and every game of its batch goes back to the queue. Two workers reading their
games' slots and recording the games that end together in one statement each play every game
once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import procrastinate
import psycopg
import pytest

from server.storage.postgres import PostgresStore, migrate
from tests.tournaments.configs import builtin_tournament
from tournaments.config import parse_config
from tournaments.distributed import (
    QUEUE,
    TASK,
    BatchedJobs,
    Gathered,
    WorkerService,
    WorkerSettings,
    find_gone_workers,
    make_app,
    play_queued,
    queueing_lock,
    start_tournament_pg,
)
from tournaments.runner import local_runner

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def url(pg_url: str) -> str:
    migrate(pg_url)
    return pg_url


async def queue_games(app: procrastinate.App, n: int, tournament: str = "cup") -> list[int]:
    jobs = [procrastinate.jobs.Job(id=None, queue=QUEUE, lock=None, queueing_lock=queueing_lock(tournament, f"g{i}"),
                                   task_name=TASK, priority=0, task_kwargs={"tournament": tournament, "game_id": f"g{i}"})
            for i in range(n)]
    return [job.id for job in await app.job_manager.batch_defer_jobs_async(jobs)]


def jobs_by_status(url: str) -> dict[str, list[tuple[int, int | None, int]]]:
    """status -> (id, worker_id, attempts) of every job."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT status, id, worker_id, attempts FROM procrastinate_jobs ORDER BY id").fetchall()
    out: dict[str, list[tuple[int, int | None, int]]] = {}
    for status, *rest in rows:
        out.setdefault(status, []).append(tuple(rest))  # type: ignore[arg-type]
    return out


def test_two_workers_taking_batches_at_once_never_take_the_same_game(url: str) -> None:
    async def main() -> tuple[list[int], dict[int, list[int]], dict[int, list[int]]]:
        coordinator, a, b = make_app(url), make_app(url, concurrency=8), make_app(url, concurrency=8)
        async with coordinator.open_async(), a.open_async(), b.open_async():
            queued = await queue_games(coordinator, 60)
            taken: dict[int, list[int]] = {}
            finished: dict[int, list[int]] = {}
            both = asyncio.Barrier(2)

            async def take_all(app: procrastinate.App) -> None:
                worker_id = await app.job_manager.register_worker()
                taken[worker_id], finished[worker_id] = [], []
                await both.wait()  # (each registered, its connection open: else one may take all 60 first)
                while (job := await app.job_manager.fetch_job([QUEUE], worker_id)) is not None:
                    assert job.id is not None
                    taken[worker_id].append(job.id)
                    if job.id % 2:  # (half finished as they come, together: the group commit)
                        await app.job_manager.finish_job(job, procrastinate.jobs.Status.SUCCEEDED, delete_job=True)
                        finished[worker_id].append(job.id)

            await asyncio.gather(take_all(a), take_all(b))
            return queued, taken, finished

    queued, taken, finished = asyncio.run(main())
    (first, a_took), (second, b_took) = taken.items()
    assert a_took and b_took, "both workers took games"
    assert not set(a_took) & set(b_took)
    assert sorted(a_took + b_took) == sorted(queued)
    left = jobs_by_status(url)
    assert "todo" not in left
    assert {job_id for job_id, _, _ in left["doing"]} == set(queued) - set(finished[first]) - set(finished[second])
    assert all(worker == (first if job_id in a_took else second) for job_id, worker, _ in left["doing"])


def test_a_stopping_worker_puts_back_the_games_it_took_and_did_not_start(url: str) -> None:
    async def main() -> tuple[int, int, int]:
        app = make_app(url, concurrency=4)
        async with app.open_async():
            await queue_games(app, 6)
            jobs = app.job_manager
            assert isinstance(jobs, BatchedJobs)
            worker_id = await jobs.register_worker()
            started = await jobs.fetch_job([QUEUE], worker_id)
            assert started is not None
            held = len(jobs.held)
            released = await jobs.release_held()
            return held, released, started.id or 0

    held, released, started = asyncio.run(main())
    assert held == released == 3  # (four free slots: four taken in one statement, one started)
    left = jobs_by_status(url)
    assert [job_id for job_id, _, _ in left["doing"]] == [started]
    assert len(left["todo"]) == 5
    assert all(worker is None and attempts == 0 for _, worker, attempts in left["todo"])


HOLDER = """
import asyncio, sys
from tournaments.distributed import QUEUE, announce_worker, make_app

async def main():
    app = make_app(sys.argv[1], concurrency=4, tag="craits-worker-batch-holder")
    async with app.open_async():
        worker_id = await app.job_manager.register_worker()
        class Registered:
            pass
        registered = Registered()
        registered.worker_id = worker_id
        await announce_worker(app, registered, "holder", "craits-worker-batch-holder")
        job = await app.job_manager.fetch_job([QUEUE], worker_id)
        print(job.id, len(app.job_manager.held), flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


def test_a_worker_killed_holding_a_batch_is_named_and_every_game_of_it_goes_back(url: str) -> None:
    async def queue() -> None:
        app = make_app(url)
        async with app.open_async():
            await queue_games(app, 6)

    asyncio.run(queue())
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, url], cwd=ROOT, stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        assert holder.stdout is not None
        _, held = holder.stdout.readline().split()
        assert int(held) == 3
        assert len(jobs_by_status(url)["doing"]) == 4
        os.kill(holder.pid, signal.SIGKILL)
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGKILL)
        holder.wait()

    async def find_it() -> list[tuple[str, str, tuple[str, ...]]]:
        app = make_app(url)
        async with app.open_async():
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                gone = await find_gone_workers(app, heartbeat_s=0.2, stalled_s=60.0)
                if gone:
                    return [(g.name, g.why, g.games) for g in gone]
                await asyncio.sleep(0.2)
            return []

    [(name, why, games)] = asyncio.run(find_it())
    assert name == "holder" and why == "its connections closed"
    assert len(games) == 4
    left = jobs_by_status(url)
    assert "doing" not in left and len(left["todo"]) == 6


def wait_for_a_listener(url: str, within_s: float = 10.0) -> None:
    """Until a worker listens for the queue's notifications (its connection's last statement)."""
    deadline = time.monotonic() + within_s
    with psycopg.connect(url, autocommit=True) as conn:
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'").fetchone() == (0,):
            assert time.monotonic() < deadline, "no worker listened for the queue"
            time.sleep(0.02)


def test_two_workers_play_every_game_once_recording_the_games_that_end_together_together(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = builtin_tournament("batched", 3, 8, {"a": "random", "b": "random", "c": "random"})  # 24 games
    config = parse_config(text, source=str(tmp_path / "batched.toml"), base_dir=tmp_path)
    store = start_tournament_pg(config, text, str(tmp_path / "batched.toml"), url)
    played: Counter[str] = Counter()
    statements: list[int] = []
    record_games_once = PostgresStore.record_games_once

    def counted_statement(self: PostgresStore, records: Any, **kwargs: Any) -> Any:
        statements.append(len(records))
        return record_games_once(self, records, **kwargs)

    monkeypatch.setattr(PostgresStore, "record_games_once", counted_statement)
    in_hand = [0]

    @contextlib.asynccontextmanager
    async def runner(config: Any, out: Path) -> AsyncIterator[Any]:
        ready = asyncio.Condition()

        async def run_game(spec: Any) -> Any:  # (a game ends once four are in hand, or after 0.3 s)
            played[spec.game_id] += 1
            async with ready:
                in_hand[0] += 1
                ready.notify_all()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ready.wait_for(lambda: in_hand[0] >= 4), 0.3)
            try:
                return await game(spec)
            finally:
                in_hand[0] -= 1

        async with local_runner(config, out) as game:
            yield run_game

    async def main() -> Any:
        other = WorkerService(url, WorkerSettings(concurrency=8, name="other", heartbeat_s=0.5), lambda c: runner)
        serving = asyncio.create_task(other.run())
        await asyncio.to_thread(wait_for_a_listener, url)  # (else it polls, each second: the games are over)
        try:
            return await play_queued(url, store, local_workers=8, settings=WorkerSettings(concurrency=8, name="local"),
                                     runner_for=lambda c: runner, poll_s=0.05)
        finally:
            other.stop()
            await serving

    with store:
        followed = asyncio.run(main())
        games = {g.game_id for g in store.games()}
    assert followed.recorded == followed.scheduled == len(games) == 24 and not followed.failed
    assert set(played) == games and set(played.values()) == {1}, played
    assert sum(statements) == 24 and max(statements) > 1, statements
    with psycopg.connect(url) as conn:
        workers = Counter(w for (w,) in conn.execute("SELECT worker FROM craits_results").fetchall())
        jobs_left = conn.execute("SELECT count(*) FROM procrastinate_jobs").fetchone()
    assert set(workers) == {"local", "other"}, workers
    assert jobs_left == (0,)  # (each finished by its game's recording)


def test_a_call_that_comes_as_the_last_batch_ends_is_not_left_waiting() -> None:
    """The second call comes in the step where the only batch allowed finds nothing more to do
    and ends: it must start a batch of its own (it waited for good: a game never recorded)."""
    async def main() -> list[int]:
        async def run(items: list[int]) -> list[int]:
            return items

        gathered: Gathered[int, int] = Gathered(run, at_once=1)

        async def second() -> int:
            await asyncio.sleep(0)  # (queued behind the batch's task)
            return await gathered(2)

        return list(await asyncio.wait_for(asyncio.gather(gathered(1), second()), 5))

    assert asyncio.run(main()) == [1, 2]
