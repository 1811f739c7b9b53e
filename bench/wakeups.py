"""What a round trip between two processes costs on one core and across two: the floor under
a referee's decision, and why a referee process keeps its bots on its own core
(``server.transport.cores``).

One process writes a request of ``--size`` bytes on a Unix socket and waits (``poll``) for a
32-byte answer; another, blocked in ``recv``, answers at once. Both are pinned, first to the
same core, then to two different ones, in alternating rounds; each side's CPU per round trip is
read from the kernel (``process_time`` for the asker, ``wait4``'s rusage for the answerer).
No Python of the referee's or the kit's runs: this is the system calls and the wake-ups alone.

    python bench/wakeups.py --quick

The last line: ``ratio_two_vs_one=R asker_us_one=A asker_us_two=B answerer_us_one=C
answerer_us_two=D`` (medians of the rounds; R is both sides' CPU across two cores over on one).
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import statistics
import sys
import time


def round_trips(cores: tuple[int, int], n: int, size: int) -> tuple[float, float]:
    """CPU seconds per round trip of the asker and the answerer, pinned to ``cores``."""
    asker, answerer = socket.socketpair()
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cores[0]})
    pid = os.fork()
    if pid == 0:  # the answerer
        asker.close()
        os.sched_setaffinity(0, {cores[1]})
        while data := answerer.recv(65536):
            answerer.send(data[:32])
        os._exit(0)
    answerer.close()
    request = b"x" * size
    poll = select.poll()
    poll.register(asker, select.POLLIN)
    started = time.process_time()
    for _ in range(n):
        asker.send(request)
        poll.poll(1500)
        if len(asker.recv(65536)) != 32:
            raise SystemExit("bench: the answerer did not answer")
    mine = time.process_time() - started
    asker.close()
    _, _, usage = os.wait4(pid, 0)
    os.sched_setaffinity(0, before)
    return mine / n, (usage.ru_utime + usage.ru_stime) / n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 10,000 round trips (default 7 of 20,000)")
    parser.add_argument("--size", type=int, default=450, help="request bytes (a DecisionRequest's usual size)")
    args = parser.parse_args(argv)
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(allowed) < 2:
        raise SystemExit("bench: needs two cores this process may use (sched_getaffinity)")
    rounds, n = (3, 10_000) if args.quick else (7, 20_000)
    print(f"wake-ups bench: {rounds} rounds of {n} round trips, {args.size}-byte requests, cores {allowed[:2]}, "
          f"load average {os.getloadavg()[0]:.1f}")
    one: list[tuple[float, float]] = []
    two: list[tuple[float, float]] = []
    for _ in range(rounds):
        one.append(round_trips((allowed[0], allowed[0]), n, args.size))
        two.append(round_trips((allowed[0], allowed[1]), n, args.size))
    a1, b1 = (statistics.median(r[i] for r in one) * 1e6 for i in (0, 1))
    a2, b2 = (statistics.median(r[i] for r in two) * 1e6 for i in (0, 1))
    print(f"one core: asker {a1:.1f} us, answerer {b1:.1f} us of CPU per round trip")
    print(f"two cores: asker {a2:.1f} us, answerer {b2:.1f} us of CPU per round trip")
    print(f"ratio_two_vs_one={(a2 + b2) / (a1 + b1):.2f} asker_us_one={a1:.1f} asker_us_two={a2:.1f} "
          f"answerer_us_one={b1:.1f} answerer_us_two={b2:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
