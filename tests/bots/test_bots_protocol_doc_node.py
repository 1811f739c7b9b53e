"""The kit-less Node.js bot of docs/protocol.md works as written: set up as the page says (the
block, the .proto and node_modules in one folder), launched in the sandbox, it plays a whole game
through the real referee without a fault and exits 0 when the referee ends the stream."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

from server.engine import make_config
from server.spec import BotSpec, Clocks, GameRecord, GameSpec, SeatStatus
from server.transport.service import Arena, ArenaOptions
from tests.bots.commands import ROOT, need_node

PAGE = ROOT / "docs" / "protocol.md"
NODE_MODULES = ROOT / "clients" / "js" / "node_modules"  # the JavaScript kit's: the same two packages


def test_the_protocol_pages_node_bot_plays_a_whole_game_in_the_sandbox(tmp_path: Path) -> None:
    need_node()
    blocks = re.findall(r"```js\n(// my_bot\.js.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 1
    folder = tmp_path / "my_bot"
    folder.mkdir()
    (folder / "my_bot.js").write_text(blocks[0])
    shutil.copy(ROOT / "proto" / "craits" / "v1" / "referee.proto", folder)
    (folder / "node_modules").symlink_to(NODE_MODULES)  # (npm install, without the network)
    for path in (tmp_path, folder):
        path.chmod(0o755)  # (a sandboxed bot reads only what every user may read)
    seat = BotSpec("my_bot", "token-my-bot", command=("node", "my_bot.js"), cwd=str(folder),
                   allow_read=(str(NODE_MODULES),))  # (the link's target, outside the bot's folder)

    async def play() -> GameRecord:
        arena = await Arena.start("127.0.0.1:0", ArenaOptions(bot_log_dir=tmp_path / "logs"))
        try:
            config = make_config("craits", 2, short_game=True)
            clocks = Clocks(decision_s=5.0, bank_s=60.0, connect_timeout_s=60.0)
            return await arena.run_game(GameSpec("doc-node", config, 5, (seat, BotSpec("random", "token-random", builtin="random")), clocks))
        finally:
            await arena.shutdown(grace_s=1)

    record = asyncio.run(play())
    mine = record.seats[0]
    assert record.aborted == ""
    assert mine.status is SeatStatus.OK, mine
    assert (mine.illegal, mine.malformed, mine.timeouts, mine.stale) == (0, 0, 0, 0), mine
    assert mine.decisions > 0 and mine.events == ()  # (no fault of any kind)
    log = next((tmp_path / "logs").glob("doc-node-seat0.log")).read_text()
    assert re.search(r"^doc-node decision \d+ \(id \d+\): \S+$", log, re.M), log  # what the bot printed
