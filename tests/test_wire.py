"""The wire layer: engine values to protobuf, and nothing hidden on the way."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from craits.v1 import referee_pb2 as pb
from hypothesis import HealthCheck, given, settings

from server.engine import DecisionKind, new_game
from server.game.seats import framed
from server.protocol import wire
from tests.strategies import configs, seeds

INT64_MAX = (1 << 63) - 1


def _play_first_actions(game) -> None:  # type: ignore[no-untyped-def]
    while game.decision is not None:
        game.apply(game.legal_action_ids()[0])


def test_scores_past_int64_are_sent_as_int64_max_and_kept_exact_in_the_engine() -> None:
    """Doubling pressures can pass 2**63 in a freak game; the wire saturates instead of failing."""
    game = new_game("craits", 2, 0)  # both seats always take the first legal action: endless reshuffles
    _play_first_actions(game)
    exact = game.result().totals
    assert max(exact) > INT64_MAX, "this seed no longer makes a freak game; pick another"
    end = wire.game_end(game, "g")
    assert list(end.totals) == [min(t, INT64_MAX) for t in exact]
    last_hand = game.hand_results[-1]
    hand_end = wire.hand_end(game, last_hand, 0, "g")
    assert all(0 <= v <= INT64_MAX for v in hand_end.totals)


def test_a_decision_request_carries_only_the_seats_own_cards() -> None:
    game = new_game("craits", 4, 11)
    seat = game.decision.seat
    request = wire.decision_request(game, seat, game_id="g", decision_id=1, deadline_ms=1000, bank_ms=10000, strikes=0)
    own = sorted(c.text for c in request.observation.hand)
    assert own == sorted(str(c) for c in game.hand_of(seat))
    for event in request.observation.history:
        if event.kind in (pb.EVENT_KIND_DEAL, pb.EVENT_KIND_DRAW) and event.seat != seat:
            assert not event.cards and event.count > 0
    assert [a.id for a in request.legal_actions] == game.legal_action_ids()


def test_history_from_sends_only_the_events_after_the_previous_request() -> None:
    game = new_game("craits", 3, 5)
    seat = game.decision.seat
    full = wire.decision_request(game, seat, game_id="g", decision_id=1, deadline_ms=1, bank_ms=1, strikes=0)
    tail = wire.decision_request(
        game, seat, game_id="g", decision_id=2, deadline_ms=1, bank_ms=1, strikes=0, history_from=3
    )
    assert tail.observation.history_start == 3
    assert list(tail.observation.history) == list(full.observation.history)[3:]


# --------------------------------------------------------------------------- the referee's fast path


def _reference_request(game, seat: int, **fields) -> bytes:  # type: ignore[no-untyped-def]
    """What the fast path must send: the request built through ``observe()``."""
    return wire.decision_request(game, seat, game_id="game-7", **fields).SerializeToString()


COMPARED_PER_GAME = 300
"""Decisions compared per game, at random: the reference path rebuilds the hand's history on
every call, so comparing every decision of a long hand costs time quadratic in its length."""


def _check_game_against_observe(game, rng: random.Random) -> Counter[str]:  # type: ignore[no-untyped-def]
    """Play ``game`` at random and compare the encoder's bytes with the reference's: at sampled
    decisions (and always at a blind dealer's decision and a hand's first one) for the seat to
    act (history as the referee sends it) and for another seat (any history start); at every
    hand end, for every seat. The encoder sees the whole game either way: it serialises each
    logged event once, on the first request after it. Returns what was covered."""
    encoder = wire.GameEncoder(game, "game-7")
    sent: dict[int, tuple[int, int]] = {}
    covered: Counter[str] = Counter()
    hands_done = 0
    expected = max(1, game.n * 60 * len(game.config.hand_sizes))
    chance = min(1.0, COMPARED_PER_GAME / expected)
    budget = COMPARED_PER_GAME
    while (decision := game.decision) is not None:
        events = len(game.hand_events)
        hand, count = sent.get(decision.seat, (0, 0))
        first_of_hand = hand != game.hand_number
        if first_of_hand or decision.kind is DecisionKind.NAME_SUIT or (budget > 0 and rng.random() < chance):
            budget -= 1
            asks = [(decision.seat, 0 if first_of_hand else count),
                    (rng.randrange(game.n), rng.choice([0, rng.randrange(events + 2), events]))]
            for seat, history_from in asks:
                fields = {"decision_id": rng.choice([1, 300, 2**40]), "deadline_ms": rng.choice([0, 999, 5000]),
                          "bank_ms": rng.choice([0, 30_000]), "strikes": rng.choice([0, 2]),
                          "repeated": rng.random() < 0.3, "history_from": history_from}
                assert encoder.decision_request(seat, **fields) == _reference_request(game, seat, **fields), (
                    f"seat {seat} at decision {game.decisions} ({decision.kind.name}), {fields}"
                )
            covered[decision.kind.name] += 1
            sent[decision.seat] = (game.hand_number, events)
        legal = game.legal_action_ids()
        game.apply(legal[rng.randrange(len(legal))])
        for result in game.hand_results[hands_done:]:
            for seat in range(game.n):
                assert encoder.hand_end(result, seat) == wire.hand_end(game, result, seat, "game-7").SerializeToString()
            covered["hand_end"] += 1
        hands_done = len(game.hand_results)
    return covered


@pytest.mark.parametrize(
    ("preset", "players", "flags", "seed"),
    [
        ("craits", 4, {"short_game": True}, 1),
        ("craits", 3, {"face_cards": True, "voluntary_draw": True}, 2),
        ("craits", 6, {"decks": 2, "seven_hits": "next", "short_game": True}, 3),
        ("crates-partners", 4, {"short_game": True}, 4),
        ("crazy-eights", 2, {}, 5),
    ],
)
def test_the_referees_encoder_sends_byte_for_byte_what_observe_allows(preset, players, flags, seed) -> None:  # type: ignore[no-untyped-def]
    """GameEncoder (cached events, no Observation in between) against the reference path, at every
    decision and hand end, for the seat to act and for others, blind NAME_SUIT decisions included."""
    covered = _check_game_against_observe(new_game(preset, players, seed, **flags), random.Random(seed))
    assert covered["hand_end"] > 0


@pytest.mark.parametrize(("preset", "players", "flags", "seed"),
                         [("craits", 4, {"short_game": True}, 11), ("crazy-eights", 3, {}, 12)])
def test_every_request_of_a_whole_game_is_the_reference_bytes_as_the_referee_sends_them(
    preset, players, flags, seed
) -> None:  # type: ignore[no-untyped-def]
    """The encoder keeps a seat's slow-changing fields serialised (its clocks, the scores, the
    hand's number): at every decision of whole games, with the clocks moving as the referee's do
    (a bank drawn down, a strike, a repeated request from the hand's start), each request is
    still byte for byte the reference's."""
    game = new_game(preset, players, seed, **flags)
    rng = random.Random(seed)
    encoder = wire.GameEncoder(game, "game-7")
    sent: dict[int, tuple[int, int]] = {}
    banks = [30_000] * game.n
    strikes = [0] * game.n
    compared = 0
    while (decision := game.decision) is not None:
        seat = decision.seat
        hand, count = sent.get(seat, (0, 0))
        history_from = count if hand == game.hand_number else 0
        if rng.random() < 0.1:
            banks[seat] = max(0, banks[seat] - rng.randrange(2000))
        if rng.random() < 0.02:
            strikes[seat] += 1
        repeated = rng.random() < 0.05
        fields = {"decision_id": compared + 1, "deadline_ms": 1000, "bank_ms": banks[seat], "strikes": strikes[seat],
                  "repeated": repeated, "history_from": 0 if repeated else history_from}
        assert encoder.decision_request(seat, **fields) == _reference_request(game, seat, **fields), (
            f"seat {seat} at decision {game.decisions}, {fields}"
        )
        compared += 1
        sent[seat] = (game.hand_number, len(game.hand_events))
        legal = game.legal_action_ids()
        game.apply(legal[rng.randrange(len(legal))])
    assert compared > 100 and len(game.hand_results) > 1


def test_the_comparison_covers_the_blind_dealers_decisions() -> None:
    """The dealer who names the suit of a turned-up 8 or 9 sees no cards at all: the games
    compared must include such decisions, or the equality above proves nothing about them."""
    blind = 0
    for seed in range(6):
        blind += _check_game_against_observe(new_game("craits", 4, seed, short_game=True), random.Random(seed))[
            "NAME_SUIT"
        ]
    assert blind > 0


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs(), seed=seeds)
def test_the_encoder_matches_observe_for_any_configuration(config, seed) -> None:  # type: ignore[no-untyped-def]
    preset, players, flags = config
    _check_game_against_observe(new_game(preset, players, seed, **flags), random.Random(seed))


def test_the_blind_dealer_gets_no_cards_from_the_encoder_not_even_their_own_deal() -> None:
    """RULINGS rule 2: the suit of a turned-up 8 or 9 is named before the dealer sees the hand."""
    for seed in range(200):
        game = new_game("craits", 4, seed)
        if game.decision.kind is DecisionKind.NAME_SUIT:
            break
    else:
        pytest.fail("no seed below 200 starts with a NAME_SUIT decision")
    dealer = game.decision.seat
    encoder = wire.GameEncoder(game, "g")
    request = pb.DecisionRequest.FromString(
        encoder.decision_request(dealer, decision_id=1, deadline_ms=1, bank_ms=1, strikes=0)
    )
    observation = request.observation
    assert observation.hand_hidden and not observation.hand
    assert any(e.kind == pb.EVENT_KIND_DEAL and e.seat == dealer for e in observation.history)
    assert all(not e.cards for e in observation.history if e.kind == pb.EVENT_KIND_DEAL)
    # Once the suit is named, the same encoder shows the dealer their own deal.
    game.apply(game.legal_action_ids()[0])
    later = pb.DecisionRequest.FromString(encoder.decision_request(dealer, decision_id=2, deadline_ms=1, bank_ms=1,
                                                                   strikes=0))
    own_deal = [e for e in later.observation.history if e.kind == pb.EVENT_KIND_DEAL and e.seat == dealer]
    assert own_deal and own_deal[0].cards


def test_the_encoder_saturates_scores_past_int64_like_the_reference() -> None:
    game = new_game("craits", 2, 0)  # the freak game of the first test
    encoder = wire.GameEncoder(game, "g")
    checked = 0
    while game.decision is not None:
        if max(game.totals) > INT64_MAX and checked < 20:
            seat = game.decision.seat
            assert encoder.decision_request(seat, decision_id=9, deadline_ms=1, bank_ms=1, strikes=0) == (
                wire.decision_request(game, seat, game_id="g", decision_id=9, deadline_ms=1, bank_ms=1,
                                      strikes=0).SerializeToString()
            )
            checked += 1
        game.apply(game.legal_action_ids()[0])
    assert checked > 0
    last = game.hand_results[-1]
    assert encoder.hand_end(last, 1) == wire.hand_end(game, last, 1, "g").SerializeToString()


def test_framed_bytes_read_back_as_the_referee_message() -> None:
    game = new_game("craits", 4, 11)
    body = wire.GameEncoder(game, "g").decision_request(game.decision.seat, decision_id=5, deadline_ms=100,
                                                        bank_ms=200, strikes=1)
    message = pb.RefereeMessage.FromString(framed("decision", body))
    assert message.WhichOneof("message") == "decision"
    assert message.decision.SerializeToString() == body
