"""The price of the bot sandbox: launch time and games per second, with and without it.

Both are measured in the same run, in alternating rounds (so that a busy machine slows
both alike), through the real referee (``server.transport.service.Arena``) and launcher:

* **launch**: the time from :meth:`LaunchedBot.start` to the exit of a bot that does
  nothing (``python -c pass``): the cost of bwrap, the uid switch, limits and the cgroup.
* **games/s**: Craits games of three seats, each a Python kit bot
  (``craits_bot.examples.random_bot``), two games at once: short games with the bots
  launched for every game (a tournament with ``restart = "game"``), and full games with the
  bots kept between games as a tournament keeps them by default (``server.transport.pool``).

    python bench/sandbox.py            # 5 rounds: 20 launches and 6 games per mode per round
    python bench/sandbox.py --quick    # 2 rounds: 8 launches and 4 games; about a minute

The last line is machine-readable:
``kept_games_ratio_bwrap_vs_none=K games_ratio_bwrap_vs_none=X launch_ms_none=A launch_ms_bwrap=B
games_per_s_none=C games_per_s_bwrap=D`` (K and X are bwrap's games per second over none's, with
bots kept and launched per game: 0.9 is 10% fewer games).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/sandbox.py` as well as `-m`
    sys.path.insert(0, str(ROOT))

from bench import bots_sandboxed  # noqa: E402
from server.engine import make_config  # noqa: E402
from server.logging import configure_logging  # noqa: E402
from server.spec import BotSpec, Clocks, GameSpec  # noqa: E402
from server.transport.launcher import LaunchedBot  # noqa: E402
from server.transport.pool import RestartPolicy  # noqa: E402
from server.transport.service import Arena, ArenaOptions  # noqa: E402

MODES = ("none", "bwrap")
BOT = (sys.executable, "-m", "craits_bot.examples.random_bot")
CLOCKS = Clocks(decision_s=5.0, bank_s=60.0, connect_timeout_s=60.0)


async def launches(arena: Arena, n: int, folder: str) -> list[float]:
    """Seconds from start to exit of ``python -c pass``, ``n`` times, one after the other."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        bot = await LaunchedBot.start((sys.executable, "-c", "pass"), server=arena.target, token="t", name="idle",
                                      cwd=folder, sandbox=arena.sandbox)
        await bot.process.wait()
        times.append(time.perf_counter() - started)
        await bot.stop(0)
    return times


async def games(arena: Arena, n: int, first: int, concurrency: int = 2, short: bool = True) -> float:
    """Seconds to play ``n`` games of three launched kit bots, ``concurrency`` at once (short
    games, where a launch weighs most; full ones for kept bots, where the play is all there is)."""
    seats = tuple(BotSpec(f"random-{i}", "", command=BOT) for i in range(3))
    config = make_config("craits", 3, short_game=short)
    queue = list(range(first, first + n))

    async def worker() -> None:
        while queue:
            seed = queue.pop()
            record = await arena.run_game(GameSpec(f"bench-{arena.options.sandbox}-{seed}", config, seed, seats, CLOCKS))
            if record.aborted or any(s.status != "ok" for s in record.seats):
                raise SystemExit(f"game {seed} did not go normally: {record.aborted or record.seats}")

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


async def main(rounds: int, n_launch: int, n_games: int) -> int:
    configure_logging(None, console=False)
    print(f"sandbox bench: the same bots launched unsandboxed (none) and {bots_sandboxed()}, in alternating rounds")
    launch: dict[str, list[float]] = {m: [] for m in MODES}
    played: dict[str, list[float]] = {m: [] for m in MODES}
    kept: dict[str, list[float]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as folder:
        Path(folder).chmod(0o755)
        arenas = {m: await Arena.start("127.0.0.1:0", ArenaOptions(sandbox=m)) for m in MODES}
        keeping = {m: await Arena.start("127.0.0.1:0", ArenaOptions(sandbox=m)) for m in MODES}
        for arena in keeping.values():
            arena.keep_bots(RestartPolicy())
        try:
            for mode in MODES:  # the kept bots' first launch is not what is measured
                await games(keeping[mode], 2, first=10_000, short=False)
            for r in range(rounds):
                for mode in MODES if r % 2 == 0 else reversed(MODES):
                    launch[mode] += await launches(arenas[mode], n_launch, folder)
                    played[mode].append(n_games / await games(arenas[mode], n_games, first=r * n_games))
                    kept[mode].append(n_games / await games(keeping[mode], n_games, first=r * n_games, short=False))
                print(f"round {r + 1}/{rounds}: " + "  ".join(
                    f"{m}: launch {statistics.median(launch[m]) * 1000:.0f} ms, {played[m][-1]:.2f} games/s, "
                    f"kept {kept[m][-1]:.2f} games/s" for m in MODES), flush=True)
        finally:
            for arena in (*arenas.values(), *keeping.values()):
                await arena.shutdown(0)
    launch_ms = {m: statistics.median(launch[m]) * 1000 for m in MODES}
    per_s = {m: statistics.median(played[m]) for m in MODES}
    kept_s = {m: statistics.median(kept[m]) for m in MODES}
    print(f"\n{'mode':<7}{'launch (median)':>17}{'games/s (median)':>18}{'kept bots':>11}")
    for m in MODES:
        print(f"{m:<7}{launch_ms[m]:>14.1f} ms{per_s[m]:>18.2f}{kept_s[m]:>11.2f}")
    ratio = per_s["bwrap"] / per_s["none"]
    kept_ratio = kept_s["bwrap"] / kept_s["none"]
    print(f"\nthe sandbox adds {launch_ms['bwrap'] - launch_ms['none']:.1f} ms per launch; "
          f"games/s with it: {kept_ratio:.2f} x without with bots kept between games, "
          f"{ratio:.2f} x with bots launched for every game")
    print(f"kept_games_ratio_bwrap_vs_none={kept_ratio:.3f} "
          f"games_ratio_bwrap_vs_none={ratio:.3f} launch_ms_none={launch_ms['none']:.1f} "
          f"launch_ms_bwrap={launch_ms['bwrap']:.1f} games_per_s_none={per_s['none']:.3f} "
          f"games_per_s_bwrap={per_s['bwrap']:.3f}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds of 8 launches and 4 games per mode")
    parser.add_argument("--rounds", type=int, help="rounds (each plays both modes)")
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 5)
    sys.exit(asyncio.run(main(rounds, 8 if args.quick else 20, 4 if args.quick else 6)))
