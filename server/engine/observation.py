"""What one seat may see (RULINGS section 11): the one home of hidden information."""

from __future__ import annotations

from dataclasses import dataclass

from .cards import CARDS, Card, Rank, Suit
from .state import DecisionKind, Event, GameState, event_view


@dataclass(frozen=True, slots=True)
class Observation:
    """A seat's view of the game at a moment. Never holds another seat's cards or the stock order."""

    seat: int
    hand: tuple[Card, ...] | None
    """The seat's own cards, sorted; None when the dealer names the suit of a
    turned-up 8 or 9 (that choice is made before seeing the hand)."""
    top_card: Card
    current_suit: Suit
    current_rank: Rank
    direction: int
    """+1 clockwise (to the left), -1 counter-clockwise."""
    count: int
    """Value of a running count, 0 when none runs."""
    hand_sizes: tuple[int, ...]
    totals: tuple[int, ...]
    """Cumulative scores after the hands already finished."""
    hand_pressures: tuple[int, ...]
    """Pressure points each seat has taken in this hand."""
    pressure_totals: tuple[int, ...]
    stock_size: int
    discard_size: int
    dealer: int
    hand_number: int
    hands_total: int
    """Hands in the game (0 for crazy eights, which plays to a target score)."""
    to_act: int
    decision: DecisionKind | None
    king_cards_left: int
    """In a king sequence, how many of its cards are still to play."""
    pending_penalty: tuple[bool, ...]
    """Seats that owe a forfeited turn for a missing "one card" (public knowledge)."""
    history: tuple[Event, ...]
    """The hand's events as this seat may see them, from index ``history_start`` on."""
    history_start: int


_NO_SEAT = -2
"""A viewer who owns no seat: sees every public event and no private card."""


def observe(state: GameState, seat: int, history_from: int = 0) -> Observation:
    """Build ``seat``'s observation of ``state``.

    ``history_from`` skips the hand's first events (a referee that already sent
    them need not build them again).
    """
    if not 0 <= seat < state.n:
        raise ValueError(f"seat {seat} out of range 0..{state.n - 1}")
    blind = not state.game_over and state.kind is DecisionKind.NAME_SUIT and state.to_act == seat
    config = state.config
    return Observation(
        seat=seat,
        hand=None if blind else state.hand_of(seat),
        top_card=CARDS[state.discard[-1]],
        current_suit=Suit(state.suit),
        current_rank=Rank(state.top_rank),
        direction=state.direction,
        count=state.count,
        hand_sizes=tuple(len(h) for h in state.hands),
        totals=tuple(state.totals),
        hand_pressures=tuple(state.hand_pressures),
        pressure_totals=tuple(state.pressure_totals),
        stock_size=len(state.stock),
        discard_size=len(state.discard),
        dealer=state.dealer,
        hand_number=state.hand_number,
        hands_total=0 if config.crazy_eights else len(config.hand_sizes),
        to_act=state.to_act,
        decision=None if state.game_over else state.kind,
        king_cards_left=state.king_left if state.kind is DecisionKind.KING_SEQUENCE else 0,
        pending_penalty=tuple(state.penalty),
        # A blind dealer sees no cards at all, not even their own deal in the history (rule 2).
        history=tuple(event_view(e, _NO_SEAT if blind else seat) for e in state.hand_events[history_from:]),
        history_start=history_from,
    )
