"""Draw luck as a control variate: how much of a deal's variance does it explain?

At every draw from the stock, a seat's luck is the penalty value of the card it drew minus
the average value of the cards it could have drawn (the stock at that moment; the discard
pile too when the draw reshuffled it): zero on average for any bot, whatever it plays. Summed
over a seat's draws, over the rotations of a deal, it is known when the deal ends.

If a deal's figure (the fraction of tablemates beaten; for a pair, half of one plus the
difference of theirs) were corrected by ``figure - beta x luck``, its variance would shrink by
the share of it the luck explains, and the games needed by the same factor. This script
measures that factor on real games of the eight bots of ``bench/stopping.py`` (a round robin
of tables of four, each deal in every seat rotation): ``beta`` is estimated on the first half
of the deals only, the variances compared on the second half (so a coefficient fitted to
noise cannot flatter it). The issue's rule: build the correction in only if it cuts the games
needed by at least 1.3x.

    python bench/luck.py --quick        # 2 deals of the round robin: 560 games, seconds
    python bench/luck.py                # 8 deals: 2,240 games

The last line is machine-readable:
``luck_r2_bot=A luck_games_factor_bot=B luck_r2_pair=C luck_games_factor_pair=D units=N``
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.stopping import BOTS, CONFIG, NOISE_OF, TABLE, NoisyGreedy  # noqa: E402
from server.engine import GameState  # noqa: E402
from server.engine.cards import rank_of  # noqa: E402
from server.engine.scoring import card_points  # noqa: E402
from tournaments.anytime import unit_figures  # noqa: E402
from tournaments.schedule import derive_seed, rotate  # noqa: E402


def value(code: int) -> int:
    return card_points(rank_of(code))


def play_with_luck(seats: Sequence[str], seed: int) -> tuple[dict[str, int], dict[str, float]]:
    """One real game: placings and each bot's draw luck (positive: it drew costlier cards than
    the stock's average; in Craits that is bad luck)."""
    state = GameState(CONFIG, seed)
    policies = [NoisyGreedy(NOISE_OF[b], seed * 31 + s) for s, b in enumerate(seats)]
    luck = dict.fromkeys(seats, 0.0)
    seen = len(state.log)
    while (decision := state.decision) is not None:
        legal = state.legal_action_ids()
        stock = list(state.stock)
        pile = list(state.discard[:-1])
        state.apply(legal[0] if len(legal) == 1 else policies[decision.seat].choose(legal))
        for kind, seat, cards, *_ in state.log[seen:]:
            if kind != "draw" or not cards:
                continue
            could = stock if all(c in stock for c in cards) else stock + pile
            if not could:
                continue
            average = statistics.fmean(value(c) for c in could)
            luck[seats[seat]] += sum(value(c) - average for c in cards)
        seen = len(state.log)
    return dict(zip(seats, state.result().placings, strict=True)), luck


def games_factor(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """(R^2 on the held-out half, the variance's shrink factor there) of y corrected by beta x,
    beta fitted on the first half."""
    half = len(pairs) // 2
    fit, test = pairs[:half], pairs[half:]
    mx, my = statistics.fmean(x for x, _ in fit), statistics.fmean(y for _, y in fit)
    sxx = sum((x - mx) ** 2 for x, _ in fit)
    beta = sum((x - mx) * (y - my) for x, y in fit) / sxx if sxx else 0.0
    before = statistics.pvariance([y for _, y in test])
    after = statistics.pvariance([y - beta * x for x, y in test])
    return 1 - after / before, before / after


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--deals", type=int)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    deals = args.deals or (2 if args.quick else 8)
    bot_points: dict[str, list[tuple[float, float]]] = {b: [] for b in BOTS}
    pair_points: dict[tuple[str, str], list[tuple[float, float]]] = {}
    units = 0
    for deal in range(deals):
        for t, seating in enumerate(itertools.combinations(BOTS, TABLE)):
            deal_seed = derive_seed(args.seed, "luck", deal, t)
            rotations, luck = [], dict.fromkeys(seating, 0.0)
            for r in range(TABLE):
                placings, drawn = play_with_luck(rotate(seating, r), deal_seed)
                rotations.append(placings)
                for b, x in drawn.items():
                    luck[b] += x
            beaten, pairs = unit_figures(rotations)
            for b in seating:  # (own luck against the tablemates' average)
                relative = luck[b] - statistics.fmean(luck[o] for o in seating if o != b)
                bot_points[b].append((relative, beaten[b]))
            for (a, b), y in pairs.items():
                pair_points.setdefault((a, b), []).append((luck[a] - luck[b], y))
            units += 1
    # Centre each bot's (each pair's) figures on its own mean: the luck is to explain the spread
    # around a bot's strength, not the strengths themselves.
    def centred(groups: dict[object, list[tuple[float, float]]]) -> list[tuple[float, float]]:
        out = []
        for points in groups.values():
            if len(points) < 2:
                continue
            mx, my = statistics.fmean(x for x, _ in points), statistics.fmean(y for _, y in points)
            out += [(x - mx, y - my) for x, y in points]
        return sorted(out, key=lambda p: hash(p) % 1000)  # (fit and test halves from every bot)

    r2_bot, factor_bot = games_factor(centred(bot_points))  # type: ignore[arg-type]
    r2_pair, factor_pair = games_factor(centred(pair_points))  # type: ignore[arg-type]
    print(f"{units} deals ({units * TABLE} real games) of {len(BOTS)} bots at tables of {TABLE}")
    print(f"per bot:  draw luck explains {r2_bot:.1%} of a deal's variance (held out): games needed / {factor_bot:.2f}")
    print(f"per pair: draw luck explains {r2_pair:.1%} of a deal's variance (held out): games needed / {factor_pair:.2f}")
    verdict = "worth building in" if max(factor_bot, factor_pair) >= 1.3 else "below 1.3x: not built in"
    print(f"verdict: {verdict}")
    print(f"luck_r2_bot={r2_bot:.3f} luck_games_factor_bot={factor_bot:.2f} luck_r2_pair={r2_pair:.3f} "
          f"luck_games_factor_pair={factor_pair:.2f} units={units}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
