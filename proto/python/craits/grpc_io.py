"""Which of gRPC's I/O layers the referee and the bot kits use; chosen before grpc is imported.

The protocol's traffic is small messages on one stream each, each answered at once. From
grpcio 1.80 Python runs on gRPC's EventEngine, whose extra thread hop per message costs such
traffic latency and CPU; the I/O layer used before it answers sooner (``bench/referee.py``:
about 25% more decisions per second, with the referee and its bots both on it). gRPC reads
``GRPC_EXPERIMENTS`` when it is imported, so this module sets it first, unless:

* the environment already sets it (an empty value keeps gRPC's own default): yours wins;
* grpc is already imported (too late to choose);
* the installed grpcio is outside :data:`TESTED` (older ones use that I/O anyway; a newer one
  may have removed the switches, and would log "Unknown experiment" in every process).

``import craits.grpc_io`` is all it takes (the referee's ``server`` package and the Python bot
kit do it first thing).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # (asyncio is imported where a loop is made: a kit bot on frames never needs it)
    import asyncio

T = TypeVar("T")

EXPERIMENTS = "-event_engine_client,-event_engine_listener"
TESTED = ((1, 80), (1, 86))
"""grpcio versions [from, to) known to have both switches."""


def prefer_grpc_io() -> bool:
    """Set ``GRPC_EXPERIMENTS`` to :data:`EXPERIMENTS` where that helps and nobody chose;
    True when it did."""
    if "GRPC_EXPERIMENTS" in os.environ or "grpc" in sys.modules:
        return False
    version = grpcio_version()
    if version is None or not TESTED[0] <= version < TESTED[1]:
        return False
    os.environ["GRPC_EXPERIMENTS"] = EXPERIMENTS
    return True


def grpcio_version() -> tuple[int, int] | None:
    """(major, minor) of the installed grpcio, read without importing it (that would be too
    late) nor ``importlib.metadata`` (75 ms: a bot's start-up counts), from the version file
    grpcio ships in its package; None if it cannot be read."""
    try:
        spec = importlib.util.find_spec("grpc")
        if spec is None or spec.origin is None:
            return None
        text = (Path(spec.origin).parent / "_grpcio_metadata.py").read_text()
    except (ImportError, OSError, ValueError):
        return None
    found = re.search(r"__version__\s*=\s*['\"]+(\d+)\.(\d+)", text)
    return (int(found[1]), int(found[2])) if found else None


chosen = prefer_grpc_io()
"""True when this process chose (not its environment): a referee then launches bots with its
own environment minus this choice, so a bot in another language keeps gRPC's default."""

VERBOSITY = "ERROR"


def quiet_grpc_logs() -> bool:
    """Set ``GRPC_VERBOSITY`` to :data:`VERBOSITY` where nobody chose; True when it did.

    gRPC's core writes its own INFO lines on standard error, such as ``I1126 19:17:41.758
    ssl_transport_security.cc:2563] Handshake failed with error SSL_ERROR_SSL: ...`` for every
    TLS handshake that fails: in a bot without the organizer's certificate, right before the
    kit's own line that says what to do, and in the referee once per retry of a plain-text
    bot. The kit and the referee say these things themselves, in words (docs/tls.md)."""
    if "GRPC_VERBOSITY" in os.environ or "grpc" in sys.modules:
        return False
    os.environ["GRPC_VERBOSITY"] = VERBOSITY
    return True


quieted = quiet_grpc_logs()
"""True when this process set ``GRPC_VERBOSITY`` (a launched bot does not inherit it)."""


def describe() -> str:
    """Which I/O layer this process runs gRPC on, and who chose it, in one line."""
    value = os.environ.get("GRPC_EXPERIMENTS")
    if value is None:
        return "gRPC I/O: its default (EventEngine from grpcio 1.80)"
    who = "chosen by craits.grpc_io" if chosen else "from the environment"
    return f"gRPC I/O: GRPC_EXPERIMENTS={value!r} ({who})"


LOOP_ENV = "CRAITS_EVENT_LOOP"
"""``asyncio``: run on asyncio's own event loop even where uvloop is installed."""


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop grpc.aio runs on: uvloop's where it is installed (and ``CRAITS_EVENT_LOOP``
    is not ``asyncio``), else None for asyncio's own.

    Every message of the protocol wakes the loop a few times (gRPC's completions reach it
    through a socket its poller thread writes to), so the loop's own cost per turn is a good
    part of a decision's: on uvloop's a round trip costs a gRPC server and a kit bot about a
    fifth less CPU back to back (``bench/framing.py``), a tournament's referee about 7% less
    per decision (``bench/tournament.py --breakdown``); its bots, which sleep between their
    turns, not measurably less. The referee depends on uvloop; the kit uses it when present."""
    if os.environ.get(LOOP_ENV, "").strip().lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def loop_name() -> str:
    """``uvloop`` or ``asyncio``: which loop :func:`run` uses here."""
    return "asyncio" if loop_factory() is None else "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the loop of :func:`loop_factory` (the referee's and the kit's
    entry points run their event loop through this; Python 3.10 keeps asyncio's own)."""
    import asyncio

    factory = loop_factory()
    if factory is None or not hasattr(asyncio, "Runner"):
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
