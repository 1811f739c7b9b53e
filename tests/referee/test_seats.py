"""What the game task and the streams share: a seat's mailbox (with its one lazily moved timer) and a stream's session."""

from __future__ import annotations

import asyncio

from craits.v1 import referee_pb2 as pb

from server.game.seats import CONNECTED, Mailbox


def run(coro):
    return asyncio.run(coro)


def test_a_queued_item_comes_back_at_once_in_arrival_order() -> None:
    async def body():
        box = Mailbox()
        box.put(CONNECTED)
        box.put("second")
        return [await box.get(0), await box.get(0), await box.get(0)]

    assert run(body()) == [CONNECTED, "second", None]


def test_a_wait_with_nothing_arriving_ends_with_none_after_its_timeout() -> None:
    async def body():
        loop = asyncio.get_running_loop()
        start = loop.time()
        got = await Mailbox().get(0.05)
        return got, loop.time() - start

    got, waited = run(body())
    assert got is None
    assert waited >= 0.05


def test_an_item_put_while_waiting_wakes_the_waiter() -> None:
    async def body():
        box = Mailbox()
        asyncio.get_running_loop().call_later(0.01, box.put, CONNECTED)
        return await box.get(5.0)

    assert run(body()) is CONNECTED


def test_a_later_deadline_keeps_the_timer_and_the_early_firing_waits_on() -> None:
    """The second wait ends later than the first wait's timer: the timer is not moved when
    the wait starts, and when it fires early it re-arms for the second deadline."""

    async def body():
        loop = asyncio.get_running_loop()
        box = Mailbox()
        box.put(CONNECTED)
        loop.call_soon(box.put, "first")
        assert await box.get(0.05) is CONNECTED
        assert await box.get(0.05) == "first"  # the timer for +0.05 s is now armed
        armed_for = box._timer.when()
        start = loop.time()
        got = await box.get(0.15)
        return got, loop.time() - start, armed_for, start

    got, waited, armed_for, start = run(body())
    assert got is None
    assert armed_for < start + 0.15  # the first timer fired before this wait's end...
    assert waited >= 0.15  # ...and the wait still lasted its whole timeout


def test_a_sooner_deadline_moves_the_timer_forward() -> None:
    async def body():
        loop = asyncio.get_running_loop()
        box = Mailbox()
        loop.call_soon(box.put, "answer")
        assert await box.get(30.0) == "answer"  # leaves a timer 30 s away
        start = loop.time()
        got = await asyncio.wait_for(box.get(0.05), 5)
        return got, loop.time() - start

    got, waited = run(body())
    assert got is None
    assert 0.05 <= waited < 5


def test_close_cancels_the_pending_timer() -> None:
    async def body():
        box = Mailbox()
        asyncio.get_running_loop().call_soon(box.put, "answer")
        await box.get(30.0)
        timer = box._timer
        box.close()
        return timer

    timer = run(body())
    assert timer is not None and timer.cancelled()


# --------------------------------------------------------------------------- a stream's session


def test_a_bot_that_leaves_too_many_messages_unread_is_cut_off_at_once() -> None:
    """Its queue is dropped for an Error NOT_READING and a closing marker (UNAVAILABLE: it may
    reconnect), and its seats are let go now: its writer may be stuck on a bot that reads nothing."""


    from server.game.seats import MAX_QUEUED, Session, StreamEnd, TokenBucket, is_close

    session = Session("peer", TokenBucket())
    released = []
    session.release = lambda: released.append(session.details)
    for _ in range(MAX_QUEUED):
        session.send(b"request")
    queued_at_limit = len(session.outbox)
    session.send(b"one too many")
    session.send(b"and another")

    assert queued_at_limit == MAX_QUEUED
    assert session.closed and session.status is StreamEnd.UNAVAILABLE
    assert released == [f"{MAX_QUEUED} messages left unread: the bot is not reading its stream"]
    assert len(session.outbox) == 2
    error = run(session.outbox.get()).error
    assert (error.code, error.fatal) == (pb.ERROR_CODE_NOT_READING, False)
    assert is_close(run(session.outbox.get()))


def test_nothing_a_closed_stream_sends_counts_for_its_seat() -> None:
    """A stream taken over by a newer one with the same token (or cut off) may still be
    delivering messages; the reader stops at the first one."""
    from craits.v1 import referee_pb2 as pb

    from server.game.seats import Session
    from server.transport.service import Arena

    async def body():
        arena = Arena()
        arena.register_token("a-token-of-ours", "bot")
        session = Session("peer", arena.new_bucket())
        answered = []
        arena._answer = lambda *args: answered.append(args)  # type: ignore[method-assign]

        async def messages():
            yield pb.BotMessage(hello=pb.Hello(token="a-token-of-ours", protocol_version=1, name="bot"))
            yield pb.BotMessage(answer=pb.Answer(game_id="g", decision_id=1, action_id=0))
            session.close()  # as a takeover by another stream does
            yield pb.BotMessage(answer=pb.Answer(game_id="g", decision_id=2, action_id=0))

        await arena.read_stream(session, messages())
        return [args[1].decision_id for args in answered]

    assert run(body()) == [1]


def test_a_seat_keeps_its_first_hundred_events_and_counts_the_rest() -> None:
    from server.game.seats import MAX_EVENTS, Seat
    from server.spec import BotSpec

    seat = Seat(0, BotSpec("bot", "token"), bank_s=10.0)
    for i in range(MAX_EVENTS + 321):
        seat.note(f"a new stream replaced the open one ({i})")
    events = seat.report().events
    assert len(events) == MAX_EVENTS + 1
    assert events[MAX_EVENTS - 1].endswith(f"({MAX_EVENTS - 1})")
    assert events[-1] == "... and 321 more, not kept here (the log has them all)"


def test_a_bot_s_own_text_is_echoed_short_in_a_refusal() -> None:
    """An answer naming a 60 KB game id gets an error of ordinary size (the bot cannot make
    the referee queue or log its text over and over)."""
    from craits.v1 import referee_pb2 as pb

    from server.game.seats import Session
    from server.transport.service import Arena

    async def body():
        arena = Arena()
        arena.register_token("a-token-of-ours", "bot")
        session = Session("peer", arena.new_bucket())
        session.token = "a-token-of-ours"
        arena._answer(session, pb.Answer(game_id="X" * 60_000, decision_id=5, action_id=0), 0.0)
        return await session.outbox.get()

    error = run(body()).error
    assert error.code == pb.ERROR_CODE_STALE_DECISION and error.decision_id == 5
    assert error.game_id == "X" * 64 + "..." and len(error.message) < 200
