"""A seeded random chooser: legal every time, announces "one card" only by chance."""

import random
import sys

from _botlib import run

if __name__ == "__main__":
    rng = random.Random(7)
    sys.exit(run(lambda request: rng.choice(request.legal_actions).id))
