"""A seat's mailbox: what the game task waits on, and its one lazily moved timer."""

from __future__ import annotations

import asyncio

from server.seats import CONNECTED, Mailbox


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
        armed_for = box._timer_at
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
