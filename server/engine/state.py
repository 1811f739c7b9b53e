"""The game of Craits as a state machine: whose decision, legal actions, apply.

Inside, cards are integers (see ``cards``), hands are lists of them and the
legal plays come from precomputed bitmask tables; the public methods speak in
typed values. A state advances in place (``apply``); ``clone`` copies it.
Randomness comes only from the game's own seeded generator.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass

from .actions import ACTIONS, DRAW_ID, Action, ActionKind, is_announced_play, play_action_id, suit_action_id
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

    def __init__(self, config: GameConfig, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.n = config.players
        self._rng = SplitMix64(seed)
        self._crazy = config.crazy_eights
        self._face = config.flags.face_cards
        self._voluntary = config.flags.voluntary_draw
        self._seven_next = config.flags.seven_hits == "next" or self.n <= 3
        self._playable = _PLAYABLE_EIGHTS if self._crazy else _PLAYABLE_CRAITS
        self.log: list[RawEvent] = []
        self.hands: list[list[int]] = [[] for _ in range(self.n)]
        self.stock: list[int] = []
        self.discard: list[int] = []
        self.top_rank = 0
        self.suit = 0
        self.direction = 1
        self.count = 0
        self.to_act = 0
        self.kind = DecisionKind.PLAY
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
        self.dealer = self._choose_first_dealer()
        self._start_hand()

    # ------------------------------------------------------------------ queries

    @property
    def decision(self) -> Decision | None:
        """Whose decision it is and of what kind; None once the game is over."""
        if self.game_over:
            return None
        return Decision(self.to_act, self.kind)

    def legal_action_ids(self) -> list[int]:
        """The legal action ids at this decision, sorted (empty once the game is over)."""
        if self._legal is None:
            self._legal = self._compute_legal()
        return self._legal

    def legal_actions(self) -> list[Action]:
        return [ACTIONS[i] for i in self.legal_action_ids()]  # type: ignore[misc]

    @property
    def hand_events(self) -> list[RawEvent]:
        """Raw events of the hand in play (or of the last hand, once the game is over)."""
        return self.log[self._hand_log_start :]

    def hand_of(self, seat: int) -> tuple[Card, ...]:
        return tuple(CARDS[c] for c in sorted(self.hands[seat]))

    @property
    def top_card(self) -> Card:
        return CARDS[self.discard[-1]]

    def digest(self) -> str:
        """A hash of the whole event log: equal games have equal digests."""
        return hashlib.sha256(repr(self.log).encode()).hexdigest()

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
        for name, value in self.__dict__.items():
            setattr(other, name, value)
        other.hands = [list(h) for h in self.hands]
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
            self._apply(aid)
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
        if code not in self.hands[self.to_act]:
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

    def _apply(self, aid: int) -> None:
        p = self.to_act
        kind = self.kind
        if kind is DecisionKind.NAME_SUIT:
            self.suit = aid - 1
            self.log.append(("name_suit", p, (), self.suit, 0))
            self._begin_turn(self._next(p))
            return
        if aid == DRAW_ID:
            self._apply_draw(p, kind)
            return
        body = aid - 8
        code, rest = divmod(body, 10)
        named = rest // 2 - 1
        announce = rest & 1
        self._play(p, code, named, announce)

    def _apply_draw(self, p: int, kind: DecisionKind) -> None:
        if self._crazy:
            self._draw(p, 1)
            self._begin_turn(p)  # crazy eights: keep drawing or play
            return
        if kind is DecisionKind.PENALTY:
            self.penalty[p] = False
            self.log.append(("forfeit", p, (), -1, 0))
            self._draw(p, 2)
            if self.count:
                self._draw_count(p)
                return
            self._begin_turn(self._next(p))
            return
        if kind is DecisionKind.ANSWER_COUNT:
            self._draw_count(p)
            return
        # no legal play (or a voluntary draw): one card and the turn (and any king sequence) ends
        self._draw(p, 1)
        self._begin_turn(self._next(p))

    def _draw_count(self, p: int) -> None:
        n, self.count = self.count, 0
        self._draw(p, n)
        if self.ending:
            raise _HandEnds("count drawn after a player went out")
        self._begin_turn(self._next(p))

    def _play(self, p: int, code: int, named: int, announce: int) -> None:
        hand = self.hands[p]
        hand.remove(code)
        self.discard.append(code)
        rank = code // 4 + 1
        self.top_rank = rank
        self.suit = named if named >= 0 else code & 3
        self.log.append(("play", p, (code,), named, announce))
        if len(hand) == 1 and not announce and not self._crazy:
            self.penalty[p] = True
            self.log.append(("missed_announcement", p, (), -1, 0))
        if self._crazy:
            if not hand:
                raise _HandEnds("out")
            self._begin_turn(self._next(p))
            return
        kind = self.kind
        if kind is DecisionKind.ANSWER_COUNT:
            self.count += 1 if rank == _ACE else 2
            self.log.append(("count", p, (), -1, self.count))
            if not hand:
                self.ending = True
            self._begin_turn(self._next(p))
            return
        if kind is DecisionKind.KING_SEQUENCE and self.king_left > 1:
            self.king_left -= 1  # the first two cards of a king's three have no function
            if not hand:
                raise _HandEnds("out")
            return
        self._resolve(p, rank, code, empty=not hand)

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
            self.kind = DecisionKind.PLAY_AGAIN
            self.to_act = p
            return
        if rank == _KING and self._face:
            if empty:
                raise _HandEnds("out")
            self.kind = DecisionKind.KING_SEQUENCE
            self.king_left = 3
            self.to_act = p
            return
        target = self._after_card(p, rank, code)
        if empty:
            raise _HandEnds("out")
        self._begin_turn(target)

    def _after_card(self, p: int, rank: int, code: int) -> int:
        """Effects on other players of a 4, 5, 7, 10, J or Q of spades; returns who acts next."""
        nxt = self._next(p)
        if rank == _FOUR:
            self.log.append(("skip", nxt, (), -1, 0))
            return self._next(p, 2)
        if rank == _FIVE:
            for i in range(1, self.n):
                self._draw(self._next(p, i), 1)
            return nxt
        if rank == _SEVEN:
            self._draw(nxt if self._seven_next else self._next(p, 2), 1)
            return nxt
        if rank == _TEN:
            self.direction = -self.direction
            self.log.append(("reverse", p, (), -1, self.direction))
            return self._next(p)
        if self._face and rank == _JACK:
            run = 0
            for c in reversed(self.discard):
                if c // 4 + 1 != _JACK:
                    break
                run += 1
            self._draw(nxt, 2 * run)
            self.log.append(("forfeit", nxt, (), -1, 0))
            return self._next(p, 2)
        if self._face and code == _QUEEN_OF_SPADES:
            self._draw(nxt, 5)
            self.log.append(("forfeit", nxt, (), -1, 0))
            return self._next(p, 2)
        return nxt

    def _next(self, seat: int, steps: int = 1) -> int:
        return (seat + self.direction * steps) % self.n

    def _begin_turn(self, p: int) -> None:
        self.to_act = p
        if self.count:
            self.kind = DecisionKind.ANSWER_COUNT
        else:
            self.kind = DecisionKind.PLAY
        if self.penalty[p]:
            if self.config.partnerships:
                self.penalty[p] = False
                self.log.append(("penalty_draw", p, (), -1, 0))
                self._draw(p, 2)
            else:
                self.kind = DecisionKind.PENALTY
        if self._crazy and not self.stock and not self._compute_legal():
            raise _HandEnds("blocked")

    # ------------------------------------------------------------------ drawing

    def _draw(self, seat: int, n: int) -> None:
        """Draw ``n`` cards, reshuffling (with a pressure) whenever the stock runs out."""
        got: list[int] = []
        try:
            for _ in range(n):
                if not self.stock:
                    self._reshuffle(seat)
                got.append(self.stock.pop())
        finally:
            if got or n:
                self.hands[seat].extend(got)
                self.log.append(("draw", seat, tuple(got), -1, 0))

    def _reshuffle(self, seat: int) -> None:
        key = self.config.team_of(seat)
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
        if self.game_over:
            return []
        kind = self.kind
        if kind is DecisionKind.NAME_SUIT:
            return [suit_action_id(s) for s in self.dealer_suits]
        if kind is DecisionKind.PENALTY:
            return [DRAW_ID]
        hand = self.hands[self.to_act]
        if kind is DecisionKind.ANSWER_COUNT:
            ok = _COUNT_ANSWERS
        else:
            ok = self._playable[self.top_rank * 4 + self.suit]
        cards = sorted({c for c in hand if ok >> c & 1})
        announce = len(hand) == 2 and not self._crazy
        ids: list[int] = []
        if self._crazy:
            if self.stock:
                ids.append(DRAW_ID)
        elif not cards or self._voluntary:
            ids.append(DRAW_ID)
        for c in cards:
            rank = c // 4 + 1
            if kind is not DecisionKind.ANSWER_COUNT and (rank == _EIGHT or (rank == _NINE and not self._crazy)):
                suits = range(4) if rank == _EIGHT else sorted((c & 3, _COLOUR_PARTNER[c & 3]))
                for s in suits:
                    base = play_action_id(c, s)
                    ids.append(base)
                    if announce:
                        ids.append(base + 1)
            else:
                base = play_action_id(c)
                ids.append(base)
                if announce:
                    ids.append(base + 1)
        return ids

    # ------------------------------------------------------------------ hands

    def _choose_first_dealer(self) -> int:
        """Lowest card deals (2 lowest, ace highest); ties draw again (rule 1.2)."""
        pack: list[int] = []
        candidates = list(range(self.n))
        while True:
            drawn: list[tuple[int, int]] = []
            for seat in candidates:
                if not pack:
                    pack = list(self.config.deck_cards)
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
        size = self.config.hand_sizes[0 if self._crazy else self.hand_number - 1]
        self.log.append(("hand_start", d, (), -1, self.hand_number))
        self.stock = list(self.config.deck_cards)
        self._rng.shuffle(self.stock)
        self.hands = [[] for _ in range(n)]
        for _ in range(size):
            for i in range(1, n + 1):
                self.hands[(d + i) % n].append(self.stock.pop())
        for i in range(1, n + 1):
            seat = (d + i) % n
            self.log.append(("deal", seat, tuple(self.hands[seat]), -1, 0))
        self.direction = 1
        self.count = 0
        self.ending = False
        self.king_left = 0
        self.penalty = [False] * n
        self.hand_pressures = [0] * n
        code = self.stock.pop()
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
            self.kind = DecisionKind.NAME_SUIT
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
            self.kind = DecisionKind.PLAY_AGAIN
        elif rank == _KING and self._face:
            self.to_act = d
            self.kind = DecisionKind.KING_SEQUENCE
            self.king_left = 3
        else:
            self._begin_turn(self._after_card(d, rank, code))

    def _finish_hand(self, reason: str) -> None:
        if not self._close_hand(reason):
            self._start_hand()

    def _close_hand(self, reason: str) -> bool:
        """Score the hand; return True if the game is now over."""
        self._legal = None
        if self._crazy:
            points = [crazy_eights_hand_points(h) for h in self.hands]
            scores = [0] * self.n
            if reason == "blocked":
                low = min(points)
                for seat in range(self.n):
                    if points[seat] == low:
                        scores[seat] = sum(p - low for p in points)
            else:
                winner = next(s for s in range(self.n) if not self.hands[s])
                scores[winner] = sum(points)
        else:
            scores = [craits_hand_score(h) + self.hand_pressures[s] for s, h in enumerate(self.hands)]
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
            over = self.hand_number >= len(self.config.hand_sizes)
        if over:
            self.game_over = True
            self.log.append(("game_end", -1, (), -1, 0))
        return over


def new_game(preset: str = "craits", players: int = 4, seed: int = 0, **flags: object) -> GameState:
    """Start a game from a preset name, the number of seats, flags and one seed."""
    return GameState(make_config(preset, players, **flags), seed)
