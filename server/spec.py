"""The values that pass between the tournament scheduler and the referee.

A scheduler builds a :class:`GameSpec` per game and hands it to something that
plays it (the gRPC referee, or an in-process runner in tests) and returns a
:class:`GameRecord`. Both are plain values so they can be stored and compared.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path

from server.engine import GameConfig, GameResult


@dataclass(frozen=True, slots=True)
class Clocks:
    """Time limits, per tournament (issue 3 defaults)."""

    decision_s: float = 1.0
    """Per-decision limit."""
    bank_s: float = 10.0
    """Per-game time bank that absorbs overruns of the per-decision limit."""
    max_strikes: int = 3
    """Strikes after which the default policy plays the seat for the rest of the game."""
    reconnect_grace_s: float = 5.0
    """How long a disconnected bot may take to come back with its token."""
    connect_timeout_s: float = 10.0
    """How long a launched bot may take to connect and say hello."""


@dataclass(frozen=True, slots=True)
class BotSpec:
    """Who sits in a seat. Exactly one of ``command`` and ``builtin`` is usually set;
    neither means a remote bot that connects on its own with ``token``."""

    name: str
    token: str
    command: tuple[str, ...] | None = None
    builtin: str | None = None
    """An in-process policy ("random", "first", "default")."""
    cwd: str | None = None
    allow_read: tuple[str, ...] = ()
    """Paths a sandboxed command bot may read beside its folder (server.transport.sandbox)."""


class SeatStatus(enum.StrEnum):
    """How a seat's game went, from the referee's point of view."""

    OK = "ok"
    STRUCK_OUT = "struck_out"
    """Too many strikes: the default policy played the rest of the game."""
    DISCONNECTED = "disconnected"
    """Gone past the reconnect grace: the default policy played the rest."""
    NEVER_CONNECTED = "never_connected"
    LEFT = "left"
    """A bot that connects on its own closed its stream cleanly mid-game (its process stopped):
    the default policy played the rest at once, without waiting for the reconnect grace."""


@dataclass(frozen=True, slots=True)
class SeatReport:
    bot: str
    status: SeatStatus = SeatStatus.OK
    decisions: int = 0
    """Decisions the bot was asked (single-action decisions are applied without asking)."""
    timeouts: int = 0
    strikes: int = 0
    illegal: int = 0
    malformed: int = 0
    disconnects: int = 0
    default_actions: int = 0
    think_s: float = 0.0
    """Total bot thinking time as measured by the bot (reported in its answers)."""
    transport_s: float = 0.0
    """Total round-trip time not accounted for by thinking."""
    stale: int = 0
    """Answers refused because they named a decision that was not open (no strike)."""
    events: tuple[str, ...] = ()
    """Every fault of this seat in words, in order (timeouts, refusals, disconnects)."""
    bot_errors: int = 0
    """Answers on which the bot's own code failed and its kit answered in its place
    (Answer.bot_error): a crashing bot, told from a weak one. No strike."""
    bot_error: str = ""
    """The first of those failures' first line ("ZeroDivisionError: ... at my_bot.py:42")."""


@dataclass(frozen=True, slots=True)
class GameSpec:
    game_id: str
    config: GameConfig
    seed: int
    seats: tuple[BotSpec, ...]
    clocks: Clocks = field(default_factory=Clocks)
    replay_path: Path | None = None
    tournament: str = ""
    shared_deal: bool = False
    """Other games play this deal (duplicate deals): ``GameEnd.seed`` is 0, so no bot learns
    a deal it may still meet (docs/protocol.md)."""


@dataclass(frozen=True, slots=True)
class GameRecord:
    game_id: str
    result: GameResult
    seats: tuple[SeatReport, ...]
    replay_path: Path | None
    digest: str
    """The engine's event-log digest: equal games have equal digests."""
    aborted: str = ""
    """Non-empty if the game could not be played to the end (then it is not a result)."""
