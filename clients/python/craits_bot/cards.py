"""Small helpers for reasoning about the protocol's cards and actions.

They work on the protobuf messages a bot receives (``pb.Card``, ``pb.LegalAction``),
so a strategy never needs the referee's code.
"""

from __future__ import annotations

from collections.abc import Iterable

from craits.v1 import referee_pb2 as pb

POINTS: dict[int, int] = {
    pb.RANK_ACE: 1,
    pb.RANK_TWO: 20,
    pb.RANK_THREE: 3,
    pb.RANK_FOUR: 15,
    pb.RANK_FIVE: 30,
    pb.RANK_SIX: 30,
    pb.RANK_SEVEN: 20,
    pb.RANK_EIGHT: 50,
    pb.RANK_NINE: 30,
    pb.RANK_TEN: 25,
    pb.RANK_JACK: 10,
    pb.RANK_QUEEN: 10,
    pb.RANK_KING: 10,
}
"""What a card left in the hand scores at the end of a hand (rules 9.1), by pb.Rank."""

SUITS: tuple[int, ...] = (pb.SUIT_CLUBS, pb.SUIT_DIAMONDS, pb.SUIT_HEARTS, pb.SUIT_SPADES)
SUIT_NAMES: dict[int, str] = {
    pb.SUIT_CLUBS: "clubs",
    pb.SUIT_DIAMONDS: "diamonds",
    pb.SUIT_HEARTS: "hearts",
    pb.SUIT_SPADES: "spades",
}


def points(card: pb.Card) -> int:
    """Points the card scores if still held when the hand ends (threes: see hand_score)."""
    return POINTS[card.rank]


def is_play(action: pb.LegalAction) -> bool:
    return action.kind == pb.ACTION_KIND_PLAY_CARD


def is_wild_play(action: pb.LegalAction) -> bool:
    """True for playing an 8 or a 9 that names a suit (the wild cards of rule 3.3)."""
    return action.kind == pb.ACTION_KIND_PLAY_CARD and action.suit != pb.SUIT_UNSPECIFIED


def hand_score(cards: Iterable[pb.Card]) -> int:
    """What these cards would score if the hand ended now (rules 9.1 and 9.2).

    Each three scores 3 and may cover one other card that is not an eight; a hand
    of nothing but threes scores -50 per three; the cheapest covering counts.
    """
    threes = eights = 0
    coverable: list[int] = []
    for card in cards:
        if card.rank == pb.RANK_THREE:
            threes += 1
        elif card.rank == pb.RANK_EIGHT:
            eights += 1
        else:
            coverable.append(POINTS[card.rank])
    if threes and not eights and not coverable:
        return -50 * threes
    coverable.sort(reverse=True)
    base = 50 * eights + sum(coverable)
    # ``paired`` threes are covered by other threes; the free ones cover the dearest cards.
    return min(
        3 * (threes - paired) + base - sum(coverable[: threes - 2 * paired])
        for paired in range(threes // 2 + 1)
    )
