"""Correct, but its first answers of each whole game take longer than a game's 1 s per decision."""

import sys
import time

from _botlib import announcing, run

slow_left = {"check-whole-game": 2, "check-crazy-eights": 1}


def choose(request):  # type: ignore[no-untyped-def]
    if slow_left.get(request.game_id, 0) > 0:
        slow_left[request.game_id] -= 1
        time.sleep(1.3)
    return announcing(request)


if __name__ == "__main__":
    sys.exit(run(choose))
