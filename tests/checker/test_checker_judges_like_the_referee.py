"""check-bot judges an answer exactly as the referee does (both call server.game.judge): for
every kind of answer that is not an offered id, the same state gets the same Error (code,
rule, words, strike) from the checker and from the real referee, or is taken as the same action.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

from craits.v1 import referee_pb2 as pb

from server.checker.driver import CheckOptions, _Checker, _Servicer, _Stream, _Table
from server.checker.report import Check, Status
from server.engine import ACTIONS, ActionKind, GameState
from server.engine.actions import is_announced_play
from server.spec import Clocks
from tests.referee.conftest import Client, builtin, remote, spec, with_arena

PATIENT = Clocks(decision_s=10.0, bank_s=10.0, max_strikes=3, reconnect_grace_s=10.0, connect_timeout_s=15.0)


def _no_action(request: pb.DecisionRequest) -> int:
    return 99_999


def _illegal(request: pb.DecisionRequest) -> int | None:
    """A plain play of a card not in hand (no 8 or 9: those always name a suit)."""
    offered = {a.id for a in request.legal_actions}
    hand = {c.text for c in request.observation.hand}
    for aid, action in enumerate(ACTIONS):
        if action is None or action.kind is not ActionKind.PLAY or aid in offered or action.announce:
            continue
        if action.suit is None and str(action.card) not in hand:
            return aid
    return None


def _unoffered_announcement(request: pb.DecisionRequest) -> int | None:
    """The announced form of an offered plain play that does not leave one card."""
    offered = {a.id for a in request.legal_actions}
    return next((a.id + 1 for a in request.legal_actions
                 if a.kind == pb.ACTION_KIND_PLAY_CARD and is_announced_play(a.id + 1) and a.id + 1 not in offered),
                None)


async def _referee_side(arena, pick: Callable[[pb.DecisionRequest], int | None]):
    """Play until ``pick`` finds an answer for a request; send it; return the state the request
    was made in, the request, the answer, and what the referee did (an Error, or None)."""
    me = remote("me")
    task = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=PATIENT, seed=11)))
    client = await Client(arena.target, me.token).open()
    while True:
        request = (await client.next("decision")).decision
        answer = pick(request)
        if answer is not None:
            break
        await client.answer(request, request.legal_actions[0].id)
    state = arena.games[request.game_id].state.clone()
    await client.answer(request, answer)
    reply = await client.next()
    error = reply.error if reply.HasField("error") else None
    if reply.HasField("decision"):
        await client.answer(reply.decision, reply.decision.legal_actions[0].id)
    await client.play_out()
    await client.close()
    record = await task
    return state, request, answer, error, record


async def _checker_side(state: GameState, request: pb.DecisionRequest, answer: int):
    """The checker's judgement of the same answer to the same request (then a good answer)."""
    checker = _Checker(CheckOptions(timeout_s=5.0), _Servicer(), None, "t")  # type: ignore[arg-type]
    checker.stream = _Stream()
    table = _Table(request.game_id, state, request.observation.seat, random.Random(1))
    for action in (answer, request.legal_actions[0].id):
        checker.stream.inbound.put_nowait(pb.BotMessage(answer=pb.Answer(
            game_id=request.game_id, decision_id=request.decision_id, action_id=action)))
    check = Check("x", "x", "x")
    answered = await checker._answer(table, check, request)
    sent = []
    while not checker.stream.outbound.empty():
        sent.append(checker.stream.outbound.get_nowait())
    errors = [m.error for m in sent if isinstance(m, pb.RefereeMessage) and m.HasField("error")]
    return answered, check, errors


def _both(pick: Callable[[pb.DecisionRequest], int | None]):
    async def body(arena):
        state, request, answer, error, record = await _referee_side(arena, pick)
        return (error, record, *await _checker_side(state, request, answer))

    return with_arena(body)


def _same_refusal(referee: pb.Error, checker: pb.Error) -> None:
    assert (checker.code, checker.rule, checker.message, checker.strikes) == (
        referee.code, referee.rule, referee.message, referee.strikes)


def test_an_id_that_names_no_action_is_malformed_a_strike_and_no_rule_in_both() -> None:
    referee, record, _, check, errors = _both(_no_action)
    assert referee is not None and referee.code == pb.ERROR_CODE_MALFORMED and referee.rule == ""
    assert record.seats[0].malformed == 1 and referee.strikes == 1
    _same_refusal(referee, errors[0])
    assert check.status is Status.FAIL and list(check._kinds) == ["malformed"]


def test_an_action_that_is_not_legal_now_is_illegal_a_strike_with_its_rule_in_both() -> None:
    referee, record, _, check, errors = _both(_illegal)
    assert referee is not None and referee.code == pb.ERROR_CODE_ILLEGAL_ACTION and referee.rule
    assert record.seats[0].illegal == 1 and referee.strikes == 1
    _same_refusal(referee, errors[0])
    assert check.status is Status.FAIL and list(check._kinds) == ["illegal"]


def test_an_unoffered_announcement_is_taken_as_the_plain_play_by_both() -> None:
    """Rule 7.1 ignores "one card" on a play that does not leave one card: the referee used to
    crash the game on it (it asked the engine to refuse an action the engine accepts)."""
    referee, record, answered, check, errors = _both(_unoffered_announcement)
    assert referee is None or referee.code != pb.ERROR_CODE_ILLEGAL_ACTION  # no refusal: the game went on
    assert not record.aborted and record.seats[0].strikes == 0
    assert any("was not offered: taken as" in event for event in record.seats[0].events)
    assert errors == [] and check.status is Status.WARN and answered.action is not None
    assert is_announced_play(answered.action + 1)
