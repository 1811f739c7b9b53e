"""Bots kept between games (issue 13) are sandboxed like bots launched for one game (issue 15):
the pool starts them through the referee's one way of starting a bot."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from server.engine import make_config
from server.spec import BotSpec, Clocks, GameSpec, SeatStatus
from server.transport.pool import RestartPolicy
from server.transport.service import Arena, ArenaOptions
from tests.bots.commands import JS_BOT, JS_RANDOM, need_node

KIT = Path(__file__).resolve().parents[2] / "clients" / "python"
CLOCKS = Clocks(decision_s=2.0, bank_s=30.0, max_strikes=3, reconnect_grace_s=5.0, connect_timeout_s=30.0)
PROBE = """import sys
from craits_bot import run
from craits_bot.examples.random_bot import RandomBot

class RandomBotThatSaysItsImports(RandomBot):
    def on_game_end(self, game):
        print("imported:", [name for name in ("grpc", "asyncio") if name in sys.modules], flush=True)

run(RandomBotThatSaysItsImports())
"""
"""The kit's random bot, saying at each game's end whether it has imported grpc or asyncio."""


def kit_bot(name: str) -> BotSpec:
    return BotSpec(name=name, token="", command=(sys.executable, "-c", PROBE), cwd=str(KIT))


def js_kit_bot(name: str) -> BotSpec:
    return BotSpec(name=name, token="", command=JS_RANDOM, cwd=str(JS_BOT.parent))


def test_kept_bots_run_sandboxed_and_play_every_game_in_one_process(tmp_path: Path) -> None:
    """One bot of each kit: both play every game, without a fault, through the frames socket;
    the Python kit's bot never imports grpc nor asyncio (their import is a bot's start-up)."""
    need_node()
    seats = (kit_bot("a"), js_kit_bot("b"))
    config = make_config("craits", 2, short_game=True)

    async def main() -> tuple[list[list[SeatStatus]], list[list[tuple[int, ...]]], int, list[bool], int]:
        arena = await Arena.start("127.0.0.1:0", ArenaOptions(bot_log_dir=tmp_path / "bots", sandbox="bwrap"))
        try:
            assert arena.sandbox is not None
            arena.keep_bots(RestartPolicy())
            statuses, faults = [], []
            for n in range(3):
                order = seats if n % 2 == 0 else tuple(reversed(seats))
                record = await arena.run_game(GameSpec(game_id=f"kept-{n}", config=config, seed=n + 1,
                                                       seats=order, clocks=CLOCKS))
                statuses.append([seat.status for seat in record.seats])
                faults.append([(s.illegal, s.malformed, s.timeouts, s.bot_errors, s.disconnects) for s in record.seats])
            assert arena.pool is not None
            jailed = [p.process.jail is not None for p in arena.pool.processes()]
            return statuses, faults, arena.pool.launches, jailed, arena.framed_streams
        finally:
            await arena.shutdown(grace_s=0)

    statuses, faults, launches, jailed, framed = asyncio.run(main())
    assert statuses == [[SeatStatus.OK, SeatStatus.OK]] * 3
    assert faults == [[(0, 0, 0, 0, 0)] * 2] * 3
    assert launches == 2  # one process per bot for all three games
    assert jailed == [True, True]  # each in its sandbox
    assert framed == 2  # each kit took the frames socket the sandbox offered it (CRAITS_FRAMED_SOCKET)
    said = [line for line in (tmp_path / "bots" / "a-1-kept-0.log").read_text().splitlines()
            if line.startswith("imported:")]
    assert len(said) >= 2 and set(said) == {"imported: []"}, said  # (the last game's line may come after shutdown)
