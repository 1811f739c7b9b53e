"""Strength of the example bots: the heuristic bot against the random bot, in-process.

No network: each decision is built from the engine with ``server.protocol.wire`` exactly
as the referee builds it (only the events since the seat's previous request, as
the referee sends them), handed to the bot kit's Dispatcher, and the answer is
applied to the engine. Decisions with one legal action are applied without
asking, as the referee does.

Design: every seed is played twice with the seats swapped (4 players: H R H R,
then R H R H; 2 players: H R, then R H), so seat and deal luck cancel. Per game,
a side's figure is the mean total of its seats; lower is better in Craits. The
95% confidence intervals treat each seed (its two games) as one independent
sample: mean +- 1.96 * sd / sqrt(seeds).

    python -m bench.bots_strength                 # 1,000 full games, 4 players (a few minutes)
    python -m bench.bots_strength --games 200 --short

The last line is machine-readable:
``heuristic_mean=H random_mean=R diff=D diff_lo=L diff_hi=U games=N``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/bots_strength.py` as well as `-m`
    sys.path.insert(0, str(ROOT))

from craits.v1 import referee_pb2 as pb  # noqa: E402
from craits_bot import Bot, Dispatcher  # noqa: E402
from craits_bot.examples.heuristic_bot import HeuristicBot  # noqa: E402
from craits_bot.examples.random_bot import RandomBot  # noqa: E402

from server.engine import GameState, make_config  # noqa: E402
from server.protocol import wire  # noqa: E402
from server.spec import Clocks  # noqa: E402

Z95 = 1.959964


def play_game(
    bots: Sequence[Bot], seed: int, *, short_game: bool = False, game_id: str = "g"
) -> tuple[int, ...]:
    """Play one craits game between ``bots`` (one per seat) and return the totals by seat."""
    config = make_config("craits", len(bots), **({"short_game": True} if short_game else {}))
    state = GameState(config, seed)
    names = [type(b).__name__ for b in bots]
    dispatchers = [Dispatcher(b) for b in bots]
    for seat, d in enumerate(dispatchers):
        start = wire.game_start(config, seat, game_id=game_id, seat_names=names, clock=Clocks())
        d.handle(pb.RefereeMessage(game_start=start))
    sent: dict[int, tuple[int, int]] = {}  # seat -> (hand number, events already sent this hand)
    decision_id = 0
    while (decision := state.decision) is not None:
        ids = state.legal_action_ids()
        if len(ids) == 1:
            state.apply(ids[0])
            continue
        seat = decision.seat
        hand, already = sent.get(seat, (0, 0))
        history_from = already if hand == state.hand_number else 0
        decision_id += 1
        request = wire.decision_request(
            state,
            seat,
            game_id=game_id,
            decision_id=decision_id,
            deadline_ms=1000,
            bank_ms=10_000,
            strikes=0,
            history_from=history_from,
        )
        sent[seat] = (state.hand_number, len(state.hand_events))
        reply = dispatchers[seat].handle(pb.RefereeMessage(decision=request))
        assert reply is not None
        state.apply(reply.answer.action_id)
    return state.result().totals


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.mean:8.1f}  [{self.low:.1f}, {self.high:.1f}]"


def interval(samples: Sequence[float]) -> Interval:
    mean = statistics.fmean(samples)
    half = Z95 * statistics.stdev(samples) / math.sqrt(len(samples)) if len(samples) > 1 else math.inf
    return Interval(mean, mean - half, mean + half)


@dataclass(frozen=True)
class Match:
    games: int
    heuristic: Interval
    random: Interval
    difference: Interval
    """heuristic minus random, per seed: negative means the heuristic scores fewer points."""
    heuristic_wins: int
    """Games where the heuristic side's mean total was lower."""


def match(
    seeds: int,
    *,
    players: int = 4,
    short_game: bool = False,
    first_seed: int = 1,
    heuristic: Callable[[], Bot] = HeuristicBot,
    random_bot: Callable[[int], Bot] = RandomBot,
) -> Match:
    """Play ``seeds`` x 2 games (seats swapped) heuristic vs random; intervals per seed."""
    if players not in (2, 4):
        raise ValueError("players must be 2 or 4")
    h_by_seed: list[float] = []
    r_by_seed: list[float] = []
    wins = 0
    for seed in range(first_seed, first_seed + seeds):
        h_sum = r_sum = 0.0
        for swap in (0, 1):
            bots: list[Bot] = []
            for seat in range(players):
                if (seat + swap) % 2 == 0:
                    bots.append(heuristic())
                else:
                    bots.append(random_bot(seed * 10 + seat))
            totals = play_game(bots, seed, short_game=short_game, game_id=f"s{seed}-{swap}")
            h = statistics.fmean(t for s, t in enumerate(totals) if (s + swap) % 2 == 0)
            r = statistics.fmean(t for s, t in enumerate(totals) if (s + swap) % 2 == 1)
            wins += h < r
            h_sum += h
            r_sum += r
        h_by_seed.append(h_sum / 2)
        r_by_seed.append(r_sum / 2)
    return Match(
        games=2 * seeds,
        heuristic=interval(h_by_seed),
        random=interval(r_by_seed),
        difference=interval([h - r for h, r in zip(h_by_seed, r_by_seed, strict=True)]),
        heuristic_wins=wins,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--games", type=int, default=1000, help="games to play, an even number (default 1000)"
    )
    parser.add_argument("--players", type=int, default=4, choices=(2, 4))
    parser.add_argument("--short", action="store_true", help="short_game: the first eight hands only")
    parser.add_argument("--first-seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.games < 4 or args.games % 2:
        parser.error("--games must be an even number, at least 4")
    started = time.perf_counter()
    result = match(args.games // 2, players=args.players, short_game=args.short, first_seed=args.first_seed)
    elapsed = time.perf_counter() - started
    kind = "short games (8 hands)" if args.short else "full games (15 hands)"
    print(f"heuristic vs random: {result.games} {kind}, {args.players} players, seats swapped per seed")
    print("average points per game (lower is better), mean [95% CI]:")
    print(f"  heuristic   {result.heuristic}")
    print(f"  random      {result.random}")
    print(f"  difference  {result.difference}   (heuristic - random)")
    print(f"  heuristic side lower in {result.heuristic_wins} of {result.games} games; {elapsed:.0f} s")
    d = result.difference
    print(
        f"heuristic_mean={result.heuristic.mean:.1f} random_mean={result.random.mean:.1f} "
        f"diff={d.mean:.1f} diff_lo={d.low:.1f} diff_hi={d.high:.1f} games={result.games}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
