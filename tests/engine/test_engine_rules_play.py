"""RULINGS sections 3 to 7: legal plays, card functions, the count, face cards, "one card".

Each test builds the exact situation with ``situation`` (seat 0 to act unless said
otherwise; the stock holds the rest of the deck unless given) and checks the outcome.
"""

from __future__ import annotations

import pytest

from server.engine import Action, DecisionKind, GameState, IllegalActionError, observe
from tests.engine.situations import act, codes, draws, hand, play_texts, situation

PLAY, COUNT, AGAIN, KING, PENALTY = (
    DecisionKind.PLAY,
    DecisionKind.ANSWER_COUNT,
    DecisionKind.PLAY_AGAIN,
    DecisionKind.KING_SEQUENCE,
    DecisionKind.PENALTY,
)
ALL_SUITS = ("clubs", "diamonds", "hearts", "spades")


def decision(g: GameState) -> tuple[int, DecisionKind]:
    assert g.decision is not None
    return g.decision.seat, g.decision.kind


# ---------------------------------------------------------------- section 3: legal plays


def test_rule_3_1_legal_plays_match_rank_or_suit_or_are_wild() -> None:
    g = situation(["5C 7H 8S 9D KC 3D", "4C", "4D", "4S"], "5H")
    assert play_texts(g) == [
        "5C", "7H", *(f"8S:{s}" for s in ALL_SUITS), "9D:diamonds", "9D:hearts",
    ]


def test_rule_3_1_the_suit_named_for_a_top_8_is_the_current_suit() -> None:
    g = situation(["5C 7H 8D 9D KS 3D", "4C", "4D", "4S"], "8H", suit="spades")
    assert [str(a.card) for a in g.legal_actions()] == ["8D"] * 4 + ["9D"] * 2 + ["KS"]


def test_rule_3_2_a_player_with_a_legal_play_must_play() -> None:
    g = situation(["5C KD 3S", "4C", "4D", "4S"], "5H")
    assert "draw" not in play_texts(g)
    with pytest.raises(IllegalActionError) as refused:
        g.apply(Action.parse("draw"))
    assert refused.value.rule == "3.2" and refused.value.legal == ["5C"]


def test_rule_3_2_no_legal_play_draws_one_and_the_turn_passes() -> None:
    g = situation(["KC 3S", "4C", "4D", "4S"], "5H", stock="5D")
    assert play_texts(g) == ["draw"]
    act(g, "draw")
    assert hand(g, 0) == ["3S", "5D", "KC"], "the drawn 5D is kept, not played"
    assert decision(g) == (1, PLAY)


def test_rule_3_2_voluntary_draw_allowed_at_every_decision_except_a_suit_choice() -> None:
    g = situation(["5C KD 3S", "4C", "4D", "4S"], "5H", voluntary_draw=True)
    assert play_texts(g) == ["draw", "5C"]
    in_count = situation(["2C KD 3S", "4C", "4D", "4S"], "2H", kind=COUNT, count=4, voluntary_draw=True)
    assert play_texts(in_count) == ["draw", "2C"]
    act(in_count, "draw")
    assert len(in_count.hands[0]) == 7 and in_count.count == 0, "a voluntary draw in a count draws the count"
    blind = situation(["5C", "4C", "4D", "4S"], "8H", kind=DecisionKind.NAME_SUIT, voluntary_draw=True)
    assert play_texts(blind) == list(ALL_SUITS)


def test_rule_3_3_an_8_names_any_suit_a_9_its_own_or_its_colour_partner() -> None:
    g = situation(["8C 9S 9D KD", "4C", "4D", "4S"], "KH")
    assert play_texts(g) == [
        *(f"8C:{s}" for s in ALL_SUITS), "9D:diamonds", "9D:hearts", "9S:clubs", "9S:spades", "KD",
    ]
    with pytest.raises(IllegalActionError) as refused:
        g.apply(Action.parse("9S:hearts"))
    assert refused.value.rule == "3.3"
    act(g, "9S:clubs")
    assert g.suit == 0 and g.top_rank == 9


# ---------------------------------------------------------------- section 4: card functions


def test_rule_4_1_an_ace_has_no_function_outside_a_count() -> None:
    g = situation(["AH KD 3S", "4C", "4D", "4S"], "5H")
    act(g, "AH")
    assert decision(g) == (1, PLAY) and g.count == 0 and draws(g, g._hand_log_start) == []


def test_rule_4_2_a_2_starts_a_count_and_adds_2_to_a_running_one() -> None:
    g = situation(["2H KD 3S", "2C 4C 6C", "4D", "4S"], "5H")
    act(g, "2H")
    assert g.count == 2 and decision(g) == (1, COUNT)
    act(g, "2C")
    assert g.count == 4 and decision(g) == (2, COUNT)


@pytest.mark.parametrize("card", ["3H", "JH", "QH", "QS", "KH"])
def test_rule_4_3_three_jack_queen_king_have_no_function_without_face_cards(card: str) -> None:
    g = situation([f"{card} KD 4D", "4C 5D", "AD 6C", "4S 6S"], "5" + card[-1])
    act(g, card)
    assert decision(g) == (1, PLAY) and draws(g, g._hand_log_start) == []


def test_rule_4_4_a_4_skips_the_next_player() -> None:
    g = situation(["4H KD 3S", "4C", "4D", "4S"], "5H")
    act(g, "4H")
    assert decision(g) == (2, PLAY)
    assert ("skip", 1, (), -1, 0) in g.hand_events


def test_rule_4_4_with_two_players_the_same_player_plays_again() -> None:
    g = situation(["4H KD 3S", "4C 5C"], "5H")
    act(g, "4H")
    assert decision(g) == (0, PLAY)


@pytest.mark.parametrize(("direction", "order"), [(1, [1, 2, 3]), (-1, [3, 2, 1])])
def test_rule_4_5_a_5_makes_every_other_player_draw_one_from_the_next(direction: int, order: list[int]) -> None:
    g = situation(["5H KD 3S", "4C", "4D", "4S"], "7H", direction=direction)
    act(g, "5H")
    assert draws(g, g._hand_log_start) == [(s, 1) for s in order]
    assert decision(g) == (order[0], PLAY)


def test_rule_4_6_a_6_makes_the_same_player_play_again() -> None:
    g = situation(["6H 6C KD 3S", "4C", "4D", "4S"], "5H")
    act(g, "6H")
    assert decision(g) == (0, AGAIN)
    assert play_texts(g) == ["6C"]
    act(g, "6C")
    assert decision(g) == (0, AGAIN)
    assert play_texts(g) == ["draw"]
    act(g, "draw")
    assert decision(g) == (1, PLAY) and len(g.hands[0]) == 3


def test_rule_4_6_cooper_draws_one_and_hand_goes_on() -> None:
    g = situation(["6H", "4C 5C", "4D 5D", "4S 5S"], "5H", stock="KD")
    act(g, "6H")
    assert hand(g, 0) == ["KD"]
    assert decision(g) == (1, PLAY)
    assert g.hand_number == 1 and g.hand_results == []
    assert not g.penalty[0], "a Cooper needs no 'one card'"
    assert ("cooper", 0, (), -1, 0) in g.hand_events


@pytest.mark.parametrize(
    ("players", "flag", "hit"),
    [(4, "next_but_one", 2), (5, "next_but_one", 2), (3, "next_but_one", 1), (2, "next_but_one", 1),
     (4, "next", 1), (5, "next", 1)],
)
def test_rule_4_7_a_7_hits_next_but_one_with_four_or_more_else_the_next(players: int, flag: str, hit: int) -> None:
    others = ["4C 5C", "4D 5D", "4S 5S", "JC 10C"][: players - 1]
    g = situation(["7H KD 3S", *others], "5H", seven_hits=flag)
    act(g, "7H")
    assert draws(g, g._hand_log_start) == [(hit, 1)]
    assert decision(g) == (1, PLAY), "the next player then takes their turn as usual"


def test_rule_4_8_eights_and_nines_are_wild() -> None:
    g = situation(["8H 9D KD", "4C", "4D", "4S"], "5C")
    assert {str(a.card) for a in g.legal_actions()} == {"8H", "9D"}


@pytest.mark.parametrize(("players", "next_seat"), [(4, 3), (3, 2), (2, 1)])
def test_rule_4_9_a_10_reverses_and_with_two_players_the_opponent_still_plays(players: int, next_seat: int) -> None:
    others = ["4C 5C", "4D 5D", "4S 5S"][: players - 1]
    g = situation(["10H KD 3S", *others], "5H")
    act(g, "10H")
    assert g.direction == -1 and decision(g) == (next_seat, PLAY)


# ---------------------------------------------------------------- section 5: the count


def test_rule_5_1_in_a_count_only_aces_and_2s_answer_8s_and_9s_are_not_wild() -> None:
    g = situation(["5C KD", "AS 2D 8H 9C 5H", "4D", "4S"], "2H", to_act=1, kind=COUNT, count=2)
    assert play_texts(g) == ["AS", "2D"]
    with pytest.raises(IllegalActionError) as refused:
        g.apply(Action.parse("8H:hearts"))
    assert refused.value.rule == "5.1"
    act(g, "AS")
    assert g.count == 3 and decision(g) == (2, COUNT)


def test_rule_5_2_no_ace_or_2_draws_the_count_which_ends_and_the_turn_passes() -> None:
    g = situation(["5C KD", "5H 8C", "4D", "4S"], "2H", to_act=1, kind=COUNT, count=6)
    assert play_texts(g) == ["draw"]
    act(g, "draw")
    assert draws(g, g._hand_log_start) == [(1, 6)]
    assert g.count == 0 and decision(g) == (2, PLAY)


def test_rule_5_3_after_the_count_the_top_card_sets_suit_and_rank() -> None:
    g = situation(["5C KD", "5H 8C", "4D 2D KC 6S", "4S"], "2C", to_act=1, kind=COUNT, count=2)
    act(g, "draw")
    assert play_texts(g) == ["2D", "KC"]


def test_rule_5_going_out_with_a_2_the_count_is_drawn_before_the_hand_ends() -> None:
    """Rule 7.2: a count started by the final card goes on until someone draws it."""
    g = situation(["2H", "5C 6C", "4D 5D", "4S 5S"], "5H")
    act(g, "2H")
    assert g.hand_results == [] and decision(g) == (1, COUNT)
    act(g, "draw")
    result = g.hand_results[-1]
    assert result.number == 1 and len(result.cards_left[1]) == 4
    assert result.scores[0] == 0


def test_rule_5_several_players_may_end_a_count_with_empty_hands() -> None:
    g = situation(["2H", "AH", "5C 6C", "4S 5S"], "5H")
    act(g, "2H", "AH")
    assert g.count == 3 and decision(g) == (2, COUNT)
    act(g, "draw")
    result = g.hand_results[-1]
    assert result.scores[0] == result.scores[1] == 0
    assert len(result.cards_left[2]) == 5


def test_rule_5_a_player_with_no_cards_who_must_answer_the_count_draws_it() -> None:
    g = situation(["2H", "2C"], "5H", stock="KD QD JD 10D 5S")
    act(g, "2H", "2C")
    assert decision(g) == (0, COUNT) and play_texts(g) == ["draw"]
    act(g, "draw")
    result = g.hand_results[-1]
    assert [str(c) for c in result.cards_left[0]] == ["10D", "JD", "QD", "KD"]
    assert result.scores == (55, 0)


# ---------------------------------------------------------------- section 6: face cards


def test_rule_6_1_jack_next_player_draws_two_per_jack_in_the_unbroken_run_and_forfeits() -> None:
    """The run is counted on the discard pile: JC below JH counts, JS under the 5C does not."""
    g = situation(["JH KD 3S", "4C", "4D", "4S"], "JS 5C JC", face_cards=True)
    act(g, "JH")
    assert draws(g, g._hand_log_start) == [(1, 4)]
    assert ("forfeit", 1, (), -1, 0) in g.hand_events
    assert decision(g) == (2, PLAY)


def test_rule_6_1_a_single_jack_makes_the_next_player_draw_two() -> None:
    g = situation(["JH KD 3S", "4C", "4D", "4S"], "5H", face_cards=True)
    act(g, "JH")
    assert draws(g, g._hand_log_start) == [(1, 2)] and decision(g) == (2, PLAY)


def test_rule_6_1_with_two_players_the_jack_player_plays_again() -> None:
    """Literal reading: the opponent forfeits, so the turn comes back to the jack's player,
    and (as after one's own 4, rule 7.1) that is a new turn."""
    g = situation(["JH KD 3S", "4C 5C"], "5H", face_cards=True)
    act(g, "JH")
    assert draws(g, g._hand_log_start) == [(1, 2)] and decision(g) == (0, PLAY)


def test_rule_6_2_queen_of_spades_next_player_draws_five_and_forfeits() -> None:
    g = situation(["QS KD 3S", "4C", "4D", "4S"], "5S", face_cards=True)
    act(g, "QS")
    assert draws(g, g._hand_log_start) == [(1, 5)] and decision(g) == (2, PLAY)


def test_rule_6_2_other_queens_have_no_function() -> None:
    g = situation(["QH KD 3S", "4C", "4D", "4S"], "5H", face_cards=True)
    act(g, "QH")
    assert draws(g, g._hand_log_start) == [] and decision(g) == (1, PLAY)


def test_rule_6_3_king_sequence_first_two_cards_have_no_function_the_third_acts() -> None:
    g = situation(["KH 6H 2H 5H 9C AC", "4C", "4D", "4S"], "7H", face_cards=True)
    act(g, "KH")
    assert decision(g) == (0, KING) and observe(g, 0).king_cards_left == 3
    act(g, "6H")  # card 1: no "play again"
    assert decision(g) == (0, KING) and observe(g, 0).king_cards_left == 2
    act(g, "2H")  # card 2: no count
    assert g.count == 0 and decision(g) == (0, KING) and observe(g, 0).king_cards_left == 1
    act(g, "5H")  # card 3 acts: everyone else draws
    assert draws(g, g._hand_log_start) == [(1, 1), (2, 1), (3, 1)]
    assert decision(g) == (1, PLAY)


def test_rule_6_3_an_8_or_9_in_the_first_two_cards_still_names_a_suit() -> None:
    g = situation(["KH 8C 4S 5S 3D", "4C", "4D", "4H"], "7H", face_cards=True)
    act(g, "KH", "8C:spades")
    assert g.suit == 3 and decision(g) == (0, KING)
    act(g, "4S")
    assert decision(g) == (0, KING), "a 4 as card 2 skips no one"


def test_rule_6_3_a_third_king_starts_three_more() -> None:
    g = situation(["KC QC QH KH 5H 6H 7D", "4D", "4S", "4H"], "7C", face_cards=True)
    act(g, "KC", "QC", "QH", "KH")
    assert decision(g) == (0, KING) and g.king_left == 3
    act(g, "5H")
    assert decision(g) == (0, KING) and g.king_left == 2


def test_rule_6_3_six_as_first_king_card_is_no_cooper_and_last_card_ends_hand() -> None:
    g = situation(["KH 6H", "4C 5C", "4D 5D", "4S 5S"], "7H", face_cards=True)
    start = len(g.log)
    act(g, "KH+one-card", "6H")
    result = g.hand_results[-1]
    assert result.number == 1 and result.scores[0] == 0
    hand_1_events = g.log[start : g.log.index(("hand_end", -1, (), -1, 1))]
    assert [e for e in hand_1_events if e[0] in ("cooper", "draw")] == []


def test_rule_6_3_unable_to_play_in_a_king_sequence_draws_one_and_the_turn_ends() -> None:
    g = situation(["KH 3C AD", "4C", "4D", "4S"], "7H", face_cards=True, stock="5C")
    act(g, "KH")
    assert play_texts(g) == ["draw"]
    act(g, "draw")
    assert hand(g, 0) == ["AD", "3C", "5C"] and decision(g) == (1, PLAY)


def test_rule_6_3_a_king_as_last_card_ends_the_hand_and_no_card_is_drawn() -> None:
    g = situation(["KH", "4C 5C", "4D 5D", "4S 5S"], "7H", face_cards=True)
    start = len(g.log)
    act(g, "KH")
    result = g.hand_results[-1]
    assert result.scores[0] == 0 and result.reason == "out"
    hand_1_events = g.log[start : g.log.index(("hand_end", -1, (), -1, 1))]
    assert [e for e in hand_1_events if e[0] == "draw"] == []


# ---------------------------------------------------------------- section 7: "one card" and hand end


def test_rule_7_1_missing_one_card_forfeits_the_next_turn_which_draws_two() -> None:
    g = situation(["AH 3H", "KC QC"], "5H", stock="4D 5D 6D 7D")
    act(g, "AH")
    assert g.penalty[0] and ("missed_announcement", 0, (), -1, 0) in g.hand_events
    act(g, "draw")  # seat 1 cannot play on the AH
    assert decision(g) == (0, PENALTY) and play_texts(g) == ["draw"]
    with pytest.raises(IllegalActionError) as refused:
        g.apply(Action.parse("3H"))
    assert refused.value.rule == "7.1"
    act(g, "draw")
    assert hand(g, 0) == ["3H", "5D", "6D"] and not g.penalty[0] and decision(g) == (1, PLAY)


def test_rule_7_1_announced_one_card_has_no_penalty() -> None:
    g = situation(["AH 3H", "KC QC"], "5H")
    act(g, "AH+one-card")
    assert not g.penalty[0]


def test_rule_7_1_an_announcement_on_any_other_play_is_ignored() -> None:
    """Literal reading of "is ignored": accepted and without effect, not refused."""
    g = situation(["AH 3H 4C", "KC QC"], "5H")
    g.apply(Action.parse("AH+one-card"))
    assert g.log[-1] == ("play", 0, tuple(codes("AH")), -1, 0)
    assert decision(g) == (1, PLAY)


def test_rule_7_1_a_turn_skipped_by_a_4_is_not_the_next_turn() -> None:
    g = situation(["4H JC", "AD 5D", "KH QD", "KD QS"], "5H", penalty=[1])
    act(g, "4H+one-card")
    assert decision(g) == (2, PLAY) and g.penalty[1]
    act(g, "KH+one-card", "KD+one-card", "draw")
    assert decision(g) == (1, PENALTY)


@pytest.mark.parametrize(("card", "drawn"), [("JH", 2), ("QS", 5)])
def test_rule_7_1_a_turn_forfeited_to_a_jack_or_queen_of_spades_is_not_the_next_turn(card: str, drawn: int) -> None:
    g = situation([f"{card} 5H 6H", "AD 5D", "KH QD", "KD QC"], "7H" if card == "JH" else "7S",
                  penalty=[1], face_cards=True)
    act(g, card)
    assert draws(g, g._hand_log_start) == [(1, drawn)]
    assert g.penalty[1] and decision(g) == (2, PLAY)


def test_rule_7_1_extra_play_after_a_6_belongs_to_the_same_turn() -> None:
    g = situation(["6H KC", "AD 5D", "KH QD", "KD QS"], "5H")
    act(g, "6H")
    assert g.penalty[0] and decision(g) == (0, AGAIN), "the play again is not the forfeited turn"
    act(g, "draw")
    assert g.penalty[0] and decision(g) == (1, PLAY)


def test_rule_7_1_with_two_players_playing_again_after_own_4_is_the_next_turn() -> None:
    g = situation(["4H KC", "AD 5D"], "5H")
    act(g, "4H")
    assert decision(g) == (0, PENALTY)
    act(g, "draw")
    assert len(g.hands[0]) == 3 and decision(g) == (1, PLAY)


def test_rule_7_1_a_forfeited_turn_in_a_count_draws_two_then_the_count() -> None:
    g = situation(["2H KD 3S", "AD 5D", "KH QD", "KC QS"], "5H", penalty=[1])
    act(g, "2H")
    assert decision(g) == (1, PENALTY)
    act(g, "draw")
    assert draws(g, g._hand_log_start) == [(1, 2), (1, 2)]
    assert g.count == 0 and decision(g) == (2, PLAY)


def test_rule_7_1_the_penalty_lapses_when_the_hand_ends_first() -> None:
    g = situation(["AH 3H", "AC"], "5H")
    act(g, "AH", "AC")
    assert g.hand_number == 2 and g.hand_results[-1].scores[1] == 0
    assert not any(g.penalty)


def test_rule_7_1_partnership_variant_draws_two_then_plays_as_usual() -> None:
    g = situation(["AC KD 3S", "4C 6D", "KH QD", "KS QS"], "5C", preset="crates-partners", penalty=[1])
    act(g, "AC")
    assert decision(g) == (1, PLAY) and not g.penalty[1]
    assert draws(g, g._hand_log_start) == [(1, 2)]
    assert len(g.hands[1]) == 4 and "4C" in play_texts(g)


def test_rule_7_2_the_hand_ends_after_the_final_cards_function_a_final_5_still_makes_all_draw() -> None:
    g = situation(["5H", "4C 6C", "4D 6D", "4S 6S"], "7H")
    act(g, "5H")
    result = g.hand_results[-1]
    assert result.reason == "out" and [len(c) for c in result.cards_left] == [0, 3, 3, 3]


def test_rule_7_3_every_player_scores_the_cards_they_hold_plus_pressures() -> None:
    g = situation(["AH", "4C 6C", "3D 6D", "8S 3S"], "7H", stock="", rest="discard")
    g.hand_pressures = [0, 0, 10, 0]
    act(g, "AH")
    assert g.hand_results[-1].scores == (0, 45, 13, 53)
