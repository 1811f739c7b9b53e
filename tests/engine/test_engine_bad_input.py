"""Bad input gets a clear error naming what was wrong and what is allowed; a refusal changes nothing."""

from __future__ import annotations

import pytest

from server.engine import (
    Action,
    ConfigError,
    DecisionKind,
    GameState,
    IllegalActionError,
    make_config,
    new_game,
    observe,
)
from tests.engine.play import random_game
from tests.engine.situations import situation, snapshot


@pytest.mark.parametrize(
    ("preset", "players", "flags", "message"),
    [
        ("poker", 4, {}, "unknown preset 'poker': choose one of craits, crates-partners, crazy-eights"),
        ("craits", 4, {"jokers": True}, "unknown flag(s) jokers: known flags are short_game,"),
        ("craits", 1, {}, "preset craits takes 2 to 10 players, not 1"),
        ("craits", 11, {}, "preset craits takes 2 to 10 players, not 11"),
        ("crates-partners", 5, {}, "preset crates-partners takes exactly 4 players, not 5"),
        ("crazy-eights", 8, {}, "preset crazy-eights takes 2 to 7 players, not 8"),
        ("craits", 6, {"decks": 1}, "6 players need two decks (decks=2); one deck serves 2 to 5"),
        ("crazy-eights", 7, {"decks": 1}, "7 players need two decks"),
        ("crazy-eights", 4, {"short_game": True}, "preset crazy-eights takes the flag decks alone, not short_game"),
        ("craits", 4, {"decks": 3}, "flag decks must be 1 or 2, got 3"),
        ("craits", 4, {"decks": True}, "flag decks must be 1 or 2, got True"),
        ("craits", 4, {"short_game": "yes"}, "flag short_game must be true or false, got 'yes'"),
        ("craits", 4, {"seven_hits": "always"}, "flag seven_hits must be one of next_but_one, next, got 'always'"),
        ("craits", "4", {}, "players must be a whole number, got '4'"),
        ("craits", True, {}, "players must be a whole number, got True"),
    ],
)
def test_bad_configuration_is_refused_with_what_is_allowed(
    preset: str, players: int, flags: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        make_config(preset, players, **flags)
    assert message in str(refused.value)
    with pytest.raises(ConfigError):
        new_game(preset, players, seed=1, **flags)


def refuse(g: GameState, action: Action | int) -> IllegalActionError:
    """Apply a refused action; check the error lists the legal actions and nothing changed."""
    before = snapshot(g)
    with pytest.raises(IllegalActionError) as refused:
        g.apply(action)
    assert snapshot(g) == before, "a refused action leaves the state unchanged"
    error = refused.value
    assert error.legal == [str(a) for a in g.legal_actions()]
    assert f"(rule {error.rule}); legal now: {', '.join(error.legal)}" in str(error)
    return error


def test_illegal_draw_when_a_play_is_legal() -> None:
    g = situation(["5C KD 3S", "4C", "4D", "4S"], "5H")
    error = refuse(g, Action.parse("draw"))
    assert error.rule == "3.2" and error.legal == ["5C"]
    assert "draw by seat 0: a player with a legal play must play" in str(error)


def test_illegal_card_not_in_hand() -> None:
    g = situation(["5C KD 3S", "4C", "4D", "4S"], "5H")
    error = refuse(g, Action.parse("5S"))
    assert error.rule == "3" and "5S is not in the hand" in str(error)


def test_illegal_card_matching_neither_rank_nor_suit() -> None:
    g = situation(["5C KD 3S", "4C", "4D", "4S"], "5H")
    error = refuse(g, Action.parse("KD"))
    assert error.rule == "3.1" and "does not match the rank 5 or the suit hearts" in str(error)


def test_illegal_answer_to_a_count() -> None:
    g = situation(["5C KD", "AS 8H 5H", "4D", "4S"], "2H", to_act=1, kind=DecisionKind.ANSWER_COUNT, count=2)
    error = refuse(g, Action.parse("8H:hearts"))
    assert error.rule == "5.1" and error.legal == ["AS"]


def test_illegal_suit_for_a_9_and_a_9_without_a_suit() -> None:
    g = situation(["9S KD 3S", "4C", "4D", "4S"], "5H")
    assert refuse(g, Action.parse("9S:hearts")).rule == "3.3"
    assert refuse(g, Action.parse("9S")).rule == "3.3"


def test_illegal_suit_named_without_an_8_or_9() -> None:
    g = situation(["5C KD 3S", "4C", "4D", "4S"], "5H")
    assert refuse(g, Action.parse("hearts")).rule == "3.3"


def test_illegal_play_when_the_dealer_must_name_a_suit() -> None:
    g = situation(["5C KD 3S", "4C", "4D", "4S"], "9H", kind=DecisionKind.NAME_SUIT)
    assert refuse(g, Action.parse("5C")).rule == "2"
    assert refuse(g, Action.parse("clubs")).rule == "2"


def test_illegal_play_on_a_forfeited_turn() -> None:
    g = situation(["5C KD 3S", "4C", "4D", "4S"], "5H", kind=DecisionKind.PENALTY)
    error = refuse(g, Action.parse("5C"))
    assert error.rule == "7.1" and error.legal == ["draw"]


def test_illegal_suit_with_a_crazy_eights_9() -> None:
    g = situation(["9H KD", "4C 6C", "4D 6D"], "5H", preset="crazy-eights")
    assert refuse(g, Action.parse("9H:hearts")).rule == "10"


@pytest.mark.parametrize("bad_id", [5, 7, -1, 10_000])
def test_unknown_action_ids_are_refused(bad_id: int) -> None:
    g = situation(["5C KD 3S", "4C", "4D", "4S"], "5H")
    error = refuse(g, bad_id)
    assert error.rule == "3" and f"no action has id {bad_id}" in str(error)


def test_any_action_after_the_game_is_over_is_refused() -> None:
    g = random_game(1, short_game=True, players=2)
    assert g.decision is None and g.legal_action_ids() == []
    error = refuse(g, 0)
    assert error.rule == "1.3" and "the game is over" in str(error)


def test_every_refused_action_in_a_real_game_leaves_the_state_unchanged() -> None:
    """Across a game, try one illegal action at each of the first decisions."""
    g = new_game("craits", 3, seed=4, face_cards=True)
    tried = 0
    while g.decision is not None and tried < 150:
        legal = set(g.legal_action_ids())
        illegal = next(i for i in range(8, 600, 37) if i not in legal)
        refuse(g, illegal)
        tried += 1
        g.apply(min(legal))


def test_apply_refuses_what_is_not_an_action() -> None:
    g = situation(["5C KD 3S", "4C", "4D", "4S"], "5H")
    before = snapshot(g)
    with pytest.raises(TypeError, match="apply takes an Action or an action id"):
        g.apply("5C")  # type: ignore[arg-type]
    assert snapshot(g) == before


def test_observing_a_seat_that_does_not_exist() -> None:
    g = new_game("craits", 3, seed=1)
    with pytest.raises(ValueError, match=r"seat 3 out of range 0\.\.2"):
        observe(g, 3)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "not a card"), ("1H", "unknown rank"), ("5X", "unknown suit"), ("5S:hearts", "only with an 8 or a 9"),
     ("8S", "an 8 names a suit")],
)
def test_malformed_action_text_is_a_value_error_naming_the_text(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Action.parse(text)
