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
from pathlib import Path

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


def describe() -> str:
    """Which I/O layer this process runs gRPC on, and who chose it, in one line."""
    value = os.environ.get("GRPC_EXPERIMENTS")
    if value is None:
        return "gRPC I/O: its default (EventEngine from grpcio 1.80)"
    who = "chosen by craits.grpc_io" if chosen else "from the environment"
    return f"gRPC I/O: GRPC_EXPERIMENTS={value!r} ({who})"
