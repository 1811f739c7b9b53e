"""RULINGS sections 8 (shuffle pressure), 9 (scoring), 10 (presets and flags), 11 (what a seat sees)."""

from __future__ import annotations

import dataclasses
import random
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.engine import (
    CARDS,
    Card,
    ConfigError,
    DecisionKind,
    Observation,
    Rank,
    Suit,
    craits_hand_score,
    make_config,
    new_game,
    observe,
    placings,
)
from tests.engine.play import random_game
from tests.engine.situations import act, codes, draws, hand, play_texts, pressures, situation

# ---------------------------------------------------------------- section 8: shuffle pressure


def test_rule_8_1_empty_stock_reshuffles_the_discard_under_its_top_and_costs_5() -> None:
    g = situation(["4H 5H", "4S 5S"], "3D 4D 6S KC", stock="", rest=None)
    act(g, "draw")
    assert pressures(g, g._hand_log_start) == [(0, 5)]
    assert g.discard == codes("KC") and len(g.stock) == 2 and len(g.hands[0]) == 3
    view = observe(g, 1)
    assert view.hand_pressures == (5, 0) and view.pressure_totals == (5, 0)


def test_rule_8_1_pressures_double_per_player_over_the_game() -> None:
    """Each seat's pressures, in the order taken across a whole game, are 5, 10, 20, 40, ..."""
    longest = 0
    for seed in range(4):
        g = random_game(seed, players=7)
        for seat in range(7):
            taken = [e[4] for e in g.log if e[0] == "pressure" and e[1] == seat]
            assert taken == [5 * 2**i for i in range(len(taken))]
            longest = max(longest, len(taken))
            assert g.result().pressures[seat] == sum(taken)
    assert longest >= 3


def test_rule_8_1_pressures_double_per_partnership_in_crates_partners() -> None:
    partners = situation(["4H 5H", "4S 5S", "6H 7H", "6S 7S"], "3D 4D KC", preset="crates-partners",
                         stock="", rest=None)
    start = len(partners.log)
    act(partners, "draw", "draw", "draw")
    assert pressures(partners, start) == [(0, 5), (2, 10)]
    singles = situation(["4H 5H", "4S 5S", "6H 7H", "6S 7S"], "3D 4D KC", stock="", rest=None)
    start = len(singles.log)
    act(singles, "draw", "draw", "draw")
    assert pressures(singles, start) == [(0, 5), (2, 5)]


def test_rule_8_1_partnership_pressures_over_a_game_double_per_team() -> None:
    longest = 0
    for seed in range(6):
        g = random_game(seed, "crates-partners", face_cards=True)
        for team in (0, 1):
            taken = [e[4] for e in g.log if e[0] == "pressure" and e[1] % 2 == team]
            assert taken == [5 * 2**i for i in range(len(taken))]
            longest = max(longest, len(taken))
    assert longest >= 2


def test_rule_8_2_nothing_to_reshuffle_ends_the_hand_at_once_with_the_pressure() -> None:
    g = situation(["4H", "5C"], "KC", stock="", rest=None)
    act(g, "draw")
    result = g.hand_results[-1]
    assert result.reason == "nothing to reshuffle"
    assert result.pressures == (5, 0) and result.scores == (15 + 5, 30)
    assert [str(c) for c in result.cards_left[0]] == ["4H"]


def test_rule_8_2_a_big_draw_continues_from_the_new_stock_and_can_cost_two_pressures() -> None:
    g = situation(["5H", "KH"], "3C 4D 5S 6S 7S 2C", stock="9D 9H", rest=None, kind=DecisionKind.ANSWER_COUNT,
                  count=8)
    start = len(g.log)
    act(g, "draw")
    assert pressures(g, start) == [(0, 5), (0, 10)]
    result = g.hand_results[-1]
    assert result.reason == "nothing to reshuffle"
    assert len(result.cards_left[0]) == 1 + 2 + 5, "two from the stock, five from the reshuffle"
    assert result.scores[0] == craits_hand_score(c.code for c in result.cards_left[0]) + 15


# ---------------------------------------------------------------- section 9: scoring

WORKED_TABLE = [
    ("A 3 3 6 7 9 K", 37),
    ("A 2 3 3 6 8 K", 67),
    ("3 3 8", 53),
    ("3", -50),
    ("3 3 3", -150),
    ("3 3 A 8", 54),
    ("8", 50),
    ("", 0),
]


def cards_of_ranks(ranks: str) -> list[int]:
    """Card codes for rank symbols, cycling suits so repeated ranks are distinct cards."""
    return [Card(Rank.parse(r), Suit(i % 4)).code for i, r in enumerate(ranks.split())]


@pytest.mark.parametrize(("ranks", "score"), WORKED_TABLE, ids=[r or "empty" for r, _ in WORKED_TABLE])
def test_rule_9_worked_scoring_table(ranks: str, score: int) -> None:
    assert craits_hand_score(cards_of_ranks(ranks)) == score


@pytest.mark.parametrize(
    ("symbol", "points"),
    [("A", 1), ("2", 20), ("4", 15), ("5", 30), ("6", 30), ("7", 20), ("8", 50), ("9", 30), ("10", 25),
     ("J", 10), ("Q", 10), ("K", 10)],
)
def test_rule_9_1_card_values(symbol: str, points: int) -> None:
    assert craits_hand_score(cards_of_ranks(symbol)) == points
    assert craits_hand_score(cards_of_ranks(f"{symbol} {symbol}")) == 2 * points


def brute_force_score(cards: list[int]) -> int:
    """Rule 9.2 read literally: try every way the threes may cover, keep the lowest total."""
    ranks = [c // 4 + 1 for c in cards]
    if ranks and all(r == 3 for r in ranks):
        return -50 * len(ranks)
    values = [0, 1, 20, 3, 15, 30, 30, 20, 50, 30, 25, 10, 10, 10]
    threes = [i for i, r in enumerate(ranks) if r == 3]
    best = None
    # each three covers nothing (None) or the card at one index
    for choice in product(*[[None, *range(len(cards))] for _ in threes]):
        targets = [t for t in choice if t is not None]
        covering = {three for three, t in zip(threes, choice, strict=True) if t is not None}
        if len(set(targets)) != len(targets):
            continue  # a card is covered once
        if any(t in threes and (t == three or t in covering) for three, t in zip(threes, choice, strict=True)
               if t is not None):
            continue  # a three covers another three that is not itself covering
        if any(ranks[t] == 8 for t in targets):
            continue
        total = sum(values[r] for i, r in enumerate(ranks) if i not in targets)
        best = total if best is None else min(best, total)
    assert best is not None
    return best


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0, 4, 8, 9, 10, 20, 28, 32, 36, 44, 51]), max_size=5))
def test_rule_9_2_threes_cover_the_cheapest_way_matches_brute_force(cards: list[int]) -> None:
    assert craits_hand_score(cards) == brute_force_score(cards)


def test_rule_9_3_equal_totals_share_a_place_and_the_next_is_skipped() -> None:
    assert placings([10, 10, 30, 40]) == (1, 1, 3, 4)
    assert placings([50, 20, 20, 20]) == (4, 1, 1, 1)
    assert placings([10, 10, 30], lower_wins=False) == (2, 2, 1)


def test_rule_9_3_game_result_placings_follow_the_totals() -> None:
    g = random_game(2, players=3, short_game=True)
    result = g.result()
    assert result.lower_wins and result.placings == placings(result.totals)


# ---------------------------------------------------------------- section 10: presets and flags


def test_rule_10_crates_partners_four_players_teams_opposite_scores_summed() -> None:
    with pytest.raises(ConfigError, match="exactly 4"):
        make_config("crates-partners", 3)
    g = random_game(4, "crates-partners", short_game=True)
    result = g.result()
    assert result.team_totals == (result.totals[0] + result.totals[2], result.totals[1] + result.totals[3])
    assert result.team_placings == placings(result.team_totals)
    assert result.placings == tuple(result.team_placings[s % 2] for s in range(4))


@pytest.mark.parametrize("preset", ["craits", "crates-partners"])
def test_rule_10_strip_kings_queens_removes_kings_and_queens(preset: str) -> None:
    config = make_config(preset, 4, strip_kings_queens=True)
    assert len(config.deck_cards) == 44
    assert not {CARDS[c].rank for c in config.deck_cards} & {Rank.QUEEN, Rank.KING}
    g = random_game(1, preset, strip_kings_queens=True, short_game=True)
    seen = {c for e in g.log for c in e[2]}
    assert seen and not {CARDS[c].rank for c in seen} & {Rank.QUEEN, Rank.KING}


def test_rule_10_decks_two_forced_above_five_and_allowed_below() -> None:
    assert make_config("craits", 4, decks=2).decks == 2
    assert len(make_config("craits", 4, decks=2).deck_cards) == 104
    assert make_config("crazy-eights", 6).decks == 2
    with pytest.raises(ConfigError, match="two decks"):
        make_config("crazy-eights", 6, decks=1)
    with pytest.raises(ConfigError, match="decks must be 1 or 2"):
        make_config("craits", 4, decks=3)


def test_rule_10_seven_hits_next_makes_the_next_player_draw() -> None:
    g = situation(["7H KD 3S", "4C 5C", "4D 5D", "4S 5S", "6C 6D"], "5H", seven_hits="next")
    act(g, "7H")
    assert draws(g, g._hand_log_start) == [(1, 1)] and g.to_act == 1


def test_rule_10_every_flag_combines_with_craits_and_partners_crazy_eights_takes_decks_alone() -> None:
    every = {"short_game": True, "voluntary_draw": True, "seven_hits": "next", "face_cards": True,
             "strip_kings_queens": True, "decks": 2}
    make_config("craits", 4, **every)
    make_config("crates-partners", 4, **every)
    make_config("crazy-eights", 4, decks=2)
    with pytest.raises(ConfigError, match="crazy-eights takes the flag decks alone, not face_cards"):
        make_config("crazy-eights", 4, face_cards=True)


@pytest.mark.parametrize(("players", "dealt", "decks"), [(2, 7, 1), (3, 5, 1), (5, 5, 1), (6, 5, 2), (7, 5, 2)])
def test_rule_10_crazy_eights_two_to_seven_players_deal_seven_with_two_else_five(
    players: int, dealt: int, decks: int
) -> None:
    g = new_game("crazy-eights", players, seed=3)
    assert g.config.decks == decks
    assert [len(e[2]) for e in g.hand_events if e[0] == "deal"] == [dealt] * players


@pytest.mark.parametrize("players", [1, 8])
def test_rule_10_crazy_eights_refuses_other_player_counts(players: int) -> None:
    with pytest.raises(ConfigError, match="crazy-eights takes 2 to 7 players"):
        make_config("crazy-eights", players)


def test_rule_10_crazy_eights_only_eights_are_special() -> None:
    g = situation(["9S 2H 8C KD", "4C 5C", "4D 5D"], "5H", preset="crazy-eights")
    assert play_texts(g) == ["draw", "2H", "8C:clubs", "8C:diamonds", "8C:hearts", "8C:spades"]
    act(g, "2H")
    assert g.count == 0 and g.to_act == 1 and g.kind is DecisionKind.PLAY
    nine = situation(["9S KD", "4C 5C"], "9H", preset="crazy-eights")
    assert play_texts(nine) == ["draw", "9S"], "a 9 is a plain card: no suit is named"
    act(nine, "9S")
    assert nine.suit == 3


def test_rule_10_crazy_eights_may_draw_at_any_time_and_play_the_card_just_drawn() -> None:
    g = situation(["5H KD", "4C 6C", "4D 5D"], "5C", preset="crazy-eights", stock="7C")
    assert "draw" in play_texts(g)
    act(g, "draw")
    assert g.to_act == 0 and "7C" in play_texts(g)
    act(g, "7C")
    assert g.to_act == 1


def test_rule_10_crazy_eights_going_out_scores_the_others_hands() -> None:
    g = situation(["5H", "KD 3S", "8C 2D"], "5C", preset="crazy-eights")
    act(g, "5H")
    assert g.hand_results[-1].scores == (13 + 52, 0, 0)


def test_rule_10_crazy_eights_no_reshuffle_blocked_hand_lowest_scores_the_differences() -> None:
    g = situation(["5H 7C", "KD 3S", "JD 4S"], "5C", preset="crazy-eights", stock="", rest="discard")
    assert "draw" not in play_texts(g), "no draw from an empty stock: there is no reshuffle"
    act(g, "7C")
    result = g.hand_results[-1]
    assert result.reason == "blocked"
    assert result.scores == ((13 - 5) + (14 - 5), 0, 0)


def test_rule_10_crazy_eights_goes_to_50_per_player_and_highest_wins() -> None:
    g = random_game(8, "crazy-eights", 3)
    result = g.result()
    assert max(result.totals) >= 150
    assert not result.lower_wins and result.placings == placings(result.totals, lower_wins=False)
    before_last = [sum(h.scores[s] for h in result.hands[:-1]) for s in range(3)]
    assert max(before_last) < 150, "the game ends with the first hand that reaches the target"


# ---------------------------------------------------------------- section 11: what each player may see


def test_rule_11_observation_holds_exactly_the_public_information_and_own_hand() -> None:
    """The fields are the list of section 11; none could carry the stock's order."""
    names = {f.name for f in dataclasses.fields(Observation)}
    assert names == {
        "seat", "hand", "top_card", "current_suit", "current_rank", "direction", "count", "hand_sizes",
        "totals", "hand_pressures", "pressure_totals", "stock_size", "discard_size", "dealer", "hand_number",
        "hands_total", "to_act", "decision", "king_cards_left", "pending_penalty", "history", "history_start",
    }
    g = situation(["5H KD 3S", "4C 5C", "4D 5D", "4S 5S"], "8H", suit="hearts", direction=-1, dealer=2)
    view = observe(g, 1)
    assert view.hand == g.hand_of(1)
    assert (str(view.top_card), view.current_suit, view.current_rank) == ("8H", Suit.HEARTS, Rank.EIGHT)
    assert view.direction == -1 and view.count == 0 and view.dealer == 2 and view.to_act == 0
    assert view.hand_sizes == (3, 2, 2, 2)
    assert view.stock_size == len(g.stock) and view.discard_size == 1


def test_rule_11_draws_of_other_players_show_only_as_counts() -> None:
    g = situation(["5H KD 3S", "4C 5C", "4D 5D", "4S 5S"], "7H", stock="JC JD JS")
    act(g, "5H")
    for viewer in range(4):
        seen = [(e.seat, e.count, tuple(str(c) for c in e.cards)) for e in observe(g, viewer).history
                if e.kind == "draw"]
        expected = [(1, 1, ("JC",)), (2, 1, ("JD",)), (3, 1, ("JS",))]
        assert seen == [(s, n, cards if s == viewer else ()) for s, n, cards in expected]
    assert hand(g, 1) == ["4C", "5C", "JC"]


def test_rule_11_no_observation_in_a_whole_game_shows_another_seats_cards() -> None:
    g = new_game("craits", 4, seed=9, short_game=True, face_cards=True)
    chooser = random.Random(9)
    while g.decision is not None:
        # the seat to act at every decision, every seat at every fifth one
        for seat in range(4) if g.decisions % 5 == 0 else [g.to_act]:
            view = observe(g, seat)
            assert view.hand is None or view.hand == g.hand_of(seat)
            for event in view.history:
                if event.kind in ("deal", "draw") and event.seat != seat:
                    assert event.cards == ()
        ids = g.legal_action_ids()
        g.apply(ids[chooser.randrange(len(ids))])
