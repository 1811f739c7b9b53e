"""Whole games through the real referee: bot processes on a real server, replays, no leaks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from craits.v1 import referee_pb2 as pb

from server.engine import CARDS, GameState
from server.spec import SeatStatus
from server.storage.replay import verify_replay

from .conftest import RECORDING, bot, builtin, read_record, spec, with_arena


def _decisions(replay: Path) -> list[dict]:
    records = [json.loads(line) for line in replay.read_text().splitlines()]
    return [r for r in records if r["type"] == "decision"]


def test_four_bot_processes_play_a_game_and_every_decision_is_recorded(tmp_path: Path) -> None:
    """Each seat's answers are applied, timed (thinking apart from transport) and replayed exactly."""
    replay = tmp_path / "game.jsonl"
    game = spec(*(bot(f"random{i}", "random_bot.py", env={"CRAITS_BOT_SEED": str(i)}) for i in range(4)),
                replay=replay)
    record = with_arena(lambda arena: arena.run_game(game))

    assert record.aborted == ""
    assert [s.status for s in record.seats] == [SeatStatus.OK] * 4
    assert record.replay_path == replay
    verify_replay(replay)
    decisions = _decisions(replay)
    asked = [d for d in decisions if d["status"] != "auto"]
    assert all(d["status"] in ("ok", "bank") for d in asked)
    assert all(d["think_us"] is not None and d["transport_us"] is not None for d in asked)
    assert all(d["think_us"] is None for d in decisions if d["status"] == "auto")
    for seat, report in enumerate(record.seats):
        assert report.decisions == sum(1 for d in asked if d["seat"] == seat)
        assert report.transport_s > 0 and report.think_s >= 0
        assert report.timeouts == report.strikes == report.illegal == 0
    # The record's digest is the engine's for the same seed and decisions.
    state = GameState(game.config, game.seed)
    for d in decisions:
        state.apply(d["action"])
    assert state.game_over and state.digest() == record.digest
    assert list(record.result.totals) == list(state.result().totals)


def test_a_replay_that_cannot_be_written_aborts_the_game_and_leaves_no_file(tmp_path: Path, monkeypatch) -> None:
    """A full disk mid-game: the game ends as aborted with the reason, its bots are told,
    and neither a replay nor its temporary file is left behind."""
    from server.storage.replay import ReplayWriter

    original = ReplayWriter.decision
    written = []

    def failing(self, *args, **kwargs):
        if len(written) == 40:
            raise OSError(28, "No space left on device")
        written.append(args)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ReplayWriter, "decision", failing)
    replay = tmp_path / "game.jsonl"
    seen = tmp_path / "seen.bin"
    game = spec(bot("recorded", "random_bot.py", env={"CRAITS_RECORD": str(seen)}), builtin("random"),
                bot("random", "random_bot.py"), builtin("first"), replay=replay)
    record = with_arena(lambda arena: arena.run_game(game), options=RECORDING)

    assert len(written) == 40
    assert "No space left on device" in record.aborted
    assert record.replay_path is None
    assert list(tmp_path.glob("game*")) == []
    last = read_record(seen)[-1]
    assert last.WhichOneof("message") == "game_end" and "No space left on device" in last.game_end.aborted


def test_builtin_bots_play_in_process_and_the_same_spec_gives_the_same_game() -> None:
    game = spec(builtin("random"), builtin("first"), builtin("default"), seed=11)

    async def twice(arena):
        first = await arena.run_game(game)
        again = await arena.run_game(game)
        return first, again

    first, again = with_arena(twice)
    assert first.digest == again.digest
    assert first.result.totals == again.result.totals
    assert all(s.status is SeatStatus.OK and s.decisions > 0 for s in first.seats)


def test_games_run_side_by_side_on_one_server() -> None:
    """Several games at once, each in its own task, each with its own bot processes, even
    when the schedule gives a bot the same token in every game (as a tournament does)."""
    a, b = bot("a", "random_bot.py"), bot("b", "random_bot.py")
    games = [spec(a, b, builtin("random"), seed=s) for s in (1, 2, 3)]

    async def body(arena):
        return await asyncio.gather(*(arena.run_game(g) for g in games))

    records = with_arena(body)
    assert [r.game_id for r in records] == [g.game_id for g in games]
    assert all(not r.aborted and all(s.status is SeatStatus.OK for s in r.seats) for r in records)


# --------------------------------------------------------------------------- leaks


def _cards_in(message) -> list[str]:
    """Every Card anywhere in a protobuf message, as text."""
    out: list[str] = []
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        for item in value if field.is_repeated else [value]:
            if item.DESCRIPTOR.full_name == "craits.v1.Card":
                out.append(item.text)
            else:
                out.extend(_cards_in(item))
    return out


class _Truth:
    """What each seat may know, followed event by event through the engine's own log."""

    def __init__(self, state: GameState) -> None:
        self.state = state
        self.public: set[str] = set()
        self.received: list[set[str]] = [set() for _ in range(state.n)]
        self.seen = 0

    def catch_up(self) -> None:
        for kind, seat, cards, _suit, _value in self.state.log[self.seen :]:
            texts = {str(CARDS[c]) for c in cards}
            if kind in ("play", "turn_up", "dealer_draw"):
                self.public |= texts
            elif kind in ("deal", "draw"):
                self.received[seat] |= texts
        self.seen = len(self.state.log)

    def allowed(self, seat: int) -> set[str]:
        self.catch_up()
        return self.public | self.received[seat] | {str(c) for c in self.state.hand_of(seat)}


def _check_private_events(events, seat: int, where: str) -> None:
    for ev in events:
        if ev.kind in (pb.EVENT_KIND_DEAL, pb.EVENT_KIND_DRAW) and ev.seat != seat:
            assert not ev.cards, f"{where}: seat {seat} saw seat {ev.seat}'s {ev.count} cards"


def test_no_bot_ever_receives_another_seats_cards_or_the_stock_order(tmp_path: Path) -> None:
    """Issue 4: record every message each bot process receives through a whole game of
    fifteen hands and compare it with the engine's true state, replayed from the seed."""
    replay = tmp_path / "game.jsonl"
    seats = [bot(f"r{i}", "random_bot.py", env={"CRAITS_RECORD": str(tmp_path / f"seat{i}.bin"),
                                                  "CRAITS_BOT_SEED": str(i)}) for i in range(4)]
    game = spec(*seats, seed=2026, replay=replay, short_game=False)
    record = with_arena(lambda arena: arena.run_game(game), options=RECORDING)
    assert not record.aborted and all(s.status is SeatStatus.OK for s in record.seats)

    # Re-simulate: what each seat may see at each of its requests and at each hand's end.
    state = GameState(game.config, game.seed)
    truth = _Truth(state)
    at_request: list[list[tuple[set[str], list[str]]]] = [[] for _ in range(4)]
    at_hand_end: list[list[set[str]]] = [[] for _ in range(4)]
    for d in _decisions(replay):
        if d["status"] != "auto":
            seat = d["seat"]
            at_request[seat].append((truth.allowed(seat), [str(c) for c in state.hand_of(seat)]))
        hands = len(state.hand_results)
        state.apply(d["action"])
        if len(state.hand_results) > hands:
            for seat in range(4):
                allowed = truth.allowed(seat) | {str(c) for c in state.hand_results[-1].cards_left[seat]}
                at_hand_end[seat].append(allowed)

    for seat in range(4):
        messages = read_record(tmp_path / f"seat{seat}.bin")
        requests = [m.decision for m in messages if m.HasField("decision")]
        hand_ends = [m.hand_end for m in messages if m.HasField("hand_end")]
        assert len(requests) == len(at_request[seat]) == record.seats[seat].decisions
        assert len(hand_ends) == len(at_hand_end[seat]) == 15
        for n, (request, (allowed, hand)) in enumerate(zip(requests, at_request[seat], strict=True)):
            where = f"seat {seat}, request {n}"
            assert request.observation.seat == seat
            assert [c.text for c in request.observation.hand] == hand or request.observation.hand_hidden, where
            leaked = set(_cards_in(request)) - allowed
            assert not leaked, f"{where}: saw {sorted(leaked)}"
            _check_private_events(request.observation.history, seat, where)
        for n, (end, allowed) in enumerate(zip(hand_ends, at_hand_end[seat], strict=True)):
            leaked = set(_cards_in(end)) - allowed
            assert not leaked, f"seat {seat}, hand {n + 1}: saw {sorted(leaked)}"
            _check_private_events(end.history, seat, f"seat {seat}, hand end {n + 1}")
        for m in messages:
            if m.WhichOneof("message") not in ("decision", "hand_end"):
                assert _cards_in(m) == [], m
        game_end = [m.game_end for m in messages if m.HasField("game_end")]
        assert len(game_end) == 1 and list(game_end[0].totals) == list(record.result.totals)
        assert game_end[0].seed == game.seed  # revealed only at the end
        assert all(m.game_start.seat == seat for m in messages if m.HasField("game_start"))


def test_a_game_whose_totals_outgrow_the_protocol_still_returns_its_record() -> None:
    """Two "first" players can draw and reshuffle until the pressure doubles past int64
    (seed 0, two seats, fifteen hands): the referee still returns the engine's result."""
    game = spec(builtin("first"), builtin("first"), seed=0, short_game=False)
    record = with_arena(lambda arena: arena.run_game(game))
    state = GameState(game.config, game.seed)
    while state.decision is not None:
        state.apply(state.legal_action_ids()[0])
    assert record.result.totals == state.result().totals and record.digest == state.digest()
