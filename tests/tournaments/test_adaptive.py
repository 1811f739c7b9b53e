"""The adaptive schedule: it plays until its stop is met, picks tables from finished games only,
and a stopped run resumed plays exactly what an uninterrupted one does."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from server.spec import GameRecord, GameSpec
from server.storage.store import Store
from tests.cli import run_cli
from tests.tournaments.configs import builtin_tournament
from tournaments.adaptive import adaptive_finished, pick_table, play_adaptive
from tournaments.config import TournamentConfig, parse_config
from tournaments.local import play_local
from tournaments.runner import RunGame, load_standings, local_runner, open_tournament, start_tournament

BOTS = {"greedy": "greedy", "random": "random", "first": "first", "default": "default"}


def adaptive(extra: str, seed: int = 5) -> tuple[str, TournamentConfig]:
    text = builtin_tournament("ad", seed=seed, deals=1, bots=BOTS).replace(
        "deals = 1\n", f'schedule = "adaptive"\n{extra}').replace("concurrency = 2", "concurrency = 3")
    return text, parse_config(text)


def run(config: TournamentConfig, text: str, out: Path, **kwargs: object) -> Store:
    store = start_tournament(config, text, str(out / "ad.toml"), out)
    asyncio.run(play_adaptive(config, store, out, local_runner, progress=False, pages=False, **kwargs))  # type: ignore[arg-type]
    return store


def test_a_pair_stop_ends_the_tournament_as_soon_as_the_pair_is_decided(tmp_path: Path) -> None:
    text, config = adaptive('stop = "pair:greedy,random"\nmax_games = 900\n')
    with run(config, text, tmp_path / "out") as store:
        done, scheduled = store.counts()
        standings = load_standings(config, store)
        assert done == scheduled < 900 and done % 3 == 0
        assert store.tournament().finished_at is not None  # type: ignore[union-attr]
        assert standings.anytime is not None and standings.anytime["stop_met"]
        assert standings.anytime["stop_state"] == "greedy is better than random"
        assert "stop = 'pair:greedy,random': met; greedy is better than random" in standings.format_table()
        assert "order valid at any time (95%" in standings.format_table()
        assert "all intervals here hold together, at every moment, with 95% confidence (one 5% budget for bots and pairs)" in standings.format_table()
        assert adaptive_finished(config, store) is not None
        # every table seated the pair it waited for
        assert all({"greedy", "random"} <= set(g.seats) for g in store.games())


def test_max_games_ends_a_stop_that_is_not_met(tmp_path: Path) -> None:
    text, config = adaptive('stop = "settled"\nmax_games = 20\ntie_within = 0.0\n')
    with run(config, text, tmp_path / "out") as store:
        assert store.counts() == (18, 18)  # six tables of three: a seventh would pass 20
        why = adaptive_finished(config, store)
        assert why is not None and why.startswith("max_games (20) reached before stop 'settled' was met")
        assert not load_standings(config, store).anytime["stop_met"]  # type: ignore[index]


def test_a_table_seats_open_pairs_and_fills_the_rest_from_everyone() -> None:
    bots = [f"b{i}" for i in range(8)]
    seen: set[str] = set()
    for table in range(200):
        seating = pick_table(bots, 4, [("b1", "b2"), ("b5", "b6")], seed=3, table_no=table)
        assert {"b1", "b2", "b5", "b6"} == set(seating)
        seating = pick_table(bots, 4, [("b1", "b2")], seed=3, table_no=table)
        assert {"b1", "b2"} <= set(seating) and len(set(seating)) == 4
        seen.update(seating)
    assert seen == set(bots)
    assert pick_table(bots, 4, [("b1", "b2")], 3, 7) == pick_table(bots, 4, [("b1", "b2")], 3, 7)


def test_a_table_seats_a_chain_of_open_neighbours_and_the_pair_in_most_need_first() -> None:
    bots = [f"b{i}" for i in range(8)]
    chain = {("b1", "b2"): 0.01, ("b2", "b3"): 0.02, ("b3", "b4"): 0.03, ("b6", "b7"): 0.001}
    for table in range(20):
        assert set(pick_table(bots, 4, chain, seed=3, table_no=table)) == {"b1", "b2", "b3", "b4"}
        seating = pick_table(bots, 3, {("b1", "b2"): 0.01, ("b6", "b7"): 0.04}, seed=3, table_no=table)
        assert {"b6", "b7"} <= set(seating)


@contextlib.asynccontextmanager
async def stopping_after(games: int, stop: asyncio.Event, config: TournamentConfig, out: Path) -> AsyncIterator[RunGame]:
    """The local runner, that asks the run to stop as its ``games``-th game starts."""
    started = 0

    async def run_game(spec: GameSpec) -> GameRecord:
        nonlocal started
        started += 1
        if started == games:
            stop.set()
        return await asyncio.to_thread(play_local, spec)

    yield run_game


def test_a_stopped_adaptive_tournament_resumes_to_the_very_same_games(tmp_path: Path) -> None:
    text, config = adaptive('stop = "settled"\nmax_games = 45\ntie_within = 0.1\n', seed=11)
    straight = run(config, text, tmp_path / "straight")

    out = tmp_path / "stopped"
    store = start_tournament(config, text, str(out / "ad.toml"), out)
    stop = asyncio.Event()
    summary = asyncio.run(play_adaptive(config, store, out, lambda c, o: stopping_after(17, stop, c, o),
                                        progress=False, stop=stop, pages=False))
    assert summary.stopped and not summary.complete
    done, _ = store.counts()
    assert done < 17 and adaptive_finished(config, store) is None
    store.close()

    config2, store = open_tournament(out)
    with store:
        assert asyncio.run(play_adaptive(config2, store, out, local_runner, progress=False, pages=False)).complete
        resumed = [(g.game_id, g.seed, g.seats) for g in store.games()]
        with straight:
            assert resumed == [(g.game_id, g.seed, g.seats) for g in straight.games()]
            assert load_standings(config2, store).to_dict() == load_standings(config, straight).to_dict()


def test_the_command_line_plans_runs_and_resumes_an_adaptive_tournament(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, _ = adaptive('stop = "pair:greedy,random"\nmax_games = 300\n')
    path = tmp_path / "ad.toml"
    path.write_text(text)
    code, stdout, stderr = run_cli(capsys, "tournament", "plan", str(path))
    assert code == 0 and "adaptive: tables of 3 x 3 seat rotations until stop = 'pair:greedy,random'" in stdout
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(capsys, "tournament", "run", str(path), "--out", str(out), "--runner", "local",
                                   "--no-progress")
    assert code == 0, stderr
    assert "stop 'pair:greedy,random' met: greedy is better than random" in stderr
    assert "order valid at any time" in stdout and "beaten (any time)" in stdout
    document = json.loads((out / "standings.json").read_text())
    assert document["anytime"]["stop_met"] and document["standings"][0]["beaten_low"] is not None
    code, stdout, stderr = run_cli(capsys, "tournament", "resume", str(out), "--runner", "local")
    assert code == 0 and "ad: stop 'pair:greedy,random' met" in stderr and "stop = 'pair:greedy,random': met" in stdout
