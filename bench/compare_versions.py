"""Version against version: how many deals does a comparison need to say "better" (or
"worse"), with the betting confidence sequence it reads now against the empirical-Bernstein
one it read before, on the very same deals?

The versions are builtin policies (``server.game.policies``) played by the real engine, in
the comparison's own deals (``participants.compare.play_deal``: each version in every seat
rotation of a deal, against the default panel of house bots ``default`` and ``random``, at
tables of three, ``short_game`` Craits), seeded. Each version's randomness is its own (seeded
by the deal, the seat and the version), as a participant's bot's would be:

* **same**: greedy half the time (else a random legal move) against itself. Told apart at
  any look is an error; at most 5 % of the runs may ever see one.
* **clear**: random, then greedy every time (about half a place better).
* **slight**: random, then greedy a quarter of the time (about a sixth of a place better).

Each run plays deals until both sequences have given a verdict, or the comparison's cap of
``participants.compare.MAX_GAMES`` games (333 deals); each sequence's verdict is read after
every deal (``participants.compare.PlacingSequence``, the code a comparison runs), the first
one counted. A run that reaches the cap undecided counts the cap (so the ratio errs low).
The "same" runs also feed a **resampled null**: many runs of deals drawn from the "same"
runs' real deals, each turned round at random (the two versions are alike, so a deal and its
mirror are as likely): how often each sequence ever says something, with more runs than the
real games afford.

    python bench/compare_versions.py --quick    # a minute or two
    python bench/compare_versions.py            # more runs (5-8 minutes)

The last line: ``deals_eb_clear=A deals_betting_clear=B ratio_clear=R deals_eb_slight=C
deals_betting_slight=D ratio_slight=S same_told_apart_eb=E same_told_apart_betting=F
null_told_apart_eb=G null_told_apart_betting=H games=N`` (mean deals to a verdict; the ratios
eb / betting; the share of "same" runs ever told apart, with real games and resampled).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/compare_versions.py` as well as `-m`
    sys.path.insert(0, str(ROOT))

from participants.compare import DEFAULT_PANEL, MAX_GAMES, Deal, PlacingSequence, house_specs, play_deal  # noqa: E402
from server.game.policies import GreedyPolicy, Policy, RandomPolicy  # noqa: E402
from server.spec import BotSpec, GameRecord, GameSpec  # noqa: E402
from tournaments.local import play_local, seat_policy  # noqa: E402
from tournaments.schedule import derive_seed  # noqa: E402

TABLE = 1 + len(DEFAULT_PANEL)
CAP = MAX_GAMES // (2 * TABLE)
SEQUENCES = ("eb", "betting")
UNDECIDED = "not yet told apart"


class SometimesGreedy:
    """Greedy (``server.game.policies.GreedyPolicy``) with probability ``share``, else the
    random policy's uniform legal move."""

    name = "sometimes-greedy"

    def __init__(self, share: float, crazy_eights: bool, seed: int) -> None:
        self.share = share
        self.greedy = GreedyPolicy(crazy_eights)
        self.random = RandomPolicy(seed)
        self.coin = random.Random(seed ^ 0x5EED)
        self.decisions = 0

    def choose(self, legal: Sequence[int]) -> int:
        self.decisions += 1
        if self.share >= 1 or (self.share > 0 and self.coin.random() < self.share):
            return self.greedy.choose(legal)
        return self.random.choose(legal)


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    old: float
    """The old version's share of greedy moves (0: random, 1: greedy)."""
    new: float


CASES = (Case("same", 0.5, 0.5), Case("clear", 0.0, 1.0), Case("slight", 0.0, 0.25))


class Runner:
    """Plays a comparison's games with the engine: the house seats as the referee seeds them,
    the versions ``old`` and ``new`` as the case says; counts the games and the versions'
    own decisions (the figures are refused unless every game was played by them)."""

    def __init__(self) -> None:
        self.games = 0
        self.unplayed: list[str] = []
        self.case = CASES[0]

    async def __call__(self, spec: GameSpec) -> GameRecord:
        policies: list[Policy] = []
        mine: list[SometimesGreedy] = []
        for seat, bot in enumerate(spec.seats):
            if bot.name in ("old", "new"):
                share = self.case.old if bot.name == "old" else self.case.new
                policy = SometimesGreedy(share, spec.config.crazy_eights, derive_seed(spec.seed, bot.name, seat))
                mine.append(policy)
                policies.append(policy)
            else:
                policies.append(seat_policy(bot.builtin or "", spec, seat))
        record = play_local(spec, policies=policies)
        self.games += 1
        if len(mine) != 1 or mine[0].decisions == 0 or record.aborted:
            self.unplayed.append(spec.game_id)
        return record


@dataclass(slots=True)
class Run:
    deals: int
    """Deals played."""
    first: dict[str, tuple[int, str] | None]
    """Per sequence: the deal of its first verdict, and the verdict (None: undecided at the cap)."""
    values: list[float]
    """Each deal's placing difference on the sequences' scale (B - A mapped onto [0, 1])."""


async def one_run(runner: Runner, case: Case, seed: int, cap: int, to_cap: bool) -> Run:
    """Deals until both sequences have a verdict (``to_cap``: until the cap regardless)."""
    sequences = {kind: PlacingSequence(TABLE, interval=kind) for kind in SEQUENCES}
    first: dict[str, tuple[int, str] | None] = dict.fromkeys(SEQUENCES)
    values = []
    runner.case = case
    panel = house_specs(DEFAULT_PANEL)
    old, new = BotSpec(name="old", token=""), BotSpec(name="new", token="")
    for number in range(cap):
        deal: Deal = await play_deal(runner, old, new, panel, seed=seed, number=number, at_once=1, tag=case.name)
        values.append((deal.b_placing - deal.a_placing + TABLE - 1) / (2 * (TABLE - 1)))
        for kind, sequence in sequences.items():
            sequence.add(deal)
            if first[kind] is None and sequence.verdict != UNDECIDED:
                first[kind] = (number + 1, sequence.verdict)
        if not to_cap and all(first.values()):
            break
    return Run(len(values), first, values)


def resampled_null(pool: Sequence[float], runs: int, cap: int, seed: int) -> dict[str, float]:
    """How often each sequence ever tells alike versions apart within ``cap`` deals, over
    ``runs`` runs of deals drawn from ``pool`` (real "same" deals), each mirrored at random."""
    from participants.confidence import ConfidenceSequence

    told = dict.fromkeys(SEQUENCES, 0)
    rng = random.Random(seed)
    for _ in range(runs):
        draws = [x if rng.random() < 0.5 else 1.0 - x for x in rng.choices(pool, k=cap)]
        for kind in SEQUENCES:
            sequence = ConfidenceSequence(centre=0.5, interval=kind)
            for x in draws:
                found = sequence.add(x)
                if found.high <= 0.5 or found.low >= 0.5:  # (PlacingSequence's verdict, on the scale itself)
                    told[kind] += 1
                    break
    return {kind: n / runs for kind, n in told.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (a minute or two)")
    parser.add_argument("--runs", type=int, help="runs of the clear and slight cases (default 30, quick 8)")
    parser.add_argument("--same-runs", type=int, help="runs of the same case, each to the cap (default 6, quick 2)")
    parser.add_argument("--null-runs", type=int, help="resampled null runs (default 1000, quick 200)")
    parser.add_argument("--cap", type=int, default=CAP, help=f"deals a run plays at most (default {CAP}: a comparison's cap)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    cap = args.cap
    runs = args.runs or (8 if args.quick else 30)
    same_runs = args.same_runs or (2 if args.quick else 6)
    null_runs = args.null_runs or (200 if args.quick else 1000)
    started = time.monotonic()
    runner = Runner()
    print(f"version against version: tables of {TABLE} (the versions and the house bots {', '.join(DEFAULT_PANEL)}), "
          f"short_game, a deal in every rotation for each version ({2 * TABLE} games); cap {cap} deals "
          f"({cap * 2 * TABLE} games); real games, the engine in-process")
    results: dict[str, list[Run]] = {}
    expected_games = 0
    for case in CASES:
        t0 = time.monotonic()
        count = same_runs if case.name == "same" else runs
        results[case.name] = made = []
        for rep in range(count):
            made.append(asyncio.run(one_run(runner, case, derive_seed(args.seed, case.name, rep), cap,
                                            to_cap=case.name == "same")))
        expected_games += sum(r.deals for r in made) * 2 * TABLE
        if runner.unplayed or runner.games != expected_games or not runner.games:
            print(f"compare_versions: no figures: {len(runner.unplayed)} of {runner.games} games were not played by "
                  f"the versions (expected {expected_games} games): {', '.join(runner.unplayed[:5])}", file=sys.stderr)
            return 1
        values = [x for r in made for x in r.values]
        effect = (statistics.fmean(values) * 2 - 1) * (TABLE - 1)
        line = (f"  {case.name:6} (greedy {case.old:.0%} -> {case.new:.0%} of moves): {count} runs, "
                f"{sum(r.deals for r in made)} deals, mean placing difference {effect:+.3f} "
                f"({time.monotonic() - t0:.0f} s)")
        for kind in SEQUENCES:
            firsts = [r.first[kind] for r in made]
            deals = [f[0] if f else cap for f in firsts]
            wrong = sum(1 for f in firsts if f and (case.name == "same" or f[1] != "better"))
            line += (f"\n      {kind:8} deals to a verdict: mean {statistics.fmean(deals):6.1f}, median "
                     f"{statistics.median(deals):5.1f}; undecided at the cap {sum(f is None for f in firsts)}; "
                     f"{'ever told apart' if case.name == 'same' else 'wrong (worse)'} {wrong}")
        print(line, flush=True)

    pool = [x for r in results["same"] for x in r.values]
    t0 = time.monotonic()
    null = resampled_null(pool, null_runs, cap, args.seed)
    print(f"  resampled null: {null_runs} runs of {cap} deals drawn from the {len(pool)} real 'same' deals, each "
          f"mirrored at random: ever told apart: eb {null['eb']:.3f}, betting {null['betting']:.3f} (at most 0.05 "
          f"promised; {time.monotonic() - t0:.0f} s)")

    def mean_deals(case: str, kind: str) -> float:
        return statistics.fmean(r.first[kind][0] if r.first[kind] else cap for r in results[case])  # type: ignore[index]

    def told_apart(kind: str) -> float:
        return sum(r.first[kind] is not None for r in results["same"]) / len(results["same"])

    figures = {case: (mean_deals(case, "eb"), mean_deals(case, "betting")) for case in ("clear", "slight")}
    print(f"elapsed {time.monotonic() - started:.0f} s, {runner.games} games")
    print(" ".join(f"deals_eb_{case}={eb:.1f} deals_betting_{case}={bet:.1f} ratio_{case}={eb / bet:.2f}"
                   for case, (eb, bet) in figures.items())
          + f" same_told_apart_eb={told_apart('eb'):.3f} same_told_apart_betting={told_apart('betting'):.3f}"
          f" null_told_apart_eb={null['eb']:.3f} null_told_apart_betting={null['betting']:.3f} games={runner.games}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
