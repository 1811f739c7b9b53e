"""The one place where protobuf messages meet engine values.

Everything a bot receives about a game is built here from an engine
:class:`~server.engine.Observation`, so hidden information has one home
(``server.engine.observation``) and one translation (this module).

The referee's hot path uses :class:`GameEncoder`, which writes the same bytes
straight from the game state: each history event is serialised once per view and
reused across requests and seats. Its tests check it byte for byte against
:func:`decision_request` and :func:`hand_end`, which go through ``observe()``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from craits.v1 import referee_pb2 as pb

from server.engine import (
    ACTIONS,
    CARDS,
    Action,
    ActionKind,
    Card,
    DecisionKind,
    Event,
    GameConfig,
    GameState,
    HandResult,
    Observation,
    Suit,
    event_view,
    observe,
)
from server.spec import Clocks

PROTOCOL_VERSION = pb.PROTOCOL_VERSION_CURRENT

# Engine suits are 0..3 (C D H S); the wire's are 1..4 with 0 unspecified.
_SUIT_TO_PB = {s: int(s) + 1 for s in Suit}
_EVENT_KIND = {
    "dealer_draw": pb.EVENT_KIND_DEALER_DRAW,
    "hand_start": pb.EVENT_KIND_HAND_START,
    "deal": pb.EVENT_KIND_DEAL,
    "turn_up": pb.EVENT_KIND_TURN_UP,
    "play": pb.EVENT_KIND_PLAY,
    "name_suit": pb.EVENT_KIND_NAME_SUIT,
    "draw": pb.EVENT_KIND_DRAW,
    "reshuffle": pb.EVENT_KIND_RESHUFFLE,
    "pressure": pb.EVENT_KIND_PRESSURE,
    "skip": pb.EVENT_KIND_SKIP,
    "reverse": pb.EVENT_KIND_REVERSE,
    "count": pb.EVENT_KIND_COUNT,
    "missed_announcement": pb.EVENT_KIND_MISSED_ANNOUNCEMENT,
    "forfeit": pb.EVENT_KIND_FORFEIT,
    "cooper": pb.EVENT_KIND_COOPER,
    "penalty_draw": pb.EVENT_KIND_PENALTY_DRAW,
    "hand_end": pb.EVENT_KIND_HAND_END,
    "game_end": pb.EVENT_KIND_GAME_END,
}
_ACTION_KIND = {
    ActionKind.DRAW: pb.ACTION_KIND_DRAW,
    ActionKind.NAME_SUIT: pb.ACTION_KIND_NAME_SUIT,
    ActionKind.PLAY: pb.ACTION_KIND_PLAY_CARD,
}


_INT64_MAX = (1 << 63) - 1


def points(value: int) -> int:
    """A score for an int64 field. Doubling pressures can, in freak games, pass 2**63;
    the wire then carries INT64_MAX (the replay and the standings keep exact values)."""
    return value if value <= _INT64_MAX else _INT64_MAX


def points_list(values: Iterable[int]) -> list[int]:
    return [v if v <= _INT64_MAX else _INT64_MAX for v in values]


_UINT32_MAX = (1 << 32) - 1


def _uint32(value: float) -> int:
    """A clock reading in whole milliseconds for a uint32 field (never negative, never past 49 days)."""
    return min(_UINT32_MAX, max(0, int(value)))


def suit_to_pb(suit: Suit) -> int:
    return _SUIT_TO_PB[suit]


def suit_from_pb(value: int) -> Suit:
    """Raise ValueError for SUIT_UNSPECIFIED or an unknown number."""
    if not 1 <= value <= 4:
        raise ValueError(f"not a suit: {value}")
    return Suit(value - 1)


# Cards and legal actions are immutable; build each message once.
_CARD_PB: dict[Card, pb.Card] = {}


def card(c: Card) -> pb.Card:
    msg = _CARD_PB.get(c)
    if msg is None:
        msg = _CARD_PB[c] = pb.Card(rank=int(c.rank), suit=suit_to_pb(c.suit), text=str(c))
    return msg


def legal_action(action: Action) -> pb.LegalAction:
    msg = pb.LegalAction(id=action.id, text=str(action), kind=_ACTION_KIND[action.kind], announce=action.announce)
    if action.card is not None:
        msg.card.CopyFrom(card(action.card))
    if action.suit is not None:
        msg.suit = suit_to_pb(action.suit)
    return msg


_LEGAL_PB: list[pb.LegalAction | None] = [None if a is None else legal_action(a) for a in ACTIONS]


def legal_actions(ids: Iterable[int]) -> list[pb.LegalAction]:
    return [_LEGAL_PB[i] for i in ids]  # type: ignore[misc]


def event(ev: Event) -> pb.Event:
    msg = pb.Event(kind=_EVENT_KIND[ev.kind], seat=ev.seat, count=ev.count, value=points(ev.value))
    if ev.cards:
        msg.cards.extend(card(c) for c in ev.cards)
    if ev.suit is not None:
        msg.suit = suit_to_pb(ev.suit)
    return msg


def observation(obs: Observation) -> pb.Observation:
    msg = pb.Observation(
        seat=obs.seat,
        hand_hidden=obs.hand is None,
        current_suit=suit_to_pb(obs.current_suit),
        current_rank=int(obs.current_rank),
        direction=obs.direction,
        count=obs.count,
        hand_sizes=obs.hand_sizes,
        totals=points_list(obs.totals),
        hand_pressures=points_list(obs.hand_pressures),
        pressure_totals=points_list(obs.pressure_totals),
        stock_size=obs.stock_size,
        discard_size=obs.discard_size,
        dealer=obs.dealer,
        hand_number=obs.hand_number,
        hands_total=obs.hands_total,
        to_act=obs.to_act,
        decision=0 if obs.decision is None else int(obs.decision),
        king_cards_left=obs.king_cards_left,
        pending_penalty=obs.pending_penalty,
        history_start=obs.history_start,
    )
    msg.top_card.CopyFrom(card(obs.top_card))
    if obs.hand is not None:
        msg.hand.extend(card(c) for c in obs.hand)
    msg.history.extend(event(e) for e in obs.history)
    return msg


def decision_request(
    state: GameState,
    seat: int,
    *,
    game_id: str,
    decision_id: int,
    deadline_ms: int,
    bank_ms: int,
    strikes: int,
    repeated: bool = False,
    history_from: int = 0,
) -> pb.DecisionRequest:
    """The request for ``seat``'s decision, with its observation and the sorted legal actions.

    Its ``decision_number`` is the one the state is at (``state.decisions + 1``): the
    replay's, so a request rebuilt from a replay carries the number the bot was sent.

    ``history_from``: the number of this hand's events the seat already received
    (``len(state.hand_events)`` at its previous request this hand, else 0).
    """
    msg = pb.DecisionRequest(
        game_id=game_id,
        decision_id=decision_id,
        deadline_ms=_uint32(deadline_ms),
        time_bank_ms=_uint32(bank_ms),
        strikes=strikes,
        repeated_request=repeated,
        decision_number=state.decisions + 1,
    )
    msg.observation.CopyFrom(observation(observe(state, seat, history_from)))
    msg.legal_actions.extend(legal_actions(state.legal_action_ids()))
    return msg


def flags(config: GameConfig) -> pb.Flags:
    f = config.flags
    return pb.Flags(
        short_game=f.short_game,
        voluntary_draw=f.voluntary_draw,
        seven_hits=f.seven_hits,
        face_cards=f.face_cards,
        strip_kings_queens=f.strip_kings_queens,
        decks=f.decks,
    )


def clocks(c: Clocks) -> pb.Clocks:
    return pb.Clocks(
        decision_ms=int(c.decision_s * 1000),
        bank_ms=int(c.bank_s * 1000),
        max_strikes=c.max_strikes,
        reconnect_grace_ms=int(c.reconnect_grace_s * 1000),
    )


def game_start(
    config: GameConfig,
    seat: int,
    *,
    game_id: str,
    seat_names: Iterable[str],
    clock: Clocks,
    tournament: str = "",
) -> pb.GameStart:
    """Announce a game to the bot in ``seat``. The seed is never sent before the game ends."""
    return pb.GameStart(
        game_id=game_id,
        seat=seat,
        players=config.players,
        preset=config.preset,
        flags=flags(config),
        seat_names=list(seat_names),
        clocks=clocks(clock),
        tournament=tournament,
    )


def hand_start(state: GameState, game_id: str) -> pb.HandStart:
    sizes = state.config.hand_sizes
    size = sizes[0] if state.config.crazy_eights else sizes[state.hand_number - 1]
    return pb.HandStart(game_id=game_id, hand_number=state.hand_number, dealer=state.dealer, cards_each=size)


def hand_end(state: GameState, result: HandResult, seat: int, game_id: str) -> pb.HandEnd:
    """Scores of a finished hand, with its history as ``seat`` may see it (never other hands' cards)."""
    msg = _hand_end_scores(state, result, game_id)
    msg.history.extend(event(event_view(raw, seat)) for raw in _hand_log(state, result.number))
    return msg


def _hand_end_scores(state: GameState, result: HandResult, game_id: str) -> pb.HandEnd:
    """A HandEnd without its history."""
    totals = [0] * state.n
    for hand in state.hand_results:
        for s, points in enumerate(hand.scores):
            totals[s] += points
        if hand is result:
            break
    return pb.HandEnd(
        game_id=game_id,
        hand_number=result.number,
        reason=result.reason,
        scores=points_list(result.scores),
        pressures=points_list(result.pressures),
        totals=points_list(totals),
    )


def _hand_log(state: GameState, number: int) -> list[tuple[str, int, tuple[int, ...], int, int]]:
    """The raw events of hand ``number`` (from its hand_start to its hand_end)."""
    out = []
    inside = False
    for raw in state.log:
        if raw[0] == "hand_start":
            inside = raw[4] == number
        if inside:
            out.append(raw)
            if raw[0] == "hand_end":
                break
    return out


def game_end(state: GameState, game_id: str, aborted: str = "", *, reveal_seed: bool = True) -> pb.GameEnd:
    """The end of a game as the bots hear it; ``reveal_seed`` False (its deal is shared with games
    still to come): seed 0."""
    result = state.result()
    return pb.GameEnd(
        game_id=game_id,
        totals=points_list(result.totals),
        placings=result.placings,
        team_totals=points_list(result.team_totals or ()),
        aborted=aborted,
        seed=state.seed & ((1 << 64) - 1) if reveal_seed else 0,
    )


# --------------------------------------------------------------------------- the hot path
#
# Protobuf's wire format is a concatenation of fields (key, then a varint or a
# length-prefixed body), so a message can be put together from pieces serialised
# earlier. The pieces below are written in field-number order, with proto3's
# implicit presence (zero scalars left out), exactly as SerializeToString writes
# them; tests/test_wire.py checks that byte for byte.


def _varint(n: int) -> bytes:
    """A protobuf varint; a negative int32/int64 as its 64-bit two's complement (10 bytes)."""
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def delimited(message: bytes) -> bytes:
    """A serialised message in protobuf's length-delimited form (its length as a varint, then
    it): how ``craits replay messages --format binary`` writes a stream of them."""
    return _varint(len(message)) + message


_SMALL = tuple(_varint(i) for i in range(1 << 14))


def _uv(n: int) -> bytes:
    return _SMALL[n] if 0 <= n < 16384 else _varint(n)


def _key(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


_VARINT_KEYS = tuple(_key(f, 0) for f in range(32))


def _field(field: int, value: int) -> bytes:
    """A varint field (uint, int, enum, bool), empty for zero as proto3 writes it."""
    return _VARINT_KEYS[field] + _uv(value) if value else b""


def _length_prefixed(body: bytes) -> bytes:
    return _uv(len(body)) + body


_PACKED_KEYS = tuple(_key(f, 2) for f in range(32))

_SMALL_FIELDS = tuple(tuple(_field(f, v) for v in range(128)) for f in range(32))
"""``_SMALL_FIELDS[field][value]`` is ``_field(field, value)`` for a value below 128: a tuple
index where a call would cost the request a microsecond per field."""


def _small(field: int, value: int) -> bytes:
    return _SMALL_FIELDS[field][value] if 0 <= value < 128 else _field(field, value)


def _packed(field: int, values: list[int]) -> bytes:
    """A packed repeated varint field (saturating int64 points); empty for an empty list."""
    try:
        body = bytes(values)  # one byte per value when every value is below 128
    except ValueError:
        body = b"\x80"
    if not body.isascii():
        body = b"".join([_uv(v if v <= _INT64_MAX else _INT64_MAX) for v in values])
    return _PACKED_KEYS[field] + _uv(len(body)) + body if body else b""


# Observation (field numbers from proto/craits/v1/referee.proto).
_OBS_SEAT = _key(1, 0)
_OBS_HAND_HIDDEN = _key(3, 0) + _varint(1)
_OBS_HAND_ENTRY = tuple(_key(2, 2) + _length_prefixed(card(c).SerializeToString()) for c in CARDS)
_OBS_TOP_CARD = tuple(_key(4, 2) + _length_prefixed(card(c).SerializeToString()) for c in CARDS)
_OBS_SUIT = tuple(_field(5, suit_to_pb(s)) for s in Suit)
_OBS_RANK = tuple(_field(6, r) for r in range(14))
_OBS_DIRECTION = {1: _field(7, 1), -1: _field(7, -1), 0: b""}
_OBS_HISTORY = _key(22, 2)
# Event.
_EVENT_KIND_FIELD = {kind: _field(1, number) for kind, number in _EVENT_KIND.items()}
_EVENT_CARD = tuple(_key(3, 2) + _length_prefixed(card(c).SerializeToString()) for c in CARDS)
_EVENT_SUIT = {-1: b"", **{int(s): _field(5, suit_to_pb(s)) for s in Suit}}
# DecisionRequest.
_REQ_DECISION_ID = _key(2, 0)
_REQ_OBSERVATION = _key(3, 2)
_REQ_LEGAL = tuple(b"" if a is None else _key(4, 2) + _length_prefixed(a.SerializeToString()) for a in _LEGAL_PB)
_REQ_REPEATED = _field(8, 1)
# HandEnd.
_HAND_END_HISTORY = _key(7, 2)

_NO_SEAT = -2
"""A viewer who owns no seat (as in ``observe``): the public view of every event."""

_HIDDEN_KINDS = frozenset(kind for kind in _EVENT_KIND if not event_view((kind, 0, (0,), -1, 0), _NO_SEAT).cards)
"""Kinds whose cards only the event's own seat sees (deals and draws), as ``event_view`` says."""


@functools.lru_cache(maxsize=8192)
def _event_views(raw: tuple[str, int, tuple[int, ...], int, int]) -> tuple[bytes, bytes]:
    """A raw event serialised as ``event(event_view(raw, viewer))``, length-prefixed: in the
    public view, and in the view of the event's own seat.

    Cached: most events (a given seat playing a given card, drawing one) recur in every
    game, and a cache hit costs a tenth of serialising the event again."""
    kind, seat, codes, suit, value = raw
    head = _EVENT_KIND_FIELD[kind] + _field(2, seat)
    tail = _field(4, len(codes)) + _EVENT_SUIT[suit] + _field(6, points(value))
    own = head + b"".join([_EVENT_CARD[c] for c in codes]) + tail
    own = _uv(len(own)) + own
    if codes and kind in _HIDDEN_KINDS:
        return _uv(len(head) + len(tail)) + head + tail, own
    return own, own


class GameEncoder:
    """One game's DecisionRequests and HandEnds, serialised straight from its state.

    Logged events never change, so each one is serialised once in its public view
    and, when it hides cards (a draw or a deal), once more in its owner's view, and kept in
    one list per viewer: a request's history is a slice of its seat's list. The parts of a
    request that change once a hand or less (the scores, the dealer and the hand's number, the
    seat, the clocks' fields) are kept serialised until they change (the seat's template); only
    the fields of the moment are written per request. What a seat may see stays defined by
    ``observe()`` and ``event_view()``: this class reads the same state fields, and
    tests/test_wire.py checks its bytes against :func:`decision_request` and
    :func:`hand_end` at every decision of many games.
    """

    def __init__(self, state: GameState, game_id: str) -> None:
        self.state = state
        self.game_id = game_id
        n = state.n
        self._game_id_field = _key(1, 2) + _length_prefixed(game_id.encode()) if game_id else b""
        self._hands_total = _field(17, 0 if state.config.crazy_eights else len(state.config.hand_sizes))
        self._seen_by: list[list[bytes]] = [[] for _ in range(n + 1)]
        """By viewer (a seat; last, nobody's: the public view), every logged event as that viewer
        may see it, a length-prefixed Event, by log index."""
        self._hand_starts: dict[int, int] = {}
        """Hand number -> log index of its hand_start, for the hands scanned so far."""
        self._scanned = 0
        self._packs: dict[int, tuple[list[int], bytes]] = {}
        """By field: the values last packed, and their bytes (see :meth:`_packed`)."""
        self._seat_field = [_OBS_SEAT + _uv(s) if s else b"" for s in range(n)]
        self._scores: tuple[list[int], list[int], list[int], bytes] = ([], [], [], b"")
        """The totals, this hand's pressures and the pressure totals last sent, and their fields."""
        self._hand_fields: tuple[int, int, bytes] = (-1, -1, b"")
        """The hand number and dealer last sent, and their fields with the hands' number."""
        self._clock_fields: list[tuple[tuple[int, int, int, bool], bytes]] = [((-1, -1, -1, False), b"")] * n
        """By seat: the deadline, bank, strikes and repeated flag last sent to it, and their fields."""
        self._hand_end: tuple[HandResult | None, bytes, int, int] = (None, b"", 0, 0)
        """The hand result last sent, its HandEnd's scores serialised and its log span."""

    def _packed(self, field: int, values: list[int]) -> bytes:
        """:func:`_packed`, remembered: the penalties change rarely, but each request carries them."""
        last = self._packs.get(field)
        if last is not None and last[0] == values:
            return last[1]
        data = _packed(field, values)
        self._packs[field] = (list(values), data)
        return data

    def _seen(self, viewer: int) -> list[bytes]:
        """Every logged event as ``viewer`` (a seat, or ``_NO_SEAT``) may see it, by log index."""
        log = self.state.log
        lists = self._seen_by
        done = len(lists[-1])
        if done < len(log):
            n = len(lists) - 1
            for raw in log[done:]:
                public, own = _event_views(raw)
                for seen in lists:
                    seen.append(public)
                if own is not public and 0 <= raw[1] < n:
                    lists[raw[1]][-1] = own
        return lists[viewer] if 0 <= viewer < len(lists) - 1 else lists[-1]

    def observation(self, seat: int, history_from: int = 0) -> bytes:
        """``wire.observation(observe(state, seat, history_from)).SerializeToString()``, faster."""
        state = self.state
        if not 0 <= seat < state.n:
            raise ValueError(f"seat {seat} out of range 0..{state.n - 1}")
        over = state.game_over
        kind = state.kind
        blind = not over and kind is DecisionKind.NAME_SUIT and state.to_act == seat
        hands = state.hands
        parts = [self._seat_field[seat]]
        if blind:
            parts.append(_OBS_HAND_HIDDEN)
        else:
            parts += map(_OBS_HAND_ENTRY.__getitem__, sorted(hands[seat]))
        totals, pressures, pressure_totals = state.totals, state.hand_pressures, state.pressure_totals
        scores = self._scores
        if scores[0] != totals or scores[1] != pressures or scores[2] != pressure_totals:
            scores = self._scores = (
                list(totals), list(pressures), list(pressure_totals),
                _packed(10, totals) + _packed(11, pressures) + _packed(12, pressure_totals),
            )
        number, dealer = state.hand_number, state.dealer
        hand_fields = self._hand_fields
        if hand_fields[0] != number or hand_fields[1] != dealer:
            hand_fields = self._hand_fields = (number, dealer, _field(15, dealer) + _field(16, number) + self._hands_total)
        small = _SMALL_FIELDS
        parts += (
            _OBS_TOP_CARD[state.discard[-1]],
            _OBS_SUIT[state.suit],
            _OBS_RANK[state.top_rank],
            _OBS_DIRECTION[state.direction],
            _small(8, state.count),
            _packed(9, [len(h) for h in hands]),
            scores[3],
            _small(13, len(state.stock)),
            _small(14, len(state.discard)),
            hand_fields[2],
            small[18][state.to_act],
            b"" if over else small[19][kind],
            _small(20, state.king_left) if kind is DecisionKind.KING_SEQUENCE else b"",
            self._packed(21, state.penalty),
        )
        log_length = len(state.log)
        start = min(state.hand_log_start + history_from, log_length)
        if start < log_length:
            parts.append(_OBS_HISTORY)
            parts.append(_OBS_HISTORY.join(self._seen(_NO_SEAT if blind else seat)[start:]))
        parts.append(_small(23, history_from))
        return b"".join(parts)

    def decision_request(
        self,
        seat: int,
        *,
        decision_id: int,
        deadline_ms: float,
        bank_ms: float,
        strikes: int,
        repeated: bool = False,
        history_from: int = 0,
    ) -> bytes:
        """:func:`decision_request` for this game, serialised."""
        observation = self.observation(seat, history_from)
        clock = (_uint32(deadline_ms), _uint32(bank_ms), strikes, repeated)
        last = self._clock_fields[seat]
        if last[0] != clock:
            last = self._clock_fields[seat] = (
                clock, _field(5, clock[0]) + _field(6, clock[1]) + _field(7, strikes) + (_REQ_REPEATED if repeated else b"")
            )
        return b"".join((
            self._game_id_field,
            _REQ_DECISION_ID + _uv(decision_id) if decision_id else b"",
            _REQ_OBSERVATION,
            _uv(len(observation)),
            observation,
            b"".join(map(_REQ_LEGAL.__getitem__, self.state.legal_action_ids())),
            last[1],
            _field(9, self.state.decisions + 1),
        ))

    def hand_end(self, result: HandResult, seat: int) -> bytes:
        """:func:`hand_end` for this game, serialised. (Its scores and its span of the log are
        the same for every seat: worked out for the first, kept for the others.)"""
        kept = self._hand_end
        if kept[0] is not result:
            kept = self._hand_end = (
                result, _hand_end_scores(self.state, result, self.game_id).SerializeToString(),
                *self._hand_span(result.number),
            )
        _, head, start, end = kept
        history = self._seen(seat)[start:end]
        if not history:
            return head
        return head + _HAND_END_HISTORY + _HAND_END_HISTORY.join(history)

    def _hand_span(self, number: int) -> tuple[int, int]:
        """Log indices of hand ``number``: its hand_start, and one past its hand_end."""
        log = self.state.log
        for i in range(self._scanned, len(log)):
            if log[i][0] == "hand_start":
                self._hand_starts[log[i][4]] = i
        self._scanned = len(log)
        start = self._hand_starts[number]
        for i in range(start, len(log)):
            if log[i][0] == "hand_end":
                return start, i + 1
        return start, len(log)
