"""Shared helpers for the referee tests: a real server on 127.0.0.1:0, real bot processes,
and a scripted gRPC client for exact protocol exchanges."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from craits.v1 import referee_pb2 as pb
from craits.v1 import referee_pb2_grpc

from server.engine import make_config
from server.logging import configure_logging
from server.spec import BotSpec, Clocks, GameSpec
from server.transport.service import Arena, ArenaOptions

BOTS = Path(__file__).resolve().parent / "bots"
FAST = Clocks(decision_s=0.2, bank_s=0.5, max_strikes=3, reconnect_grace_s=1.0, connect_timeout_s=15.0)
"""Short clocks keep the suite fast; the connect timeout is generous (a loaded machine
may take a few seconds to start a Python process that imports grpc)."""
OPTIONS = ArenaOptions(hello_timeout_s=1.0, bot_stop_grace_s=1.0)
RECORDING = dataclasses.replace(OPTIONS, sandbox="none")
"""For the tests whose bots write what they received into the test's folder (CRAITS_RECORD,
CRAITS_STATUS), which a sandboxed bot cannot; tests/sandbox proves the sandbox itself."""
T = TypeVar("T")


@pytest.fixture(autouse=True, scope="session")
def _quiet_logs() -> None:
    configure_logging(None, console=False)


def token() -> str:
    return secrets.token_urlsafe(12)


def bot(name: str, script: str, *args: object, env: dict[str, str] | None = None) -> BotSpec:
    """A seat played by ``tests/referee/bots/<script>`` in its own process."""
    command: list[str] = [sys.executable, str(BOTS / script), *map(str, args)]
    if env:
        command = ["env", *(f"{k}={v}" for k, v in env.items()), *command]
    return BotSpec(name=name, token=token(), command=tuple(command))


def builtin(name: str) -> BotSpec:
    return BotSpec(name=name, token="", builtin=name)


def remote(name: str) -> BotSpec:
    """A seat whose bot connects on its own (a scripted client in the test)."""
    return BotSpec(name=name, token=token())


def spec(*seats: BotSpec, seed: int = 7, clocks: Clocks = FAST, preset: str = "craits",
         replay: Path | None = None, game_id: str | None = None, **flags: Any) -> GameSpec:
    if preset != "crazy-eights":
        flags.setdefault("short_game", True)
    config = make_config(preset, len(seats), **flags)
    return GameSpec(game_id or f"g{seed}-{secrets.token_hex(2)}", config, seed, tuple(seats), clocks, replay)


def with_arena(body: Callable[[Arena], Awaitable[T]], options: ArenaOptions = OPTIONS, timeout: float = 120) -> T:
    """Run ``body(arena)`` against a real server on an ephemeral port, then shut it down."""

    async def main() -> T:
        arena = await Arena.start("127.0.0.1:0", options)
        try:
            return await asyncio.wait_for(body(arena), timeout)
        finally:
            await arena.shutdown(0)

    return asyncio.run(main())


def read_record(path: Path) -> list[pb.RefereeMessage]:
    """Messages a bot recorded with CRAITS_RECORD."""
    data = path.read_bytes()
    out = []
    i = 0
    while i < len(data):
        (n,) = struct.unpack(">I", data[i : i + 4])
        out.append(pb.RefereeMessage.FromString(data[i + 4 : i + 4 + n]))
        i += 4 + n
    return out


def gone_within(pid: int, timeout_s: float = 10.0) -> bool:
    """True once ``pid`` is dead. A SIGKILL takes effect when the process next runs, which
    on a busy machine is not at once (the referee does not wait for processes that are not
    its children)."""
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes.
    with contextlib.suppress(OSError):
        status = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        return status != "Z"
    return True


class Client:
    """A scripted bot in the test's own event loop: every message it receives is kept."""

    def __init__(self, target: str, token: str, version: int = 1, name: str = "scripted") -> None:
        self.target = target
        self.token = token
        self.version = version
        self.name = name
        self.seen: list[pb.RefereeMessage] = []
        self._channel: grpc.aio.Channel | None = None
        self.call: Any = None

    async def open(self, hello: pb.BotMessage | None = None) -> Client:
        self._channel = grpc.aio.insecure_channel(self.target)
        self.call = referee_pb2_grpc.RefereeStub(self._channel).Play()
        await self.call.write(hello or pb.BotMessage(
            hello=pb.Hello(token=self.token, protocol_version=self.version, name=self.name)))
        return self

    async def next(self, kind: str | None = None, timeout: float = 10.0) -> pb.RefereeMessage:
        """The next message (of ``kind``, skipping others); raises EOFError at the stream's end."""
        while True:
            message = await asyncio.wait_for(self.call.read(), timeout)
            if message is grpc.aio.EOF:
                raise EOFError("stream ended")
            self.seen.append(message)
            if kind is None or message.WhichOneof("message") == kind:
                return message

    async def answer(self, request: pb.DecisionRequest, action_id: int, *, decision_id: int | None = None,
                     game_id: str | None = None) -> None:
        await self.call.write(pb.BotMessage(answer=pb.Answer(
            game_id=request.game_id if game_id is None else game_id,
            decision_id=request.decision_id if decision_id is None else decision_id,
            action_id=action_id, think_us=10)))

    async def play_out(self, timeout: float = 30.0) -> None:
        """Answer every request with the first legal action until the stream ends."""
        with contextlib.suppress(EOFError):
            while True:
                message = await self.next(timeout=timeout)
                if message.HasField("decision"):
                    await self.answer(message.decision, message.decision.legal_actions[0].id)

    async def status(self) -> grpc.StatusCode:
        """Read the stream to its end (the messages are kept in ``seen``) and return its status."""
        with contextlib.suppress(grpc.aio.AioRpcError, EOFError):
            while (message := await self.call.read()) is not grpc.aio.EOF:
                self.seen.append(message)
        return await self.call.code()

    async def close(self) -> None:
        if self.call is not None:
            self.call.cancel()
        if self._channel is not None:
            await self._channel.close()


def errors(messages: list[pb.RefereeMessage]) -> list[pb.Error]:
    return [m.error for m in messages if m.HasField("error")]
