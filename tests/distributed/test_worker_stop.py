"""A stopped worker leaves once it holds no game, even when the queue library's own shutdown
never returns (seen: a worker that outlived its SIGTERM by more than 30 s with every game
recorded): it says so in its log with where the shutdown was waiting."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from server.logging import configure_logging
from tournaments.distributed import WorkerService, WorkerSettings


def service_whose_queue_never_stops() -> WorkerService:
    service = WorkerService("postgresql://127.0.0.1:1/none", WorkerSettings(concurrency=1, name="w"),
                            lambda config: None)  # type: ignore[arg-type,return-value]

    async def run() -> None:
        await asyncio.Event().wait()  # a shutdown that never returns

    service.run = run  # type: ignore[method-assign]
    return service


def events(folder: Path) -> list[dict[str, object]]:
    configure_logging(None, console=False)
    return [json.loads(line) for path in folder.glob("*.jsonl") for line in path.read_text().splitlines()]


def test_a_stopped_worker_with_no_game_leaves_and_says_where_the_queue_was_stuck(tmp_path: Path) -> None:
    configure_logging(tmp_path, name="stop", console=False)
    service = service_whose_queue_never_stops()

    async def main() -> bool:
        task = asyncio.create_task(service.run_until_stopped(grace_s=0.3))
        await asyncio.sleep(0.1)
        service.stop()
        return await asyncio.wait_for(task, 5)

    assert asyncio.run(main()) is False
    stuck = [e for e in events(tmp_path) if e["event"] == "worker_stop_stuck"]
    assert len(stuck) == 1 and "run" in json.dumps(stuck[0]["tasks"])


def test_a_stopped_worker_waits_for_the_game_in_its_hands(tmp_path: Path) -> None:
    configure_logging(tmp_path, name="stop", console=False)
    service = service_whose_queue_never_stops()

    async def main() -> tuple[bool, float]:
        service.game_worker.in_hand = 1
        task = asyncio.create_task(service.run_until_stopped(grace_s=0.2))
        service.stop()
        await asyncio.sleep(1.0)
        assert not task.done()  # a game in hand: it waits, however long the grace
        service.game_worker.in_hand = 0
        loop = asyncio.get_running_loop()
        began = loop.time()
        result = await asyncio.wait_for(task, 5)
        return result, loop.time() - began

    left_cleanly, after = asyncio.run(main())
    assert left_cleanly is False and after >= 0.2
