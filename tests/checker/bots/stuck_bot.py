"""Broken: its choose never returns (an endless loop, a forgotten input()), so it never answers or exits."""

import sys
import time

from _botlib import run


def choose(request):  # type: ignore[no-untyped-def]
    while True:
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(run(choose))
