"""The code in docs/first-bot.md works: its bots play whole games through the real referee,
two games in a row in the same processes (as a tournament keeps them).

The Python and JavaScript blocks are taken from the guide as written, so a change
to the kits that breaks the guide fails here.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

from server.engine import make_config
from server.spec import BotSpec, Clocks, GameRecord, GameSpec, SeatStatus
from server.transport.service import Arena, ArenaOptions
from tests.bots.commands import JS_BOT, ROOT, need_node

GUIDE = ROOT / "docs" / "first-bot.md"


def guide_blocks(language: str) -> list[str]:
    return [body for lang, body in re.findall(r"```(\w+)\n(.*?)```", GUIDE.read_text(), re.S) if lang == language]


def test_the_guide_shows_three_python_bots_and_two_javascript_strategies() -> None:
    assert len(guide_blocks("python")) == 3
    assert len(guide_blocks("js")) == 2


def test_the_guides_bots_play_a_whole_game(tmp_path: Path) -> None:
    need_node()
    tmp_path.chmod(0o755)  # (a sandboxed bot reads only what every user may read)
    seats = []
    for i, code in enumerate(guide_blocks("python"), 1):
        path = tmp_path / f"my_bot_{i}.py"
        path.write_text(code)
        seats.append(BotSpec(f"py{i}", f"token-py{i}", command=(sys.executable, str(path))))
    for i, code in enumerate(guide_blocks("js"), 1):
        path = tmp_path / f"my_strategy_{i}.js"
        path.write_text(code)
        seats.append(BotSpec(f"js{i}", f"token-js{i}", command=("node", str(JS_BOT), "--strategy", str(path)),
                             allow_read=(str(path),)))  # (the strategy is outside the JS bot's folder)

    async def play() -> list[GameRecord]:
        arena = await Arena.start("127.0.0.1:0", ArenaOptions(bot_log_dir=tmp_path / "logs"))
        arena.keep_bots()
        try:
            config = make_config("craits", len(seats), short_game=True)
            clocks = Clocks(decision_s=5.0, bank_s=60.0, connect_timeout_s=60.0)
            return [await arena.run_game(GameSpec(f"guide-{n}", config, 3 + n, tuple(seats), clocks))
                    for n in range(2)]
        finally:
            await arena.shutdown(grace_s=1)

    records = asyncio.run(play())
    for record in records:
        assert record.aborted == ""
        for seat in record.seats:
            assert seat.status is SeatStatus.OK, seat
            assert (seat.illegal, seat.malformed, seat.timeouts) == (0, 0, 0), seat
            assert seat.decisions > 0
    assert len(list((tmp_path / "logs").glob("*.log"))) == len(seats)  # one process per bot played both
