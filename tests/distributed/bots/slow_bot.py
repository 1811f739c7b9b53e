"""A deterministic bot that thinks for a while: plays the first legal action after
``SLOW_BOT_S`` seconds (the first argument, default 0.02), so a game lasts long enough
for a test to kill the worker that plays it."""

import sys
import time

from craits_bot import Bot, run

DELAY_S = float(sys.argv[1]) if len(sys.argv) > 1 else 0.02


class SlowBot(Bot):
    def choose(self, request):
        time.sleep(DELAY_S)
        return request.legal_actions[0]


if __name__ == "__main__":
    run(SlowBot(), argv=[])
