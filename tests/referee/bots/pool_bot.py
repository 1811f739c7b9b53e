"""A Python-kit bot for the pool tests: it says which process played which game, and after
its first game misbehaves as its first argument says.

At every GameStart it appends ``<pid> <parent pid> <game id>`` to the file named by its second
argument, and resets its per-game state (as docs/first-bot.md shows). Modes:

* ``ok``: plays the first legal action, game after game;
* ``slow``: as ``ok``, but takes 0.3 s over each of a game's first 4 decisions (well within the
  1 s limit), so that a short tournament lasts long enough for its referee workers to start and play;
* ``exit``: exits (code 3) right after its first game;
* ``quiet``: closes its stream after its first game and never says Hello again (it stays up);
* ``stale``: from its second game on, answers every request with its first game's first
  decision id (state wrongly kept between games);
* ``grow``: keeps 100 MB more of memory every game.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from craits.v1 import referee_pb2 as pb
from craits_bot import Bot
from craits_bot.bot import Dispatcher
from craits_bot.runner import Runner, configure_logging, parse_args


class PoolBot(Bot):
    def __init__(self, mode: str, pids: str) -> None:
        self.mode = mode
        self.pids = pids
        self.games = 0
        self.first_decision = 0
        self.decisions_this_game = 0
        self.hoard: list[bytes] = []
        self.runner: Runner | None = None

    def on_game_start(self, game: pb.GameStart) -> None:
        self.games += 1
        self.decisions_this_game = 0
        with open(self.pids, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {os.getppid()} {game.game_id}\n")
        if self.mode == "grow":
            self.hoard.append(b"x" * (100 * 2**20))

    def choose(self, request):  # type: ignore[no-untyped-def]
        if not self.first_decision:
            self.first_decision = request.decision_id
        if self.mode == "slow" and self.decisions_this_game < 4:
            time.sleep(0.3)
        self.decisions_this_game += 1
        return request.legal_actions[0]

    def on_game_end(self, game: pb.GameEnd) -> None:
        if self.games != 1:
            return
        if self.mode == "exit":
            os._exit(3)
        if self.mode == "quiet" and self.runner is not None:
            threading.Thread(target=self.runner.stop).start()


class StaleDispatcher(Dispatcher):
    def _decide(self, msg: pb.DecisionRequest) -> pb.BotMessage:
        reply = super()._decide(msg)
        bot = self.bot
        assert isinstance(bot, PoolBot)
        if bot.games > 1:
            reply.answer.decision_id = bot.first_decision
        return reply


def main() -> int:
    mode, pids = sys.argv[1], sys.argv[2]
    args = parse_args([])
    configure_logging()
    bot = PoolBot(mode, pids)
    runner = bot.runner = Runner(bot, server=args.server, token=args.token, name=args.name)
    if mode == "stale":
        runner.dispatcher = StaleDispatcher(bot)
    code = runner.play()
    if mode == "quiet":
        time.sleep(600)
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
