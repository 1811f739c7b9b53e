"""The tournament through the referee's gRPC runner: the same games as the local runner."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.tournaments.configs import builtin_tournament
from tournaments.config import parse_config
from tournaments.grpc_runner import tournament_runner
from tournaments.runner import load_standings, local_runner, play, start_tournament

TEXT = builtin_tournament("both", seed=99, deals=1, bots={"r1": "random", "r2": "random", "first": "first", "default": "default"})


def test_builtin_bots_play_the_same_games_through_the_referee(tmp_path: Path) -> None:
    """Same seeds, same policies, same seeding of them: identical games and standings."""
    config = parse_config(TEXT)
    outcomes = []
    for name, factory in (("local", local_runner), ("grpc", tournament_runner)):
        out = tmp_path / name
        store = start_tournament(config, TEXT, str(tmp_path / "both.toml"), out)
        summary = asyncio.run(play(config, store, out, factory, progress=False))
        assert summary.complete, name
        outcomes.append(({r.game_id: r.digest for r in store.results()}, load_standings(config, store).to_dict()))
        store.close()
    assert outcomes[0] == outcomes[1]
