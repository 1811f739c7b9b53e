"""RULINGS sections 1 (setup) and 2 (the turned-up card): one test per ruling."""

from __future__ import annotations

import itertools
import random

import pytest

from server.engine import (
    Action,
    DecisionKind,
    GameState,
    IllegalActionError,
    Rank,
    make_config,
    new_game,
    observe,
)
from server.engine.cards import rank_of
from server.engine.rng import SplitMix64
from tests.engine.play import random_game
from tests.engine.situations import act, draws, play_texts


def turned_up(symbol: str, suit: str | None = None, players: int = 4, **flags: object) -> GameState:
    """The first seed whose first hand turns up ``symbol`` (and ``suit`` if given)."""
    rank = Rank.parse(symbol)
    for seed in range(20_000):
        g = new_game("craits", players, seed=seed, **flags)
        ups = [e for e in g.hand_events if e[0] == "turn_up"]
        code = ups[0][2][0] if ups else -1
        if g.hand_number == 1 and rank_of(code) == rank and (suit is None or "CDHS"[code & 3] == suit):
            return g
    raise AssertionError(f"no seed turns up {symbol}{suit or ''}")


def left(g: GameState, seat: int, steps: int = 1) -> int:
    return (seat + steps) % g.n


# ---------------------------------------------------------------- section 1: setup


@pytest.mark.parametrize("players", range(2, 11))
def test_rule_1_1_one_deck_for_two_to_five_players_two_decks_for_six_to_ten(players: int) -> None:
    config = make_config("craits", players)
    assert config.decks == (1 if players <= 5 else 2)
    g = new_game("craits", players, seed=players)
    held = sum(len(h) for h in g.hands) + len(g.stock) + len(g.discard)
    assert held == 52 * config.decks


@pytest.mark.parametrize("players", [6, 10])
def test_rule_1_1_six_or_more_players_refuse_a_single_deck(players: int) -> None:
    with pytest.raises(ValueError, match="two decks"):
        make_config("craits", players, decks=1)


def test_rule_1_2_lowest_card_deals_ace_high_and_ties_draw_again() -> None:
    """Replays the dealer draws of many seeds; at least one seed needs a tie-break."""
    ties_seen = 0
    for seed in range(300):
        g = new_game("craits", 4, seed=seed)
        dealer_draws = [e for e in g.log if e[0] == "dealer_draw"]
        candidates = list(range(4))
        i = 0
        while True:
            round_ = dealer_draws[i : i + len(candidates)]
            i += len(candidates)
            assert [e[1] for e in round_] == candidates, "each candidate draws once, in seat order"
            ranks = {e[1]: (14 if rank_of(e[2][0]) == 1 else rank_of(e[2][0])) for e in round_}
            low = min(ranks.values())
            candidates = [seat for seat in candidates if ranks[seat] == low]
            if len(candidates) == 1:
                break
            ties_seen += 1
        assert i == len(dealer_draws)
        first_hand = next(e for e in g.log if e[0] == "hand_start")
        assert first_hand[1] == candidates[0]
    assert ties_seen > 0


def test_rule_1_2_the_deal_passes_to_the_left_each_hand() -> None:
    g = random_game(3, players=3, short_game=True)
    dealers = [e[1] for e in g.log if e[0] == "hand_start"]
    assert len(dealers) == 8
    assert all(b == (a + 1) % 3 for a, b in itertools.pairwise(dealers))


def test_rule_1_3_fifteen_hands_dealing_8_down_to_1_and_back_to_8() -> None:
    g = random_game(11)
    sizes = [len(e[2]) for e in g.log if e[0] == "deal" and e[1] == 0]
    assert sizes == [8, 7, 6, 5, 4, 3, 2, 1, 2, 3, 4, 5, 6, 7, 8]
    assert [h.number for h in g.result().hands] == list(range(1, 16))


def test_rule_1_3_short_game_plays_the_first_eight_hands() -> None:
    g = random_game(11, short_game=True)
    sizes = [len(e[2]) for e in g.log if e[0] == "deal" and e[1] == 0]
    assert sizes == [8, 7, 6, 5, 4, 3, 2, 1]
    assert observe(g, 0).hands_total == 8


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_rule_1_4_cards_dealt_one_at_a_time_from_left_of_dealer_then_top_of_stock_turned_up(seed: int) -> None:
    """Re-derives the shuffle from the seed: seat d+1 gets the stock's top card, then d+2, ..."""
    g = new_game("craits", 4, seed=seed)
    deck = g.config.deck_cards
    rng = SplitMix64(seed)
    dealer_draws = sum(1 for e in g.log if e[0] == "dealer_draw")
    for _ in range(-(-dealer_draws // len(deck))):
        rng.shuffle(list(deck))
    stock = list(deck)
    rng.shuffle(stock)
    d = next(e for e in g.log if e[0] == "hand_start")[1]
    expected: dict[int, list[int]] = {s: [] for s in range(4)}
    for _ in range(8):
        for i in range(1, 5):
            expected[(d + i) % 4].append(stock.pop())
    dealt = {e[1]: list(e[2]) for e in g.log if e[0] == "deal"}
    assert dealt == expected
    turn_up = next(e for e in g.log if e[0] == "turn_up")
    assert turn_up[2] == (stock.pop(),)


def test_rule_1_5_every_hand_starts_clockwise() -> None:
    """Direction is +1 at every hand's first decision, unless a turned-up 10 reversed it (rule 2)."""
    g = new_game("craits", 4, seed=21)
    chooser = random.Random(21)
    seen_hand = 0
    checked = 0
    while g.decision is not None:
        if g.hand_number != seen_hand:
            seen_hand = g.hand_number
            up = next(e for e in g.hand_events if e[0] == "turn_up")
            assert g.direction == (-1 if rank_of(up[2][0]) == 10 else 1)
            checked += 1
        ids = g.legal_action_ids()
        g.apply(ids[chooser.randrange(len(ids))])
    assert checked == 15


# ---------------------------------------------------------------- section 2: the turned-up card


def test_rule_2_turned_up_2_starts_a_count_left_of_dealer_answers() -> None:
    g = turned_up("2")
    d = g.dealer
    assert g.count == 2
    assert g.decision is not None and g.decision.seat == left(g, d) and g.decision.kind is DecisionKind.ANSWER_COUNT
    for action in g.legal_actions():
        assert action.card is None or action.card.rank in (Rank.ACE, Rank.TWO)


def test_rule_2_turned_up_4_skips_the_player_left_of_dealer() -> None:
    g = turned_up("4")
    d = g.dealer
    assert g.to_act == left(g, d, 2)
    assert ("skip", left(g, d), (), -1, 0) in g.hand_events


def test_rule_2_turned_up_4_with_two_players_the_dealer_plays() -> None:
    g = turned_up("4", players=2)
    assert g.to_act == g.dealer and g.kind is DecisionKind.PLAY


def test_rule_2_turned_up_5_everyone_but_the_dealer_draws_one_from_dealers_left() -> None:
    g = turned_up("5")
    d = g.dealer
    assert draws(g, len(g.log) - len(g.hand_events)) == [(left(g, d, i), 1) for i in (1, 2, 3)]
    assert [len(h) for h in g.hands] == [8 if s == d else 9 for s in range(4)]
    assert g.to_act == left(g, d)


def test_rule_2_turned_up_6_makes_the_dealer_play_on_it() -> None:
    g = turned_up("6")
    d = g.dealer
    assert g.decision is not None and (g.decision.seat, g.decision.kind) == (d, DecisionKind.PLAY_AGAIN)
    suit = g.suit
    playable = [c for c in g.hand_of(d) if c.rank in (6, 8, 9) or c.suit == suit]
    if playable:
        assert "draw" not in play_texts(g)
        assert {a.card for a in g.legal_actions()} == set(playable)
    else:
        assert play_texts(g) == ["draw"]


def test_rule_2_turned_up_6_dealer_unable_draws_one() -> None:
    """Seeds where the dealer cannot answer the 6: one card drawn, the left player starts."""
    for seed in range(5000):
        g = new_game("craits", 4, seed=seed)
        if g.kind is DecisionKind.PLAY_AGAIN and play_texts(g) == ["draw"]:
            d = g.dealer
            act(g, "draw")
            assert len(g.hands[d]) == 9 and g.to_act == left(g, d) and g.kind is DecisionKind.PLAY
            return
    raise AssertionError("no seed found")


@pytest.mark.parametrize(("players", "target_steps"), [(4, 2), (5, 2), (3, 1), (2, 1)])
def test_rule_2_turned_up_7_hits_the_rule_4_7_target_counted_from_dealer(players: int, target_steps: int) -> None:
    g = turned_up("7", players=players)
    d = g.dealer
    assert draws(g, len(g.log) - len(g.hand_events)) == [(left(g, d, target_steps), 1)]
    assert g.to_act == left(g, d)


def test_rule_2_turned_up_8_dealer_names_suit_without_hand() -> None:
    g = turned_up("8")
    d = g.dealer
    assert g.decision is not None and (g.decision.seat, g.decision.kind) == (d, DecisionKind.NAME_SUIT)
    assert play_texts(g) == ["clubs", "diamonds", "hearts", "spades"]
    view = observe(g, d)
    assert view.hand is None
    assert all(e.cards == () for e in view.history if e.kind == "deal"), "the deal event must not show the hand"
    assert observe(g, left(g, d)).hand is not None
    act(g, "hearts")
    assert g.suit == 2 and g.to_act == left(g, d)
    assert observe(g, d).hand == g.hand_of(d)


@pytest.mark.parametrize(("suit", "allowed"), [("H", ["diamonds", "hearts"]), ("S", ["clubs", "spades"])])
def test_rule_2_turned_up_9_allows_only_own_suit_or_colour_partner(suit: str, allowed: list[str]) -> None:
    g = turned_up("9", suit)
    assert observe(g, g.dealer).hand is None
    assert play_texts(g) == allowed
    wrong = next(s for s in ("clubs", "diamonds", "hearts", "spades") if s not in allowed)
    with pytest.raises(IllegalActionError) as refused:
        g.apply(Action.parse(wrong))
    assert refused.value.rule == "2" and refused.value.legal == allowed


def test_rule_2_turned_up_10_reverses_and_dealers_right_starts() -> None:
    g = turned_up("10")
    assert g.direction == -1
    assert g.to_act == (g.dealer - 1) % 4


def test_rule_2_face_cards_turned_up_jack_left_of_dealer_draws_two_and_forfeits() -> None:
    g = turned_up("J", face_cards=True)
    d = g.dealer
    assert draws(g, len(g.log) - len(g.hand_events)) == [(left(g, d), 2)]
    assert g.to_act == left(g, d, 2)


def test_rule_2_face_cards_turned_up_queen_of_spades_left_of_dealer_draws_five_and_forfeits() -> None:
    g = turned_up("Q", "S", face_cards=True)
    d = g.dealer
    assert draws(g, len(g.log) - len(g.hand_events)) == [(left(g, d), 5)]
    assert g.to_act == left(g, d, 2)


def test_rule_2_face_cards_turned_up_king_dealer_plays_three_cards() -> None:
    g = turned_up("K", face_cards=True)
    assert g.decision is not None and (g.decision.seat, g.decision.kind) == (g.dealer, DecisionKind.KING_SEQUENCE)
    assert observe(g, g.dealer).king_cards_left == 3


@pytest.mark.parametrize(("symbol", "suit"), [("J", None), ("Q", "S"), ("K", None), ("A", None), ("3", None)])
def test_rule_2_turned_up_cards_without_a_function_let_the_left_player_start(symbol: str, suit: str | None) -> None:
    """Without the face-card variant J, Q of spades and K do nothing (rule 4.3), like A and 3."""
    g = turned_up(symbol, suit)
    assert g.to_act == left(g, g.dealer) and g.kind is DecisionKind.PLAY
    assert draws(g, len(g.log) - len(g.hand_events)) == []


def test_rule_2_no_one_card_announcement_applies_to_the_turned_up_card() -> None:
    """Even in the one-card hand (hand 8), no hand starts with a penalty or a missed announcement."""
    g = new_game("craits", 3, seed=5)
    chooser = random.Random(5)
    seen_hand = 0
    while g.decision is not None:
        if g.hand_number != seen_hand:
            seen_hand = g.hand_number
            assert not any(g.penalty)
            assert not [e for e in g.hand_events if e[0] == "missed_announcement"]
        ids = g.legal_action_ids()
        g.apply(ids[chooser.randrange(len(ids))])
    assert seen_hand == 15
