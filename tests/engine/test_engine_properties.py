"""Hypothesis properties over every preset and flag combination (tests/strategies.py).

Each example plays a whole game with random legal actions (tests/engine/play.py).
"""

from __future__ import annotations

from collections import Counter
from itertools import chain

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.engine import (
    DecisionKind,
    GameState,
    craits_hand_score,
    crazy_eights_hand_points,
    event_view,
    new_game,
    observe,
)
from tests.engine.play import MAX_DECISIONS, play_out
from tests.strategies import Config, configs, seeds

PROPERTY_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
choice_seeds = st.integers(min_value=0, max_value=2**32)


def start(config: Config, seed: int) -> GameState:
    preset, players, flags = config
    return new_game(preset, players, seed=seed, **flags)


@PROPERTY_SETTINGS
@given(configs(), seeds, choice_seeds)
def test_property_cards_are_conserved_after_every_action(config: Config, seed: int, choice_seed: int) -> None:
    """Hands + stock + discard always hold exactly the deck(s) of the configuration."""
    g = start(config, seed)
    deck = Counter(g.config.deck_cards)

    def conserved(state: GameState) -> None:
        assert Counter(chain(chain.from_iterable(state.hands), state.stock, state.discard)) == deck

    conserved(g)
    play_out(g, choice_seed, MAX_DECISIONS, conserved)


def check_view(g: GameState, seat: int) -> None:
    """The seat's own hand (none when blind), and no card another seat was dealt or drew."""
    view = observe(g, seat)
    blind = g.decision is not None and g.kind is DecisionKind.NAME_SUIT and g.to_act == seat
    assert view.hand == (None if blind else g.hand_of(seat))
    raw = g.hand_events
    assert len(view.history) == len(raw)
    for event, original in zip(view.history, raw, strict=True):
        assert event.count == len(original[2])
        if event.kind in ("deal", "draw") and (event.seat != seat or blind):
            assert event.cards == ()


@PROPERTY_SETTINGS
@given(configs(), seeds, choice_seeds)
def test_property_no_observation_shows_another_seats_cards_or_the_stock(
    config: Config, seed: int, choice_seed: int
) -> None:
    """Views are sampled (a view rebuilds the hand's history, so checking all is quadratic):
    every seat at each hand's first decision (where the blind suit choice falls) and at
    the end, the seat to act at the 1st, 2nd, 4th, 8th, ... decision of each hand; then
    every private event of the whole log as each other seat would see it."""
    g = start(config, seed)
    hand = {"number": 0, "first_decision": 0}

    def views(state: GameState) -> None:
        if state.hand_number != hand["number"] or state.decision is None:
            hand.update(number=state.hand_number, first_decision=state.decisions)
            for seat in range(state.n):
                check_view(state, seat)
            return
        k = state.decisions - hand["first_decision"]
        if k & (k - 1) == 0:
            check_view(state, state.to_act)

    views(g)
    play_out(g, choice_seed, MAX_DECISIONS, views)
    for raw in g.log:
        if raw[0] in ("deal", "draw"):
            for viewer in range(g.n):
                if viewer != raw[1]:
                    event = event_view(raw, viewer)
                    assert event.cards == () and event.count == len(raw[2])


@PROPERTY_SETTINGS
@given(configs(), seeds, choice_seeds)
def test_property_every_random_game_ends_within_max_decisions(config: Config, seed: int, choice_seed: int) -> None:
    g = play_out(start(config, seed), choice_seed, MAX_DECISIONS)
    assert g.decision is None and g.game_over, f"still going after {MAX_DECISIONS} decisions"
    assert g.legal_action_ids() == []
    if not g.config.crazy_eights:
        assert len(g.result().hands) == len(g.config.hand_sizes)


@PROPERTY_SETTINGS
@given(configs(), seeds, choice_seeds)
def test_property_final_totals_equal_a_recount_of_the_final_hands_plus_pressures(
    config: Config, seed: int, choice_seed: int
) -> None:
    g = play_out(start(config, seed), choice_seed, MAX_DECISIONS)
    result = g.result()
    n = g.n
    assert result.totals == tuple(sum(h.scores[s] for h in result.hands) for s in range(n))
    assert result.pressures == tuple(sum(h.pressures[s] for h in result.hands) for s in range(n))
    for h in result.hands:
        left = [[c.code for c in cards] for cards in h.cards_left]
        if g.config.crazy_eights:
            assert h.pressures == (0,) * n
            points = [crazy_eights_hand_points(cards) for cards in left]
            if h.reason == "blocked":
                low = min(points)
                expected = [sum(p - low for p in points) if points[s] == low else 0 for s in range(n)]
            else:
                assert h.reason == "out"
                expected = [sum(points) if not left[s] else 0 for s in range(n)]
            assert list(h.scores) == expected
        else:
            assert h.scores == tuple(craits_hand_score(left[s]) + h.pressures[s] for s in range(n))
    if g.config.partnerships:
        assert result.team_totals == (result.totals[0] + result.totals[2], result.totals[1] + result.totals[3])
