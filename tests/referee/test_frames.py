"""The Play stream as frames on the sandbox's frames socket (``craits.frames``): the same
game as over gRPC, and every broken frame ends the stream with a clear status while the game
goes on, as a broken gRPC stream does."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from craits import frames
from craits.v1 import referee_pb2 as pb

from server.spec import SeatStatus
from tests.referee.conftest import FAST, builtin, remote, spec, with_arena

NO_GRACE = dataclasses.replace(FAST, reconnect_grace_s=0.05)
"""A seat that lost its bot goes to the default policy at once (nobody reconnects here)."""


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes] | None:
    """The next frame as (kind, payload), or None when the connection ended between frames."""
    try:
        kind, size = frames.HEADER.unpack(await reader.readexactly(frames.HEADER.size))
    except asyncio.IncompleteReadError as err:
        assert not err.partial, "the referee's connection ended inside a frame's header"
        return None
    assert kind in frames.KINDS and size <= frames.MAX_FROM_REFEREE, (kind, size)
    return kind, await reader.readexactly(size)


class FramesClient:
    """A scripted bot speaking frames on the referee's frames socket."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.seen: list[pb.RefereeMessage] = []
        self.end: tuple[str, str] | None = None

    async def open(self, token: str) -> FramesClient:
        self.reader, self.writer = await asyncio.open_unix_connection(self.path)
        self.send(pb.BotMessage(hello=pb.Hello(token=token, protocol_version=1, name="framed")))
        return self

    def send(self, message: pb.BotMessage) -> None:
        self.writer.write(frames.frame(message.SerializeToString()))

    async def next(self, kind: str | None = None) -> pb.RefereeMessage | None:
        """The next message (of ``kind``), or None once the referee's END frame came."""
        while True:
            got = await asyncio.wait_for(read_frame(self.reader), 30)
            assert got is not None, "the referee closed the connection without an END frame"
            if got[0] == frames.END:
                self.end = frames.parse_end(got[1])
                return None
            message = pb.RefereeMessage.FromString(got[1])
            self.seen.append(message)
            if kind is None or message.WhichOneof("message") == kind:
                return message

    async def play_out(self) -> None:
        while (message := await self.next()) is not None:
            if message.HasField("decision"):
                request = message.decision
                self.send(pb.BotMessage(answer=pb.Answer(
                    game_id=request.game_id, decision_id=request.decision_id, action_id=request.legal_actions[0].id)))


def _frames_path(arena) -> str:  # type: ignore[no-untyped-def]
    assert arena.sandbox is not None and arena.sandbox.frames is not None
    return arena.sandbox.frames


async def _asked(arena):  # type: ignore[no-untyped-def]
    """A game against a builtin bot whose other seat is a frames client, once it is asked its first decision."""
    me = remote("me")
    task = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=NO_GRACE)))
    client = await FramesClient(_frames_path(arena)).open(me.token)
    await client.next("decision")
    return task, client


def test_a_game_played_in_frames_ends_with_OK_as_over_grpc() -> None:
    me = remote("me")
    game = spec(me, builtin("random"))

    async def body(arena):  # type: ignore[no-untyped-def]
        task = asyncio.create_task(arena.run_game(game))
        client = await FramesClient(_frames_path(arena)).open(me.token)
        await client.play_out()
        return await task, client

    record, client = with_arena(body)
    assert client.seen[0].HasField("welcome") and client.end == ("OK", "")
    assert any(m.HasField("game_end") for m in client.seen)
    seat = record.seats[0]
    assert (seat.status, seat.default_actions, seat.timeouts) == (SeatStatus.OK, 0, 0) and seat.decisions > 0


@pytest.mark.parametrize(
    ("bad", "status", "said"),
    [
        (frames.HEADER.pack(frames.MESSAGE, 10_000_000), "RESOURCE_EXHAUSTED", "10000000 bytes is over the limit"),
        (frames.HEADER.pack(7, 0), "INVALID_ARGUMENT", "unknown frame kind 7"),
        (frames.frame(b"\xff\xff\xff"), "INVALID_ARGUMENT", "3 bytes are not a BotMessage"),
        (frames.HEADER.pack(frames.MESSAGE, 100) + b"cut", "INVALID_ARGUMENT", "ended inside a frame (3 of 100 bytes)"),
    ],
    ids=["oversize", "unknown-kind", "not-a-message", "truncated"],
)
def test_a_broken_frame_ends_the_stream_with_a_fatal_error_and_the_game_goes_on(bad: bytes, status: str,
                                                                                 said: str) -> None:
    async def body(arena):  # type: ignore[no-untyped-def]
        task, client = await _asked(arena)
        client.writer.write(bad)
        client.writer.write_eof()  # (a truncated frame is one whose connection ends inside it)
        while await client.next() is not None:
            pass
        return await task, client

    record, client = with_arena(body)
    fatal = [m.error for m in client.seen if m.HasField("error") and m.error.fatal]
    assert [e.code for e in fatal] == [pb.ERROR_CODE_MALFORMED] and said in fatal[0].message
    assert client.end is not None and client.end[0] == status and said in client.end[1]
    assert not record.aborted and record.result.totals  # played to the end by the default policy
    assert record.seats[0].status is SeatStatus.DISCONNECTED


@pytest.mark.parametrize(("says_end", "status"), [(True, SeatStatus.LEFT), (False, SeatStatus.DISCONNECTED)],
                         ids=["end-frame", "connection-dropped"])
def test_an_END_frame_is_a_clean_leave_and_a_dropped_connection_a_lost_one(says_end: bool, status: SeatStatus) -> None:
    async def body(arena):  # type: ignore[no-untyped-def]
        task, client = await _asked(arena)
        if says_end:
            client.writer.write(frames.frame(b"", frames.END))
            while await client.next() is not None:
                pass
        else:  # as a crashed bot's connection ends: no END frame (the socket kept open: EOF alone says it)
            client.writer.write_eof()
        record = await task
        client.writer.close()
        return record, client

    record, client = with_arena(body)
    if says_end:
        assert client.end == ("OK", "the bot closed the stream (a clean exit)")
    assert not record.aborted and record.seats[0].status is status


def test_the_kit_speaks_frames_when_told_and_reads_a_refusal_as_over_grpc() -> None:
    """The Python kit takes the frames socket of CRAITS_FRAMED_SOCKET; a status in the END
    frame gives the same exit code as the same status of a gRPC call."""
    from craits_bot.examples.random_bot import RandomBot
    from craits_bot.runner import ExitCode, Runner

    async def body(arena):  # type: ignore[no-untyped-def]
        runner = Runner(RandomBot(), server=arena.target, token="not-a-token", reconnect_s=0,
                        framed_socket=_frames_path(arena))
        return await asyncio.to_thread(runner.play), arena.framed_streams

    code, framed = with_arena(body)
    assert (code, framed) == (ExitCode.REFUSED, 1)


def test_a_frames_connection_that_says_nothing_is_closed_after_the_hello_timeout() -> None:
    async def body(arena):  # type: ignore[no-untyped-def]
        client = FramesClient(_frames_path(arena))
        client.reader, client.writer = await asyncio.open_unix_connection(client.path)
        while await client.next() is not None:
            pass
        return client

    client = with_arena(body)  # (OPTIONS: a Hello timeout of 1 s)
    assert [(m.error.code, m.error.fatal) for m in client.seen] == [(pb.ERROR_CODE_MALFORMED, True)]
    assert client.end == ("DEADLINE_EXCEEDED", "no Hello within 1 s")
