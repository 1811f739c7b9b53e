"""Do the rankings' intervals keep their promise when watched after every deal, under the
schedules people run?

Each scenario is simulated many times through ``tournaments.anytime.Rankings`` (the code the
standings, the board and the adaptive schedule read), its placings drawn from a Plackett-Luce
model whose true figures are known exactly (its choice axiom: a bot places above another with
chance ``w_a / (w_a + w_b)`` whoever else sits at the table, so a bot's expected fraction of
tablemates beaten, and a pair's figure, are sums over the tables the schedule draws from).
A run **misses** if any interval shown (the bots', the pairs' and the pairs' head-to-head, which
the tie reads, all together) ever excluded
its true figure, at any deal. (An interval only narrows: a value it excludes stays excluded
while its field lasts. So a run is checked at the end of each field, just before a newcomer
restarts it, and at its end: the same as checking after every deal, for less.) The promise:
at most ``1 - confidence`` of the runs miss.

* **independent**: eight bots of unequal strength (those ``bench/stopping.py`` fitted to real
  games), one table of four per deal drawn uniformly, every seat rotation of its deal;
* **shared**: a round robin of six bots that play alike, every table playing the same deal in
  every rotation (``duplicate = "tournament"``): each deal's cards decide most of the
  placings, the same at every table (the same-deal correlation of real copies of a bot);
  every true figure is 1/2;
* **ladder**: eight bots, then four more come in one after another (a ladder's ``add_bot``),
  tables drawn from the field as it stands; each newcomer changes every bot's true figure
  (other tablemates), and the intervals restart with the new field;
* **drift**: a ladder where a is far better than b (pair figure about 0.65), until a new
  version comes in and from then on b is (about 0.35): besides the misses, the deals after
  the change in which "a ahead" still showed.

    python bench/coverage.py --quick      # 60 runs of each, a few minutes
    python bench/coverage.py              # 300 runs of each

It refuses to print a figure when what it measures did not happen (no deal shared, no new
field shown, no verdict before the drift). The last line is machine-readable:
``miss_independent=A miss_shared=B miss_ladder=C miss_drift=D nominal=N runs=R stale_verdict_deals=S``
(each a fraction of runs; N = 1 - confidence; S: the most deals after the drift in which the
old verdict showed, over all runs).
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/coverage.py` as well as `-m`
    sys.path.insert(0, str(ROOT))

from tournaments.anytime import AHEAD, Rankings  # noqa: E402
from tournaments.schedule import make_schedule  # noqa: E402

STRENGTHS = (3.944, 2.523, 1.576, 1.080, 0.762, 0.576, 0.416, 0.324)
"""bench/stopping.py's model, fitted to real games of its eight bots."""
TABLE = 4


class Truth:
    """The exact expected figures of a field whose tables of ``TABLE`` are drawn uniformly."""

    def __init__(self, w: dict[str, float]) -> None:
        bots = list(w)
        above = {(a, b): w[a] / (w[a] + w[b]) for a in bots for b in bots if a != b}
        tables = list(itertools.combinations(bots, min(TABLE, len(bots))))
        beaten: dict[str, list[float]] = {b: [] for b in bots}
        pair: dict[tuple[str, str], list[float]] = {}
        for table in tables:
            f = {a: sum(above[a, c] for c in table if c != a) / (len(table) - 1) for a in table}
            for a in table:
                beaten[a].append(f[a])
            for a, b in itertools.permutations(table, 2):
                pair.setdefault((a, b), []).append((1 + f[a] - f[b]) / 2)
        self.bot = {b: sum(v) / len(v) for b, v in beaten.items()}
        self.pair = {p: sum(v) / len(v) for p, v in pair.items()}
        self.above = above  # (the head-to-head, which the tie verdict reads: the same at every table)


def pl_rotations(seating: Sequence[str], w: dict[str, float], rng: random.Random) -> list[dict[str, int]]:
    """One deal at one table in every rotation, each rotation's placings drawn independently."""
    out = []
    for _ in seating:
        keys = {b: math.log(w[b]) - math.log(-math.log(rng.random() or 1e-300)) for b in seating}
        out.append({b: i + 1 for i, b in enumerate(sorted(seating, key=lambda b: -keys[b]))})
    return out


def seat(field: dict[str, float], rng: random.Random, newcomer: str | None = None) -> list[str]:
    """A table drawn uniformly from the field; ``newcomer``: with that bot (its first deal comes
    at once after it joins, so the field that changed is the one the deals are drawn from)."""
    if newcomer is None:
        return rng.sample(list(field), TABLE)
    return [newcomer, *rng.sample([b for b in field if b != newcomer], TABLE - 1)]


def missed(rankings: Rankings, truth: Truth) -> bool:
    """Some interval shown excludes its true figure (its ends are excluded candidates)."""
    for bot in rankings.bots:
        i = rankings.bot_interval(bot)
        if i.units and bot in truth.bot and not i.low < truth.bot[bot] < i.high:
            return True
    for a, b in itertools.combinations(rankings.bots, 2):
        i = rankings.pair_interval(a, b)
        if i.units and (a, b) in truth.pair and not i.low < truth.pair[a, b] < i.high:
            return True
        h = rankings.tie_interval(a, b)
        if h.units and (a, b) in truth.above and not h.low < truth.above[a, b] < h.high:
            return True
    return False


def independent(rng: random.Random, confidence: float, deals: int) -> dict[str, int]:
    w = {f"s{i}": s for i, s in enumerate(STRENGTHS)}
    truth = Truth(w)
    rankings = Rankings(list(w), confidence=confidence)
    for _ in range(deals):
        rankings.add_unit(pl_rotations(rng.sample(list(w), TABLE), w, rng))
    return {"miss": int(missed(rankings, truth)), "units": rankings.units}


def shared(rng: random.Random, confidence: float, deals: int, alike: float = 3.0) -> dict[str, int]:
    """Six bots that play alike: a bot's key at a table is the deal's (the same at every table and
    rotation, weight ``alike``) plus its own noise; every true figure is 1/2 (they are exchangeable)."""
    bots = [f"copy{i}" for i in range(6)]
    rankings = Rankings(bots, confidence=confidence)
    truth = Truth(dict.fromkeys(bots, 1.0))
    games = make_schedule(bots, TABLE, deals, seed=rng.randrange(2**31), duplicate="tournament")
    deal_keys: dict[int, dict[str, float]] = {}
    seeds: dict[int, set[str]] = {}
    for g in games:
        keys = deal_keys.setdefault(g.seed, {b: alike * rng.gauss(0, 1) for b in bots})
        noisy = {b: keys[b] + rng.gauss(0, 1) for b in g.seats}
        placings = [sorted(g.seats, key=lambda b: -noisy[b]).index(b) + 1 for b in g.seats]
        rankings.add_game(g.game_id, g.seats, placings, seed=g.seed)
        seeds.setdefault(g.seed, set()).add(g.game_id.rsplit("-r", 1)[0])
    return {"miss": int(missed(rankings, truth)), "units": rankings.units, "tables_per_deal": _most(seeds)}


def _most(seeds: dict[int, set[str]]) -> int:
    return max((len(t) for t in seeds.values()), default=0)


def ladder(rng: random.Random, confidence: float, deals: int, added: int = 4) -> dict[str, int]:
    """Eight bots, then ``added`` newcomers, one every ``deals`` deals; the truth is the field's."""
    strengths = [*STRENGTHS, *(rng.uniform(0.3, 4.0) for _ in range(added))]
    names = [f"s{i}" for i in range(len(strengths))]
    field = dict(zip(names[:8], strengths[:8], strict=True))
    rankings = Rankings(list(field), confidence=confidence, open_field=True)
    for step in range(added + 1):
        if step:
            name = names[7 + step]
            field[name] = strengths[7 + step]
            rankings.add_bot(name)
        truth = Truth(field)
        for deal in range(deals):
            rankings.add_unit(pl_rotations(seat(field, rng, names[7 + step] if step and not deal else None), field, rng))
        if missed(rankings, truth):  # (before the next newcomer restarts the field)
            return {"miss": 1, "fields_shown": rankings.fields_shown, "spent_ok": 1}
    return {"miss": 0, "fields_shown": rankings.fields_shown,
            "spent_ok": int(rankings.spent() <= 1 - confidence + 1e-12)}


def drift(rng: random.Random, confidence: float, deals: int) -> dict[str, int]:
    """a far above b; then a new version (a2) comes in and b is far above a."""
    before = {"a": 4.0, "b": 1.0, "c": 1.5, "d": 1.5}
    after = {"a": 1.0, "b": 4.0, "c": 1.5, "d": 1.5, "a2": 1.5}
    rankings = Rankings(list(before), confidence=confidence, open_field=True)
    miss = 0
    for _ in range(deals):
        rankings.add_unit(pl_rotations(rng.sample(list(before), TABLE), before, rng))
    settled_before = int(rankings.verdict("a", "b") == AHEAD)
    miss |= missed(rankings, Truth(before))
    rankings.add_bot("a2")
    truth = Truth(after)
    stale = 0
    for deal in range(deals):
        rankings.add_unit(pl_rotations(seat(after, rng, None if deal else "a2"), after, rng))
        stale += rankings.verdict("a", "b") == AHEAD
    miss |= missed(rankings, truth)
    return {"miss": int(miss), "settled_before": settled_before, "stale": stale,
            "figure_before": round(Truth(before).pair["a", "b"], 3), "figure_after": round(truth.pair["a", "b"], 3)}


def wilson_upper(k: int, n: int, z: float = 1.96) -> float:
    p = k / n
    return (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (1 + z * z / n)


def run(name: str, scenario: Callable[[random.Random], dict[str, int]], runs: int, seed: int) -> list[dict[str, int]]:
    t0 = time.monotonic()
    out = [scenario(random.Random(f"{seed}:{name}:{r}")) for r in range(runs)]
    misses = sum(o["miss"] for o in out)
    print(f"{name:12s} {runs} runs in {time.monotonic() - t0:4.0f} s: missed in {misses} "
          f"({misses / runs:.3f}, 95% upper {wilson_upper(misses, runs):.3f})", flush=True)
    return out


def refuse(why: str) -> int:
    print(f"coverage: refusing to report: {why}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="60 runs of each scenario (300 without)")
    parser.add_argument("--runs", type=int, help="runs of each scenario")
    parser.add_argument("--confidence", type=float, default=0.9,
                        help="the intervals' joint confidence (default 0.9: a nominal miss rate of 10%% that a few "
                        "hundred runs can tell from a broken one)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    runs = args.runs or (60 if args.quick else 300)
    nominal = 1 - args.confidence
    started = time.monotonic()
    print(f"intervals {args.confidence:.0%} together (nominal miss rate {nominal:.2f}), watched after every deal")
    results = {
        "independent": run("independent", lambda rng: independent(rng, args.confidence, 600), runs, args.seed),
        "shared": run("shared", lambda rng: shared(rng, args.confidence, 40), runs, args.seed),
        "ladder": run("ladder", lambda rng: ladder(rng, args.confidence, 150), runs, args.seed),
        "drift": run("drift", lambda rng: drift(rng, args.confidence, 400), runs, args.seed),
    }
    if min(r["units"] for r in results["independent"]) < 1:
        return refuse("an independent run counted no deal")
    tables = min(r["tables_per_deal"] for r in results["shared"])
    if tables < 2:
        return refuse("the shared scenario's deals were not shared by several tables")
    print(f"  shared: every deal played at {tables} tables in every rotation (one sample each)")
    unshown = sum(r["fields_shown"] < 2 for r in results["ladder"] if not r["miss"])
    if unshown:
        return refuse(f"{unshown} ladder runs never showed a field after a newcomer")
    if not all(r["spent_ok"] for r in results["ladder"]):
        return refuse("a ladder spent past its budget")
    settled = sum(r["settled_before"] for r in results["drift"])
    if settled < runs / 2:
        return refuse(f"a was settled ahead of b before the change in only {settled} of {runs} drift runs")
    first = results["drift"][0]
    stale = max(r["stale"] for r in results["drift"])
    print(f"  drift: pair figure {first['figure_before']} then {first['figure_after']}; a settled ahead before the "
          f"change in {settled}/{runs} runs; 'a ahead' shown after it in at most {stale} deals of a run")
    rates = {name: sum(r["miss"] for r in rs) / runs for name, rs in results.items()}
    print(f"elapsed {time.monotonic() - started:.0f} s")
    print(" ".join(f"miss_{name}={rate:.3f}" for name, rate in rates.items())
          + f" nominal={nominal:.2f} runs={runs} stale_verdict_deals={stale}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
