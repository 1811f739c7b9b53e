"""The smallest useful bot: picks any legal action at random.

    python -m craits_bot.examples.random_bot [--server HOST:PORT] [--token T] [--name N]
"""

import random

from craits_bot import Bot, run


class RandomBot(Bot):
    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def choose(self, request):
        return self.rng.choice(request.legal_actions)


if __name__ == "__main__":
    run(RandomBot())
