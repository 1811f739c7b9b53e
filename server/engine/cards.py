"""Cards as typed values with a stable text form and a stable integer form.

The engine works on the integer form internally (``rank_index * 4 + suit``,
0..51); two decks simply hold each integer twice. Everything the engine hands
out speaks in :class:`Card`, :class:`Rank` and :class:`Suit`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Suit(enum.IntEnum):
    """The four suits, in the stable order used by card integers."""

    CLUBS = 0
    DIAMONDS = 1
    HEARTS = 2
    SPADES = 3

    @property
    def letter(self) -> str:
        return "CDHS"[self]

    @property
    def word(self) -> str:
        return self.name.lower()

    @property
    def colour_partner(self) -> Suit:
        """The other suit of the same colour (hearts/diamonds, spades/clubs)."""
        return _PARTNER[self]

    @classmethod
    def parse(cls, text: str) -> Suit:
        """Accept a letter ("h") or a word ("hearts"), any case."""
        key = text.strip().lower()
        for suit in cls:
            if key in (suit.word, suit.letter.lower()):
                return suit
        raise ValueError(f"unknown suit {text!r}: expected one of clubs, diamonds, hearts, spades")


_PARTNER = {
    Suit.CLUBS: Suit.SPADES,
    Suit.SPADES: Suit.CLUBS,
    Suit.HEARTS: Suit.DIAMONDS,
    Suit.DIAMONDS: Suit.HEARTS,
}


class Rank(enum.IntEnum):
    """Ranks by face value; the ace is 1."""

    ACE = 1
    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13

    @property
    def symbol(self) -> str:
        return _RANK_SYMBOL[self]

    @classmethod
    def parse(cls, text: str) -> Rank:
        key = text.strip().upper()
        for rank, symbol in _RANK_SYMBOL.items():
            if key == symbol:
                return rank
        raise ValueError(f"unknown rank {text!r}: expected A, 2..10, J, Q or K")


_RANK_SYMBOL = {r: str(int(r)) for r in Rank} | {
    Rank.ACE: "A",
    Rank.JACK: "J",
    Rank.QUEEN: "Q",
    Rank.KING: "K",
}


@dataclass(frozen=True, order=True, slots=True)
class Card:
    """One card. ``str(card)`` is the short form ("QS", "10H"); ``int(card)`` the wire form."""

    rank: Rank
    suit: Suit

    def __str__(self) -> str:
        return self.rank.symbol + self.suit.letter

    def __int__(self) -> int:
        return (self.rank - 1) * 4 + self.suit

    @property
    def code(self) -> int:
        return (self.rank - 1) * 4 + self.suit

    @classmethod
    def from_int(cls, code: int) -> Card:
        if not 0 <= code < 52:
            raise ValueError(f"card code {code} out of range 0..51")
        return CARDS[code]

    @classmethod
    def parse(cls, text: str) -> Card:
        """Parse "QS", "10h", "ad"; raise ValueError naming the bad text."""
        t = text.strip()
        if len(t) < 2:
            raise ValueError(f"not a card: {text!r} (expected e.g. 'QS', '10H')")
        return cls(Rank.parse(t[:-1]), Suit.parse(t[-1]))


CARDS: tuple[Card, ...] = tuple(Card(Rank(c // 4 + 1), Suit(c % 4)) for c in range(52))
"""Every card, indexed by its integer code."""


def rank_of(code: int) -> int:
    """Rank value (1..13) of a card code."""
    return code // 4 + 1


def suit_of(code: int) -> int:
    """Suit value (0..3) of a card code."""
    return code & 3


def code_of(rank: int, suit: int) -> int:
    return (rank - 1) * 4 + suit


def card_text(code: int) -> str:
    return str(CARDS[code])
