"""A random legal action after argv[1] seconds: a game long enough to watch it being played."""

import random
import sys
import time

from craits_bot import Bot, run


class SlowRandomBot(Bot):
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.rng = random.Random()

    def choose(self, request):
        time.sleep(self.delay)
        return self.rng.choice(request.legal_actions)


if __name__ == "__main__":
    delay = float(sys.argv.pop(1))  # the kit reads the rest of the command line
    run(SlowRandomBot(delay))
