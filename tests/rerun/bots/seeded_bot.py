"""A kit bot that answers from a seeded generator (the same requests get the same answers);
``--crash-at K`` makes its process die at its K-th request (from 1), as a bug would;
``--raise-at K`` makes choose() raise at its K-th request (the kit logs it, answers in its
place and tells the referee: a bot error).

    seeded_bot.py [--seed S] [--crash-at K] [--raise-at K]
"""

import argparse
import os
import random

from craits_bot import Bot, run


class SeededBot(Bot):
    def __init__(self, seed: int, crash_at: int, raise_at: int = 0) -> None:
        self.rng = random.Random(seed)
        self.crash_at = crash_at
        self.raise_at = raise_at
        self.asked = 0

    def choose(self, request):
        self.asked += 1
        if self.asked == self.crash_at:
            os._exit(3)  # the bug: the process dies
        choice = self.rng.choice(request.legal_actions)
        if self.asked == self.raise_at:
            raise ValueError("the bug: a value out of range")
        return choice


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--crash-at", type=int, default=0)
    parser.add_argument("--raise-at", type=int, default=0)
    options, rest = parser.parse_known_args()
    run(SeededBot(options.seed, options.crash_at, options.raise_at), argv=rest)
