"""Scoring of the cards left in a hand (RULINGS 9 and the crazy-eights preset)."""

from __future__ import annotations

from collections.abc import Iterable

# Craits card values by rank (index 0 unused); the 3 is handled by the covering rule.
CARD_POINTS = (0, 1, 20, 3, 15, 30, 30, 20, 50, 30, 25, 10, 10, 10)
CRAZY_EIGHTS_POINTS = (0, 1, 2, 3, 4, 5, 6, 7, 50, 9, 10, 10, 10, 10)


def card_points(rank: int, crazy_eights: bool = False) -> int:
    """What one card of ``rank`` (1 = ace .. 13 = king) counts left in a hand, before the
    covering by threes (Craits) or at face value (the crazy-eights preset)."""
    return (CRAZY_EIGHTS_POINTS if crazy_eights else CARD_POINTS)[rank]


def craits_hand_score(cards: Iterable[int]) -> int:
    """Score card codes left in a hand, choosing the cheapest covering by threes.

    Each three scores 3 and may cover one other card that is not an eight (a three
    may cover a three, but a covering three cannot itself be covered). A hand of
    nothing but threes scores -50 per three.
    """
    threes = 0
    eights = 0
    coverable: list[int] = []
    for code in cards:
        rank = code // 4 + 1
        if rank == 3:
            threes += 1
        elif rank == 8:
            eights += 1
        else:
            coverable.append(CARD_POINTS[rank])
    if threes and not eights and not coverable:
        return -50 * threes
    if not threes:
        return 50 * eights + sum(coverable)
    coverable.sort(reverse=True)
    base = 50 * eights + sum(coverable)
    best = None
    # ``paired`` threes are covered by ``paired`` other threes; the rest cover cards.
    for paired in range(threes // 2 + 1):
        free = threes - 2 * paired
        total = 3 * (threes - paired) + base - sum(coverable[:free])
        if best is None or total < best:
            best = total
    assert best is not None
    return best


def crazy_eights_hand_points(cards: Iterable[int]) -> int:
    """Face value, 8 = 50, J Q K = 10, A = 1."""
    return sum(CRAZY_EIGHTS_POINTS[code // 4 + 1] for code in cards)
