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

import craits.grpc_io  # noqa: E402

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
    parser.add_argument(
        "--baseline", metavar="CHECKOUT", type=Path,
        help="grpc: first play the same bench with another checkout's code (its .venv, its "
        "bench/tournament.py; e.g. `git worktree add /tmp/perf-base main && make -C /tmp/perf-base setup`) "
        "and print this code's CPU per decision as a ratio to its",
    )
    parser.add_argument(
        "--rounds", type=int, default=2,
        help="with --baseline: this many runs of each checkout's bench, alternating (the ratios are of the medians)",
    )
    parser.add_argument(
        "--breakdown", action="store_true",
        help="grpc: where each decision's CPU goes in the referee and the bots (bench/breakdown.py), then exit",
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
        f"runner {runner}, {bots}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}; {grpc_io()}; "
        f"event loop: {craits.grpc_io.loop_name()}"
    )
    if before:
        print("before issue 13: a fresh process for every bot in every game, every game in one referee process")
    if runner == "local-pool":
        print(
            "note: builtin bots in a process pool; the referee's gRPC runner (--runner grpc) measures the real thing"
        )
    elif runner == "local":
        print("note: builtin bots in threads share one core (GIL): expect a ratio near 1")
    if args.breakdown:
        if runner != "grpc":
            raise SystemExit("bench: --breakdown needs the grpc runner")
        from bench import breakdown

        meter = CpuMeter()
        try:
            breakdown.run(config, text, factory_for(runner, 1, one_referee=True), meter)
        finally:
            meter.close()
        return 0
    baseline = (
        compare_with(args.baseline, deals, max(1, args.rounds)) if args.baseline and runner == "grpc" else None
    )
    machine = machine_parallelism(rounds=1 if args.quick else 3)
    print(f"this machine: two CPU-bound Python processes do {machine:.2f}x the work of one (2.00 on two independent idle cores)")
    rates, cpu_per_game, busy = {}, {}, {}
    referee_cpu, system_cpu, sizes, echo, same_loop = 0.0, 0.0, [], 0.0, 0.0
    meter = CpuMeter()
    print(f"CPU counted by {meter.source}")
    try:
        for concurrency in (1, 2):
            counting = Decisions() if runner == "grpc" and concurrency == 1 else nullcontext()
            with tempfile.TemporaryDirectory(prefix="craits-bench-") as tmp, counting:
                games, elapsed, cpu, own = craits.grpc_io.run(
                    timed_run(config, text, Path(tmp), factory_for(runner, concurrency, before), concurrency, meter)
                )
            if isinstance(counting, Decisions):
                sizes = counting.sizes
                referee_cpu = own / max(1, len(sizes))
                system_cpu = cpu / max(1, len(sizes))
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
        echo = asyncio.run(echo_cpu(sizes[:3000]))  # the bare echo as bench/referee.py runs it: asyncio's loop
        same_loop = craits.grpc_io.run(echo_cpu(sizes[:3000]))
        print(
            f"referee CPU per decision put to a bot: {referee_cpu * 1e3:.3f} ms (this process at concurrency 1: "
            f"{len(sizes)} requests, on {craits.grpc_io.loop_name()}'s loop); bare grpc.aio echo server: "
            f"{echo * 1e3:.3f} ms per round trip on asyncio's loop, {same_loop * 1e3:.3f} ms on "
            f"{craits.grpc_io.loop_name()}'s; ratio {referee_cpu / echo:.2f} and {referee_cpu / same_loop:.2f}"
        )
        print(
            f"all processes' CPU per decision put to a bot at concurrency 1 (referee, bots, their start-up): "
            f"{system_cpu * 1e3:.3f} ms"
        )
    tail = ""
    if sizes:
        tail = (f" cpu_ms_per_decision={system_cpu * 1e3:.3f} referee_ms_per_decision={referee_cpu * 1e3:.3f}"
                f" referee_vs_echo={referee_cpu / echo:.2f} referee_vs_echo_same_loop={referee_cpu / same_loop:.2f}")
    if baseline is not None:
        cpu_ratio, referee_ratio = baseline
        tail += f" cpu_vs_baseline={cpu_ratio:.2f} referee_vs_baseline={referee_ratio:.2f}"
    speedup = rates[2] / rates[1]
    cores = os.cpu_count() or 1
    print(
        f"the most two at a time can gain at the same CPU per game: {cores} cores / {busy[1]:.2f} busy at one "
        f"at a time = {cores / busy[1]:.2f}x (and this machine gives two busy processes {machine:.2f}x one)"
    )
    print(
        f"speedup_2_vs_1={speedup:.2f} games_per_s={rates[2]:.2f} cpu_s_per_game={cpu_per_game[2]:.3f} "
        f"machine_2_vs_1={machine:.2f} cores_busy_1={busy[1]:.2f}{tail}"
    )
    return 0


def compare_with(checkout: Path, deals: int, rounds: int) -> tuple[float, float]:
    """This code's and another checkout's bench (each its own .venv), run in turn ``rounds``
    times each (a busy machine moves every figure; in turn, both see the same load): the ratios
    of this code's median CPU per decision put to a bot to the other's, all processes and the
    referee."""
    import statistics

    python = checkout / ".venv" / "bin" / "python"
    script = checkout / "bench" / "tournament.py"
    if not python.exists() or not script.exists():
        raise SystemExit(f"bench: --baseline {checkout}: no .venv/bin/python or bench/tournament.py there (make setup)")
    print(f"baseline: {checkout} (commit {_commit(checkout)}) against this code ({_commit(ROOT)}), "
          f"{deals} deals, {rounds} runs each in turn ...", flush=True)
    figures: dict[str, list[tuple[float, float]]] = {"baseline": [], "this code": []}
    for _ in range(rounds):
        for name, (py, bench, cwd) in (("baseline", (python, script, checkout)),
                                       ("this code", (Path(sys.executable), Path(__file__).resolve(), ROOT))):
            cpu, referee = bench_figures(py, bench, cwd, deals)
            figures[name].append((cpu, referee))
            print(f"  {name}: all processes {cpu * 1e3:.3f} ms, referee {referee * 1e3:.3f} ms per decision",
                  flush=True)
    medians = {name: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
               for name, rows in figures.items()}
    (base_cpu, base_referee), (cpu, referee) = medians["baseline"], medians["this code"]
    print(f"medians: all processes {cpu * 1e3:.3f} / {base_cpu * 1e3:.3f} ms = {cpu / base_cpu:.2f}x the baseline; "
          f"referee {referee * 1e3:.3f} / {base_referee * 1e3:.3f} ms = {referee / base_referee:.2f}x")
    return cpu / base_cpu, referee / base_referee


def bench_figures(python: Path, script: Path, cwd: Path, deals: int) -> tuple[float, float]:
    """All processes' and the referee's CPU seconds per decision put to a bot at concurrency 1,
    read from the lines a checkout's bench prints (the same lines before and after issue 32)."""
    import re
    import subprocess

    done = subprocess.run([str(python), str(script), "--quick", "--runner", "grpc", "--deals", str(deals)],
                          cwd=cwd, capture_output=True, text=True, check=False)
    games = re.search(r"concurrency 1: (\d+) games in [\d.]+ s = [\d.]+ games/s, ([\d.]+) CPU s per game", done.stdout)
    referee = re.search(r"referee CPU per decision put to a bot: ([\d.]+) ms .*?: (\d+) requests", done.stdout)
    if done.returncode or games is None or referee is None:
        raise SystemExit(f"bench: {script} failed:\n{done.stdout}\n{done.stderr}")
    return float(games[2]) * int(games[1]) / int(referee[2]), float(referee[1]) / 1e3


def _commit(checkout: Path) -> str:
    import subprocess

    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"

if __name__ == "__main__":
    sys.exit(main())
