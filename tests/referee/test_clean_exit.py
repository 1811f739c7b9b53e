"""A bot that leaves cleanly frees its seat at once; a crash or a drop is waited for (issue 30, point 8).

A student who stops their bot to restart it with better code closes its stream (the kits
half-close on SIGTERM and Ctrl-C): nobody is coming back to that game, so the default policy
takes the seat at once instead of the table waiting out the reconnect grace. A stream that
breaks without being closed (a crash, a kill, a network drop) may come back, and is waited
for as before. The presence the board shows tells the two apart."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import pytest
from craits import frames

from server.spec import Clocks, SeatStatus
from server.transport import presence
from tests.bots.commands import JS_RANDOM, PY_RANDOM, ROOT, needs

from .conftest import Client, builtin, remote, spec, with_arena

LONG_GRACE = Clocks(decision_s=10.0, bank_s=10.0, max_strikes=3, reconnect_grace_s=120.0, connect_timeout_s=30.0)
"""A grace far longer than the test may take: a seat freed within the test was not waited for."""


def test_a_stream_the_bot_closes_mid_game_frees_its_seat_at_once() -> None:
    me = remote("me")
    game = spec(me, builtin("random"), clocks=LONG_GRACE)

    async def body(arena):
        arena.presence.watch(["me"])
        task = asyncio.create_task(arena.run_game(game))
        client = await Client(arena.target, me.token).open()
        request = (await client.next("decision")).decision
        await client.answer(request, request.legal_actions[0].id)
        await client.next("decision")
        assert arena.presence.bots["me"].state == presence.CONNECTED
        await client.call.done_writing()  # what the kits do when stopped
        record = await task
        await client.close()
        return record, arena.presence.bots["me"]

    record, seen = with_arena(body, timeout=60)  # far less than the 120 s grace
    seat = record.seats[0]
    assert seat.status is SeatStatus.LEFT and not record.aborted
    assert seat.disconnects == 0 and seat.default_actions > 0
    assert any(e.startswith("left: the bot closed the stream (a clean exit)") for e in seat.events), seat.events
    assert any("gone (it closed its stream)" in e for e in seat.events), seat.events
    assert seen.state == presence.LEFT and seen.since is not None


def test_a_stream_that_breaks_is_waited_for_and_shown_as_lost() -> None:
    me = remote("me")
    game = spec(me, builtin("random"), clocks=Clocks(decision_s=10, bank_s=10, max_strikes=3,
                                                     reconnect_grace_s=0.5, connect_timeout_s=15))

    async def body(arena):
        arena.presence.watch(["me"])
        task = asyncio.create_task(arena.run_game(game))
        client = await Client(arena.target, me.token).open()
        await client.next("decision")
        await client.close()  # cancelled: a crash or a drop looks the same
        return await task, arena.presence.bots["me"]

    record, seen = with_arena(body)
    assert record.seats[0].status is SeatStatus.DISCONNECTED and record.seats[0].disconnects == 1
    assert seen.state == presence.LOST


@pytest.mark.parametrize(("kit", "framed"), [(PY_RANDOM, False), (PY_RANDOM, True), (JS_RANDOM, False), (JS_RANDOM, True)],
                         ids=["python-grpc", "python-frames", "js-grpc", "js-frames"])
def test_a_kit_bot_stopped_with_sigterm_mid_game_leaves_cleanly(kit: tuple[str, ...], framed: bool) -> None:
    """Each kit, a real process connecting on its own as a student's does (or through the
    frames socket, as a sandboxed one does: its END frame is the half-close)."""
    needs(kit)
    me = remote("student")

    async def body(arena):
        arena.presence.watch(["student"])
        game = spec(me, builtin("random"), clocks=LONG_GRACE, seed=11)
        task = asyncio.create_task(arena.run_game(game))
        proc = subprocess.Popen(
            kit, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "CRAITS_SERVER": arena.target, "CRAITS_TOKEN": me.token, "CRAITS_BOT_NAME": "student",
                 **({frames.ENV: arena.sandbox.frames} if framed else {})},
        )
        answered = asyncio.Event()
        read_answer = arena._answer

        def counted(session, answer, at):  # (a bot on frames may play a short game out between two polls)
            read_answer(session, answer, at)
            answers.append(answer.decision_id)
            if len(answers) == 3:
                answered.set()

        answers: list[int] = []
        arena._answer = counted
        try:
            await answered.wait()  # until the bot has answered a few decisions
            proc.send_signal(signal.SIGTERM)
            stopped = time.monotonic()
            record = await task
            freed_after = time.monotonic() - stopped
        finally:
            try:
                _, err = await asyncio.to_thread(proc.communicate, timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
        return record, freed_after, proc.returncode, err, arena.presence.bots["student"], arena.framed_streams

    record, freed_after, code, err, seen, framed_streams = with_arena(body, timeout=90)
    assert framed_streams == int(framed)
    seat = record.seats[0]
    assert code == 0, err
    assert seat.status is SeatStatus.LEFT and seat.disconnects == 0, (seat, err)
    assert freed_after < LONG_GRACE.reconnect_grace_s
    assert seen.state == presence.LEFT


@pytest.mark.parametrize("kit", [PY_RANDOM, JS_RANDOM], ids=["python", "js"])
def test_a_kit_bot_killed_mid_game_is_waited_for_not_taken_for_a_clean_exit(kit: tuple[str, ...]) -> None:
    """A killed process closes its socket: gRPC may end its requests a moment before it cancels
    the call, which read as a clean exit (a Node bot killed with SIGKILL got no reconnect grace)."""
    needs(kit)
    me = remote("student")
    clocks = Clocks(decision_s=10.0, bank_s=10.0, max_strikes=3, reconnect_grace_s=0.5, connect_timeout_s=30.0)

    async def body(arena):
        arena.presence.watch(["student"])
        task = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=clocks, seed=11)))
        proc = subprocess.Popen(
            kit, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "CRAITS_SERVER": arena.target, "CRAITS_TOKEN": me.token, "CRAITS_BOT_NAME": "student"},
        )
        answered = asyncio.Event()
        read_answer = arena._answer

        def counted(session, answer, at):
            read_answer(session, answer, at)
            answered.set()

        arena._answer = counted
        try:
            await answered.wait()
            proc.kill()
            record = await task
        finally:
            await asyncio.to_thread(proc.wait, 30)
        return record, arena.presence.bots["student"]

    record, seen = with_arena(body, timeout=90)
    seat = record.seats[0]
    assert seat.status is SeatStatus.DISCONNECTED and seat.disconnects == 1, seat
    assert not any(e.startswith("left: ") for e in seat.events), seat.events
    assert seen.state == presence.LOST
