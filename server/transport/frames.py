"""The Play stream as frames (``craits.frames``) on the sandbox's second Unix socket: what a
sandboxed bot whose kit speaks them uses instead of gRPC, for a third of the CPU per decision.

The same :class:`Session` and the same reading of the stream (``Arena.read_stream``: Hello,
answers, flood control) as the gRPC ``Play`` handler; only the bytes around the messages
differ. A frame that cannot be read (an unknown kind, over the size limit, cut off, not a
``BotMessage``) ends the stream with a fatal Error and INVALID_ARGUMENT (RESOURCE_EXHAUSTED
for an oversize one), as gRPC ends a broken call; a connection that ends without the bot's END
frame is a lost connection, and the game waits the reconnect grace, as for gRPC."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol

from craits import frames
from craits.v1 import referee_pb2 as pb
from google.protobuf.message import DecodeError

from server.game.seats import MAX_QUEUED, Session, StreamEnd, is_close, serialize
from server.logging import get_logger

log = get_logger()


class Arena(Protocol):
    """What of ``server.transport.service.Arena`` a frames stream uses (the service imports this)."""

    options: Any
    closing: bool
    sessions: set[Session]

    def new_bucket(self) -> Any: ...
    async def read_stream(self, session: Session, messages: AsyncIterator[pb.BotMessage]) -> None: ...
    def session_ended(self, session: Session, why: str) -> None: ...

PEER = "unix:frames"
UNREAD_LIMIT = 1024 * 1024
"""Bytes a bot may leave unread before it is cut off as not reading (gRPC's: 1,024 messages)."""
LOST = "the connection was lost"


class _Direct:
    """A frames session's outbox: what the game sends is written to the socket at once, with
    no writer task to wake per message (the referee's side of a decision is one write);
    closing it wakes :func:`serve` to send the END frame."""

    __slots__ = ("closed", "transport")

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self.transport = transport
        self.closed = asyncio.get_running_loop().create_future()

    def __len__(self) -> int:  # (Session.send cuts the bot off at MAX_QUEUED)
        return MAX_QUEUED if self.transport.get_write_buffer_size() > UNREAD_LIMIT else 0

    def clear(self) -> None:
        pass

    def put_nowait(self, item: Any) -> None:
        if self.closed.done():
            return
        if is_close(item):
            self.closed.set_result(None)
        elif not self.transport.is_closing():
            self.transport.write(frames.frame(serialize(item)))


async def serve(arena: Arena, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One bot's connection, from its Hello to the END frame that gives it the stream's status."""
    session = Session(PEER, arena.new_bucket())
    lost = False

    def refuse(status: StreamEnd, text: str) -> None:
        nonlocal lost
        lost = True  # (not a clean leave: its seats wait the grace, as after a broken gRPC call)
        log.info("stream_broken", peer=PEER, bot=session.name or None, error=text)
        session.send_error(pb.ERROR_CODE_MALFORMED, text, fatal=True)
        session.close(status, text)

    async def messages() -> AsyncIterator[pb.BotMessage]:
        nonlocal lost
        limit = arena.options.max_message_bytes
        while True:
            try:
                got = await frames.read_frame(reader, limit)
            except frames.FrameError as err:
                oversize = "over the limit" in str(err)
                refuse(StreamEnd.RESOURCE_EXHAUSTED if oversize else StreamEnd.INVALID_ARGUMENT, f"frame refused: {err}")
                return
            except OSError:
                got = None
            if got is None:  # no END frame: the bot's process or connection went away
                lost = True
                session.close(StreamEnd.UNAVAILABLE, LOST)
                return
            kind, payload = got
            if kind == frames.END:
                return  # the bot closed its side: read_stream takes it as a clean leave
            try:
                message = pb.BotMessage.FromString(payload)
            except DecodeError:
                refuse(StreamEnd.INVALID_ARGUMENT, f"frame refused: its {len(payload)} bytes are not a BotMessage")
                return
            yield message

    session.outbox = outbox = _Direct(writer.transport)  # type: ignore[assignment]
    if arena.closing:
        session.send_error(pb.ERROR_CODE_SHUTTING_DOWN, "the referee is shutting down", fatal=True)
        session.close(StreamEnd.UNAVAILABLE, "the referee is shutting down")
    arena.sessions.add(session)
    session.cancelled = lambda: lost
    reading = asyncio.create_task(arena.read_stream(session, messages()))
    released = False

    def release(why: str) -> None:
        nonlocal released
        if released:
            return
        released = True
        reading.cancel()
        arena.sessions.discard(session)
        arena.session_ended(session, why)

    def cut() -> None:
        log.warning("stream_cut_off", bot=session.name or None, peer=PEER, why=session.details)
        release(session.details)

    session.release = cut
    why = LOST
    try:
        await outbox.closed
        why = session.details or "the referee closed the stream"
        release(why)  # (before the END frame: a bot that reconnects at once finds its seats free)
        writer.write(frames.end_frame(session.status.name if session.status is not None else "OK", session.details))
        await asyncio.wait_for(writer.drain(), 5.0)
    except (OSError, TimeoutError):
        pass
    finally:
        release(why)
        writer.close()
