"""A real game over gRPC whose wire is recorded at every seat, shared by the tests of
``craits replay messages``, ``rerun`` and the kits' offline runners.

Three scripted bots in the test's process read their streams as raw bytes (no parsing
between the wire and the record) and answer from seeded generators; on the way one answers
illegally, one with an id that names no action, one late (out of its time bank), one not
at all (a timeout). Seed 5 of a short face-card game asks for every kind of decision a bot
can be asked (the PENALTY draw is the only one the referee applies itself).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from craits.v1 import referee_pb2 as pb

from server.spec import Clocks
from tests.referee.conftest import remote, spec, with_arena

SEED = 5
CLOCKS = Clocks(decision_s=0.5, bank_s=0.5, max_strikes=3, reconnect_grace_s=1.0, connect_timeout_s=15.0)
ILLEGAL, MALFORMED, LATE, SILENT = (0, 2), (1, 3), (2, 4), (0, 6)
"""(seat, its k-th request from 0) where the scripted bot misbehaves."""


@dataclass
class WireGame:
    replay: Path
    received: dict[int, list[bytes]]
    """Per seat, every message the bot's stream delivered after Welcome, as raw bytes."""
    answers: dict[int, list[pb.Answer]]
    """Per seat, every answer it sent, in order."""


async def _recording_bot(target: str, token: str, seat: int, received: list[bytes], answers: list[pb.Answer]) -> None:
    channel = grpc.aio.insecure_channel(target)
    play = channel.stream_stream("/craits.v1.Referee/Play", request_serializer=pb.BotMessage.SerializeToString,
                                 response_deserializer=lambda data: data)
    call = play()
    await call.write(pb.BotMessage(hello=pb.Hello(token=token, protocol_version=1, name=f"rec{seat}")))
    rng = random.Random(1000 + seat)
    asked = 0
    choice = 0
    try:
        while (data := await call.read()) is not grpc.aio.EOF:
            received.append(data)
            message = pb.RefereeMessage.FromString(data)
            if not message.HasField("decision"):
                continue
            request = message.decision
            if not request.repeated_request:
                k, asked = asked, asked + 1
                if (seat, k) == SILENT:
                    continue
                choice = rng.choice([a.id for a in request.legal_actions])
                if (seat, k) == LATE:
                    await asyncio.sleep(CLOCKS.decision_s + 0.05)
                if (seat, k) in (ILLEGAL, MALFORMED):
                    offered = {a.id for a in request.legal_actions}
                    wrong = 99_999 if (seat, k) == MALFORMED else next(
                        i for i in range(1, 200) if i not in offered and i % 2 == 1)
                    answer = pb.Answer(game_id=request.game_id, decision_id=request.decision_id, action_id=wrong)
                    answers.append(answer)
                    await call.write(pb.BotMessage(answer=answer))
                    continue
            answer = pb.Answer(game_id=request.game_id, decision_id=request.decision_id, action_id=choice,
                               think_us=7)
            answers.append(answer)
            await call.write(pb.BotMessage(answer=answer))
    finally:
        await channel.close()


@pytest.fixture(scope="session")
def wire_game(tmp_path_factory: pytest.TempPathFactory) -> WireGame:
    folder = tmp_path_factory.mktemp("wire")
    seats = [remote(f"rec{i}") for i in range(3)]
    game = spec(*seats, seed=SEED, clocks=CLOCKS, replay=folder / "wire.jsonl", face_cards=True,
                game_id="wire-game")
    received: dict[int, list[bytes]] = {i: [] for i in range(3)}
    answers: dict[int, list[pb.Answer]] = {i: [] for i in range(3)}

    async def body(arena):
        task = asyncio.create_task(arena.run_game(game))
        bots = [asyncio.create_task(_recording_bot(arena.target, s.token, i, received[i], answers[i]))
                for i, s in enumerate(seats)]
        record = await task
        await asyncio.gather(*bots)
        return record

    record = with_arena(body)
    assert record.replay_path is not None and not record.aborted
    for seat in range(3):
        welcome = pb.RefereeMessage.FromString(received[seat].pop(0))
        assert welcome.HasField("welcome")
    return WireGame(record.replay_path, received, answers)
