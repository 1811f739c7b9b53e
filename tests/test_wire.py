"""The wire layer: engine values to protobuf, and nothing hidden on the way."""

from __future__ import annotations

from craits.v1 import referee_pb2 as pb

from server import wire
from server.engine import new_game

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
