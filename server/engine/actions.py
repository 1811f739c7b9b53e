"""Actions: small frozen values with a stable integer id and a short text form.

Ids are stable across versions and sort the legal list:
  0            draw (one card, the count, or the penalty, as the situation says)
  1..4         name a suit alone (the dealer answering a turned-up 8 or 9): 1 + suit
  8 + 10*card + 2*named + announce
               play ``card`` (0..51); ``named`` is 0 (no suit) or 1 + suit for an
               8 or 9 (a crazy-eights 9 names no suit); ``announce`` is 1 when the play carries "one card".
Text forms: "draw", "hearts", "5S", "8H:clubs", "5S+one-card", "9D:hearts+one-card".
"""

from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass

from .cards import CARDS, Card, Rank, Suit


class ActionKind(enum.IntEnum):
    DRAW = 1
    NAME_SUIT = 2
    PLAY = 3


DRAW_ID = 0
_PLAY_BASE = 8
MAX_ACTION_ID = _PLAY_BASE + 10 * 51 + 9


def suit_action_id(suit: int) -> int:
    return 1 + suit


def play_action_id(card: int, named: int | None = None, announce: bool = False) -> int:
    """``named`` is a suit value 0..3 or None."""
    return _PLAY_BASE + 10 * card + (0 if named is None else 2 * (named + 1)) + (1 if announce else 0)


def is_announced_play(action_id: int) -> bool:
    """True if the id is a play carrying the "one card" announcement."""
    return action_id >= _PLAY_BASE and (action_id - _PLAY_BASE) % 10 & 1 == 1


@dataclass(frozen=True, slots=True)
class Action:
    """One thing a player can do at a decision."""

    id: int
    kind: ActionKind
    card: Card | None = None
    suit: Suit | None = None
    announce: bool = False

    def __str__(self) -> str:
        if self.kind is ActionKind.DRAW:
            return "draw"
        if self.kind is ActionKind.NAME_SUIT:
            assert self.suit is not None
            return self.suit.word
        text = str(self.card)
        if self.suit is not None:
            text += ":" + self.suit.word
        if self.announce:
            text += "+one-card"
        return text

    @staticmethod
    def from_id(action_id: int) -> Action:
        """Decode an id; raise ValueError if no action has it."""
        if not 0 <= action_id <= MAX_ACTION_ID or ACTIONS[action_id] is None:
            raise ValueError(f"no action has id {action_id}")
        action = ACTIONS[action_id]
        assert action is not None
        return action

    @staticmethod
    def parse(text: str) -> Action:
        """Parse the text form ("8H:clubs+one-card"); raise ValueError if malformed."""
        t = text.strip().lower()
        if t == "draw":
            return ACTIONS[DRAW_ID]  # type: ignore[return-value]
        announce = t.endswith("+one-card")
        if announce:
            t = t[: -len("+one-card")]
        if ":" in t:
            card_text, suit_text = t.split(":", 1)
            card = Card.parse(card_text)
            suit: Suit | None = Suit.parse(suit_text)
        else:
            with contextlib.suppress(ValueError):  # not a suit word: a card
                return ACTIONS[suit_action_id(Suit.parse(t))]  # type: ignore[return-value]
            card = Card.parse(t)
            suit = None
        if suit is not None and card.rank not in (Rank.EIGHT, Rank.NINE):
            raise ValueError(f"malformed action {text!r}: a suit is named only with an 8 or a 9")
        if suit is None and card.rank is Rank.EIGHT:
            raise ValueError(f"malformed action {text!r}: an 8 names a suit, e.g. '{card}:hearts'")
        return Action.from_id(play_action_id(card.code, None if suit is None else int(suit), announce))


def _build_table() -> list[Action | None]:
    table: list[Action | None] = [None] * (MAX_ACTION_ID + 1)
    table[DRAW_ID] = Action(DRAW_ID, ActionKind.DRAW)
    for s in Suit:
        table[suit_action_id(s)] = Action(suit_action_id(s), ActionKind.NAME_SUIT, suit=s)
    for code, card in enumerate(CARDS):
        # An 8 always names a suit; a 9 names one in Craits but is a plain card in crazy eights.
        named_options: list[int | None] = [None] if card.rank is not Rank.EIGHT else []
        if card.rank in (Rank.EIGHT, Rank.NINE):
            named_options += list(range(4))
        for named in named_options:
            for announce in (False, True):
                aid = play_action_id(code, named, announce)
                table[aid] = Action(
                    aid, ActionKind.PLAY, card, None if named is None else Suit(named), announce
                )
    return table


ACTIONS: list[Action | None] = _build_table()
"""Every action, indexed by id (None where no action has that id)."""
