"""No hidden card reaches a bot that drops its connection and resumes mid-hand (issue 30).

The whole-game scan (``test_games``) covers streams that never break. Here a bot loses its
connection at the first request of every kind of decision the referee asks (an ordinary play,
answering a count, playing again after a 6, a king's sequence, the dealer naming a suit
blind), comes back with its token and is sent its game again: GameStart, the hand from its
start, the open request repeated. Every message of every stream is compared with what the
engine, replayed from the seed, says that seat may know at that moment.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

from craits.v1 import referee_pb2 as pb

from server.engine import GameState, make_config
from server.engine.state import DecisionKind
from server.spec import Clocks, SeatStatus

from .conftest import Client, builtin, remote, spec, with_arena
from .test_games import _cards_in, _check_private_events, _Truth

ASKED_KINDS = {DecisionKind.PLAY, DecisionKind.ANSWER_COUNT, DecisionKind.PLAY_AGAIN,
               DecisionKind.KING_SEQUENCE, DecisionKind.NAME_SUIT}
"""Every kind the referee asks a bot (a PENALTY has one action: the referee applies it itself)."""
PATIENT = Clocks(decision_s=20.0, bank_s=20.0, max_strikes=3, reconnect_grace_s=30.0, connect_timeout_s=30.0)
FLAGS = {"face_cards": True, "short_game": True}


def _seed_asking_every_kind() -> int:
    """A seed whose game (seat 0 choosing from Random(seed), seat 1 the first action) asks
    seat 0 every kind of decision: found by the engine alone, in milliseconds."""
    config = make_config("craits", 2, **FLAGS)
    for seed in range(1000):
        state, rng, kinds = GameState(config, seed), random.Random(seed), set()
        while (decision := state.decision) is not None:
            legal = state.legal_action_ids()
            if len(legal) > 1 and decision.seat == 0:
                kinds.add(decision.kind)
                state.apply(rng.choice(legal))
            else:
                state.apply(legal[0])
        if kinds >= ASKED_KINDS:
            return seed
    raise AssertionError("no seed in 1000 asks every kind of decision")


def test_a_bot_that_drops_and_resumes_at_every_kind_of_decision_sees_no_hidden_card(tmp_path: Path) -> None:
    seed = _seed_asking_every_kind()
    me = remote("me")
    replay = tmp_path / "game.jsonl"
    game = spec(me, builtin("first"), seed=seed, clocks=PATIENT, replay=replay, **FLAGS)

    async def body(arena):
        task = asyncio.create_task(arena.run_game(game))
        rng = random.Random(seed)
        streams: list[list[pb.RefereeMessage]] = []
        resumed_at: dict[int, int] = {}  # decision kind -> decision id
        chosen: dict[int, int] = {}
        client = await Client(arena.target, me.token).open()
        streams.append(client.seen)
        try:
            while True:
                try:
                    message = await client.next()
                except EOFError:
                    break
                if not message.HasField("decision"):
                    continue
                request = message.decision
                kind = request.observation.decision
                if kind not in resumed_at and not request.repeated_request:
                    resumed_at[kind] = request.decision_id
                    await client.close()  # the connection drops with the request open
                    client = await Client(arena.target, me.token).open()
                    streams.append(client.seen)
                    continue  # the request comes again on the new stream
                if request.decision_id not in chosen:
                    chosen[request.decision_id] = rng.choice([a.id for a in request.legal_actions])
                await client.answer(request, chosen[request.decision_id])
        finally:
            await client.close()
        return await task, streams, resumed_at

    record, streams, resumed_at = with_arena(body, timeout=240)
    seat = record.seats[0]
    assert not record.aborted and seat.status is SeatStatus.OK and seat.strikes == 0, seat
    assert {DecisionKind(pb_kind) for pb_kind in resumed_at} == ASKED_KINDS
    assert seat.disconnects == len(ASKED_KINDS) == len(streams) - 1

    # What seat 0 may know at each of its requests and at each hand's end, from the replay.
    records = [json.loads(line) for line in replay.read_text().splitlines()]
    state = GameState(game.config, game.seed)
    truth = _Truth(state)
    at_request: list[tuple[set[str], list[str]]] = []
    at_hand_end: list[set[str]] = []
    for d in (r for r in records if r["type"] == "decision"):
        if d["status"] != "auto" and d["seat"] == 0:
            at_request.append((truth.allowed(0), [str(c) for c in state.hand_of(0)]))
        hands = len(state.hand_results)
        state.apply(d["action"])
        if len(state.hand_results) > hands:
            at_hand_end.append(truth.allowed(0) | {str(c) for c in state.hand_results[-1].cards_left[0]})

    messages = [m for stream in streams for m in stream]
    order = list(dict.fromkeys(m.decision.decision_id for m in messages if m.HasField("decision")))
    assert len(order) == len(at_request) == seat.decisions
    allowed_at = dict(zip(order, at_request, strict=True))
    repeats = 0
    for m in messages:
        which = m.WhichOneof("message")
        if which == "decision":
            request = m.decision
            allowed, hand = allowed_at[request.decision_id]
            where = f"decision {request.decision_id}{' (repeated)' if request.repeated_request else ''}"
            repeats += request.repeated_request
            assert request.observation.seat == 0
            assert [c.text for c in request.observation.hand] == hand or request.observation.hand_hidden, where
            leaked = set(_cards_in(request)) - allowed
            assert not leaked, f"{where}: saw {sorted(leaked)}"
            _check_private_events(request.observation.history, 0, where)
        elif which == "hand_end":
            allowed = at_hand_end[m.hand_end.hand_number - 1]
            leaked = set(_cards_in(m.hand_end)) - allowed
            assert not leaked, f"hand end {m.hand_end.hand_number}: saw {sorted(leaked)}"
            _check_private_events(m.hand_end.history, 0, f"hand end {m.hand_end.hand_number}")
        else:
            assert _cards_in(m) == [], m
    assert repeats >= len(ASKED_KINDS)  # each resumed request was sent again, history from its hand's start
    welcomes = [m.welcome for m in messages if m.HasField("welcome")]
    assert [w.resumed for w in welcomes] == [False] + [True] * len(ASKED_KINDS)
    game_ends = [m.game_end for m in messages if m.HasField("game_end")]
    assert len(game_ends) == 1 and game_ends[0].seed == game.seed
