"""Build a game mid-hand with chosen cards, so a test can set up a ruling's exact situation.

Cards are written as text ("5S", "10H", "QS"). The stock is given in drawing order
(the first card listed is the next one drawn); the discard pile bottom to top, its
last card being the top card. Cards of the deck that no list mentions go under the
stock (``rest="stock"``), under the discard pile (``rest="discard"``) or nowhere
(``rest=None``), so by default the state still holds exactly one deck.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from server.engine import Card, DecisionKind, GameState, Suit, new_game, observe
from server.engine.cards import rank_of

RawEvent = tuple[str, int, tuple[int, ...], int, int]


def codes(cards: str | Iterable[str]) -> list[int]:
    """Card codes of "5S 10H" or ["5S", "10H"]."""
    items = cards.split() if isinstance(cards, str) else list(cards)
    return [Card.parse(c).code for c in items]


def texts(card_codes: Iterable[int]) -> list[str]:
    return [str(Card.from_int(c)) for c in card_codes]


def situation(
    hands: Sequence[str],
    discard: str,
    *,
    preset: str = "craits",
    stock: str = "",
    rest: str | None = "stock",
    to_act: int = 0,
    dealer: int | None = None,
    kind: DecisionKind = DecisionKind.PLAY,
    suit: str | None = None,
    count: int = 0,
    direction: int = 1,
    penalty: Iterable[int] = (),
    king_left: int = 0,
    hand_number: int = 1,
    seed: int = 0,
    **flags: object,
) -> GameState:
    """A state of ``preset`` with ``len(hands)`` seats, ``to_act`` facing a ``kind`` decision.

    ``suit`` overrides the current suit (a suit named for a top 8 or 9); ``penalty``
    lists seats owing a forfeited turn; ``hand_number`` lets a test play the last hand.
    """
    players = len(hands)
    g = new_game(preset, players, seed=seed, **flags)
    hand_codes = [codes(h) for h in hands]
    discard_codes = codes(discard)
    stock_codes = codes(stock)
    used = Counter(c for h in hand_codes for c in h) + Counter(discard_codes) + Counter(stock_codes)
    deck = Counter(g.config.deck_cards)
    if used - deck:
        raise ValueError(f"cards not in the deck (or too many copies): {texts((used - deck).elements())}")
    leftover = sorted((deck - used).elements())
    if rest == "stock":
        stock_codes += leftover
    elif rest == "discard":
        discard_codes = leftover + discard_codes
    g.hands = hand_codes
    g.stock = list(reversed(stock_codes))  # the engine draws from the end of the list
    g.discard = discard_codes
    top = discard_codes[-1]
    g.top_rank = rank_of(top)
    g.suit = int(Suit.parse(suit)) if suit else top & 3
    g.to_act = to_act
    g.dealer = to_act if dealer is None else dealer
    g.kind = kind
    if kind is DecisionKind.NAME_SUIT:  # the suits the turned-up 8 or 9 allows (rule 2)
        g.dealer_suits = (0, 1, 2, 3) if rank_of(top) == 8 else tuple(sorted((top & 3, 3 - (top & 3))))
    g.count = count
    g.direction = direction
    g.king_left = king_left
    g.penalty = [seat in set(penalty) for seat in range(players)]
    g.hand_number = hand_number
    g.hand_pressures = [0] * players
    g.ending = False
    g.game_over = False
    g._hand_log_start = len(g.log)
    g._legal = None
    return g


def play_texts(g: GameState) -> list[str]:
    """The legal actions in text form."""
    return [str(a) for a in g.legal_actions()]


def act(g: GameState, *actions: str) -> GameState:
    """Apply actions given in text form ("5S", "8H:clubs", "draw"); return the state."""
    for text in actions:
        legal = {str(a): a for a in g.legal_actions()}
        if text not in legal:
            raise AssertionError(f"{text!r} is not legal for seat {g.to_act} ({g.kind.name}); legal: {sorted(legal)}")
        g.apply(legal[text])
    return g


def hand(g: GameState, seat: int) -> list[str]:
    """A seat's cards in text form, sorted as the engine sorts them."""
    return [str(c) for c in g.hand_of(seat)]


def events_since(g: GameState, start: int, kind: str | None = None) -> list[RawEvent]:
    return [e for e in g.log[start:] if kind is None or e[0] == kind]


def draws(g: GameState, start: int = 0) -> list[tuple[int, int]]:
    """(seat, number of cards) of every draw since log index ``start``."""
    return [(e[1], len(e[2])) for e in g.log[start:] if e[0] == "draw"]


def pressures(g: GameState, start: int = 0) -> list[tuple[int, int]]:
    """(seat, points) of every pressure since log index ``start``."""
    return [(e[1], e[4]) for e in g.log[start:] if e[0] == "pressure"]


def last_hand_scores(g: GameState) -> tuple[int, ...]:
    return g.hand_results[-1].scores


def snapshot(g: GameState) -> tuple[object, ...]:
    """Everything a refused action must leave unchanged: log digest, decision, every view."""
    return (
        g.digest(),
        g.decision,
        tuple(g.legal_action_ids()),
        tuple(tuple(sorted(h)) for h in g.hands),
        tuple(g.stock),
        tuple(g.discard),
        tuple(observe(g, s) for s in range(g.n)),
    )
