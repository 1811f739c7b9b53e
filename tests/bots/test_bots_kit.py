"""The Python bot kit in-process: the dispatcher, the card helpers, the heuristic's rules of thumb.

Requests are built from real engine states with ``server.protocol.wire``, as the referee builds them.
"""

from __future__ import annotations

import logging
import random

import pytest
from craits.v1 import referee_pb2 as pb
from craits_bot import Bot, Dispatcher, Request, action_id
from craits_bot.cards import hand_score
from craits_bot.examples.heuristic_bot import HeuristicBot
from craits_bot.examples.random_bot import RandomBot

from server.engine import Card, DecisionKind, GameState, craits_hand_score, new_game, observe
from server.protocol import wire
from tests.engine.situations import situation


def request_for(state: GameState, *, decision_id: int = 1) -> Request:
    """The Request the bot to act would get (whole history, as a first request of a hand)."""
    msg = wire.decision_request(
        state, state.to_act, game_id="g", decision_id=decision_id, deadline_ms=1000, bank_ms=10_000, strikes=0
    )
    return Request.from_message(msg)


def chosen_text(bot: Bot, state: GameState) -> str:
    request = request_for(state)
    return next(a.text for a in request.legal_actions if a.id == action_id(bot.choose(request), request))


# ---------------------------------------------------------------------------- dispatcher


class Recorder(Bot):
    """Plays at random and keeps every observation it was shown."""

    def __init__(self) -> None:
        self.rng = random.Random(1)
        self.seen: list[tuple[int, list[bytes]]] = []

    def choose(self, request: Request) -> pb.LegalAction:
        self.seen.append((request.decision_id, [e.SerializeToString() for e in request.observation.history]))
        return self.rng.choice(request.legal_actions)


def test_the_kit_rebuilds_each_hands_whole_history_from_the_referees_increments() -> None:
    """The referee sends only new events (from history_start); the bot sees them all."""
    state = new_game("craits", 3, seed=11, short_game=True)
    bot = Recorder()
    dispatcher = Dispatcher(bot)
    expected: dict[int, list[bytes]] = {}
    sent: dict[int, tuple[int, int]] = {}
    decision_id = 0
    increments = 0
    while (decision := state.decision) is not None:
        seat = decision.seat
        if seat != 0:
            state.apply(random.Random(decision_id).choice(state.legal_action_ids()))
            decision_id += 1
            continue
        decision_id += 1
        hand, already = sent.get(seat, (0, 0))
        start = already if hand == state.hand_number else 0
        increments += start > 0
        msg = wire.decision_request(state, seat, game_id="g", decision_id=decision_id, deadline_ms=1000,
                                    bank_ms=1000, strikes=0, history_from=start)
        sent[seat] = (state.hand_number, len(state.hand_events))
        expected[decision_id] = [e.SerializeToString() for e in wire.observation(observe(state, seat)).history]
        reply = dispatcher.handle(pb.RefereeMessage(decision=msg))
        assert reply is not None
        state.apply(reply.answer.action_id)
    assert increments > 10, "the test must exercise partial histories"
    assert bot.seen and all(history == expected[d] for d, history in bot.seen)


def test_a_repeated_request_shows_the_same_history_again() -> None:
    state = new_game("craits", 2, seed=3)
    dispatcher = Dispatcher(bot := Recorder())
    first = wire.decision_request(state, state.to_act, game_id="g", decision_id=1, deadline_ms=1, bank_ms=1, strikes=0)
    again = pb.DecisionRequest()
    again.CopyFrom(first)
    again.repeated_request = True
    dispatcher.handle(pb.RefereeMessage(decision=first))
    dispatcher.handle(pb.RefereeMessage(decision=again))
    assert bot.seen[0][1] == bot.seen[1][1] != []


class Broken(Bot):
    def __init__(self, returns: object = None, raises: Exception | None = None) -> None:
        self.returns, self.raises = returns, raises

    def choose(self, request: Request) -> object:  # type: ignore[override]
        if self.raises:
            raise self.raises
        return self.returns

    def on_game_start(self, game: pb.GameStart) -> None:
        raise RuntimeError("hook bug")


@pytest.mark.parametrize(
    ("bot", "logged"),
    [
        (Broken(raises=KeyError("boom")), "choose() failed at test_bots_kit.py"),
        (Broken(returns=99999), "choose() returned 99999, which is not a legal action id"),
        (Broken(returns="draw"), "choose() returned 'draw' (str)"),
        (Broken(returns=None), "choose() returned None"),
    ],
)
def test_a_broken_choose_is_answered_with_the_first_legal_action(
    bot: Broken, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    state = new_game("craits", 2, seed=3)
    msg = wire.decision_request(state, state.to_act, game_id="g", decision_id=7, deadline_ms=1, bank_ms=1, strikes=0)
    dispatcher = Dispatcher(bot)
    with caplog.at_level(logging.ERROR, logger="craits_bot"):
        reply = dispatcher.handle(pb.RefereeMessage(decision=msg))
    assert reply is not None
    assert (reply.answer.game_id, reply.answer.decision_id) == ("g", 7)
    assert reply.answer.action_id == msg.legal_actions[0].id
    assert dispatcher.fallbacks == 1
    assert logged in caplog.text and "answered the first legal action" in caplog.text
    # the game's decision number first (what `craits replay rerun --from N` takes), then the wire's id
    assert "(game g, decision 1 (id 7))" in caplog.text
    assert (dispatcher.decision_words("g", 7), dispatcher.decision_words("g", 6)) == ("decision 1 (id 7)",
                                                                                      "decision id 6")


def test_a_failing_hook_is_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="craits_bot"):
        Dispatcher(Broken()).handle(pb.RefereeMessage(game_start=pb.GameStart(game_id="g")))
    assert "on_game_start() failed" in caplog.text and "hook bug" in caplog.text


def test_choose_may_return_a_legal_action_or_its_id() -> None:
    request = request_for(new_game("craits", 2, seed=3))
    legal = request.legal_actions[-1]
    assert action_id(legal, request) == action_id(legal.id, request) == legal.id
    with pytest.raises(TypeError, match=r"return one of request\.legal_actions"):
        action_id(True, request)


def test_the_random_bot_answers_only_legal_actions() -> None:
    state = new_game("craits", 4, seed=9, short_game=True, face_cards=True)
    bot = RandomBot(seed=1)
    while state.decision is not None:
        request = request_for(state)
        state.apply(action_id(bot.choose(request), request))  # raises if illegal


# ---------------------------------------------------------------------------- cards


@pytest.mark.parametrize(
    ("cards", "score"),
    [
        ("AS 3C 3D 6H 7H 9S KD", 37),
        ("AS 2C 3C 3D 6H 8H KD", 67),
        ("3C 3D 8H", 53),
        ("3C", -50),
        ("3C 3D 3H", -150),
        ("3C 3D AS 8H", 54),
        ("8H", 50),
        ("", 0),
    ],
)
def test_hand_score_matches_the_rulings_worked_examples(cards: str, score: int) -> None:
    assert hand_score(wire.card(Card.parse(c)) for c in cards.split()) == score


def test_hand_score_agrees_with_the_engine_on_random_hands() -> None:
    rng = random.Random(5)
    for _ in range(500):
        codes = rng.sample(range(52), rng.randint(0, 9))
        assert hand_score(wire.card(Card.from_int(c)) for c in codes) == craits_hand_score(codes)


# ---------------------------------------------------------------------------- the heuristic's rules


def test_heuristic_always_announces_one_card_when_offered() -> None:
    state = situation(["5H KH", "4C 4D 4S"], "9H")
    assert chosen_text(HeuristicBot(), state) == "5H+one-card"


def test_heuristic_keeps_its_wild_cards_while_another_card_is_legal() -> None:
    state = situation(["8S 9H JH AC QD", "4C 4D 4S 5S"], "10H")
    assert chosen_text(HeuristicBot(), state) == "JH"


def test_heuristic_plays_a_wild_card_when_nothing_else_is_legal_naming_its_longest_suit() -> None:
    state = situation(["8S AC 5C KC QD", "4C 4D 4S 5S"], "10H")
    assert chosen_text(HeuristicBot(), state) == "8S:clubs"


def test_heuristic_sheds_a_wild_eight_when_another_player_is_about_to_go_out() -> None:
    state = situation(["8S JH AC QD", "4C"], "10H")
    assert chosen_text(HeuristicBot(), state).startswith("8S:")


def test_heuristic_sheds_the_dearest_card_first() -> None:
    state = situation(["5H JH AH", "4C 4D 4S 5S"], "10H")
    assert chosen_text(HeuristicBot(), state) == "5H"


def test_heuristic_answers_a_count_with_a_two_before_an_ace() -> None:
    state = situation(["AS 2C KD QD", "4C 4D 4S"], "2H", kind=DecisionKind.ANSWER_COUNT, count=2)
    assert chosen_text(HeuristicBot(), state) == "2C"


def test_heuristic_keeps_its_threes() -> None:
    state = situation(["3H JH KS", "4C 4D 4S 5S"], "10H")
    assert chosen_text(HeuristicBot(), state) == "JH"


def test_heuristic_plays_a_six_only_with_a_follow_up() -> None:
    alone = situation(["6H 10C KS", "4C 4D 4S 5S"], "10H")
    assert chosen_text(HeuristicBot(), alone) == "10C"
    followed = situation(["6H 10C KH", "4C 4D 4S 5S"], "10H")
    assert chosen_text(HeuristicBot(), followed) == "6H"


def test_heuristic_stops_a_next_player_who_is_about_to_go_out() -> None:
    state = situation(["4H JH KS QC", "5S", "7C 7D 7S", "9C 9D"], "10H")
    assert chosen_text(HeuristicBot(), state) == "4H"
