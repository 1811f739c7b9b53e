"""How long does a balanced schedule take to build, against playing one game?

``tournaments.schedule.make_balanced_schedule`` searches for tables where every pair of
bots meets within one of the average (see its module). The search is bounded in steps,
not time, so this measures what a class's and a competition's organizer waits before the
first game: 30 bots at tables of four with 48 games each, 100 bots with 160 and 200, 40
bots at tables of five and seven, and a refusal (30 bots with 40 games: not found, so it
also searches the values it proposes). The baseline is one full four-player game of the
engine with random choices (the cheapest game a tournament can play), so the last line
says how many games' time each build costs::

    python bench/schedule.py [--repeat N]
    ... last line: balanced_30x4_s=X balanced_100x4_s=Y refusal_30x4_s=Z games_per_build_30x4=R

Every build runs in a fresh cache (``tournaments.schedule._DESIGNS`` is cleared), the
best of ``--repeat`` runs is kept.
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from server.engine import new_game
from tournaments import schedule

CASES = (  # label, bots, table size, games per bot
    ("30x4", 30, 4, 48),
    ("100x4", 100, 4, 160),
    ("100x4-200", 100, 4, 200),
    ("40x5", 40, 5, 65),
    ("40x7", 40, 7, 98),
)


def best_of(repeat: int, step: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        schedule._DESIGNS.clear()
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return min(times)


def one_game(rng: random.Random) -> None:
    game = new_game("craits", players=4, seed=rng.getrandbits(63))
    legal = game.legal_action_ids()
    while legal:
        game.apply(rng.choice(legal))
        legal = game.legal_action_ids()


def refusal() -> None:
    try:
        schedule.make_balanced_schedule([f"b{i}" for i in range(30)], 4, 40, seed=0)
    except schedule.ScheduleError:
        return
    raise AssertionError("30 bots with 40 games each was expected to be refused")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(1)
    game_s = best_of(args.repeat * 3, lambda: one_game(rng))
    results: dict[str, float] = {}
    print(f"{'schedule':<12} {'bots':>5} {'table':>5} {'games/bot':>9} {'games':>6} {'build s':>8}")
    for label, bots, size, per_bot in CASES:
        names = [f"b{i}" for i in range(bots)]
        results[label] = best_of(args.repeat, functools.partial(schedule.make_balanced_schedule, names, size, per_bot, 0))
        print(f"{label:<12} {bots:>5} {size:>5} {per_bot:>9} {bots * per_bot // size:>6} {results[label]:>8.3f}")
    refused = best_of(args.repeat, refusal)
    print(f"{'refusal':<12} {30:>5} {4:>5} {40:>9} {'-':>6} {refused:>8.3f}")
    print(f"one game (engine, 4 random players): {game_s:.4f} s")
    print(f"balanced_30x4_s={results['30x4']:.3f} balanced_100x4_s={results['100x4']:.3f} "
          f"refusal_30x4_s={refused:.3f} games_per_build_30x4={results['30x4'] / game_s:.1f}")


if __name__ == "__main__":
    main()
