"""The Play stream as frames (``craits.frames``) on the sandbox's second Unix socket: what a
sandboxed bot whose kit speaks them uses instead of gRPC, for a third of the CPU per decision.

The same :class:`Session` and the same reading of each message (``Arena.hello``,
``Arena.read_message``: answers, flood control) as the gRPC ``Play`` handler; only the bytes
around the messages differ, and no task wakes per message: a frame is read in
``data_received`` and written as the game sends it. A frame that cannot be read (an unknown kind, over the size limit, cut off, not a
``BotMessage``) ends the stream with a fatal Error and INVALID_ARGUMENT (RESOURCE_EXHAUSTED
for an oversize one), as gRPC ends a broken call; a connection that ends without the bot's END
frame is a lost connection, and the game waits the reconnect grace, as for gRPC."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

from craits import frames
from craits.v1 import referee_pb2 as pb

from server.game.seats import LEFT_CLEANLY, MAX_QUEUED, Session, StreamEnd, is_close, serialize
from server.logging import get_logger

log = get_logger()

PEER = "unix:frames"
UNREAD_LIMIT = 1024 * 1024
"""Bytes a bot may leave unread before it is cut off as not reading (gRPC's: 1,024 messages)."""
LOST = "the connection was lost"


class Arena(Protocol):
    """What of ``server.transport.service.Arena`` a frames stream uses (the service imports this)."""

    options: Any
    closing: bool
    sessions: set[Session]
    framed_streams: int

    def new_bucket(self) -> Any: ...
    def no_hello(self, session: Session) -> None: ...
    def hello(self, session: Session, message: pb.BotMessage) -> bool: ...
    def read_message(self, session: Session, message: pb.BotMessage, at: float) -> bool: ...
    def session_ended(self, session: Session, why: str) -> None: ...


class _Direct:
    """A frames session's outbox: what the game sends is written to the socket at once, with
    no writer task to wake per message (the referee's side of a decision is one write);
    closing it calls back :meth:`Stream.closed` to send the END frame."""

    __slots__ = ("closed", "on_close", "transport")

    def __init__(self, transport: asyncio.WriteTransport, on_close: Any) -> None:
        self.transport = transport
        self.on_close = on_close
        self.closed = False

    def __len__(self) -> int:  # (Session.send cuts the bot off at MAX_QUEUED)
        return MAX_QUEUED if self.transport.get_write_buffer_size() > UNREAD_LIMIT else 0

    def clear(self) -> None:
        """Nothing to drop: a frame is written when it is sent, never queued here."""

    def put_nowait(self, item: Any) -> None:
        if self.closed:
            return
        if is_close(item):
            self.closed = True
            self.on_close()
        elif not self.transport.is_closing():
            self.transport.write(frames.frame(serialize(item)))


class Stream(asyncio.Protocol):
    """One bot's connection: frames are read as they arrive (``data_received`` hands each
    message to the arena, no reader task), and written as the game sends them."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self.session = Session(PEER, arena.new_bucket())
        self.transport: Any = None
        self.buffer = bytearray()
        self.welcomed = False
        self.done = False
        """Nothing more the bot sends is read (its END frame, a broken frame, a closed session)."""
        self.released = False
        self.hello_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        arena, session = self.arena, self.session
        self.transport = transport
        arena.framed_streams += 1
        session.outbox = _Direct(transport, self.closed)  # type: ignore[assignment]
        session.cancelled = lambda: not session.half_closed
        session.release = self.cut
        arena.sessions.add(session)
        if arena.closing:
            session.send_error(pb.ERROR_CODE_SHUTTING_DOWN, "the referee is shutting down", fatal=True)
            session.close(StreamEnd.UNAVAILABLE, "the referee is shutting down")
            return
        self.hello_timer = asyncio.get_running_loop().call_later(arena.options.hello_timeout_s, self.no_hello)

    def no_hello(self) -> None:
        if not self.welcomed and not self.session.closed:
            self.done = True
            self.arena.no_hello(self.session)

    def data_received(self, data: bytes) -> None:
        if self.done:
            return
        at = time.perf_counter()
        buffer = self.buffer
        buffer += data
        header, limit = frames.HEADER, self.arena.options.max_message_bytes
        start = 0
        while len(buffer) - start >= header.size and not self.done:
            kind, size = header.unpack_from(buffer, start)
            if kind not in frames.KINDS:
                return self.refuse(StreamEnd.INVALID_ARGUMENT, f"unknown frame kind {kind} (0 is a message, 1 the end of the stream)")
            if size > limit:
                return self.refuse(StreamEnd.RESOURCE_EXHAUSTED, f"a frame of {size} bytes is over the limit of {limit}")
            end = start + header.size + size
            if len(buffer) < end:
                break
            payload = bytes(buffer[start + header.size:end])
            start = end
            if kind == frames.END:
                self.left()
                break
            try:
                message = pb.BotMessage.FromString(payload)
            except Exception:  # (protobuf's DecodeError)
                return self.refuse(StreamEnd.INVALID_ARGUMENT, f"its {len(payload)} bytes are not a BotMessage")
            self.read(message, at)
        del buffer[:start]

    def read(self, message: pb.BotMessage, at: float) -> None:
        arena, session = self.arena, self.session
        if self.welcomed:
            self.done = not arena.read_message(session, message, at)
            return
        self.welcomed = True
        if self.hello_timer is not None:
            self.hello_timer.cancel()
        self.done = not arena.hello(session, message)

    def refuse(self, status: StreamEnd, why: str) -> None:
        """A frame that cannot be read: a fatal Error, then the END frame with ``status``."""
        text = f"frame refused: {why}"
        self.done = True
        log.info("stream_broken", peer=PEER, bot=self.session.name or None, error=text)
        self.session.send_error(pb.ERROR_CODE_MALFORMED, text, fatal=True)
        self.session.close(status, text)

    def left(self) -> None:
        """The bot's END frame: it closed its side itself (a clean exit)."""
        self.done = True
        self.session.half_closed = True
        self.session.close(None, LEFT_CLEANLY)

    def eof_received(self) -> bool:
        buffer, header = self.buffer, frames.HEADER
        if buffer and not self.done:
            if len(buffer) < header.size:
                why = f"the connection ended inside a frame's header ({len(buffer)} of {header.size} bytes)"
            else:
                why = f"the connection ended inside a frame ({len(buffer) - header.size} of {header.unpack_from(buffer)[1]} bytes)"
            self.refuse(StreamEnd.INVALID_ARGUMENT, why)
            return True  # (our side stays open for the Error and the END frame)
        return self.done  # no END frame: the bot's process or connection is gone (connection_lost follows)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.done = True
        if self.hello_timer is not None:
            self.hello_timer.cancel()
        self.session.close(StreamEnd.UNAVAILABLE, LOST)  # (no END frame came first: a crash or a drop)
        self.release(LOST)

    def closed(self) -> None:
        """The session is over: its seats are let go, then the END frame carries its status."""
        session = self.session
        self.release(session.details or "the referee closed the stream")
        if not self.transport.is_closing():
            self.transport.write(frames.end_frame(session.status.name if session.status is not None else "OK",
                                                  session.details))
            self.transport.close()  # (after what is buffered is written)

    def cut(self) -> None:
        log.warning("stream_cut_off", bot=self.session.name or None, peer=PEER, why=self.session.details)
        self.release(self.session.details)

    def release(self, why: str) -> None:
        if self.released:
            return
        self.released = True
        self.arena.sessions.discard(self.session)
        self.arena.session_ended(self.session, why)
