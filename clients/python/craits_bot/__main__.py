"""``python -m craits_bot random|heuristic [--server ...]``: run an example bot."""

import sys

from .examples.heuristic_bot import HeuristicBot
from .examples.random_bot import RandomBot
from .runner import ExitCode, run

BOTS = {"random": RandomBot, "heuristic": HeuristicBot}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in BOTS:
        print(
            f"usage: python -m craits_bot {{{'|'.join(BOTS)}}} [--server HOST:PORT] [--token T] [--name N]",
            file=sys.stderr,
        )
        sys.exit(ExitCode.USAGE)
    run(BOTS[sys.argv[1]](), argv=sys.argv[2:])


if __name__ == "__main__":
    main()
