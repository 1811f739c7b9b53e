"""The one place where protobuf messages meet engine values.

Everything a bot receives about a game is built here from an engine
:class:`~server.engine.Observation`, so hidden information has one home
(``server.engine.observation``) and one translation (this module).
"""

from __future__ import annotations

from collections.abc import Iterable

from craits.v1 import referee_pb2 as pb

from server.engine import (
    ACTIONS,
    Action,
    ActionKind,
    Card,
    Event,
    GameConfig,
    GameState,
    HandResult,
    Observation,
    Suit,
    observe,
)
from server.gamespec import Clocks

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

    ``history_from``: the number of this hand's events the seat already received
    (``len(state.hand_events)`` at its previous request this hand, else 0).
    """
    msg = pb.DecisionRequest(
        game_id=game_id,
        decision_id=decision_id,
        deadline_ms=max(0, int(deadline_ms)),
        time_bank_ms=max(0, int(bank_ms)),
        strikes=strikes,
        repeated_request=repeated,
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
    from server.engine import event_view

    totals = [0] * state.n
    for hand in state.hand_results:
        for s, points in enumerate(hand.scores):
            totals[s] += points
        if hand is result:
            break
    msg = pb.HandEnd(
        game_id=game_id,
        hand_number=result.number,
        reason=result.reason,
        scores=points_list(result.scores),
        pressures=points_list(result.pressures),
        totals=points_list(totals),
    )
    msg.history.extend(event(event_view(raw, seat)) for raw in _hand_log(state, result.number))
    return msg


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


def game_end(state: GameState, game_id: str, aborted: str = "") -> pb.GameEnd:
    result = state.result()
    return pb.GameEnd(
        game_id=game_id,
        totals=points_list(result.totals),
        placings=result.placings,
        team_totals=points_list(result.team_totals or ()),
        aborted=aborted,
        seed=state.seed & ((1 << 64) - 1),
    )
