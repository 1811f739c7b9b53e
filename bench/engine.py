"""Engine speed: random games of each preset, against two peers driven the same way.

Every engine plays whole games with a uniform random policy drawn from one
``random.Random(seed)`` per engine, driven from Python through its public API:

- ours: ``legal_action_ids()`` and ``apply(choice)`` for craits, crates-partners
  and crazy-eights, four players each;
- OpenSpiel's ``crazy_eights`` (C++ behind pybind11) with
  ``players=4,reshuffle=True,max_turns=10000``; its chance nodes (the deal, the
  draws) are sampled with the same generator and counted apart, never as decisions;
- RLCard's ``uno`` (pure Python), ``rlcard.make('uno')``, one decision per ``env.step``.

The engines take turns (the order rotates each round) with the same time budget
per round, so a noisy neighbour on a shared machine hurts them alike; each figure
is the median over the rounds. Peak memory comes from a separate tracemalloc pass,
because tracing slows everything down and must not touch the speed figures.

    python -m bench.engine            # ~2 minutes: 20 rounds x 1 s per engine
    python -m bench.engine --quick    # under a minute: 10 rounds x 0.5 s per engine
    python -m bench.engine --profile  # cProfile of our engine, top 15 functions

The last line is machine-readable:
``ratio_vs_openspiel=X ratio_vs_rlcard=Y decisions_per_s=Z`` (X, Y are our craits
4-player decisions per second over each peer's; ``nan`` when a peer is missing).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import math
import platform
import pstats
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/engine.py` as well as `python -m bench.engine`
    sys.path.insert(0, str(ROOT))

RLCARD_FLOOR = 5.0
OPENSPIEL_GOAL = 1.0
OUR_PRESETS = ("craits", "crates-partners", "crazy-eights")
PLAYERS = 4
OPENSPIEL_PARAMS = {"players": 4, "reshuffle": True, "max_turns": 10000}

# A driver plays one whole game and returns (player decisions, chance steps).
Driver = Callable[[random.Random], tuple[int, int]]


@dataclass
class Engine:
    """One contender: how to play a game, and what it measured."""

    label: str
    make_driver: Callable[[], Driver]
    notes: str = ""
    driver: Driver | None = None
    rates: list[float] = field(default_factory=list)
    """Decisions per wall-clock second (perf_counter), one per round."""
    cpu_rates: list[float] = field(default_factory=list)
    """Decisions per second of this process's CPU time, one per round (less sensitive to other load)."""
    games: int = 0
    decisions: int = 0
    chance_steps: int = 0
    peak_kib: float = math.nan
    missing: str = ""
    """Why the engine could not run (empty when it ran)."""


# ---------------------------------------------------------------- drivers


def _ours(preset: str) -> Callable[[], Driver]:
    def make() -> Driver:
        from server.engine import new_game

        def play(rng: random.Random) -> tuple[int, int]:
            game = new_game(preset, players=PLAYERS, seed=rng.getrandbits(63))
            choice = rng.choice
            decisions = 0
            legal = game.legal_action_ids()  # empty once the game is over
            while legal:
                game.apply(choice(legal))
                decisions += 1
                legal = game.legal_action_ids()
            return decisions, 0

        return play

    return make


def _openspiel() -> Driver:
    import pyspiel

    game = pyspiel.load_game("crazy_eights", OPENSPIEL_PARAMS)
    uniform_chance = _openspiel_chance_is_uniform(game)

    def play(rng: random.Random) -> tuple[int, int]:
        state = game.new_initial_state()
        choice = rng.choice
        decisions = chance = 0
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                if uniform_chance:
                    action = choice(outcomes)[0]
                else:  # exact inverse-CDF sampling, should a future version weight its outcomes
                    u = rng.random()
                    for outcome, p in outcomes:
                        action = outcome
                        u -= p
                        if u < 0:
                            break
                state.apply_action(action)
                chance += 1
            else:
                state.apply_action(choice(state.legal_actions()))
                decisions += 1
        return decisions, chance

    return play


def _openspiel_chance_is_uniform(game: Any, games: int = 3) -> bool:
    """Check every chance node of a few games: uniform outcomes may be sampled with ``choice``."""
    rng = random.Random(12345)
    for _ in range(games):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                first = outcomes[0][1]
                if any(abs(p - first) > 1e-12 for _, p in outcomes):
                    return False
                state.apply_action(rng.choice(outcomes)[0])
            else:
                state.apply_action(rng.choice(state.legal_actions()))
    return True


def _rlcard() -> Driver:
    import rlcard

    env = rlcard.make("uno", config={"seed": 0})
    seeded = False

    def play(rng: random.Random) -> tuple[int, int]:
        nonlocal seeded
        if not seeded:  # RLCard shuffles with its own numpy generator: seed it once from ours
            env.seed(rng.getrandbits(31))
            seeded = True
        state, _ = env.reset()
        choice = rng.choice
        decisions = 0
        while not env.is_over():
            state, _ = env.step(choice(list(state["legal_actions"])))
            decisions += 1
        return decisions, 0

    return play


def contenders() -> list[Engine]:
    engines = [Engine(f"{p} {PLAYERS}p (ours)", _ours(p)) for p in OUR_PRESETS]
    engines.append(
        Engine(
            "OpenSpiel crazy_eights 4p",
            _openspiel,
            "C++; players=4,reshuffle=True,max_turns=10000",
        )
    )
    engines.append(Engine("RLCard uno (2p default)", _rlcard, "pure Python; rlcard.make('uno')"))
    return engines


def _load(engine: Engine) -> None:
    """Build the driver and play one warm-up game; record why if the peer is missing."""
    try:
        engine.driver = engine.make_driver()
        engine.driver(random.Random(0))
    except ImportError as exc:
        engine.missing = f"not installed ({exc.name or exc}); pip install -e '.[bench]'"
    except Exception as exc:  # a broken peer must not stop the bench: report it and go on
        engine.missing = f"failed: {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------- measuring


def _timed_round(engine: Engine, rng: random.Random, budget: float) -> None:
    """Play whole games until ``budget`` seconds have passed; record decisions per second."""
    assert engine.driver is not None
    play = engine.driver
    clock = time.perf_counter
    decisions = chance = games = 0
    cpu_start = time.process_time()
    start = clock()
    elapsed = 0.0
    while elapsed < budget:
        d, c = play(rng)
        decisions += d
        chance += c
        games += 1
        elapsed = clock() - start
    cpu = time.process_time() - cpu_start
    engine.rates.append(decisions / elapsed)
    engine.cpu_rates.append(decisions / cpu if cpu > 0 else math.nan)
    engine.games += games
    engine.decisions += decisions
    engine.chance_steps += chance


def _memory_pass(engine: Engine, rng: random.Random, budget: float) -> None:
    """Peak Python heap (KiB above the baseline) while playing games one after another."""
    assert engine.driver is not None
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        start = time.perf_counter()
        games = 0
        while games < 1 or time.perf_counter() - start < budget:
            engine.driver(rng)
            games += 1
        engine.peak_kib = (tracemalloc.get_traced_memory()[1] - base) / 1024
    finally:
        tracemalloc.stop()


def run_bench(rounds: int, seconds: float, seed: int, memory_seconds: float) -> list[Engine]:
    engines = contenders()
    for engine in engines:
        _load(engine)
    rngs = {e.label: random.Random(seed) for e in engines}
    for r in range(rounds):
        live = [e for e in engines if not e.missing]
        shift = r % max(1, len(live))
        for engine in live[shift:] + live[:shift]:  # rotate the order: nobody always goes first
            _guarded(engine, f"round {r + 1}", _timed_round, rngs[engine.label], seconds)
        progress = ", ".join(f"{e.label.split(' (')[0]} {e.rates[-1]:,.0f}/s" for e in live if not e.missing)
        print(f"  round {r + 1}/{rounds}: {progress}", file=sys.stderr, flush=True)
    for engine in engines:
        if not engine.missing:
            _guarded(engine, "memory pass", _memory_pass, random.Random(seed + 1), memory_seconds)
    return engines


def _guarded(engine: Engine, stage: str, step: Callable[..., None], *args: Any) -> None:
    """Run one measuring step; a peer that breaks is reported as failed, not allowed to stop the bench."""
    try:
        step(engine, *args)
    except Exception as exc:
        if engine.label.endswith("(ours)"):
            raise  # our own engine failing is a bug to see in full
        engine.missing = f"failed in {stage}: {type(exc).__name__}: {exc}"
        engine.rates.clear()
        engine.cpu_rates.clear()


# ---------------------------------------------------------------- reporting


def _median(rates: list[float]) -> float:
    return statistics.median(rates) if rates else math.nan


def _ratio(ours: Engine, theirs: Engine, cpu: bool = False) -> float:
    """Median of the per-round ratios: both ran in the same round, so load changes mostly cancel out."""
    if ours.missing or theirs.missing or not theirs.rates or not ours.rates:
        return math.nan
    mine, other = (ours.cpu_rates, theirs.cpu_rates) if cpu else (ours.rates, theirs.rates)
    return statistics.median(o / t for o, t in zip(mine, other, strict=True))


def _fmt(x: float, spec: str) -> str:
    return "n/a" if math.isnan(x) else format(x, spec)


def report(engines: list[Engine], rounds: int, seconds: float, seed: int) -> str:
    lines = [
        f"Craits engine bench: {rounds} rounds x {seconds:g} s per engine, seed {seed}, "
        f"Python {platform.python_version()} on {platform.machine()}",
        "",
        f"{'engine':<28} {'decisions/s':>12} {'spread (min-max)':>19} {'cpu dec/s':>10} {'games':>7} "
        f"{'dec/game':>9} {'chance':>9} {'peak KiB':>9}  notes",
    ]
    for e in engines:
        if e.missing:
            lines.append(
                f"{e.label:<28} {'-':>12} {'':>19} {'':>10} {'':>7} {'':>9} {'':>9} {'':>9}  {e.missing}"
            )
            continue
        spread = f"{min(e.rates):,.0f}-{max(e.rates):,.0f}"
        per_game = e.decisions / e.games if e.games else math.nan
        notes = e.notes
        if e.label.startswith("OpenSpiel"):
            notes += "; peak counts Python objects only, not the C++ heap"
        lines.append(
            f"{e.label:<28} {_median(e.rates):>12,.0f} {spread:>19} {_median(e.cpu_rates):>10,.0f} "
            f"{e.games:>7,} {per_game:>9,.0f} "
            f"{e.chance_steps:>9,} {_fmt(e.peak_kib, ',.0f'):>9}  {notes}"
        )
    ours = engines[0]
    ours_rate = _median(ours.rates)
    by_name = {e.label.split()[0]: e for e in engines}
    vs_os = _ratio(ours, by_name["OpenSpiel"])
    vs_rl = _ratio(ours, by_name["RLCard"])
    same_game = _ratio(by_name["crazy-eights"], by_name["OpenSpiel"])
    cpu_os = _ratio(ours, by_name["OpenSpiel"], cpu=True)
    cpu_rl = _ratio(ours, by_name["RLCard"], cpu=True)
    lines.append("")
    lines.append(
        "decisions = player choices only (OpenSpiel chance steps are counted apart, in 'chance'); "
        "one uniform random.Random per engine"
    )
    for name, ratio, mark, word in (
        ("OpenSpiel (C++)", vs_os, OPENSPIEL_GOAL, "goal"),
        ("RLCard (Python)", vs_rl, RLCARD_FLOOR, "floor"),
    ):
        if math.isnan(ratio):
            shown, verdict = "n/a", "peer not available, ratio=nan"
        else:
            shown = f"{ratio:.2f}x"
            verdict = f"{'meets' if ratio >= mark else 'BELOW'} the {word} of {mark:g}x"
        lines.append(f"ours (craits 4p) over {name}: {shown}  ({verdict})")
    lines.append(
        f"on CPU time instead of wall time: {_fmt(cpu_os, '.2f')} over OpenSpiel, {_fmt(cpu_rl, '.2f')} "
        "over RLCard (for information; other processes disturb it less)"
    )
    if not math.isnan(same_game):
        lines.append(
            f"same game, ours crazy-eights 4p over OpenSpiel crazy_eights 4p: {same_game:.2f}x (for information)"
        )
    lines.append(
        f"ratio_vs_openspiel={vs_os:.3f} ratio_vs_rlcard={vs_rl:.3f} decisions_per_s={ours_rate:.0f}"
    )
    return "\n".join(lines)


def profile(preset: str, games: int, seed: int, top: int = 15) -> str:
    """cProfile our engine over ``games`` random games; the top functions by own time."""
    play = _ours(preset)()
    rng = random.Random(seed)
    profiler = cProfile.Profile()
    profiler.enable()
    decisions = sum(play(rng)[0] for _ in range(games))
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    header = f"cProfile: {games} random games of {preset} {PLAYERS}p, {decisions:,} decisions (sorted by own time)\n"
    return header + out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 rounds x 0.5 s per engine (under a minute)")
    parser.add_argument(
        "--rounds", type=int, help="rounds; each figure is their median (default 20, quick 10)"
    )
    parser.add_argument(
        "--seconds", type=float, help="time budget per engine per round (default 1, quick 0.5)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of each engine's random.Random (default 1)")
    parser.add_argument(
        "--profile",
        nargs="?",
        const="craits",
        choices=OUR_PRESETS,
        metavar="PRESET",
        help="instead of the bench, cProfile our engine on PRESET (default craits) and print the top 15",
    )
    parser.add_argument("--profile-games", type=int, default=60, help="games to profile (default 60)")
    args = parser.parse_args(argv)
    rounds = args.rounds if args.rounds is not None else (10 if args.quick else 20)
    seconds = args.seconds if args.seconds is not None else (0.5 if args.quick else 1.0)
    if rounds < 1 or seconds <= 0 or args.profile_games < 1:
        parser.error("--rounds, --seconds and --profile-games must be positive")

    if args.profile:
        print(profile(args.profile, args.profile_games, args.seed))
        return 0
    memory_seconds = 0.3 if args.quick else 1.0
    engines = run_bench(rounds, seconds, args.seed, memory_seconds)
    print(report(engines, rounds, seconds, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
