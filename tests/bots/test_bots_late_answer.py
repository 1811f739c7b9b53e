"""A bot that answers after the referee has moved on, through the real referee.

A bot whose ``choose`` blocks past the decision's clock is timed out and struck out,
and the game ends without it; its answer then finds the stream already ended. gRPC's
Python client reports that write as INTERNAL and drops the referee's last messages and
its OK, so the kit reconnects, and the referee no longer knows the game's token. The
bot must say that its answer came too late and end as a bot whose games are over
(exit 0), not blame its token.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from server.engine import make_config
from server.spec import BotSpec, Clocks, GameSpec, SeatStatus
from server.transport.service import Arena
from tests.bots.commands import finish, start_bot

SLOW_PY = """
import time
from craits_bot import Bot, run

class Slow(Bot):
    slept = False

    def choose(self, request):
        if not self.slept:  # long past the clock, once: struck out at once with max_strikes 1
            self.slept = True
            time.sleep(2)
        return request.legal_actions[0]

run(Slow())
"""


def test_an_answer_after_the_game_ended_is_called_late_and_the_bot_exits_0(tmp_path: Path) -> None:
    script = tmp_path / "slow_bot.py"
    script.write_text(SLOW_PY)

    async def play() -> tuple[SeatStatus, int, str]:
        arena = await Arena.start("127.0.0.1:0")
        try:
            spec = GameSpec(
                "late-1", make_config("craits", 2, short_game=True), 5,
                (BotSpec("slow", "tok-slow"), BotSpec("random", "", builtin="random")),
                Clocks(decision_s=0.1, bank_s=0.0, max_strikes=1, connect_timeout_s=60.0),
            )
            game = asyncio.create_task(arena.run_game(spec))
            while "tok-slow" not in arena.tokens:  # the game seats its token: then the bot may say Hello
                await asyncio.sleep(0)
            process = start_bot(
                (sys.executable, str(script)), env={"CRAITS_SERVER": arena.target, "CRAITS_TOKEN": "tok-slow"}
            )
            record = await game
            # The referee stays up while the bot wakes, answers, reconnects and is refused.
            code, err = await asyncio.to_thread(finish, process)
            return record.seats[0].status, code, err
        finally:
            await arena.shutdown(grace_s=0)

    status, code, err = asyncio.run(play())
    assert status is SeatStatus.STRUCK_OUT
    assert "the referee had ended the stream when the answer to decision" in err, err
    assert "choose() took longer than the referee waited" in err, err
    assert "no longer knows this bot's token: its games are over" in err, err
    assert "check the token" not in err, err
    assert code == 0, err
