"""Benchmarks (see bench/README.md)."""

import os

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
