"""A participant's faults, read from the game's replay, each a link to its decision."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from server.engine import make_config
from server.spec import BotSpec, Clocks, GameSpec
from server.transport.service import Arena, ArenaOptions
from server.web.participants import seat_faults

LATE_BOT = """
import time
from craits_bot import Bot, run

class Late(Bot):
    calls = 0
    def choose(self, request):
        self.calls += 1
        if self.calls == 3:
            time.sleep(0.6)  # past the decision's 0.2 s and an empty bank: a timeout
        return request.legal_actions[0]

run(Late())
"""


def test_the_faults_of_a_seat_are_its_decisions_that_went_wrong(tmp_path: Path) -> None:
    (tmp_path / "late.py").write_text(LATE_BOT)
    replay = tmp_path / "game.jsonl"

    async def play() -> None:
        arena = await Arena.start("127.0.0.1:0", ArenaOptions(sandbox="none"))
        try:
            seats = (BotSpec("house", "", builtin="first"),
                     BotSpec("late", "", command=(sys.executable, str(tmp_path / "late.py"))))
            await arena.run_game(GameSpec("g1", make_config("craits", 2, short_game=True), 7, seats,
                                          Clocks(decision_s=0.2, bank_s=0.0), replay))
        finally:
            await arena.shutdown(grace_s=0)

    asyncio.run(play())
    faults = seat_faults(str(replay), 1)
    assert faults and faults[0][0] > 1 and faults[0][1].startswith("timeout")
    assert seat_faults(str(replay), 0) == [] and seat_faults(None, 1) == []
