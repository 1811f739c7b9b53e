"""A referee process and the bots it launches on one core: a decision's round trip without a
wake-up across cores.

A game is a ping-pong: the referee writes a request and sleeps, a bot wakes, answers and
sleeps, the referee wakes. When the two sit on different cores, every wake-up is an
inter-processor interrupt to a sleeping core, which on a virtual machine costs each side far
more than the message: measured on the 2-core development VM, a 450-byte request and a
32-byte answer on a Unix socket cost the asking side 28 us of CPU per round trip across cores
and 7 us on one core (the answering side alike). So each referee process (the tournament's
own, and each worker of :mod:`server.transport.workers`) keeps its event loop's thread on a
core of its own, and its bots, launched from that thread, inherit it: the games of one
referee process, and their bots, share a core, and two referee processes use two. Nothing is
lost in parallelism: within a game only one of its processes works at a time.

Only the thread that runs the games is pinned (affinity is per thread on Linux: gRPC's
threads, started before, keep every core), for as long as the games are played, then let go.
It is **off unless** ``CRAITS_ONE_CORE=1`` is in the referee's environment: two tournaments (or
two test runners) started apart on one machine would each pin their own process to the *first*
core and leave the others idle, and the games of one process (``concurrency`` above the worker
count) would put their bots' thinking on one core while another sleeps, against their clocks.
Turn it on where one tournament owns the machine (its figures: bench/README.md). A process
allowed fewer than two cores is never pinned.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from server.logging import get_logger

log = get_logger()

ENV = "CRAITS_ONE_CORE"


def allowed_cores() -> tuple[int, ...]:
    """The cores this thread may use (those it had before a :func:`one_core` block it is in; ()
    where the system cannot say)."""
    if not hasattr(os, "sched_getaffinity"):
        return ()
    held = _held.get(threading.get_ident())
    return tuple(sorted(held[1] if held is not None else os.sched_getaffinity(0)))


def chosen_core(number: int, cores: tuple[int, ...] = ()) -> int | None:
    """The core referee process ``number`` (0: the tournament's own) keeps its games on, among
    ``cores`` (default: :func:`allowed_cores`; a worker is given its tournament's, as it starts
    on the tournament's pinned core), or None when they are not to be pinned (switched off, one
    core, no affinity on this system)."""
    if os.environ.get(ENV, "0") != "1" or not hasattr(os, "sched_setaffinity"):
        return None
    cores = cores or allowed_cores()
    if len(cores) < 2:
        return None
    return cores[number % len(cores)]


_held: dict[int, list[Any]] = {}
"""By thread: how many :func:`one_core` blocks it is inside, and the cores it had before the first
(a process may run several tournaments' runners at once, as ``craits worker`` does; they end in
any order, and only the last gives the cores back)."""


@contextlib.contextmanager
def one_core(number: int, cores: tuple[int, ...] = ()) -> Iterator[int | None]:
    """Keep the calling thread (the event loop's) on core :func:`chosen_core` while inside, so
    the bots launched from it start there too; on the way out of the last such block, give it
    back every core it had."""
    thread = threading.get_ident()
    held = _held.get(thread)
    if held is not None:  # (already pinned by an enclosing or overlapping block: the same core)
        held[0] += 1
        try:
            yield held[2]
        finally:
            _release(thread)
        return
    core = chosen_core(number, cores)
    if core is None:
        yield None
        return
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {core})
    except OSError as err:  # (a container that forbids it): play unpinned
        log.info("one_core_refused", core=core, error=str(err))
        yield None
        return
    _held[thread] = [1, before, core]
    try:
        yield core
    finally:
        _release(thread)


def _release(thread: int) -> None:
    held = _held[thread]
    held[0] -= 1
    if held[0] == 0:
        del _held[thread]
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, held[1])
