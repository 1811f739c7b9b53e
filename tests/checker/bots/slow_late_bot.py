"""Correct but slow on a 1 ms deadline: its answer arrives after the TIMEOUT (then refused as stale)."""

import sys
import time

from _botlib import announcing, run


def choose(request):  # type: ignore[no-untyped-def]
    if request.deadline_ms <= 1:
        time.sleep(0.6)  # twice the checker's wait: this answer always comes after the TIMEOUT
    return announcing(request)


if __name__ == "__main__":
    sys.exit(run(choose))
