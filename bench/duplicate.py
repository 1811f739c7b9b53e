"""What duplicate deals buy: the games a pair's figure needs with one deal shared by a table's
rotations against a deal of its own for every game (issue 35's default).

Tables of four of the eight bots of ``bench/stopping.py``, each played in its four seat
rotations twice: once on one shared deal, once on four fresh ones. Per table, each pair's figure
(half of one plus the difference of their fractions of tablemates beaten, as the rankings read
it); the games needed for an interval of given width grow with its variance, so the ratio of
the two variances is the games the fresh deals need for each game of the shared ones.

    python bench/duplicate.py --quick     # 300 tables: seconds
    python bench/duplicate.py             # 1,500 tables: about a minute

The last line is machine-readable: ``shared_var=A fresh_var=B games_factor=B/A tables=N``
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.stopping import BOTS, TABLE, play_real  # noqa: E402
from tournaments.schedule import derive_seed, rotate  # noqa: E402


def beaten(results: list[dict[str, int]], seating: tuple[str, ...]) -> dict[str, float]:
    """Each bot's fraction of tablemates beaten (a tie counts half), averaged over the rotations."""
    out = dict.fromkeys(seating, 0.0)
    for placings in results:
        for bot in seating:
            won = sum((placings[bot] < placings[o]) + 0.5 * (placings[bot] == placings[o]) for o in seating if o != bot)
            out[bot] += won / (len(seating) - 1) / len(results)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 tables")
    parser.add_argument("--tables", type=int, default=None)
    args = parser.parse_args()
    tables = args.tables or (300 if args.quick else 1500)
    rng = random.Random(1)
    pairs: dict[str, dict[tuple[str, str], list[float]]] = {"shared": {}, "fresh": {}}
    for unit in range(tables):
        seating = tuple(rng.sample(BOTS, TABLE))
        seed = derive_seed(35, "table", unit)
        for mode in pairs:
            results = [play_real(rotate(seating, r), seed if mode == "shared" else derive_seed(seed, "rotation", r))
                       for r in range(TABLE)]
            figure = beaten(results, seating)
            for a, b in itertools.combinations(sorted(seating), 2):
                pairs[mode].setdefault((a, b), []).append(0.5 + (figure[a] - figure[b]) / 2)
    variance = {mode: statistics.fmean(statistics.pvariance(xs) for xs in by_pair.values() if len(xs) > 2)
                for mode, by_pair in pairs.items() if any(len(xs) > 2 for xs in by_pair.values())}
    if len(variance) < 2 or not variance["shared"]:
        print("too few tables per pair to compare: give more --tables", file=sys.stderr)
        return 1
    factor = variance["fresh"] / variance["shared"]
    print(f"{tables} tables of {TABLE} from {len(BOTS)} bots, every rotation: a pair's figure per table varies "
          f"{variance['shared']:.5f} on shared deals, {variance['fresh']:.5f} on fresh ones; fresh deals need "
          f"{factor:.2f}x the games for the same interval")
    print(f"shared_var={variance['shared']:.5f} fresh_var={variance['fresh']:.5f} games_factor={factor:.2f} tables={tables}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
