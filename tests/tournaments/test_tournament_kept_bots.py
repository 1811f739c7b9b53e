"""A tournament's launched bots stay up between games, unless its file says ``restart = "game"``,
and its games spread over referee worker processes (issue 13, items 1 and 2).

Real bot processes (the Python kit's ``tests/referee/bots/pool_bot.py``) write down, at every
GameStart, their pid, their parent's pid (the referee process that launched them) and the game."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tournaments.config import parse_config
from tournaments.grpc_runner import tournament_runner
from tournaments.runner import TournamentError, load_standings, play, start_tournament

POOL_BOT = Path(__file__).resolve().parents[1] / "referee" / "bots" / "pool_bot.py"


def tournament_text(folder: Path, *, concurrency: int = 1, extra: str = "", mode: str = "ok") -> str:
    """Two kit bots and a builtin at tables of two: 3 tables x 1 deal x 2 rotations = 6 games."""
    bots = "".join(
        f'\n[[bots]]\nname = "{name}"\ncommand = ["{sys.executable}", "{POOL_BOT}", "{mode}", "{folder / name}"]\n'
        for name in ("kit-a", "kit-b")
    )
    return (  # unsandboxed: the bots write into the test's folder (tests/sandbox keeps sandboxed bots)
        f'name = "kept"\ntable_size = 2\ndeals = 1\nseed = 5\nconcurrency = {concurrency}\nsandbox = "none"\n{extra}\n'
        f'[flags]\nshort_game = true\n{bots}\n[[bots]]\nname = "house"\nbuiltin = "random"\n'
    )


def run(folder: Path, text: str, concurrency: int) -> tuple[dict[str, str], dict[str, object]]:
    """Play the tournament; its games' digests and its standings."""
    config = parse_config(text, source=str(folder / "kept.toml"))
    out = folder / "out"
    store = start_tournament(config, text, str(folder / "kept.toml"), out)
    try:
        summary = asyncio.run(play(config, store, out, tournament_runner, concurrency=concurrency, progress=False))
        assert summary.complete and summary.played == 6
        return {r.game_id: r.digest for r in store.results()}, load_standings(config, store).to_dict()
    finally:
        store.close()


def processes(path: Path) -> list[tuple[int, int]]:
    """(pid, parent pid) of the process that played each of a bot's games."""
    return [(int(pid), int(ppid)) for pid, ppid, _ in (line.split() for line in path.read_text().splitlines())]


def test_a_tournaments_launched_bots_play_all_their_games_in_one_process_each(tmp_path: Path) -> None:
    run(tmp_path, tournament_text(tmp_path), 1)
    for name in ("kit-a", "kit-b"):
        played = processes(tmp_path / name)
        assert len(played) == 4  # each bot sits at 2 of the 3 tables, each deal in 2 rotations
        assert len(set(played)) == 1, name


def test_restart_game_gives_every_game_a_fresh_process(tmp_path: Path) -> None:
    run(tmp_path, tournament_text(tmp_path, extra='restart = "game"'), 1)
    for name in ("kit-a", "kit-b"):
        pids = [pid for pid, _ in processes(tmp_path / name)]
        assert len(pids) == 4 and len(set(pids)) == 4, name


def test_two_games_at_once_play_on_two_referee_processes_with_the_same_results(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    alone = run(one, tournament_text(one), 1)
    spread = run(two, tournament_text(two, concurrency=2), 2)
    assert spread == alone  # the same games, the same standings
    referees = {ppid for name in ("kit-a", "kit-b") for _, ppid in processes(two / name)}
    assert len(referees) == 2 and os.getpid() in referees  # this one and a worker
    for name in ("kit-a", "kit-b"):  # at most one process per referee and bot: 2 games at once
        assert len({pid for pid, _ in processes(two / name)}) <= 2


def test_a_referee_worker_that_dies_stops_the_tournament_and_resume_finishes_it(tmp_path: Path) -> None:
    text = tournament_text(tmp_path, concurrency=2)
    config = parse_config(text, source=str(tmp_path / "kept.toml"))
    out = tmp_path / "out"
    store = start_tournament(config, text, str(tmp_path / "kept.toml"), out)

    async def kill_the_first_worker() -> int:
        """SIGKILL the first referee process that is not this one, once a bot names it."""
        while True:
            await asyncio.sleep(0.02)
            for name in ("kit-a", "kit-b"):
                with contextlib.suppress(OSError, ValueError):
                    for _, ppid in processes(tmp_path / name):
                        if ppid != os.getpid():
                            os.kill(ppid, signal.SIGKILL)
                            return ppid

    async def main() -> tuple[int, str]:
        killer = asyncio.create_task(kill_the_first_worker())
        with pytest.raises(TournamentError) as failure:
            await play(config, store, out, tournament_runner, concurrency=2, progress=False)
        return await killer, str(failure.value)

    try:
        worker, message = asyncio.run(main())
        assert f"referee worker 1 (pid {worker}) exited" in message
        recorded, scheduled = store.counts()
        assert recorded < scheduled
        summary = asyncio.run(play(config, store, out, tournament_runner, concurrency=1, progress=False))
        assert summary.complete and store.counts() == (scheduled, scheduled)
    finally:
        store.close()


def test_ctrl_c_stops_the_workers_and_every_kept_bot_and_resume_finishes(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole foreground group (the tournament and its workers): the workers
    leave it to the tournament, which cancels the games in flight; no process is left behind.
    Slow bots: the tournament's own process played all 6 games before its worker started (CI)."""
    from tests.referee.conftest import gone_within
    from tests.tournaments.test_tournament_resume import recorded

    path = tmp_path / "kept.toml"
    path.write_text(tournament_text(tmp_path, concurrency=2, mode="slow"))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "server.cli", "tournament", "run", str(path), "--out", str(out),
               "--runner", "grpc", "--no-progress"]
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    db = out / "tournament.db"
    deadline = time.monotonic() + 120

    def a_worker_plays() -> bool:
        """A bot plays in a worker (the tournament's own process may record the first games
        while its worker starts, the more so the faster games are)."""
        with contextlib.suppress(OSError, ValueError):
            return any(ppid != proc.pid for name in ("kit-a", "kit-b") for _, ppid in processes(tmp_path / name))
        return False

    while proc.poll() is None and time.monotonic() < deadline and not ((recorded(db) or 0) >= 1 and a_worker_plays()):
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    bots = {pid for name in ("kit-a", "kit-b") for pid, _ in processes(tmp_path / name)}
    referees = {ppid for name in ("kit-a", "kit-b") for _, ppid in processes(tmp_path / name)} - {proc.pid}
    assert referees  # a worker played
    assert all(gone_within(pid) for pid in bots | referees)
    done = subprocess.run([*command[:4], "resume", str(out), "--runner", "grpc", "--no-progress"],
                          cwd=root, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert recorded(db) == 6


def test_a_kept_bot_costs_the_referee_no_memory_per_game(tmp_path: Path) -> None:
    """A ladder keeps its launched bots for weeks: what the referee keeps for a kept process
    must not grow with its games (each game's watcher waits for the process to exit and is
    cancelled when the game ends; asyncio kept every such cancelled wait until the process
    exited). Counted, not measured: the cancelled futures alive after 3 rounds and after 9."""
    from tournaments.ladder import open_ladder, run_ladder

    text = tournament_text(tmp_path)
    config = parse_config(text, source=str(tmp_path / "kept.toml"))
    alive: dict[int, int] = {}

    def count(played: Any, _standings: Any) -> None:
        gc.collect()
        alive[played.number] = sum(1 for o in gc.get_objects() if isinstance(o, asyncio.Future) and o.cancelled())

    with open_ladder(config, text, str(tmp_path / "kept.toml"), tmp_path / "out") as store:
        summary = asyncio.run(run_ladder(config, store, tmp_path / "out", tournament_runner, rounds=9,
                                         concurrency=1, on_round=count, handle_signals=False))
    assert summary.games == 18
    assert len(set(processes(tmp_path / "kit-a"))) == 1  # one process played all its games
    assert alive[9] <= alive[3] + 2, alive  # (it was one more per kept seat and game: 8, then 24)
