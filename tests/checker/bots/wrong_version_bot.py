"""Broken: says Hello with protocol_version 2."""

import sys

from _botlib import announcing, hello, run

if __name__ == "__main__":
    sys.exit(run(announcing, first=hello(protocol_version=2)))
