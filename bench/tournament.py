"""Tournament throughput: games per second at concurrency 1 and 2, their ratio, and CPU per game.

A fixed tournament (four bots at one table of four, full Craits games, every deal
in all four seat rotations) is played twice from scratch, with one game at a time
and with two, through the real scheduler, store and runner. Games per second time
the playing (the bots' start-up included: with bots kept between games it is part
of the first games); CPU per game counts everything from the runner's start to its
end: this process, the referee's worker processes and every bot process (their
``resource.getrusage`` once they have exited and been waited for).

Runners (``--runner``):

* ``grpc``: the referee (``tournaments.grpc_runner.tournament_runner``) with four
  Python random bots of the kit launched as processes and kept between games, games
  spread over referee worker processes at concurrency 2: the real thing. It also
  reports the referee's CPU per decision put to a bot (this process at concurrency 1)
  beside a bare grpc.aio echo server's CPU per round trip (``bench/referee.py``'s
  ``EchoServer``) with payloads of the same sizes.
* ``local-pool``: builtin bots played by ``tournaments.local`` in a pool of
  processes (one per concurrent game): the scheduler's parallelism without the
  referee and the network.
* ``local``: builtin bots in threads of this process; the GIL serialises them,
  so expect a ratio near 1 (a baseline for the scheduler's own overhead).
* ``auto`` (default): ``grpc`` when the bot kit is importable, else ``local-pool``.

    python bench/tournament.py            # local: 240 games per concurrency; grpc: 100
    python bench/tournament.py --quick    # local: 60; grpc: 20; under a minute either way
    python bench/tournament.py --quick --before   # grpc as before issue 13, for comparison

Before the games it measures what the machine gives two busy processes: how much more work
two CPU-bound Python processes do at once than one alone (``bench.machine_parallelism``: 2.0
on two independent idle cores, less on two virtual cores of one physical core or beside a
busy neighbour), so the speed-up reads against what this machine can give in the same run.

Each concurrency also prints how many cores it kept busy (CPU seconds over wall seconds). One
game at a time keeps more than one busy (the bots and gRPC's threads work beside the
referee), so two at a time can gain at most the machine's cores over that figure.

The last line is machine-readable: ``speedup_2_vs_1=X games_per_s=Y cpu_s_per_game=Z
machine_2_vs_1=M cores_busy_1=B`` where Y is games per second and Z the CPU seconds per game,
both at concurrency 2, M what two busy processes get done here over one, and B the cores one
game at a time keeps busy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/tournament.py` as well as `-m`
    sys.path.insert(0, str(ROOT))

from bench import bots_output, bots_sandboxed, grpc_io, machine_parallelism, played_by_their_bots  # noqa: E402  # (first: it chooses gRPC's I/O layer before grpc is imported)
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
KIT_BOTS = "".join(
    f'[[bots]]\nname = "random-{n}"\ncommand = {json.dumps([sys.executable, "-m", "craits_bot.examples.random_bot"])}\n'
    for n in "abcd"
)
"""Four Python random bots of the kit, run by this interpreter (its environment has the kit)."""


def tournament_text(deals: int, bots: str, extra: str = "") -> str:
    return f'name = "bench"\ntable_size = 4\npreset = "craits"\ndeals = {deals}\nseed = 4242\n{extra}\n{bots}'


def grpc_available() -> bool:
    try:
        importlib.import_module("craits_bot.examples.random_bot")
    except ImportError:
        return False
    return True


Factory = Callable[[TournamentConfig, Path], AbstractAsyncContextManager[RunGame]]


def factory_for(runner: str, concurrency: int, one_referee: bool = False) -> Factory:
    if runner == "grpc":
        if one_referee:
            return lambda config, out: tournament_runner(config, out, workers=1)
        return tournament_runner
    workers = concurrency if runner == "local-pool" else 0
    return lambda config, out: local_runner(config, out, workers=workers)


def rusage_seconds() -> float:
    """CPU of this process and of its children that have exited and been waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class CpuMeter:
    """CPU seconds of this process and of everything it starts.

    Where this process may make a (v1) ``cpuacct`` cgroup, it moves into one of its own and
    reads the kernel's count for it: every descendant counts, the bots a sandbox runs in
    groups nested inside it included. ``getrusage`` alone misses those: a sandboxed bot is
    ended by killing its sandbox, so nobody waits for it and its CPU is never reported to
    this process. Elsewhere the meter falls back to ``getrusage`` and says what it misses.
    """

    def __init__(self) -> None:
        self.group: Path | None = None
        self._home: Path | None = None
        try:
            with open("/proc/self/cgroup") as lines:
                for line in lines:
                    _, names, where = line.rstrip("\n").split(":", 2)
                    if "cpuacct" in names.split(","):
                        home = Path("/sys/fs/cgroup/cpuacct", where.lstrip("/"))
                        group = home / f"craits-bench-{os.getpid()}"
                        group.mkdir()
                        (group / "cgroup.procs").write_text(str(os.getpid()))
                        self.group, self._home = group, home
                        break
        except (OSError, ValueError):
            self.group = None

    @property
    def source(self) -> str:
        if self.group is not None:
            return "the kernel's cpuacct count for this process and all it started"
        return "getrusage of this process and its waited-for children (a sandboxed bot's CPU is missed)"

    def seconds(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        return rusage_seconds()

    def close(self) -> None:
        """Move back to the cgroup this process came from and remove its own (a bot still
        leaving keeps it a moment; after 5 s it is left, and said)."""
        if self.group is None or self._home is None:
            return
        for _ in range(250):
            with contextlib.suppress(OSError):  # this process, and helpers that outlive a run
                for pid in (self.group / "cgroup.procs").read_text().split():  # (multiprocessing's tracker)
                    with contextlib.suppress(OSError):
                        (self._home / "cgroup.procs").write_text(pid)
            try:
                self.group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
        else:
            print(f"note: {self.group} is left behind (still busy)", file=sys.stderr)
        self.group = None


class Decisions:
    """Counts the requests this process's referee builds, and their sizes (for the echo)."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self._original: Any = None

    def __enter__(self) -> Decisions:
        from server.protocol import wire

        original = self._original = wire.GameEncoder.decision_request
        sizes = self.sizes

        def counted(*args: Any, **kwargs: Any) -> Any:
            message = original(*args, **kwargs)
            sizes.append(len(message))  # (+3 for the RefereeMessage's tag and length: the echo adds them)
            return message

        wire.GameEncoder.decision_request = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        from server.protocol import wire

        wire.GameEncoder.decision_request = self._original  # type: ignore[method-assign]


async def timed_run(
    config: TournamentConfig, text: str, out: Path, factory: Factory, concurrency: int, meter: CpuMeter
) -> tuple[int, float, float, float]:
    """Games played, seconds playing, CPU seconds in all, CPU seconds of this process playing."""
    store = start_tournament(config, text, str(out / "bench.toml"), out)
    cpu_before = meter.seconds()
    async with factory(config, out) as run_game:
        if isinstance(run_game, LocalRunner):
            run_game.warm_up()
        started, own = time.perf_counter(), time.process_time()
        summary = await TournamentRunner(
            config, store, run_game, out, concurrency=concurrency, progress=False, handle_signals=False
        ).run()
        elapsed, own = time.perf_counter() - started, time.process_time() - own
    cpu = meter.seconds() - cpu_before
    try:
        played_by_their_bots(store.results(), bots_output(out / "bots"))
    finally:
        store.close()
    if not summary.complete:
        raise SystemExit(f"bench: the tournament at concurrency {concurrency} did not finish")
    return summary.played, elapsed, cpu, own


async def echo_cpu(sizes: list[int]) -> float:
    """CPU seconds of a bare grpc.aio echo server per round trip, payloads of ``sizes``."""
    from bench.referee import EchoServer

    echo = EchoServer()
    await echo.start(20)
    try:
        payloads = [b"x" * (size + 3) for size in sizes]
        await echo.run(payloads[:200])  # warm-up
        _, _, cpu = await echo.run(payloads)
    finally:
        await echo.stop()
    return cpu / len(payloads)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer games: under a minute")
    parser.add_argument(
        "--deals", type=int, help="deals (each played in 4 rotations); default 60, --quick 15"
    )
    parser.add_argument("--runner", choices=("auto", "grpc", "local-pool", "local"), default="auto")
    parser.add_argument(
        "--before", action="store_true",
        help="grpc: play as before issue 13 (a fresh bot process every game, one referee process), for comparison",
    )
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
    elif runner == "grpc":  # every game asks four bot processes ~750 times: fewer games
        deals = 5 if args.quick else 25
    else:
        deals = 15 if args.quick else 60
    if runner == "grpc":
        from server.logging import configure_logging

        configure_logging(None, console=False)  # the referee's events would drown the figures
    before = args.before and runner == "grpc"
    text = tournament_text(deals, KIT_BOTS if runner == "grpc" else LOCAL_BOTS, 'restart = "game"' if before else "")
    config = parse_config(text, source="bench", base_dir=ROOT)

    bots = bots_sandboxed(config.sandbox) if runner == "grpc" else "builtin bots, in-process"
    print(
        f"tournament bench: 4 bots, tables of 4, {deals} deals x 4 rotations = {deals * 4} games, "
        f"runner {runner}, {bots}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}; {grpc_io()}"
    )
    if before:
        print("before issue 13: a fresh process for every bot in every game, every game in one referee process")
    if runner == "local-pool":
        print(
            "note: builtin bots in a process pool; the referee's gRPC runner (--runner grpc) measures the real thing"
        )
    elif runner == "local":
        print("note: builtin bots in threads share one core (GIL): expect a ratio near 1")
    machine = machine_parallelism(rounds=1 if args.quick else 3)
    print(f"this machine: two CPU-bound Python processes do {machine:.2f}x the work of one (2.00 on two independent idle cores)")
    rates, cpu_per_game, busy = {}, {}, {}
    referee_cpu, sizes = 0.0, []
    meter = CpuMeter()
    print(f"CPU counted by {meter.source}")
    try:
        for concurrency in (1, 2):
            counting = Decisions() if runner == "grpc" and concurrency == 1 else nullcontext()
            with tempfile.TemporaryDirectory(prefix="craits-bench-") as tmp, counting:
                games, elapsed, cpu, own = asyncio.run(
                    timed_run(config, text, Path(tmp), factory_for(runner, concurrency, before), concurrency, meter)
                )
            if isinstance(counting, Decisions):
                sizes = counting.sizes
                referee_cpu = own / max(1, len(sizes))
            rates[concurrency] = games / elapsed
            cpu_per_game[concurrency] = cpu / games
            busy[concurrency] = cpu / elapsed
            print(
                f"concurrency {concurrency}: {games} games in {elapsed:.2f} s = {rates[concurrency]:.2f} games/s, "
                f"{cpu_per_game[concurrency]:.3f} CPU s per game (referee, workers and bots, start-up included), "
                f"{busy[concurrency]:.2f} cores busy"
            )
    finally:
        meter.close()
    if sizes:
        echo = asyncio.run(echo_cpu(sizes[:3000]))
        print(
            f"referee CPU per decision put to a bot: {referee_cpu * 1e3:.3f} ms (this process at concurrency 1: "
            f"{len(sizes)} requests); bare grpc.aio echo server: {echo * 1e3:.3f} ms per round trip; "
            f"ratio {referee_cpu / echo:.2f}"
        )
    speedup = rates[2] / rates[1]
    cores = os.cpu_count() or 1
    print(
        f"the most two at a time can gain at the same CPU per game: {cores} cores / {busy[1]:.2f} busy at one "
        f"at a time = {cores / busy[1]:.2f}x (and this machine gives two busy processes {machine:.2f}x one)"
    )
    print(
        f"speedup_2_vs_1={speedup:.2f} games_per_s={rates[2]:.2f} cpu_s_per_game={cpu_per_game[2]:.3f} "
        f"machine_2_vs_1={machine:.2f} cores_busy_1={busy[1]:.2f}"
    )
    return 0

if __name__ == "__main__":
    sys.exit(main())
