"""The game of Craits as a state machine: whose decision, legal actions, apply.

Inside, cards are integers (see ``cards``), hands are lists of them and the
legal plays come from precomputed bitmask tables; the public methods speak in
typed values. A state advances in place (``apply``); ``clone`` copies it.
Randomness comes only from the game's own seeded generator.
"""

from __future__ import annotations

import enum
import functools
import hashlib
from dataclasses import dataclass

from .actions import (
    ACTIONS,
    DRAW_ID,
    MAX_ACTION_ID,
    Action,
    ActionKind,
    is_announced_play,
    play_action_id,
    suit_action_id,
)
from .cards import CARDS, Card, Rank, Suit
from .config import CRAZY_EIGHTS_MAX_HANDS, GameConfig, make_config
from .errors import IllegalActionError
from .rng import SplitMix64
from .scoring import craits_hand_score, crazy_eights_hand_points

_ACE, _TWO, _FOUR, _FIVE, _SIX, _SEVEN, _EIGHT, _NINE, _TEN, _JACK, _QUEEN, _KING = (
    1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
)
_SPADES = 3
_QUEEN_OF_SPADES = (_QUEEN - 1) * 4 + _SPADES
_COLOUR_PARTNER = (3, 2, 1, 0)  # clubs<->spades, diamonds<->hearts


def _mask(pred) -> int:  # type: ignore[no-untyped-def]
    return sum(1 << c for c in range(52) if pred(c // 4 + 1, c & 3))


# PLAYABLE[top_rank * 4 + current_suit]: card codes legal outside a count (rule 3.1).
_PLAYABLE_CRAITS = [0] * (14 * 4)
_PLAYABLE_EIGHTS = [0] * (14 * 4)
for _r in range(1, 14):
    for _s in range(4):
        _PLAYABLE_CRAITS[_r * 4 + _s] = _mask(lambda r, s: r == _r or s == _s or r in (8, 9))  # noqa: B023
        _PLAYABLE_EIGHTS[_r * 4 + _s] = _mask(lambda r, s: r == _r or s == _s or r == 8)  # noqa: B023
_COUNT_ANSWERS = _mask(lambda r, s: r in (1, 2))


class DecisionKind(enum.IntEnum):
    """What the player to act is being asked."""

    PLAY = 1
    """An ordinary turn: play a legal card, or draw one if none is legal."""
    ANSWER_COUNT = 2
    """A count runs: play an ace or a 2, or draw the count."""
    PLAY_AGAIN = 3
    """After a 6 (or a turned-up 6): play on it, or draw one card."""
    KING_SEQUENCE = 4
    """Face-card variant: one of the three cards a king demands."""
    NAME_SUIT = 5
    """The dealer names the suit of a turned-up 8 or 9 without seeing the hand."""
    PENALTY = 6
    """A turn forfeited for a missing "one card": draw two (and a running count)."""


@dataclass(frozen=True, slots=True)
class Decision:
    seat: int
    kind: DecisionKind


# The decision kinds as module globals: reading an enum member through its class costs
# about five times a global read, and the hot path reads several per decision.
_PLAY = DecisionKind.PLAY
_ANSWER_COUNT = DecisionKind.ANSWER_COUNT
_PLAY_AGAIN = DecisionKind.PLAY_AGAIN
_KING_SEQUENCE = DecisionKind.KING_SEQUENCE
_NAME_SUIT = DecisionKind.NAME_SUIT
_PENALTY = DecisionKind.PENALTY

_MAX_SEATS = 16
"""More than any preset allows (10); sizes the table of shared Decision values."""
_DECISIONS = tuple(tuple(Decision(seat, kind) for kind in (_PLAY, *DecisionKind)) for seat in range(_MAX_SEATS))
"""_DECISIONS[seat][kind]: Decision is a frozen value, so one instance per pair serves every query."""


def _play_ids(code: int, crazy: bool, announce: bool) -> tuple[int, ...]:
    """The sorted action ids that play card ``code`` when it is legal (rule 3.3 for 8s and 9s).

    Outside a count an 8 (and in Craits a 9) names a suit; in a count only aces and 2s are
    legal, so the named forms never arise there and one table serves every decision kind.
    """
    rank = code // 4 + 1
    if rank == _EIGHT or (rank == _NINE and not crazy):
        suits = range(4) if rank == _EIGHT else sorted((code & 3, _COLOUR_PARTNER[code & 3]))
        bases = [play_action_id(code, s) for s in suits]
    else:
        bases = [play_action_id(code)]
    return tuple(i for base in bases for i in ((base, base + 1) if announce else (base,)))


# Legal plays come from bitmasks: the hand's mask AND the playable mask, then for each set
# bit (a single-bit int, the key) the card's precomputed action ids, already in id order.
_IDS_CRAITS = {1 << c: _play_ids(c, False, False) for c in range(52)}
_IDS_CRAITS_ANNOUNCE = {1 << c: _play_ids(c, False, True) for c in range(52)}
_IDS_EIGHTS = {1 << c: _play_ids(c, True, False) for c in range(52)}

_FIRST_PLAY_ID = play_action_id(0)
# _DECODE[action id] = (card code, named suit or -1, announce, the card's bit, its rank, the suit
# in force after the play, the event's card tuple) for every play id: a play derives nothing.
_DECODE: list[tuple[int, int, int, int, int, int, tuple[int]]] = [(0, -1, 0, 1, 1, 0, (0,))] * (MAX_ACTION_ID + 1)
for _aid in range(_FIRST_PLAY_ID, MAX_ACTION_ID + 1):
    _code, _rest = divmod(_aid - _FIRST_PLAY_ID, 10)
    _named = _rest // 2 - 1
    _DECODE[_aid] = (_code, _named, _rest & 1, 1 << _code, _code // 4 + 1, _named if _named >= 0 else _code & 3, (_code,))

_BIT = tuple(1 << c for c in range(52))
"""_BIT[card]: the card's bit in a hand's mask. Most are big ints, so a lookup beats building one."""

_DRAWN_ONE = tuple(tuple(("draw", seat, (c,), -1, 0) for c in range(52)) for seat in range(_MAX_SEATS))
"""_DRAWN_ONE[seat][card]: the raw event of a one-card draw (immutable, so shared by every game)."""


def _plain_cards(face: bool) -> tuple[bool, ...]:
    """By card code: True if playing it (outside a count) has no function, so the turn just passes."""
    active = {_TWO, _FOUR, _FIVE, _SIX, _SEVEN, _TEN} | ({_JACK, _KING} if face else set())
    return tuple(
        c // 4 + 1 not in active and not (face and c == _QUEEN_OF_SPADES) for c in range(52)
    )


_PLAIN = _plain_cards(False)
_PLAIN_FACE = _plain_cards(True)


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened, as seen by a viewer.

    ``cards`` holds the cards involved when the viewer may see them (a draw or a
    deal shows cards only to the seat that received them); ``count`` is always
    the number of cards. ``value`` is kind-specific: the announcement flag of a
    play, the points of a pressure, the new direction of a reverse, the count's
    value, the hand number of a hand start.
    """

    kind: str
    seat: int
    cards: tuple[Card, ...]
    count: int
    suit: Suit | None
    value: int

    def __str__(self) -> str:
        who = f"seat {self.seat}" if self.seat >= 0 else "table"
        cards = " ".join(str(c) for c in self.cards)
        extra = f" {self.suit.word}" if self.suit is not None else ""
        if self.kind in ("draw", "deal"):
            return f"{who} {self.kind}s {cards or self.count}"
        return f"{who} {self.kind} {cards}{extra} {self.value if self.value else ''}".rstrip()


# Raw events are 5-tuples (kind, seat, card codes, suit or -1, value).
RawEvent = tuple[str, int, tuple[int, ...], int, int]
_PRIVATE_KINDS = frozenset(("deal", "draw"))


@functools.lru_cache(maxsize=8192)
def _event_repr(raw: RawEvent) -> str:
    """``repr`` of a raw event, for :meth:`GameState.digest`: a list's repr is its items' joined by ", "."""
    return repr(raw)


def event_view(raw: RawEvent, viewer: int | None) -> Event:
    """Turn a raw event into what ``viewer`` may see (None: the omniscient view)."""
    kind, seat, cards, suit, value = raw
    visible = viewer is None or kind not in _PRIVATE_KINDS or viewer == seat
    return Event(
        kind,
        seat,
        tuple(CARDS[c] for c in cards) if visible else (),
        len(cards),
        None if suit < 0 else Suit(suit),
        value,
    )


class _HandEnds(Exception):
    """Raised inside an action's resolution when the hand ends at once."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


@dataclass(frozen=True, slots=True)
class HandResult:
    number: int
    dealer: int
    reason: str
    scores: tuple[int, ...]
    """Points each seat scored this hand (cards left plus pressures)."""
    pressures: tuple[int, ...]
    """Pressure points each seat took this hand (already inside ``scores``)."""
    cards_left: tuple[tuple[Card, ...], ...]


@dataclass(frozen=True, slots=True)
class GameResult:
    totals: tuple[int, ...]
    placings: tuple[int, ...]
    """1 is best; equal totals share a place and the next is skipped (1, 1, 3)."""
    hands: tuple[HandResult, ...]
    pressures: tuple[int, ...]
    team_totals: tuple[int, ...] | None
    team_placings: tuple[int, ...] | None
    lower_wins: bool


def placings(totals: list[int] | tuple[int, ...], lower_wins: bool = True) -> tuple[int, ...]:
    """Competition ranking: 1 + the number of strictly better totals."""
    if lower_wins:
        return tuple(1 + sum(1 for o in totals if o < t) for t in totals)
    return tuple(1 + sum(1 for o in totals if o > t) for t in totals)


class GameState:
    """A whole game of Craits (or a preset of it), from the first dealer to the result."""

    # Slots rather than an instance dict: a game has more attributes than CPython's
    # shared-key instance dicts hold (30), and reads through a plain dict cost far more.
    __slots__ = (
        "_crazy",
        "_deck",
        "_digest",
        "_face",
        "_hand_log_start",
        "_hand_sizes",
        "_hands",
        "_held",
        "_ids",
        "_ids_announce",
        "_legal",
        "_next_pressure",
        "_partnerships",
        "_plain",
        "_playable",
        "_rng",
        "_seven_next",
        "_twice",
        "_voluntary",
        "config",
        "count",
        "dealer",
        "dealer_suits",
        "decisions",
        "direction",
        "discard",
        "ending",
        "game_over",
        "hand_number",
        "hand_pressures",
        "hand_results",
        "kind",
        "king_left",
        "log",
        "n",
        "penalty",
        "pressure_totals",
        "seed",
        "stock",
        "suit",
        "to_act",
        "top_rank",
        "totals",
    )

    def __init__(self, config: GameConfig, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.n = config.players
        self._rng = SplitMix64(seed)
        self._crazy = config.crazy_eights
        self._face = config.flags.face_cards
        self._voluntary = config.flags.voluntary_draw
        self._seven_next = config.flags.seven_hits == "next" or self.n <= 3
        self._partnerships = config.partnerships
        self._deck = config.deck_cards
        self._hand_sizes = config.hand_sizes
        self._playable = _PLAYABLE_EIGHTS if self._crazy else _PLAYABLE_CRAITS
        self._plain = _PLAIN_FACE if self._face else _PLAIN
        self._ids = _IDS_EIGHTS if self._crazy else _IDS_CRAITS
        # Crazy eights has no "one card": its plays never take the announced form.
        self._ids_announce = _IDS_EIGHTS if self._crazy else _IDS_CRAITS_ANNOUNCE
        self.log: list[RawEvent] = []
        self._hands: list[list[int]] = [[] for _ in range(self.n)]
        # Each hand also as bitmasks: bit c of _held[seat] is set if the seat holds card c,
        # bit c of _twice[seat] if it holds a second copy (two decks). Kept in step with _hands.
        self._held = [0] * self.n
        self._twice = [0] * self.n
        self.stock: list[int] = []
        self.discard: list[int] = []
        self.top_rank = 0
        self.suit = 0
        self.direction = 1
        self.count = 0
        self.to_act = 0
        self.kind = _PLAY
        self.king_left = 0
        self.dealer_suits: tuple[int, ...] = ()
        self.hand_number = 0
        self.totals = [0] * self.n
        self.hand_results: list[HandResult] = []
        self.hand_pressures = [0] * self.n
        self.pressure_totals = [0] * self.n
        keys = 2 if config.partnerships else self.n
        self._next_pressure = [5] * keys
        self.penalty = [False] * self.n
        self.ending = False
        self.game_over = False
        self.decisions = 0
        self._hand_log_start = 0
        self._legal: list[int] | None = None
        self._digest: tuple[list[RawEvent] | None, int, str] = (None, 0, "")
        self.dealer = self._choose_first_dealer()
        self._start_hand()

    # ------------------------------------------------------------------ queries

    @property
    def decision(self) -> Decision | None:
        """Whose decision it is and of what kind; None once the game is over."""
        if self.game_over:
            return None
        return _DECISIONS[self.to_act][self.kind]

    def legal_action_ids(self) -> list[int]:
        """The legal action ids at this decision, sorted (empty once the game is over).

        Computed once per decision and cached until the next ``apply``. Every driver calls
        this once per decision, so the computation is written out here rather than in a
        helper call (``_compute_legal`` recomputes through it).
        """
        legal = self._legal
        if legal is not None:
            return legal
        if self.game_over:
            legal = self._legal = []
            return legal
        kind = self.kind
        p = self.to_act
        if kind is _PLAY:  # by far the commonest kind, so tested first
            playable = self._held[p] & self._playable[self.top_rank * 4 + self.suit]
        elif kind is _ANSWER_COUNT:
            playable = self._held[p] & _COUNT_ANSWERS
        elif kind is _NAME_SUIT:
            legal = self._legal = [suit_action_id(s) for s in self.dealer_suits]
            return legal
        elif kind is _PENALTY:
            legal = self._legal = [DRAW_ID]
            return legal
        else:  # play again after a 6, or a card of a king's sequence
            playable = self._held[p] & self._playable[self.top_rank * 4 + self.suit]
        if not playable:  # draw, unless crazy eights' stock is empty
            legal = self._legal = [] if self._crazy and not self.stock else [DRAW_ID]
            return legal
        # With a legal play, a draw is allowed only by crazy eights (while the stock lasts)
        # and the voluntary-draw flag. A play that leaves one card may carry "one card" (rule 7.1).
        draw = self.stock if self._crazy else self._voluntary
        table = self._ids_announce if len(self._hands[p]) == 2 else self._ids
        if not playable & (playable - 1):  # one playable card (the commonest case): no loop
            legal = self._legal = [DRAW_ID, *table[playable]] if draw else list(table[playable])
            return legal
        legal = self._legal = [DRAW_ID] if draw else []
        while playable:  # set bits from the lowest card up: ids come out sorted
            low = playable & -playable
            legal += table[low]
            playable ^= low
        return legal

    def legal_actions(self) -> list[Action]:
        return [ACTIONS[i] for i in self.legal_action_ids()]  # type: ignore[misc]

    @property
    def hands(self) -> list[list[int]]:
        """Each seat's card codes, in the order received.

        To change a hand from outside, assign a whole new list of lists: the engine keeps
        bitmasks of the hands in step, and assigning here rebuilds them.
        """
        return self._hands

    @hands.setter
    def hands(self, hands: list[list[int]]) -> None:
        self._hands = hands
        self._held = [0] * len(hands)
        self._twice = [0] * len(hands)
        for seat, hand in enumerate(hands):
            self._hold(seat, hand)

    def _hold(self, seat: int, cards: list[int]) -> None:
        """Set the bitmask bits of ``cards`` just added to ``seat``'s hand."""
        held = self._held[seat]
        new = sum(map(_BIT.__getitem__, cards))
        if not held & new and new.bit_count() == len(cards):
            # No card twice (always so with one deck): the sum of the bits is their union.
            self._held[seat] = held | new
            return
        twice = self._twice[seat]
        for c in cards:
            bit = _BIT[c]
            if held & bit:
                twice |= bit
            else:
                held |= bit
        self._held[seat] = held
        self._twice[seat] = twice

    @property
    def hand_events(self) -> list[RawEvent]:
        """Raw events of the hand in play (or of the last hand, once the game is over)."""
        return self.log[self._hand_log_start :]

    @property
    def hand_log_start(self) -> int:
        """The log index of the hand in play's first event (``hand_events`` without the copy)."""
        return self._hand_log_start

    def hand_of(self, seat: int) -> tuple[Card, ...]:
        return tuple([CARDS[c] for c in sorted(self._hands[seat])])

    @property
    def top_card(self) -> Card:
        return CARDS[self.discard[-1]]

    def digest(self) -> str:
        """A hash of the whole event log (SHA-256 of ``repr(log)``): equal games have equal digests.

        Kept until the log grows (it only grows), and written from each event's cached text:
        the referee, its replay and the store each ask for it at a game's end, and most events
        recur in every game."""
        log = self.log
        kept_log, kept_length, kept = self._digest
        if kept_log is log and kept_length == len(log):
            return kept
        try:
            text = "[" + ", ".join(map(_event_repr, log)) + "]"
        except TypeError:  # an event that is not hashable (not the engine's own): as it was
            text = repr(log)
        value = hashlib.sha256(text.encode()).hexdigest()
        self._digest = (log, len(log), value)
        return value

    def result(self) -> GameResult:
        """Totals and placings so far (final once ``game_over``)."""
        lower = not self._crazy
        team_totals = team_placings = None
        if self.config.partnerships:
            team_totals = (self.totals[0] + self.totals[2], self.totals[1] + self.totals[3])
            team_placings = placings(team_totals, lower)
            seat_placings = tuple(team_placings[s % 2] for s in range(self.n))
        else:
            seat_placings = placings(self.totals, lower)
        return GameResult(
            tuple(self.totals),
            seat_placings,
            tuple(self.hand_results),
            tuple(self.pressure_totals),
            team_totals,
            team_placings,
            lower,
        )

    def clone(self) -> GameState:
        other = object.__new__(GameState)
        for name in GameState.__slots__:
            setattr(other, name, getattr(self, name))
        other._hands = [list(h) for h in self._hands]
        other._held = list(self._held)
        other._twice = list(self._twice)
        other.stock = list(self.stock)
        other.discard = list(self.discard)
        other.log = list(self.log)
        other.totals = list(self.totals)
        other.hand_results = list(self.hand_results)
        other.hand_pressures = list(self.hand_pressures)
        other.pressure_totals = list(self.pressure_totals)
        other._next_pressure = list(self._next_pressure)
        other.penalty = list(self.penalty)
        other._rng = SplitMix64(0)
        other._rng.setstate(self._rng.getstate())
        return other

    # ------------------------------------------------------------------ applying

    def apply(self, action: Action | int) -> None:
        """Apply a legal action (an Action or its id) and advance to the next decision.

        Raises IllegalActionError, leaving the state unchanged, if it is not legal now.
        """
        if isinstance(action, int):
            aid = action
        elif isinstance(action, Action):
            aid = action.id
        else:
            raise TypeError(f"apply takes an Action or an action id (int), not {action!r}")
        legal = self._legal
        if legal is None:
            legal = self.legal_action_ids()
        if aid not in legal:
            # Rule 7.1: "one card" on a play that does not leave one card is ignored, not refused.
            if is_announced_play(aid) and aid - 1 in legal:
                aid -= 1
            else:
                raise self._illegal(aid, legal)
        self._legal = None
        self.decisions += 1
        try:
            if aid >= _FIRST_PLAY_ID:  # the legal list vouches for the rest: a play, a draw or a suit
                self._play(self.to_act, aid)
            elif aid:  # DRAW_ID is 0
                self._name_suit(self.to_act, aid)
            else:
                self._apply_draw(self.to_act, self.kind)
        except _HandEnds as end:
            self._finish_hand(end.reason)

    def _illegal(self, aid: int, legal: list[int]) -> IllegalActionError:
        texts = [str(ACTIONS[i]) for i in legal]
        if self.game_over:
            return IllegalActionError("the game is over", "1.3", texts)
        if not (isinstance(aid, int) and 0 <= aid < len(ACTIONS)) or ACTIONS[aid] is None:
            return IllegalActionError(f"no action has id {aid!r}", "3", texts)
        act = ACTIONS[aid]
        assert act is not None
        what = f"{act} by seat {self.to_act}"
        kind = self.kind
        if kind is DecisionKind.NAME_SUIT:
            if act.kind is ActionKind.NAME_SUIT:
                return IllegalActionError(f"{what}: a turned-up 9 allows only its suit or its colour partner", "2", texts)
            return IllegalActionError(f"{what}: the dealer must name a suit for the turned-up card", "2", texts)
        if act.kind is ActionKind.NAME_SUIT:
            return IllegalActionError(f"{what}: a suit is named only with the 8 or 9 played", "3.3", texts)
        if kind is DecisionKind.PENALTY:
            return IllegalActionError(f"{what}: this turn is forfeited for a missing 'one card'", "7.1", texts)
        if act.kind is ActionKind.DRAW:
            rule = "10" if self._crazy else "3.2"
            return IllegalActionError(f"{what}: a player with a legal play must play", rule, texts)
        assert act.card is not None
        code = act.card.code
        if code not in self._hands[self.to_act]:
            return IllegalActionError(f"{what}: {act.card} is not in the hand", "3", texts)
        if kind is DecisionKind.ANSWER_COUNT:
            return IllegalActionError(f"{what}: a count is answered only with an ace or a 2", "5.1", texts)
        if act.card.rank == Rank.NINE and self._crazy and act.suit is not None:
            return IllegalActionError(f"{what}: in crazy eights only 8s are wild; a 9 names no suit", "10", texts)
        if act.card.rank == Rank.NINE and not self._crazy and act.suit is None:
            return IllegalActionError(f"{what}: a 9 names its own suit or the other suit of its colour", "3.3", texts)
        if (
            act.card.rank == Rank.NINE
            and act.suit is not None
            and act.suit is not act.card.suit
            and int(act.suit) != _COLOUR_PARTNER[act.card.suit]
        ):
            return IllegalActionError(f"{what}: a 9 names its own suit or the other suit of its colour", "3.3", texts)
        return IllegalActionError(
            f"{what}: does not match the rank {Rank(self.top_rank).symbol} or the suit {Suit(self.suit).word}",
            "3.1",
            texts,
        )

    def _name_suit(self, p: int, aid: int) -> None:
        self.suit = aid - 1
        self.log.append(("name_suit", p, (), self.suit, 0))
        self._begin_turn(self._next(p))

    def _apply_draw(self, p: int, kind: DecisionKind) -> None:
        if self._crazy:
            self._draw(p, 1)
            self._begin_turn(p)  # crazy eights: keep drawing or play
            return
        if kind is not _PENALTY and kind is not _ANSWER_COUNT:
            # No legal play (or a voluntary draw): one card and the turn (and any king
            # sequence) ends.
            self._draw(p, 1)
            self._begin_turn((p + self.direction) % self.n)
            return
        if kind is _PENALTY:
            self.penalty[p] = False
            self.log.append(("forfeit", p, (), -1, 0))
            self._draw(p, 2)
            if self.count:
                self._draw_count(p)
                return
            self._begin_turn(self._next(p))
            return
        self._draw_count(p)  # answering a count

    def _draw_count(self, p: int) -> None:
        n, self.count = self.count, 0
        self._draw(p, n)
        if self.ending:
            raise _HandEnds("count drawn after a player went out")
        self._begin_turn(self._next(p))

    def _play(self, p: int, aid: int) -> None:
        code, named, announce, bit, rank, suit, cards = _DECODE[aid]
        hand = self._hands[p]
        hand.remove(code)
        twice = self._twice
        if twice[p] and twice[p] & bit:  # one deck: twice[p] is 0, so no big-int op
            twice[p] ^= bit
        else:
            self._held[p] ^= bit
        self.discard.append(code)
        self.top_rank = rank
        self.suit = suit
        log = self.log
        log.append(("play", p, cards, named, announce))
        if self._crazy:
            if not hand:
                raise _HandEnds("out")
            self._begin_turn((p + self.direction) % self.n)
            return
        left = len(hand)
        if left == 1 and not announce:
            self.penalty[p] = True
            log.append(("missed_announcement", p, (), -1, 0))
        kind = self.kind
        if kind is _ANSWER_COUNT:
            self.count += 1 if rank == _ACE else 2
            log.append(("count", p, (), -1, self.count))
            if not left:
                self.ending = True
            self._begin_turn((p + self.direction) % self.n)
            return
        if kind is _KING_SEQUENCE and self.king_left > 1:
            self.king_left -= 1  # the first two cards of a king's three have no function
            if not left:
                raise _HandEnds("out")
            return
        if self._plain[code]:  # a card without a function: the turn passes
            if not left:
                raise _HandEnds("out")
            self._begin_turn((p + self.direction) % self.n)
            return
        self._resolve(p, rank, code, not left)

    def _resolve(self, p: int, rank: int, code: int, empty: bool) -> None:
        """Apply a card's function (section 4, and 6 for face cards), then pass the turn."""
        if rank == _TWO:
            self.count = 2
            self.log.append(("count", p, (), -1, 2))
            if empty:
                self.ending = True
            self._begin_turn(self._next(p))
            return
        if rank == _SIX:
            if empty:  # a Cooper: draw one, the turn passes, the hand goes on
                self.log.append(("cooper", p, (), -1, 0))
                self._draw(p, 1)
                self._begin_turn(self._next(p))
                return
            self.kind = _PLAY_AGAIN
            self.to_act = p
            return
        if rank == _KING and self._face:
            if empty:
                raise _HandEnds("out")
            self.kind = _KING_SEQUENCE
            self.king_left = 3
            self.to_act = p
            return
        target = self._after_card(p, rank, code)
        if empty:
            raise _HandEnds("out")
        self._begin_turn(target)

    def _after_card(self, p: int, rank: int, code: int) -> int:
        """Effects on other players of a 4, 5, 7, 10, J or Q of spades; returns who acts next."""
        # self._next inlined: one and two seats on in the direction of play
        step = self.direction
        n = self.n
        nxt = (p + step) % n
        if rank == _FOUR:
            self.log.append(("skip", nxt, (), -1, 0))
            return (p + 2 * step) % n
        if rank == _FIVE:
            for i in range(1, n):
                self._draw((p + i * step) % n, 1)
            return nxt
        if rank == _SEVEN:
            self._draw(nxt if self._seven_next else (p + 2 * step) % n, 1)
            return nxt
        if rank == _TEN:
            self.direction = -step
            self.log.append(("reverse", p, (), -1, -step))
            return (p - step) % n
        if self._face and rank == _JACK:
            run = 0
            for c in reversed(self.discard):
                if c // 4 + 1 != _JACK:
                    break
                run += 1
            self._draw(nxt, 2 * run)
            self.log.append(("forfeit", nxt, (), -1, 0))
            return (p + 2 * step) % n
        if self._face and code == _QUEEN_OF_SPADES:
            self._draw(nxt, 5)
            self.log.append(("forfeit", nxt, (), -1, 0))
            return (p + 2 * step) % n
        return nxt

    def _next(self, seat: int, steps: int = 1) -> int:
        return (seat + self.direction * steps) % self.n

    def _begin_turn(self, p: int) -> None:
        self.to_act = p
        self.kind = _ANSWER_COUNT if self.count else _PLAY
        if self.penalty[p]:
            if self._partnerships:
                self.penalty[p] = False
                self.log.append(("penalty_draw", p, (), -1, 0))
                self._draw(p, 2)
            else:
                self.kind = _PENALTY
        # Crazy eights with an empty stock: no legal play ends the hand. A turn begins last in
        # every action, so the legal list computed here is the next decision's and stays cached.
        if self._crazy and not self.stock and not self._compute_legal():
            raise _HandEnds("blocked")

    # ------------------------------------------------------------------ drawing

    def _draw(self, seat: int, n: int) -> None:
        """Draw ``n`` cards, reshuffling (with a pressure) whenever the stock runs out."""
        stock = self.stock
        if n == 1 and stock:  # the common case, without the reshuffle machinery
            c = stock.pop()
            self._hands[seat].append(c)
            bit = _BIT[c]
            held = self._held
            if held[seat] & bit:
                self._twice[seat] |= bit
            else:
                held[seat] |= bit
            self.log.append(_DRAWN_ONE[seat][c])
            return
        if 0 < n <= len(stock):  # enough cards: take them all at once, in the order popped
            got = stock[: -n - 1 : -1]
            del stock[-n:]
            self._hands[seat].extend(got)
            self._hold(seat, got)
            self.log.append(("draw", seat, tuple(got), -1, 0))
            return
        got = []
        try:
            for _ in range(n):
                if not self.stock:
                    self._reshuffle(seat)
                got.append(self.stock.pop())
        finally:
            if got or n:
                self._hands[seat].extend(got)
                self._hold(seat, got)
                self.log.append(("draw", seat, tuple(got), -1, 0))

    def _reshuffle(self, seat: int) -> None:
        key = seat % 2 if self._partnerships else seat  # pressure doubles per team in partnerships
        points = self._next_pressure[key]
        self._next_pressure[key] = points * 2
        self.hand_pressures[seat] += points
        self.pressure_totals[seat] += points
        self.log.append(("pressure", seat, (), -1, points))
        if len(self.discard) <= 1:
            raise _HandEnds("nothing to reshuffle")
        top = self.discard.pop()
        self.stock = self.discard
        self._rng.shuffle(self.stock)
        self.discard = [top]
        self.log.append(("reshuffle", seat, (), -1, len(self.stock)))

    # ------------------------------------------------------------------ legal actions

    def _compute_legal(self) -> list[int]:
        """The legal ids of the state as it is now, computed afresh (and cached)."""
        self._legal = None
        return self.legal_action_ids()

    # ------------------------------------------------------------------ hands

    def _choose_first_dealer(self) -> int:
        """Lowest card deals (2 lowest, ace highest); ties draw again (rule 1.2)."""
        pack: list[int] = []
        candidates = list(range(self.n))
        while True:
            drawn: list[tuple[int, int]] = []
            for seat in candidates:
                if not pack:
                    pack = list(self._deck)
                    self._rng.shuffle(pack)
                card = pack.pop()
                self.log.append(("dealer_draw", seat, (card,), -1, 0))
                rank = card // 4 + 1
                drawn.append((14 if rank == _ACE else rank, seat))
            low = min(r for r, _ in drawn)
            candidates = [seat for r, seat in drawn if r == low]
            if len(candidates) == 1:
                return candidates[0]

    def _start_hand(self) -> None:
        while True:
            try:
                self._deal_and_turn_up()
                return
            except _HandEnds as end:
                if self._close_hand(end.reason):
                    return

    def _deal_and_turn_up(self) -> None:
        self.hand_number += 1
        self._hand_log_start = len(self.log)
        self._legal = None
        n, d = self.n, self.dealer
        size = self._hand_sizes[0 if self._crazy else self.hand_number - 1]
        self.log.append(("hand_start", d, (), -1, self.hand_number))
        stock = self.stock = list(self._deck)
        self._rng.shuffle(stock)
        # One card at a time from the top of the stock (its end), starting left of the dealer:
        # the k-th card off the stock goes to the (k % n + 1)-th seat after the dealer.
        dealt = stock[len(stock) - size * n :]
        del stock[len(stock) - size * n :]
        dealt.reverse()
        hands: list[list[int]] = [[] for _ in range(n)]
        for i in range(1, n + 1):
            hands[(d + i) % n] = dealt[i - 1 :: n]
        self.hands = hands
        for i in range(1, n + 1):
            seat = (d + i) % n
            self.log.append(("deal", seat, tuple(hands[seat]), -1, 0))
        self.direction = 1
        self.count = 0
        self.ending = False
        self.king_left = 0
        self.penalty = [False] * n
        self.hand_pressures = [0] * n
        code = stock.pop()
        self.discard = [code]
        rank = code // 4 + 1
        self.top_rank = rank
        self.suit = code & 3
        self.log.append(("turn_up", d, (code,), -1, 0))
        self._turned_up(d, rank, code)

    def _turned_up(self, d: int, rank: int, code: int) -> None:
        """The turned-up card counts as played by the dealer (section 2)."""
        if rank == _EIGHT or (rank == _NINE and not self._crazy):
            self.dealer_suits = tuple(range(4)) if rank == _EIGHT else tuple(sorted((code & 3, _COLOUR_PARTNER[code & 3])))
            self.to_act = d
            self.kind = _NAME_SUIT
            return
        if self._crazy:
            self._begin_turn(self._next(d))
            return
        if rank == _TWO:
            self.count = 2
            self.log.append(("count", d, (), -1, 2))
            self._begin_turn(self._next(d))
        elif rank == _SIX:
            self.to_act = d
            self.kind = _PLAY_AGAIN
        elif rank == _KING and self._face:
            self.to_act = d
            self.kind = _KING_SEQUENCE
            self.king_left = 3
        else:
            self._begin_turn(self._after_card(d, rank, code))

    def _finish_hand(self, reason: str) -> None:
        if not self._close_hand(reason):
            self._start_hand()

    def _close_hand(self, reason: str) -> bool:
        """Score the hand; return True if the game is now over."""
        self._legal = None
        hands = self._hands
        if self._crazy:
            points = [crazy_eights_hand_points(h) for h in hands]
            scores = [0] * self.n
            if reason == "blocked":
                low = min(points)
                for seat in range(self.n):
                    if points[seat] == low:
                        scores[seat] = sum(p - low for p in points)
            else:
                winner = next(s for s in range(self.n) if not hands[s])
                scores[winner] = sum(points)
        else:
            scores = [craits_hand_score(h) + self.hand_pressures[s] for s, h in enumerate(hands)]
        for seat in range(self.n):
            self.totals[seat] += scores[seat]
        self.hand_results.append(
            HandResult(
                self.hand_number,
                self.dealer,
                reason,
                tuple(scores),
                tuple(self.hand_pressures),
                tuple(self.hand_of(s) for s in range(self.n)),
            )
        )
        self.log.append(("hand_end", -1, (), -1, self.hand_number))
        self.dealer = (self.dealer + 1) % self.n
        if self._crazy:
            over = max(self.totals) >= self.config.crazy_eights_target or self.hand_number >= CRAZY_EIGHTS_MAX_HANDS
        else:
            over = self.hand_number >= len(self._hand_sizes)
        if over:
            self.game_over = True
            self.log.append(("game_end", -1, (), -1, 0))
        return over


def new_game(preset: str = "craits", players: int = 4, seed: int = 0, **flags: object) -> GameState:
    """Start a game from a preset name, the number of seats, flags and one seed."""
    return GameState(make_config(preset, players, **flags), seed)
