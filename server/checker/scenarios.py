"""The situations the conformance checker puts a bot in. Pure: engine values only, no I/O.

Each scenario is a hand dealt exactly as written (every seat holds the number of
cards that hand number deals, the rest of the deck is the stock) and started by
its turned-up card, so the bot's first decision is the one the scenario is
about *and* the history the bot receives is consistent: a count comes from a
turned-up 2, "play again" from a turned-up 6, a blind suit choice from a
turned-up 8 or 9, a king sequence from a turned-up king. The last two scenarios
are whole games from a seed.
"""

from __future__ import annotations

import enum
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from server.engine import Card, DecisionKind, GameState, new_game

BOT_SEAT_NAME = "checked-bot"


class Mode(enum.Enum):
    """How the checker treats the scenario's first question to the bot."""

    ASK = "ask"
    """Ask, check the answer, apply it."""
    REFUSE = "refuse"
    """Refuse the (legal) answer with ILLEGAL_ACTION and re-send the request."""
    LATE = "late"
    """Ask with a 1 ms deadline and no bank, then time the decision out."""


@dataclass(frozen=True, slots=True)
class Scenario:
    key: str
    """Short stable name: used in game ids and the JSON report."""
    title: str
    """The report line's name."""
    expected: str
    """What a conforming bot does, in words (the checker appends what was offered)."""
    build: Callable[[], GameState]
    seat: int
    """The bot's seat."""
    kind: DecisionKind | None = None
    """The kind of the bot's first decision (None for whole games)."""
    mode: Mode = Mode.ASK
    whole_game: bool = False
    """Play to the game's end instead of stopping after the first hand."""
    focus: int = 1
    """How many of the bot's answers the report shows (the rest are only checked)."""


def dealt(
    hands: list[str],
    turn_up: str,
    *,
    dealer: int,
    hand_number: int,
    preset: str = "craits",
    seed: int = 1,
    **flags: object,
) -> GameState:
    """A game at the start of hand ``hand_number``: ``hands`` dealt (seat by seat, cards
    as text "5S 10H"), ``turn_up`` turned up by ``dealer`` and its function applied.

    The stock is the rest of the deck in a seeded order. The hand's history reads
    hand start, deals, turn up, exactly as if the engine had dealt it.
    """
    game = new_game(preset, len(hands), seed=seed, **flags)
    size = game.config.hand_sizes[hand_number - 1]
    codes = [[Card.parse(text).code for text in hand.split()] for hand in hands]
    for seat, cards in enumerate(codes):
        if len(cards) != size:
            raise ValueError(f"hand {hand_number} deals {size} cards, seat {seat} has {len(cards)}")
    top = Card.parse(turn_up).code
    used = Counter(c for cards in codes for c in cards) + Counter([top])
    deck = Counter(game.config.deck_cards)
    if used - deck:
        raise ValueError(f"cards not in the deck (or twice): {sorted(used - deck)}")
    stock = sorted((deck - used).elements())
    random.Random(seed).shuffle(stock)

    first_hand = next(i for i, event in enumerate(game.log) if event[0] == "hand_start")
    del game.log[first_hand:]  # keep the first-dealer draw, replace hand 1 by ours
    game._hand_log_start = len(game.log)
    game.log.append(("hand_start", dealer, (), -1, hand_number))
    for i in range(1, game.n + 1):
        seat = (dealer + i) % game.n
        game.log.append(("deal", seat, tuple(codes[seat]), -1, 0))
    game.log.append(("turn_up", dealer, (top,), -1, 0))
    game.hand_number = hand_number
    game.dealer = dealer
    game.hands = codes
    game.stock = stock
    game.discard = [top]
    game.top_rank = top // 4 + 1
    game.suit = top & 3
    game.direction = 1
    game.count = 0
    game.ending = False
    game.king_left = 0
    game.penalty = [False] * game.n
    game.hand_pressures = [0] * game.n
    game._legal = None
    game._turned_up(dealer, game.top_rank, top)  # the engine's own rule 2
    return game


# Four players, hand 5 (four cards each), 3S turned up by seat 3: seat 0 plays first.
_OTHERS_4 = ["AD 4H JC QH", "5D 6C 2C KH", "4C 10D JH QD"]


def _four(bot: str, turn_up: str, dealer: int) -> Callable[[], GameState]:
    return lambda: dealt([bot, *_OTHERS_4], turn_up, dealer=dealer, hand_number=5)


# Two players, hand 4 (five cards each). The bot keeps an 8 (always playable outside a
# count) and the opponent has no 4, 6, 10 or 2, so the bot is surely asked again.
def _two_players() -> GameState:
    return dealt(["3H 5S 8S 10S KD", "AD JC QH 7D KH"], "3S", dealer=1, hand_number=4)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "ordinary-play",
        "ordinary play",
        "a card that matches the top card's rank 3 or its suit spades (rule 3.1)",
        _four("3H 10S KD 7C", "3S", dealer=3),
        seat=0,
        kind=DecisionKind.PLAY,
    ),
    Scenario(
        "play-eight",
        "play an 8, naming a suit",
        "the 8, with any suit named (rules 3.1, 3.3)",
        _four("8H KD 7C 4D", "3S", dealer=3),
        seat=0,
        kind=DecisionKind.PLAY,
    ),
    Scenario(
        "play-nine",
        "play a 9, naming a suit",
        "the 9, naming its own suit or the other suit of its colour (rule 3.3)",
        _four("9D KD 7C 5H", "3S", dealer=3),
        seat=0,
        kind=DecisionKind.PLAY,
    ),
    Scenario(
        "name-suit-eight",
        "dealer names a suit for a turned-up 8",
        "a suit, chosen without seeing the hand (hand_hidden, rule 2)",
        _four("3H 10S KD 7C", "8D", dealer=0),
        seat=0,
        kind=DecisionKind.NAME_SUIT,
    ),
    Scenario(
        "name-suit-nine",
        "dealer names a suit for a turned-up 9",
        "the 9's suit or its colour partner, chosen without seeing the hand (rule 2)",
        _four("3H 10S KD 7C", "9C", dealer=0),
        seat=0,
        kind=DecisionKind.NAME_SUIT,
    ),
    Scenario(
        "answer-count",
        "answer a count",
        "an ace or a 2 on the running count of 2 (rule 5.1)",
        _four("AC 2S 7D KS", "2H", dealer=3),
        seat=0,
        kind=DecisionKind.ANSWER_COUNT,
    ),
    Scenario(
        "play-again",
        "play again after a 6",
        "a card played on the 6 (rule 4.6)",
        _four("6S 10H 3D KS", "6H", dealer=0),
        seat=0,
        kind=DecisionKind.PLAY_AGAIN,
    ),
    Scenario(
        "one-card",
        "one-card announcement",
        'a play that leaves one card carries "+one-card" (rule 7.1)',
        lambda: dealt(["5S 3H", "AD 4H", "KD 7C"], "3S", dealer=2, hand_number=7),
        seat=0,
        kind=DecisionKind.PLAY,
    ),
    Scenario(
        "king-sequence",
        "king sequence (face cards)",
        "three cards in succession after the king, each by rule 3.1 (rule 6.3)",
        lambda: dealt(
            ["AC 3C 4C 7C 10C", "AD 4H JD QH 5D", "6D 2D KH 3H 9S", "4S 10D JH QD 5S"],
            "KC",
            dealer=0,
            hand_number=4,
            face_cards=True,
        ),
        seat=0,
        kind=DecisionKind.KING_SEQUENCE,
        focus=3,
    ),
    Scenario(
        "refused-answer",
        "answer again after a refusal",
        "after an ILLEGAL_ACTION error, a legal answer to the repeated request (same decision id)",
        _two_players,
        seat=0,
        kind=DecisionKind.PLAY,
        mode=Mode.REFUSE,
    ),
    Scenario(
        "late-answer",
        "carry on after a timeout",
        "after a TIMEOUT (and STALE_DECISION for the late answer), a legal answer to the next request",
        _two_players,
        seat=0,
        kind=DecisionKind.PLAY,
        mode=Mode.LATE,
        focus=2,
    ),
    Scenario(
        "whole-game",
        "a whole game (craits, 3 players, short_game)",
        "a legal answer to every request until GameEnd",
        lambda: new_game("craits", 3, seed=2026, short_game=True),
        seat=1,
        whole_game=True,
        focus=0,
    ),
    Scenario(
        "crazy-eights",
        "a whole game of the crazy-eights preset (2 players)",
        "a legal answer to every request until GameEnd (only 8s are wild; drawing keeps the turn)",
        lambda: new_game("crazy-eights", 2, seed=7),
        seat=0,
        whole_game=True,
        focus=0,
    ),
)
