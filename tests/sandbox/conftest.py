"""Hostile bots against the real sandbox: a real referee, real bwrap, real bot processes.

Each game seats a hostile bot (``bots/hostile.py``: it plays legal moves with the Python kit
while it tries one escape), a well-behaved bot launched from a folder of its own that holds a
secret, and a builtin bot. The tests read what the hostile bot says in its log and check the
world from outside."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from server.engine import make_config
from server.logging import configure_logging
from server.spec import BotSpec, Clocks, GameRecord, GameSpec, SeatReport, SeatStatus
from server.transport import sandbox
from server.transport.service import Arena, ArenaOptions

HOSTILE = Path(__file__).resolve().parent / "bots" / "hostile.py"
CLOCKS = Clocks(decision_s=2.0, bank_s=30.0, max_strikes=3, reconnect_grace_s=1.0, connect_timeout_s=30.0)


@pytest.fixture(autouse=True, scope="session")
def _bwrap_works() -> None:
    """These tests need a working bwrap; missing, they fail in CI (``make test`` installs it)."""
    configure_logging(None, console=False)
    why = sandbox.problem()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the sandbox cannot run here, and CI must test it: {why}")
        pytest.skip(f"the sandbox cannot run here: {why}")


@dataclass
class Played:
    record: GameRecord
    said: str
    """What the hostile bot printed (its log)."""

    @property
    def hostile(self) -> SeatReport:
        return self.record.seats[0]

    def others_finished_normally(self) -> None:
        assert not self.record.aborted, self.record.aborted
        victim, house = self.record.seats[1], self.record.seats[2]
        assert victim.status is SeatStatus.OK and victim.decisions > 0, victim
        assert (victim.illegal, victim.malformed, victim.timeouts) == (0, 0, 0), victim
        assert house.status is SeatStatus.OK, house


def victim_folder(tmp_path: Path) -> Path:
    """A well-behaved bot's own folder, readable by every user, with a secret in it."""
    folder = tmp_path / "victim"
    folder.mkdir(exist_ok=True)
    (folder / "secret.txt").write_text("the victim's secret strategy\n")
    return folder


def play(tmp_path: Path, attempt: str, *args: object, limits: sandbox.Limits | None = None,
         short_game: bool = True) -> Played:
    """One game: the hostile bot trying ``attempt ARGS``, a victim bot, a builtin bot."""
    tmp_path.chmod(0o755)  # (pytest makes it 0700; bot folders must be readable by every user)
    logs = tmp_path / "logs" / "bots"
    hostile = BotSpec("hostile", "", command=(sys.executable, HOSTILE.name, attempt, *map(str, args)),
                      cwd=str(HOSTILE.parent))  # (as a tournament file gives it: a command line's files are readable)
    victim = BotSpec("victim", "", command=(sys.executable, "-m", "craits_bot.examples.random_bot"),
                     cwd=str(victim_folder(tmp_path)))
    house = BotSpec("house", "", builtin="random")
    game_id = f"g-{attempt}-{secrets.token_hex(2)}"
    spec = GameSpec(game_id, make_config("craits", 3, short_game=short_game), 3, (hostile, victim, house), CLOCKS,
                    tmp_path / "replays" / f"{game_id}.jsonl")
    options = ArenaOptions(bot_log_dir=logs, bot_stop_grace_s=1.0, limits=limits or sandbox.Limits())

    async def main() -> GameRecord:
        arena = await Arena.start("127.0.0.1:0", options)
        try:
            return await asyncio.wait_for(arena.run_game(spec), 180)
        finally:
            await arena.shutdown(0)

    record = asyncio.run(main())
    log = logs / f"{game_id}-seat0.log"
    return Played(record, log.read_text(errors="replace") if log.exists() else "")


def blocked(played: Played, attempt: str) -> str:
    """The hostile bot's own account of its attempt, asserted to be a failure."""
    lines = [line for line in played.said.splitlines() if line.startswith(f"attempt {attempt}:")]
    assert lines, f"the bot said nothing of its attempt:\n{played.said}"
    assert "ESCAPED" not in lines[0] and "blocked" in lines[0], lines[0]
    return lines[0]
