"""The runner: many games at once, each recorded as it ends, clean stops and failures."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import os
import sys
from pathlib import Path

import pytest

from server.spec import GameRecord, GameSpec
from server.storage.replay import verify_replay
from server.storage.store import Store
from tests.tournaments.configs import builtin_tournament
from tournaments.config import parse_config
from tournaments.local import LocalRunner, play_local
from tournaments.runner import (
    Progress,
    TournamentError,
    TournamentRunner,
    load_standings,
    local_runner,
    open_tournament,
    play,
    start_tournament,
)

TEXT = builtin_tournament("rt", seed=77, deals=2, bots={"r1": "random", "r2": "random", "first": "first", "greedy": "greedy"})
CONFIG = parse_config(TEXT)
GAMES = 4 * 2 * 3


def start(tmp_path: Path, name: str = "out") -> tuple[Path, Store]:
    out = tmp_path / name
    return out, start_tournament(CONFIG, TEXT, str(tmp_path / "rt.toml"), out)


class Fake:
    """A run_game that plays for real but lets a test watch and steer it."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.in_flight = 0
        self.most = 0
        self.started = 0
        self.cleaned = 0
        self.fail_on = fail_on

    async def __call__(self, spec: GameSpec) -> GameRecord:
        self.started += 1
        number = self.started
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.005 * (number % 3))  # finish out of order
            if number == self.fail_on:
                raise OSError("bot binary vanished")
            return play_local(spec)
        finally:
            self.in_flight -= 1
            self.cleaned += 1


def test_a_tournament_plays_every_game_and_records_it(tmp_path: Path) -> None:
    out, store = start(tmp_path)
    summary = asyncio.run(play(CONFIG, store, out, local_runner, progress=False))
    assert summary.complete and summary.played == summary.recorded == GAMES and not summary.stopped
    assert store.pending_games() == [] and store.tournament().finished_at is not None  # type: ignore[union-attr]
    replays = sorted((out / "replays").glob("*.jsonl.gz"))
    assert len(replays) == GAMES
    digests = {r.game_id: r.digest for r in store.results()}
    for path in replays[:3]:  # the referee's replay format, verified by re-simulation
        summary_ = verify_replay(path)
        assert summary_.digest == digests[path.name.removesuffix(".jsonl.gz")]
    assert {r.replay_path for r in store.results()} == {str(p) for p in replays}
    events = [json.loads(line)["event"] for line in (out / "tournament.log").read_text().splitlines()]
    assert events[0] == "tournament_started" and events[-1] == "tournament_finished"
    assert events.count("game_recorded") == GAMES


def test_no_more_games_at_once_than_the_concurrency(tmp_path: Path) -> None:
    out, store = start(tmp_path)
    fake = Fake()
    asyncio.run(TournamentRunner(CONFIG, store, fake, out, concurrency=3, progress=False).run())
    assert fake.most == 3 and fake.started == GAMES and store.counts() == (GAMES, GAMES)


def test_results_do_not_depend_on_concurrency(tmp_path: Path) -> None:
    digests = []
    for concurrency in (1, 3):
        out, store = start(tmp_path, f"c{concurrency}")
        asyncio.run(play(CONFIG, store, out, local_runner, concurrency=concurrency, progress=False))
        digests.append({r.game_id: r.digest for r in store.results()})
        assert load_standings(CONFIG, store).complete
    assert digests[0] == digests[1]


def test_a_failing_game_stops_the_tournament_and_cleans_up_the_others(tmp_path: Path) -> None:
    out, store = start(tmp_path)
    fake = Fake(fail_on=5)
    with pytest.raises(TournamentError, match="bot binary vanished"):
        asyncio.run(TournamentRunner(CONFIG, store, fake, out, concurrency=3, progress=False).run())
    assert fake.cleaned == fake.started and fake.in_flight == 0
    done, total = store.counts()
    assert 0 < done < total and done <= fake.started - 1
    assert "game_failed" in (out / "tournament.log").read_text()


def test_a_stop_cancels_games_in_flight_and_resume_finishes_identically(tmp_path: Path) -> None:
    out, store = start(tmp_path)

    class Stopping(Fake):
        runner: TournamentRunner

        async def __call__(self, spec: GameSpec) -> GameRecord:
            if self.started == 7:
                self.runner.request_stop()
            return await super().__call__(spec)

    fake = Stopping()
    runner = TournamentRunner(CONFIG, store, fake, out, concurrency=2, progress=False)
    fake.runner = runner
    summary = asyncio.run(runner.run())
    assert summary.stopped and not summary.complete and fake.cleaned == fake.started
    assert store.tournament().finished_at is None  # type: ignore[union-attr]
    store.close()

    config, store = open_tournament(out)
    assert asyncio.run(play(config, store, out, local_runner, progress=False)).complete
    resumed = load_standings(config, store).to_dict()

    out2, store2 = start(tmp_path, "straight")
    asyncio.run(play(CONFIG, store2, out2, local_runner, progress=False))
    assert resumed == load_standings(CONFIG, store2).to_dict()


def test_a_record_for_another_game_is_refused(tmp_path: Path) -> None:
    out, store = start(tmp_path)

    async def confused(spec: GameSpec) -> GameRecord:
        return dataclasses.replace(play_local(spec), game_id="d0001-t00001-r1x")

    with pytest.raises(TournamentError, match="returned game"):
        asyncio.run(TournamentRunner(CONFIG, store, confused, out, progress=False).run())


def test_the_local_runner_refuses_bots_it_cannot_play(tmp_path: Path) -> None:
    text = TEXT.replace('builtin = "greedy"', 'command = ["python", "bot.py"]')
    config = parse_config(text)

    async def go() -> None:
        async with local_runner(config, tmp_path):
            pass

    with pytest.raises(TournamentError, match="'greedy' is a command bot"):
        asyncio.run(go())


def test_a_pool_of_processes_plays_the_same_games(tmp_path: Path) -> None:
    out, store = start(tmp_path)
    runner = LocalRunner(workers=2)
    try:
        asyncio.run(TournamentRunner(CONFIG, store, runner, out, progress=False).run())
    finally:
        runner.close()
    out2, store2 = start(tmp_path, "threads")
    asyncio.run(play(CONFIG, store2, out2, local_runner, progress=False))
    assert {r.game_id: r.digest for r in store.results()} == {r.game_id: r.digest for r in store2.results()}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_shows_on_a_terminal_only() -> None:
    quiet = io.StringIO()
    bar = Progress(10, 0, stream=quiet)
    bar.advance()
    bar.close()
    assert quiet.getvalue() == ""

    terminal = Terminal()
    bar = Progress(10, 4, stream=terminal)
    assert "ETA --:--" in bar.line()
    bar.advance()
    bar.close()
    text = terminal.getvalue()
    assert text.startswith("\r[") and "5/10" in text and "ETA" in text and text.endswith("\n")


def test_the_time_left_follows_the_last_minute_not_a_slow_start() -> None:
    """The first games also launch every bot: a run whose first game took 50 s and which then
    plays 2 games a second is shown at 2 games a second once the start is a minute behind."""
    bar = Progress(1000, 0, stream=Terminal())
    t0 = bar.started
    bar.advance(now=t0 + 50.0)
    for i in range(1, 201):
        bar.advance(now=t0 + 50.0 + i / 2)
    line = bar.line(now=t0 + 150.0)
    assert "201/1000" in line and " 2.0 games/s" in line, line
    assert "ETA 06:" in line, line  # 799 games at 2 a second (from the start: 1.3 a second, 10 min)


class Launching(Fake):
    """A run_game that launches a real process per game and, as the contract asks,
    kills it in a finally block."""

    def __init__(self, fail_on: int | None = None) -> None:
        super().__init__(fail_on)
        self.processes: list[asyncio.subprocess.Process] = []

    async def __call__(self, spec: GameSpec) -> GameRecord:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(60)")
        self.processes.append(proc)
        try:
            await asyncio.sleep(0.05 if self.started + 1 != self.fail_on else 0.2)
            return await super().__call__(spec)
        finally:
            proc.kill()
            try:
                await proc.wait()
            except asyncio.CancelledError:  # cancelled while cleaning up: finish, then go
                await proc.wait()
                raise


@pytest.mark.parametrize("how", ["failure", "stop"])
def test_no_process_outlives_a_failed_or_stopped_run(tmp_path: Path, how: str) -> None:
    out, store = start(tmp_path)
    fake = Launching(fail_on=4 if how == "failure" else None)
    runner = TournamentRunner(CONFIG, store, fake, out, concurrency=3, progress=False)

    async def go() -> None:
        if how == "stop":
            asyncio.get_running_loop().call_later(0.3, runner.request_stop)
        await runner.run()

    if how == "failure":
        with pytest.raises(TournamentError):
            asyncio.run(go())
    else:
        asyncio.run(go())
    assert len(fake.processes) >= 3 and store.counts()[0] < GAMES
    assert all(p.returncode is not None for p in fake.processes)
    for proc in fake.processes:
        with pytest.raises(ProcessLookupError):
            os.kill(proc.pid, 0)
