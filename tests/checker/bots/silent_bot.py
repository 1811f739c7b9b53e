"""Broken: opens the stream and never says Hello."""

import sys

from _botlib import announcing, run

if __name__ == "__main__":
    sys.exit(run(announcing, send_hello=False))
