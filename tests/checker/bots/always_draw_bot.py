"""Broken: answers "draw" (id 0) to everything, whether or not drawing is in the legal list."""

import sys

from _botlib import run

if __name__ == "__main__":
    sys.exit(run(lambda request: 0))
