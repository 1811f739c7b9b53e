"""Who of the bots that connect on their own is here, since when, and who was refused.

A teacher's board shows, for each remote bot, whether it is connected and since when, and
why it is away (it left cleanly, or its connection was lost): a ladder seats only the bots
that are here, so "why is nobody playing?" has its answer on the screen. A Hello refused
for an unknown token is kept too, by the name the bot claimed (never the token): a student
who mistyped a token is told so by the board, not by a log they cannot read.

:class:`Presence` is plain bookkeeping on the referee's event loop, updated by the service
as streams come and go; whoever shows it (``tournaments.grpc_runner``) subscribes with
:attr:`Presence.on_change`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from server.storage.replay.format import write_text_atomic

MAX_REFUSED = 20
"""Refused Hellos kept (the latest), so a bot retrying with a wrong token for hours keeps it small."""

CONNECTED = "connected"
NEVER = "never connected"
LEFT = "left cleanly"
"""The bot closed its stream itself (its process stopped, Ctrl-C, the kit's normal end)."""
LOST = "connection lost"
"""The stream broke without the bot closing it: a crash, a kill, a network drop."""
ENDED = "the referee stopped"
"""The referee ended the stream as it shut down (the run is over)."""
REVOKED = "token revoked"
"""The referee ended the stream because the bot's token was revoked or renewed."""


@dataclass(frozen=True, slots=True)
class BotPresence:
    state: str
    """:data:`CONNECTED`, :data:`NEVER`, :data:`LEFT`, :data:`LOST`, :data:`ENDED` or :data:`REVOKED`."""
    since: float | None
    """Wall-clock time (seconds since the epoch) of the change; None: never connected."""

    @property
    def connected(self) -> bool:
        return self.state == CONNECTED


@dataclass(frozen=True, slots=True)
class Refusal:
    claimed: str
    """The name the refused bot gave in its Hello (its own words, at most 64 characters)."""
    why: str
    at: float


class Presence:
    """The watched bots' comings and goings, and the latest refused Hellos."""

    def __init__(self) -> None:
        self.bots: dict[str, BotPresence] = {}
        self.refused: deque[Refusal] = deque(maxlen=MAX_REFUSED)
        self.on_change: Callable[[str, Any], None] | None = None
        """Called with ("bot", name) or ("refused", Refusal) after each change."""

    def watch(self, names: Iterable[str]) -> None:
        """Follow these bots (those that connect on their own); the others are not shown."""
        for name in names:
            self.bots.setdefault(name, BotPresence(NEVER, None))

    def connected(self, name: str) -> None:
        if name in self.bots and not self.bots[name].connected:
            self._set(name, CONNECTED)

    def left(self, name: str, *, clean: bool, shutdown: bool = False) -> None:
        if name in self.bots and self.bots[name].connected:
            self._set(name, ENDED if shutdown else LEFT if clean else LOST)

    def revoked(self, name: str) -> None:
        if name in self.bots and self.bots[name].state != REVOKED:
            self._set(name, REVOKED)

    def refuse(self, claimed: str, why: str) -> None:
        refusal = Refusal(claimed, why, time.time())
        self.refused.append(refusal)
        if self.on_change is not None:
            self.on_change("refused", refusal)

    def snapshot(self) -> dict[str, Any]:
        """As JSON: ``{"bots": {name: {"state", "since"}}, "refused": [{"claimed", "why", "at"}]}``."""
        return {
            "bots": {name: {"state": p.state, "since": p.since} for name, p in sorted(self.bots.items())},
            "refused": [asdict(r) for r in self.refused],
        }

    def _set(self, name: str, state: str) -> None:
        self.bots[name] = BotPresence(state, time.time())
        if self.on_change is not None:
            self.on_change("bot", name)


FILENAME = "connections.json"
"""The presence as a tournament's or a ladder's output folder keeps it, for its board."""


def write_file(path: Path, snapshot: dict[str, Any]) -> None:
    """Write ``snapshot`` (:meth:`Presence.snapshot`) to ``path`` atomically (a board reads it
    from another process at any moment)."""
    with contextlib.suppress(OSError):  # (a full disk: the board shows the previous one; the games go on)
        write_text_atomic(path, json.dumps({**snapshot, "updated": time.time()}, sort_keys=True))


def read_file(path: Path) -> dict[str, Any] | None:
    """The presence written at ``path``, or None when there is none (or it cannot be read)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
