"""Benchmarks (see bench/README.md)."""

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import craits.grpc_io  # first: the benches measure the I/O layer the referee and the kit choose


def grpc_io() -> str:
    """Which gRPC I/O layer this run uses, for the header line (see ``craits.grpc_io``)."""
    return craits.grpc_io.describe()


_COUNT_LOOP = """\
import sys, time
start, end = float(sys.argv[1]), float(sys.argv[1]) + float(sys.argv[2])
while time.monotonic() < start:
    time.sleep(0.001)
n = 0
while time.monotonic() < end:
    for _ in range(1000):
        n += 1
print(n)
"""


def machine_parallelism(window_s: float = 1.0, rounds: int = 3) -> float:
    """How much work two CPU-bound Python processes get done at once, over one alone (the
    median of ``rounds``, alone and together in turn): what doubling a CPU-bound workload can
    gain on this machine. Two independent idle cores give 2.0; two virtual cores of one
    physical core, or a neighbour's load, give less. Both processes count loops in the same window of the
    machine's monotonic clock, so their start-up does not count."""
    import statistics
    import subprocess
    import sys
    import time

    def counts(processes: int) -> int:
        start = f"{time.monotonic() + 0.3:.6f}"
        running = [
            subprocess.Popen([sys.executable, "-c", _COUNT_LOOP, start, str(window_s)], stdout=subprocess.PIPE, text=True)
            for _ in range(processes)
        ]
        return sum(int(p.communicate()[0]) for p in running)

    ratios = []
    for _ in range(rounds):
        alone = counts(1)
        ratios.append(counts(2) / alone)
    return statistics.median(ratios)


# --------------------------------------------------------------------------- bots that really played

NOT_PLAYED = ("never_connected", "disconnected")
"""Seat statuses that mean the default policy played for a bot that was not there: a bench
whose games have them measures the default policy, not the bots it names."""


def bots_sandboxed(sandbox: str = "bwrap") -> str:
    """The header's words on the launched bots: sandboxed or not. A bench whose bots are to be
    sandboxed stops here, with the reason, where the sandbox cannot run (its bots would never
    start, and the default policy would play every seat)."""
    if sandbox == "none":
        return "bots launched unsandboxed (sandbox none)"
    from server.transport import sandbox as sandboxes

    why = sandboxes.problem()
    if why is not None:
        raise SystemExit(f"bench: the bots cannot be launched here: cannot sandbox them: {why} (`craits doctor` "
                         "says how to fix it); no figures: the default policy would have played every seat")
    return "bots launched sandboxed (bwrap)"


def played_by_their_bots(games: Iterable[Any], where: str = "") -> int:
    """Stop the bench, with the reason, unless every game (a GameRecord or a stored result:
    ``.seats`` with ``.bot`` and ``.status``, and ``.aborted``) was played to its end by its
    bots; a bot struck out for its own late or wrong answers did play. Returns the games."""
    missing: dict[tuple[str, str], int] = {}
    aborted: list[str] = []
    n = 0
    for game in games:
        n += 1
        if game.aborted:
            aborted.append(game.aborted)
        for seat in game.seats:
            if str(seat.status) in NOT_PLAYED:
                missing[(seat.bot, str(seat.status))] = missing.get((seat.bot, str(seat.status)), 0) + 1
    if not missing and not aborted:
        return n
    said = [f"{bot} {status.replace('_', ' ')} in {count} of {n} games" for (bot, status), count in sorted(missing.items())]
    if aborted:
        said.append(f"{len(aborted)} game(s) aborted ({aborted[0]})")
    raise SystemExit(f"bench: the games were not played by their bots ({'; '.join(said)}): the figures would "
                     f"measure the default policy; no figures" + (f"; a bot's output, {where}" if where else ""))


def bots_output(folder: Path) -> str:
    """The last line a launched bot printed under ``folder`` (a run's ``bots/``), with its file: what
    a bench that stops because its bots did not play shows of why."""
    for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
        with contextlib.suppress(OSError):
            lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
            if path.is_file() and lines:
                return f"{path.name}: {lines[-1][:300]}"
    return ""
