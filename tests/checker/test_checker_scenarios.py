"""The scenarios put the bot where they say, with a consistent deal (pure: no processes)."""

from __future__ import annotations

from collections import Counter

import pytest

from server.checker.scenarios import SCENARIOS, Mode, dealt
from server.engine import DecisionKind


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.key)
def test_each_scenario_starts_at_its_decision_with_a_real_choice_for_the_bot(scenario) -> None:  # type: ignore[no-untyped-def]
    game = scenario.build()
    assert game.decision is not None
    if scenario.kind is None:  # a whole game: it plays to its end from a seed
        assert scenario.whole_game
        return
    assert game.decision.seat == scenario.seat
    assert game.decision.kind is scenario.kind
    assert len(game.legal_action_ids()) > 1, "a single-action decision is never asked"


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if not s.whole_game], ids=lambda s: s.key)
def test_a_dealt_scenario_holds_exactly_one_deck_and_a_history_like_a_real_deal(scenario) -> None:  # type: ignore[no-untyped-def]
    game = scenario.build()
    held = Counter(c for hand in game.hands for c in hand) + Counter(game.stock) + Counter(game.discard)
    assert held == Counter(game.config.deck_cards)
    kinds = [e[0] for e in game.hand_events]
    assert kinds[0] == "hand_start" and kinds[1 : 1 + game.n] == ["deal"] * game.n and kinds[1 + game.n] == "turn_up"
    size = game.config.hand_sizes[game.hand_number - 1]
    assert all(len(e[2]) == size for e in game.hand_events if e[0] == "deal")


def test_the_one_card_scenario_offers_both_the_plain_and_the_announced_play() -> None:
    game = next(s for s in SCENARIOS if s.key == "one-card").build()
    texts = [str(a) for a in game.legal_actions()]
    assert "5S" in texts and "5S+one-card" in texts


def test_the_blind_suit_scenarios_hide_the_hand_and_a_nine_offers_two_suits() -> None:
    from server.engine import observe

    eight = next(s for s in SCENARIOS if s.key == "name-suit-eight").build()
    nine = next(s for s in SCENARIOS if s.key == "name-suit-nine").build()
    assert observe(eight, 0).hand is None
    assert [str(a) for a in eight.legal_actions()] == ["clubs", "diamonds", "hearts", "spades"]
    assert [str(a) for a in nine.legal_actions()] == ["clubs", "spades"]


def test_the_king_scenario_asks_for_three_cards_from_the_face_card_variant() -> None:
    game = next(s for s in SCENARIOS if s.key == "king-sequence").build()
    assert game.config.flags.face_cards and game.king_left == 3
    for left in (3, 2, 1):
        assert game.decision is not None and game.decision.kind is DecisionKind.KING_SEQUENCE
        assert game.king_left == left
        game.apply(game.legal_action_ids()[0])


def test_after_the_timed_out_decision_the_bot_is_surely_asked_again_in_that_hand() -> None:
    """The late-answer check needs a next request: after the default action, whatever anyone
    plays, the bot's next decision in the hand has a choice (it keeps an 8)."""
    import random

    scenario = next(s for s in SCENARIOS if s.mode is Mode.LATE)
    for seed in range(300):
        rng = random.Random(seed)
        game = scenario.build()
        ids = game.legal_action_ids()
        game.apply(0 if 0 in ids else ids[0])  # the referee's default action
        while game.decision is not None and not game.hand_results:
            ids = game.legal_action_ids()
            if game.decision.seat == scenario.seat and len(ids) > 1:
                break
            game.apply(rng.choice(ids))
        assert not game.hand_results, f"seed {seed} ended the hand before the bot was asked again"


def test_dealt_refuses_a_hand_of_the_wrong_size_or_a_card_twice() -> None:
    with pytest.raises(ValueError, match="deals 2 cards"):
        dealt(["5S 3H 4D", "AD 4H"], "3S", dealer=1, hand_number=7)
    with pytest.raises(ValueError, match="twice"):
        dealt(["5S 3H", "5S 4H"], "3S", dealer=1, hand_number=7)
