"""Every example bot plays full games against every other through the real referee.

The referee (server.transport.service.Arena) listens on 127.0.0.1 with an ephemeral port and
launches each bot as a real process (Python kit and Node.js bot), exactly as
``craits play`` does. Games are short (short_game: eight hands) to keep this fast.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from server.engine import make_config
from server.spec import BotSpec, Clocks, GameRecord, GameSpec, SeatStatus
from server.transport.service import Arena, ArenaOptions
from tests.bots.commands import EXAMPLE_BOTS, ROOT, needs

# Generous clocks: two shared cores start Python and Node processes side by side.
CLOCKS = Clocks(decision_s=5.0, bank_s=60.0, connect_timeout_s=60.0)
PAIRS = list(itertools.combinations(sorted(EXAMPLE_BOTS), 2))


async def play(names: list[str], seed: int, log_dir: Path) -> GameRecord:
    arena = await Arena.start("127.0.0.1:0", ArenaOptions(bot_log_dir=log_dir))
    try:
        seats = tuple(
            BotSpec(name, f"token-{i}-{name}", command=EXAMPLE_BOTS[name], cwd=str(ROOT)) for i, name in enumerate(names)
        )
        spec = GameSpec(f"g{seed}", make_config("craits", len(names), short_game=True), seed, seats, CLOCKS)
        return await arena.run_game(spec)
    finally:
        await arena.shutdown(grace_s=1)


def check_clean_game(record: GameRecord, names: list[str], log_dir: Path) -> None:
    assert record.aborted == ""
    assert len(record.result.hands) == 8, "a short game has eight hands"
    for name, seat in zip(names, record.seats, strict=True):
        assert seat.bot == name
        assert seat.status is SeatStatus.OK, (name, seat)
        assert (seat.illegal, seat.malformed, seat.timeouts, seat.default_actions) == (0, 0, 0, 0), (name, seat)
        assert seat.decisions > 0
    logs = sorted(log_dir.glob("*.log"))
    assert len(logs) == len(names)
    for log in logs:
        text = log.read_text()
        assert "the referee closed the stream: done (1 game(s) ended" in text, f"{log.name}:\n{text}"
        assert "ERROR" not in text and "Traceback" not in text, f"{log.name}:\n{text}"


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a}-vs-{b}" for a, b in PAIRS])
def test_every_example_bot_plays_every_other(first: str, second: str, tmp_path: Path) -> None:
    for name in (first, second):
        needs(EXAMPLE_BOTS[name])
    names = [first, second]
    record = asyncio.run(play(names, seed=PAIRS.index((first, second)) + 1, log_dir=tmp_path))
    check_clean_game(record, names, tmp_path)


def test_all_four_example_bots_play_one_four_player_game(tmp_path: Path) -> None:
    names = sorted(EXAMPLE_BOTS)
    for name in names:
        needs(EXAMPLE_BOTS[name])
    record = asyncio.run(play(names, seed=42, log_dir=tmp_path))
    check_clean_game(record, names, tmp_path)
