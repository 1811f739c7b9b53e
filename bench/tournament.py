"""Tournament throughput: games per second at concurrency 1 and 2, and their ratio.

A fixed tournament (four bots at one table of four, full Craits games, every deal
in all four seat rotations) is played twice from scratch, with one game at a time
and with two, through the real scheduler, store and runner. Only the playing is
timed (runner start-up and pool warm-up are not).

Runners (``--runner``):

* ``grpc``: the referee (``tournaments.grpc_runner.tournament_runner``) with the Python
  kit's bots launched as processes: the real thing, where bots think in
  processes of their own and concurrency pays.
* ``local-pool``: builtin bots played by ``tournaments.local`` in a pool of
  processes (one per concurrent game): the scheduler's parallelism without the
  referee and the network.
* ``local``: builtin bots in threads of this process; the GIL serialises them,
  so expect a ratio near 1 (a baseline for the scheduler's own overhead).
* ``auto`` (default): ``grpc`` when the bot kit is importable, else ``local-pool``.

    python bench/tournament.py            # local: 240 games per concurrency; grpc: 40
    python bench/tournament.py --quick    # local: 60; grpc: 8; under a minute either way

The last line is machine-readable: ``speedup_2_vs_1=X games_per_s=Y`` where Y is
games per second at concurrency 2.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/tournament.py` as well as `-m`
    sys.path.insert(0, str(ROOT))

from tournaments.config import TournamentConfig, parse_config  # noqa: E402
from tournaments.grpc_runner import tournament_runner  # noqa: E402
from tournaments.local import LocalRunner  # noqa: E402
from tournaments.runner import RunGame, TournamentRunner, local_runner, start_tournament  # noqa: E402

LOCAL_BOTS = """
[[bots]]
name = "random-a"
builtin = "random"
[[bots]]
name = "random-b"
builtin = "random"
[[bots]]
name = "first"
builtin = "first"
[[bots]]
name = "greedy"
builtin = "greedy"
"""
KIT_BOTS = """
[[bots]]
name = "random-a"
command = ["python", "-m", "craits_bot.examples.random_bot"]
[[bots]]
name = "random-b"
command = ["python", "-m", "craits_bot.examples.random_bot"]
[[bots]]
name = "heuristic-a"
command = ["python", "-m", "craits_bot.examples.heuristic_bot"]
[[bots]]
name = "heuristic-b"
command = ["python", "-m", "craits_bot.examples.heuristic_bot"]
"""


def tournament_text(deals: int, bots: str) -> str:
    return f'name = "bench"\ntable_size = 4\npreset = "craits"\ndeals = {deals}\nseed = 4242\n{bots}'


def grpc_available() -> bool:
    try:
        importlib.import_module("craits_bot.examples.random_bot")
    except ImportError:
        return False
    return True


Factory = Callable[[TournamentConfig, Path], AbstractAsyncContextManager[RunGame]]


def factory_for(runner: str, concurrency: int) -> Factory:
    if runner == "grpc":
        return tournament_runner
    workers = concurrency if runner == "local-pool" else 0
    return lambda config, out: local_runner(config, out, workers=workers)


async def timed_run(
    config: TournamentConfig, text: str, out: Path, factory: Factory, concurrency: int
) -> tuple[int, float]:
    store = start_tournament(config, text, str(out / "bench.toml"), out)
    async with factory(config, out) as run_game:
        if isinstance(run_game, LocalRunner):
            run_game.warm_up()
        started = time.perf_counter()
        summary = await TournamentRunner(
            config, store, run_game, out, concurrency=concurrency, progress=False, handle_signals=False
        ).run()
        elapsed = time.perf_counter() - started
    store.close()
    if not summary.complete:
        raise SystemExit(f"bench: the tournament at concurrency {concurrency} did not finish")
    return summary.played, elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer games: under a minute")
    parser.add_argument(
        "--deals", type=int, help="deals (each played in 4 rotations); default 60, --quick 15"
    )
    parser.add_argument("--runner", choices=("auto", "grpc", "local-pool", "local"), default="auto")
    args = parser.parse_args(argv)
    runner = args.runner
    if runner == "auto":
        runner = "grpc" if grpc_available() else "local-pool"
    elif runner == "grpc" and not grpc_available():
        raise SystemExit(
            "bench: the grpc runner needs the craits_bot kit (make setup)"
        )
    if args.deals:
        deals = args.deals
    elif runner == "grpc":  # every game launches four bot processes: far fewer games
        deals = 2 if args.quick else 10
    else:
        deals = 15 if args.quick else 60
    if runner == "grpc":
        from server.logging import configure_logging

        configure_logging(None, console=False)  # the referee's events would drown the figures
    text = tournament_text(deals, KIT_BOTS if runner == "grpc" else LOCAL_BOTS)
    config = parse_config(text, source="bench", base_dir=ROOT)

    print(
        f"tournament bench: 4 bots, tables of 4, {deals} deals x 4 rotations = {deals * 4} games, "
        f"runner {runner}, {os.cpu_count()} cpus"
    )
    if runner == "local-pool":
        print(
            "note: builtin bots in a process pool; the referee's gRPC runner (--runner grpc) measures the real thing"
        )
    elif runner == "local":
        print("note: builtin bots in threads share one core (GIL): expect a ratio near 1")
    rates = {}
    for concurrency in (1, 2):
        with tempfile.TemporaryDirectory(prefix="craits-bench-") as tmp:
            games, elapsed = asyncio.run(
                timed_run(config, text, Path(tmp), factory_for(runner, concurrency), concurrency)
            )
        rates[concurrency] = games / elapsed
        print(
            f"concurrency {concurrency}: {games} games in {elapsed:.2f} s = {rates[concurrency]:.1f} games/s"
        )
    speedup = rates[2] / rates[1]
    print(f"speedup_2_vs_1={speedup:.2f} games_per_s={rates[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
