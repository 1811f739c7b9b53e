"""What the test bots share: connect with the environment's token, play, record what arrives.

Each test bot is a real process speaking the real protocol through the generated
stubs. Environment: CRAITS_SERVER, CRAITS_TOKEN, CRAITS_BOT_NAME (from the
referee's launcher); CRAITS_RECORD=path appends every message received
(length-prefixed bytes) for the leak test; CRAITS_STATUS=path receives the
final gRPC status code name of the stream.
"""

from __future__ import annotations

import asyncio
import os
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc
from craits.v1 import referee_pb2 as pb
from craits.v1 import referee_pb2_grpc

Decide = Callable[["Bot", pb.DecisionRequest], Awaitable[None]]


class Bot:
    """One stream to the referee; ``decide`` is called for each DecisionRequest and must answer itself."""

    def __init__(self, token: str | None = None, version: int = 1, name: str | None = None) -> None:
        self.server = os.environ["CRAITS_SERVER"]
        self.token = token if token is not None else os.environ["CRAITS_TOKEN"]
        self.version = version
        self.name = name or os.environ.get("CRAITS_BOT_NAME", "test-bot")
        self.record = Path(os.environ["CRAITS_RECORD"]) if os.environ.get("CRAITS_RECORD") else None
        self.status_file = Path(os.environ["CRAITS_STATUS"]) if os.environ.get("CRAITS_STATUS") else None
        self.call: grpc.aio.StreamStreamCall | None = None
        self.received_at = 0.0
        self.errors: list[pb.Error] = []
        self.decisions = 0

    async def answer(self, request: pb.DecisionRequest, action_id: int, *, think_us: int | None = None) -> None:
        if think_us is None:
            think_us = int((time.perf_counter() - self.received_at) * 1e6)
        await self.send(pb.BotMessage(answer=pb.Answer(
            game_id=request.game_id, decision_id=request.decision_id, action_id=action_id, think_us=think_us)))

    async def send(self, message: pb.BotMessage) -> None:
        assert self.call is not None
        await self.call.write(message)

    def _record(self, message: pb.RefereeMessage) -> None:
        if self.record is not None:
            data = message.SerializeToString()
            with self.record.open("ab") as out:
                out.write(struct.pack(">I", len(data)) + data)

    async def play(self, decide: Decide, *, hello: pb.BotMessage | None = None,
                   on_message: Callable[[pb.RefereeMessage], Awaitable[bool | None]] | None = None) -> str:
        """Run one stream to its end; return the final status code name."""
        async with grpc.aio.insecure_channel(self.server) as channel:
            stub = referee_pb2_grpc.RefereeStub(channel)
            self.call = call = stub.Play()
            await call.write(hello or pb.BotMessage(hello=pb.Hello(
                token=self.token, protocol_version=self.version, name=self.name, about="test bot")))
            try:
                while True:
                    message = await call.read()
                    if message is grpc.aio.EOF:
                        break
                    self.received_at = time.perf_counter()
                    self._record(message)
                    if message.HasField("error"):
                        self.errors.append(message.error)
                    if on_message is not None and await on_message(message):
                        call.cancel()
                        return "CANCELLED"
                    if message.HasField("decision"):
                        self.decisions += 1
                        await decide(self, message.decision)
                code = await call.code()
            except grpc.aio.AioRpcError as err:
                code = err.code()
            except asyncio.CancelledError:
                return "CANCELLED"
            except Exception:  # e.g. a write after the referee ended the stream
                code = await call.code()
        name = code.name
        if self.status_file is not None:
            self.status_file.write_text(name)
        return name


def run(main: Callable[[], Awaitable[object]]) -> None:
    """Run a bot's main coroutine; exit 0 when the stream ended OK, else 3."""
    result = asyncio.run(main())
    sys.exit(0 if result in (None, "OK") else 3)
