"""Who sits in a seat: a bot on a gRPC stream, or an in-process policy.

A :class:`Session` is one Play stream: an outbox the stream's writer drains (so a
bot that stops reading never blocks a game) and a flood bucket. A :class:`Seat`
is one place at one table: the bot's token and name, its current session (None
while disconnected), the clock (time bank, strikes) and the counters that become
its :class:`~server.spec.SeatReport`. When a policy is set the seat is played
in-process (a built-in bot, or the default policy after a strike-out, a
disconnect or a bot that never connected).

Nothing here awaits anything but the seat's own mailbox; the game task
(:mod:`server.game.referee`) decides what every event means.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from craits.v1 import referee_pb2 as pb

from server.game.policies import Policy
from server.spec import BotSpec, SeatReport, SeatStatus

if TYPE_CHECKING:
    from server.transport.launcher import LaunchedBot

_session_ids = itertools.count(1)
_CLOSE = object()
"""Outbox sentinel: the writer ends the stream after everything before it is sent."""


class TokenBucket:
    """Flood control: every message costs one token; tokens come back at ``rate`` per
    second and ``per_request`` for every DecisionRequest the bot was sent, up to ``burst``."""

    __slots__ = ("burst", "per_request", "rate", "stamp", "tokens")

    def __init__(self, burst: float = 64.0, rate: float = 20.0, per_request: float = 4.0) -> None:
        self.burst = burst
        self.rate = rate
        self.per_request = per_request
        self.tokens = burst
        self.stamp = time.monotonic()

    def credit(self) -> None:
        self.tokens = min(self.burst, self.tokens + self.per_request)

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class Outbox:
    """What the stream's writer sends next, in order; the writer is its only reader.

    An asyncio.Queue does the same with more bookkeeping (unfinished-task counts, a
    list of getters); this sits on the path of every DecisionRequest."""

    __slots__ = ("_items", "_loop", "_waiter")

    def __init__(self) -> None:
        self._items: collections.deque[Any] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The writer's loop, kept: asking asyncio for it costs a system call (getpid) each time."""

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> Any:
        while not self._items:
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._items.popleft()


MAX_QUEUED = 1024
"""Messages waiting for a bot to read them before its stream is cut off. A bot that is
slow, or stuck in a long computation, has a handful queued (it is struck out and then sent
only hand starts and ends); only a bot that makes the referee answer it without reading
the answers gets near this."""


class StreamEnd(enum.Enum):
    """Why a bot's stream ends other than OK, named as the gRPC status the transport gives the
    call (the game loop knows no gRPC; ``server.transport.service`` maps these)."""

    ABORTED = "ABORTED"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    UNAVAILABLE = "UNAVAILABLE"


class Session:
    """One bot's Play stream, from its Hello to its end."""

    def __init__(self, peer: str, bucket: TokenBucket) -> None:
        self.id = next(_session_ids)
        self.peer = peer
        self.token = ""
        self.name = ""
        self.bucket = bucket
        self.outbox = Outbox()
        self.closed = False
        self.status: StreamEnd | None = None
        self.details = ""
        self.dropped = 0
        """Messages dropped by flood control."""
        self.flood_warned_at = -1e9
        self.half_closed = False
        self.cancelled: Callable[[], bool] | None = None
        """Set by the service: whether the call was cancelled (a crash or a drop, not a half-close)."""
        """The bot closed its side of the stream itself (a clean exit, not a crash or a drop)."""
        self.release: Callable[[], None] | None = None
        """Set by the service: stop reading the stream and let its seats go (for :meth:`cut_off`)."""

    def send(self, message: Outgoing) -> None:
        """Queue a message for the bot (never blocks; dropped once the session is closed).

        A bot that leaves :data:`MAX_QUEUED` messages unread is cut off (see :meth:`cut_off`)."""
        if self.closed:
            return
        if len(self.outbox) >= MAX_QUEUED:
            self.cut_off(f"{MAX_QUEUED} messages left unread: the bot is not reading its stream")
            return
        self.outbox.put_nowait(message)

    def cut_off(self, why: str) -> None:
        """Drop what is queued and end the session now: its seats are let go at once, and the
        call ends, as a lost connection does, with UNAVAILABLE after a non-fatal Error
        NOT_READING (the bot may reconnect: RESOURCE_EXHAUSTED is kept for what a bot must not
        do again, a flood or an oversize message) as soon as its writer is free (a writer
        blocked on a bot that reads nothing waits for the connection to go)."""
        if self.closed:
            return
        self.outbox.clear()
        self.outbox.put_nowait(pb.RefereeMessage(error=pb.Error(
            code=pb.ERROR_CODE_NOT_READING, message=f"{why}; reconnect with your token and keep reading")))
        self.close(StreamEnd.UNAVAILABLE, why)
        if self.release is not None:
            self.release()

    def send_error(
        self,
        code: int,
        message: str,
        *,
        game_id: str = "",
        decision_id: int = 0,
        rule: str = "",
        strikes: int = 0,
        fatal: bool = False,
    ) -> None:
        self.send(error_message(code, message, rule=rule, game_id=game_id, decision_id=decision_id,
                                strikes=strikes, fatal=fatal))

    def close(self, status: StreamEnd | None = None, details: str = "") -> None:
        """End the stream after the queued messages (status None: OK)."""
        if self.closed:
            return
        self.status = status
        self.details = details
        self.outbox.put_nowait(_CLOSE)
        self.closed = True

    def __repr__(self) -> str:
        return f"Session({self.id} {self.name or '?'} {self.peer})"


def error_message(
    code: int, message: str, *, game_id: str = "", decision_id: int = 0, rule: str = "", strikes: int = 0,
    fatal: bool = False,
) -> pb.RefereeMessage:
    """The Error a session sends (also rebuilt by :mod:`server.game.transcript`)."""
    return pb.RefereeMessage(error=pb.Error(
        code=code, message=message, rule=rule, game_id=game_id, decision_id=decision_id, fatal=fatal, strikes=strikes))


LEFT_CLEANLY = "the bot closed the stream (a clean exit)"
"""Why a stream ended whose bot closed its side itself."""


def is_close(item: object) -> bool:
    return item is _CLOSE


# --------------------------------------------------------------------------- framing

Outgoing: TypeAlias = "pb.RefereeMessage | bytes"
"""What a session sends: a message, or one already serialised (see :func:`framed`)."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


_FIELD_TAGS = {
    name: _varint(field.number << 3 | 2) for name, field in pb.RefereeMessage.DESCRIPTOR.fields_by_name.items()
}


def framed(field: str, message: Any) -> bytes:
    """``RefereeMessage(<field>=message)`` serialised, without copying ``message`` into a
    wrapper first (the hot path: one DecisionRequest per decision; and a broadcast is
    serialised once for every seat). Protobuf's wire format makes the two identical.
    ``message`` may be already serialised (bytes from :class:`server.protocol.wire.GameEncoder`)."""
    body: bytes = message if isinstance(message, bytes) else message.SerializeToString()
    return _FIELD_TAGS[field] + _varint(len(body)) + body


def serialize(message: Outgoing) -> bytes:
    """The Play stream's response serializer: passes pre-framed bytes through."""
    if isinstance(message, bytes):
        return message
    data: bytes = message.SerializeToString()
    return data


# --------------------------------------------------------------------------- mailbox


@dataclass(slots=True)
class Arrival:
    """An answer as the stream reader received it, stamped on arrival."""

    answer: pb.Answer
    at: float


class Wake(str):
    """Something that changed for the seat while the game waits on it."""


CONNECTED = Wake("connected")
DISCONNECTED = Wake("disconnected")
EXITED = Wake("exited")
ABORT = Wake("abort")


class Mailbox:
    """What the game task awaits for a seat: answers and wake-ups, in arrival order.

    Its clock is one timer that is moved only when a wait must end sooner than the timer
    would fire. A decision's deadline is almost always later than the last one's, so the
    timer rarely moves: when it fires early it re-arms itself for the current deadline.
    That saves scheduling and cancelling a timer on every decision (the hot path)."""

    __slots__ = ("_deadline", "_items", "_loop", "_timer", "_waiter")

    def __init__(self) -> None:
        self._items: collections.deque[Arrival | Wake] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        """The game's loop, kept (see :class:`Outbox`)."""

    def put(self, item: Arrival | Wake) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def drain(self) -> list[Arrival | Wake]:
        """Take everything queued."""
        items = list(self._items)
        self._items.clear()
        return items

    async def get(self, timeout: float) -> Arrival | Wake | None:
        """The next item, or None when ``timeout`` seconds pass first."""
        if self._items:
            return self._items.popleft()
        if timeout <= 0:
            return None
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        deadline = self._deadline = loop.time() + timeout
        if self._timer is None or self._timer.when() > deadline:
            self._arm(loop, deadline)
        waiter = self._waiter = loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None
        return self._items.popleft() if self._items else None

    def close(self) -> None:
        """Cancel the timer (the seat will wait no more)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self._expire, loop)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if loop.time() >= self._deadline:
            waiter.set_result(None)
        else:  # armed for an earlier wait: this one ends later
            self._arm(loop, self._deadline)


# --------------------------------------------------------------------------- seats


MAX_EVENTS = 100
"""Events kept in a seat's report (the log keeps every one)."""


class Seat:
    """One seat of one game, with its bot, its clock and its report."""

    def __init__(self, index: int, bot: BotSpec, *, bank_s: float, policy: Policy | None = None) -> None:
        self.index = index
        self.bot = bot
        self.name = bot.name
        self.token = bot.token
        self.builtin = policy is not None
        self.policy = policy
        """Set when the seat is played in-process (built-in bot or default policy)."""
        self.status = SeatStatus.OK
        self.session: Session | None = None
        self.process: LaunchedBot | None = None
        self.instances: list[str] = []
        """The public ids of the processes the referee launched for this seat (one, or more
        if one was replaced): the replay records them, to show no process met a deal twice."""
        self.connected_once = False
        self.refused = ""
        """Why a Hello with this seat's token was refused (before it ever connected)."""
        self.refused_nearby = ""
        """A stream refused before naming a token while this seat waited for its bot."""
        self.disconnected_at: float | None = None
        self.process_exited = False
        self.left_cleanly = False
        """A bot that connects on its own closed its stream itself mid-game: nobody is coming
        back soon, so the default policy takes the seat at once (no reconnect grace)."""
        self.bank_s = bank_s
        self.strikes = 0
        self.mailbox = Mailbox()
        self.open_decision: int = 0
        """The id of this seat's open DecisionRequest, 0 when none is open."""
        self.asked: dict[int, int] = {}
        """Every decision id this seat was sent, with the game's number for it (to tell a stale
        answer from one out of turn, and to name both in the refusal: a bot logs the id, the
        replay and ``rerun --from`` count numbers)."""
        self.history_hand = 0
        self.history_sent = 0
        """How many of hand ``history_hand``'s events this seat's bot has been sent."""
        self.game: Any = None
        """The game (server.game.referee.GameReferee) this seat belongs to."""
        # Counters for the SeatReport.
        self.decisions = 0
        self.timeouts = 0
        self.illegal = 0
        self.malformed = 0
        self.stale = 0
        self.disconnects = 0
        self.default_actions = 0
        self.bot_errors = 0
        self.bot_error = ""
        """The first bot error's text (the report's ``bot_error``)."""
        self.think_s = 0.0
        self.transport_s = 0.0
        self.events: list[str] = []
        """Faults and refusals, in words, in order (also logged); the first MAX_EVENTS."""
        self.events_not_kept = 0

    @property
    def remote(self) -> bool:
        return not self.builtin

    @property
    def live(self) -> bool:
        """True while the bot itself (not a stand-in policy) plays the seat."""
        return self.policy is None

    def note(self, what: str) -> None:
        """Keep a fault or refusal for the seat's report (past MAX_EVENTS only counted: a
        bot reconnecting in a loop must not make its report and replay grow without end)."""
        if len(self.events) < MAX_EVENTS:
            self.events.append(what)
        else:
            self.events_not_kept += 1

    def history_from(self, hand_number: int) -> int:
        return self.history_sent if self.history_hand == hand_number else 0

    def report(self) -> SeatReport:
        return SeatReport(
            bot=self.name,
            status=self.status,
            decisions=self.decisions,
            timeouts=self.timeouts,
            strikes=self.strikes,
            illegal=self.illegal,
            malformed=self.malformed,
            disconnects=self.disconnects,
            default_actions=self.default_actions,
            think_s=self.think_s,
            transport_s=self.transport_s,
            stale=self.stale,
            bot_errors=self.bot_errors,
            bot_error=self.bot_error,
            events=tuple(self.events)
            + ((f"... and {self.events_not_kept} more, not kept here (the log has them all)",)
               if self.events_not_kept else ()),
        )

    def __repr__(self) -> str:
        return f"Seat({self.index} {self.name} {self.status})"
