"""The board keeps what it has read (its books) and reads only what is new at each refresh:
at every step its snapshot and ratings must be a fresh board's, however the games arrive."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import gc
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from server.storage.store import StoredResult
from server.web.board import Board, faulty_games, folder_source
from tests.tournaments.configs import builtin_tournament
from tournaments.config import parse_config
from tournaments.runner import TournamentRunner, load_standings, local_runner, start_tournament
from tournaments.standings import rating_history


def _same_as_a_fresh_board(kept: Board, out: Path, config: Any, store: Any) -> None:
    """The kept board against the store read whole: its standings, games, hidden deals and
    ratings, and against a board that reads it for the first time."""
    assert kept.snapshot.document() == load_standings(config, store).to_dict()
    shown = copy.deepcopy(kept.snapshot.standings)  # (the board adds the games with faults, as counted below)
    assert shown.pop("faulty_games") == faulty_games(kept.snapshot.games)
    assert shown == load_standings(config, store).to_dict(head_to_head=False)
    assert [g["game_id"] for g in kept.snapshot.games] == [r.game_id for r in store.results()]
    assert kept.snapshot.pending_seeds == {slot.seed for slot in store.pending_games()}
    assert kept.ratings() == rating_history(store.results(), config.bot_names)
    fresh = Board(folder_source(out))
    try:
        fresh.refresh()
        assert kept.snapshot.document() == fresh.snapshot.document()
        assert kept.snapshot.games == fresh.snapshot.games
        assert kept.snapshot.by_id == fresh.snapshot.by_id
        assert kept.snapshot.pending_seeds == fresh.snapshot.pending_seeds
        assert kept.ratings() == fresh.ratings()
    finally:
        fresh.close()


def test_a_board_refreshed_game_by_game_is_the_board_read_afresh(tmp_path: Path) -> None:
    """Games recorded out of schedule order (as many at once finish), aborted ones among
    them, then the aborted ones removed (a resume that plays them again)."""
    with _watched(tmp_path, "books", seed=3) as (config, store, board, out):
        slots = store.games()
        order = list(range(len(slots)))
        random.Random(5).shuffle(order)
        records = asyncio.run(_play(config, store, out, [slots[i] for i in order]))
        for n, record in enumerate(records):
            if n % 4 == 1:  # (an aborted game: recorded, scored nowhere)
                record = dataclasses.replace(record, aborted="the bot crashed")
            store.record_game(record)
            assert board.refresh()
            _same_as_a_fresh_board(board, out, config, store)
        assert all(board.ratings().values()) and not board.snapshot.pending_seeds
        if store.forget_aborted():
            assert board.refresh()
            _same_as_a_fresh_board(board, out, config, store)


@contextlib.contextmanager
def _watched(tmp_path: Path, name: str, *, seed: int) -> Iterator[tuple[Any, Any, Board, Path]]:
    """A tournament of three builtin bots, stored and not played, and a board on its folder."""
    text = builtin_tournament(name, seed=seed, deals=2, bots={"a": "random", "b": "first", "c": "greedy"},
                              table_size=3)
    config = parse_config(text)
    out = tmp_path / "out"
    store = start_tournament(config, text, str(tmp_path / f"{name}.toml"), out)
    board = Board(folder_source(out))
    try:
        yield config, store, board, out
    finally:
        board.close()
        store.close()


async def _play(config: Any, store: Any, out: Path, slots: list[Any]) -> list[Any]:
    async with local_runner(config, out) as run_game:
        runner = TournamentRunner(config, store, run_game, out, progress=False, handle_signals=False)
        return [await run_game(runner.spec_for(slot)) for slot in slots]


def test_a_board_keeps_no_result_it_has_settled(tmp_path: Path) -> None:
    """A ladder's board runs for weeks: of each settled game it keeps the row and the ratings
    its pages show, not the store's result (its seats' rows and counters were most of what a
    game cost the board). Counted: the results alive once the board has added them up."""
    with _watched(tmp_path, "kept", seed=4) as (config, store, board, out):
        for record in asyncio.run(_play(config, store, out, store.games())):
            store.record_game(record)
        assert board.refresh() and len(board.snapshot.games) == len(store.games())
        gc.collect()
        ours = [o for o in gc.get_objects() if isinstance(o, StoredResult) and str(out) in (o.replay_path or "")]
        assert not ours  # (another test's results may be alive in this process: only this folder's count)
