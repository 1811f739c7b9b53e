"""What a leaner framing on the sandbox's Unix socket would buy, against gRPC, per round trip.

A measurement to decide on, made before the product took it up (``craits.frames``,
``server.transport.frames``: docs/protocol.md). A sandboxed bot reaches the referee through a
Unix socket; on it, the same protobuf messages could go as length-prefixed frames (four
bytes of length, then a ``RefereeMessage`` or a ``BotMessage``) beside gRPC. Two servers in
this process take turns sending the same real DecisionRequests (a four-player Craits game's,
one seat's sequence, as the referee builds them) to one bot process on a Unix socket, and
await each answer:

* ``grpc``: a grpc.aio stream-stream method (raw bytes, as the referee's writer sends them),
  the client the kit's own runner with its random bot (``craits_bot.examples.random_bot``);
* ``frames``: an asyncio ``Protocol`` on the socket (no writer task, no reader task: a
  frame's answer is handed over in ``data_received``), the client one thread with a blocking
  socket running the kit's ``Dispatcher`` and random bot (no event loop, no gRPC threads).

Printed: CPU per round trip of the server (this process) and of the client (its
``/proc`` times, 10 ms ticks over thousands of round trips), alternating rounds.

    python bench/framing.py --quick

The last line: ``server_ratio_frames_vs_grpc=S client_ratio_frames_vs_grpc=C
server_us_grpc=A server_us_frames=B client_us_grpc=D client_us_frames=E``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import grpc_io  # noqa: E402,F401  # (first: it chooses gRPC's I/O layer before grpc is imported)

TICK = os.sysconf("SC_CLK_TCK")
HEADER = struct.Struct("<I")


def requests(seed: int = 7, seat: int = 0) -> list[bytes]:
    """One seat's DecisionRequests of a random four-player Craits game, framed as RefereeMessages."""
    from server.engine import new_game
    from server.game.seats import framed
    from server.protocol.wire import GameEncoder

    state = new_game("craits", 4, seed)
    encoder = GameEncoder(state, "bench-1")
    rng = random.Random(seed)
    sent: dict[int, tuple[int, int]] = {}
    out = []
    decision_id = 0
    while (decision := state.decision) is not None:
        legal = state.legal_action_ids()
        if len(legal) > 1 and decision.seat == seat:
            hand, count = sent.get(seat, (0, 0))
            history_from = count if hand == state.hand_number else 0
            decision_id += 1
            out.append(framed("decision", encoder.decision_request(
                seat, decision_id=decision_id, deadline_ms=5000, bank_ms=30000, strikes=0, history_from=history_from)))
            sent[seat] = (state.hand_number, len(state.log) - state.hand_log_start)
        state.apply(rng.choice(legal))
    return out


def cpu_of(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICK


# ---------------------------------------------------------------------------- the frames client


def frames_client(path: str) -> None:
    """The kit's per-decision path on a blocking socket: read a frame, dispatch, write the answer."""
    from craits.v1 import referee_pb2 as pb
    from craits_bot import Dispatcher
    from craits_bot.examples.random_bot import RandomBot

    dispatcher = Dispatcher(RandomBot())
    parse = pb.RefereeMessage.FromString
    pack = HEADER.pack
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    reader = sock.makefile("rb", buffering=65536)
    read = reader.read
    send = sock.sendall
    while True:
        header = read(4)
        if len(header) < 4:
            return
        data = read(HEADER.unpack(header)[0])
        reply = dispatcher.handle(parse(data))
        if reply is not None:
            body = reply.SerializeToString()
            send(pack(len(body)) + body)


class FramesServer(asyncio.Protocol):
    """Sends each request and waits for its answer; the answer arrives in ``data_received``."""

    def __init__(self) -> None:
        self.transport: Any = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[bytes] | None = None
        self.connected = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.connected.set_result(None)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while len(buffer) >= 4:
            size = HEADER.unpack_from(buffer)[0]
            if len(buffer) < 4 + size:
                return
            frame = bytes(buffer[4:4 + size])
            del buffer[:4 + size]
            waiter = self.waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(frame)

    async def round_trips(self, payloads: list[bytes]) -> None:
        from craits.v1 import referee_pb2 as pb

        loop = asyncio.get_running_loop()
        write = self.transport.write
        for payload in payloads:
            self.waiter = loop.create_future()
            write(HEADER.pack(len(payload)) + payload)
            pb.BotMessage.FromString(await self.waiter)  # parsed, as the referee does


# ---------------------------------------------------------------------------- the gRPC side


class GrpcServer:
    """One Play stream from the kit's runner: requests sent one at a time, each answer awaited."""

    def __init__(self) -> None:
        self.batches: asyncio.Queue[list[bytes] | None] = asyncio.Queue()
        self.done: asyncio.Queue[None] = asyncio.Queue()
        self.server: Any = None

    async def start(self, path: str) -> None:
        import grpc
        from craits.v1 import referee_pb2 as pb

        async def play(request_iterator: Any, context: Any) -> Any:
            await anext(request_iterator)  # Hello
            while (batch := await self.batches.get()) is not None:
                for payload in batch:
                    yield payload
                    pb.BotMessage.FromString(await anext(request_iterator))
                self.done.put_nowait(None)

        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "craits.v1.Referee", {"Play": grpc.stream_stream_rpc_method_handler(play)}),))
        self.server.add_insecure_port(f"unix:{path}")
        await self.server.start()

    async def round_trips(self, payloads: list[bytes]) -> None:
        self.batches.put_nowait(payloads)
        await self.done.get()


async def measure(rounds: int, per_round: int) -> dict[str, list[tuple[float, float]]]:
    payloads = requests()
    while len(payloads) < per_round:
        payloads += payloads
    payloads = payloads[:per_round]
    folder = tempfile.TemporaryDirectory(prefix="craits-framing-")
    grpc_path, frames_path = f"{folder.name}/grpc.sock", f"{folder.name}/frames.sock"
    loop = asyncio.get_running_loop()
    grpc_server = GrpcServer()
    await grpc_server.start(grpc_path)
    env = {**os.environ, "CRAITS_SERVER": f"unix:{grpc_path}", "CRAITS_TOKEN": "bench"}
    kit = subprocess.Popen([sys.executable, "-m", "craits_bot.examples.random_bot", "-q"], env=env)
    protocol: list[FramesServer] = []
    frames_server = await loop.create_unix_server(lambda: protocol.append(FramesServer()) or protocol[-1],
                                                  frames_path)
    frames = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--frames-client", frames_path])
    while not protocol:
        await asyncio.sleep(0.01)
    await protocol[0].connected
    sides = {"grpc": (grpc_server, kit.pid), "frames": (protocol[0], frames.pid)}
    for server, _ in sides.values():
        await server.round_trips(payloads[:200])  # warm-up
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    try:
        for n in range(rounds):
            for name in (("grpc", "frames") if n % 2 == 0 else ("frames", "grpc")):
                server, pid = sides[name]
                own, theirs = time.process_time(), cpu_of(pid)
                await server.round_trips(payloads)
                results[name].append((time.process_time() - own, cpu_of(pid) - theirs))
    finally:
        grpc_server.batches.put_nowait(None)
        protocol[0].transport.close()
        frames_server.close()
        await grpc_server.server.stop(1)
        for process in (kit, frames):
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        folder.cleanup()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="6 rounds of 3,000 round trips (default 10 of 5,000)")
    parser.add_argument("--rounds", type=int, help="rounds (each side once a round)")
    parser.add_argument("--round-trips", type=int, help="round trips per side per round")
    parser.add_argument("--frames-client", metavar="SOCKET", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.frames_client:
        frames_client(args.frames_client)
        return 0
    rounds, per_round = (6, 3000) if args.quick else (10, 5000)
    rounds, per_round = args.rounds or rounds, args.round_trips or per_round
    print(f"framing bench: {rounds} rounds x {per_round} round trips each way, one bot on a Unix socket, "
          f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}")
    results = asyncio.run(measure(rounds, per_round))
    us: dict[str, tuple[float, float]] = {}
    for name, rows in results.items():
        server = sum(r[0] for r in rows) / (len(rows) * per_round) * 1e6
        client = sum(r[1] for r in rows) / (len(rows) * per_round) * 1e6
        us[name] = (server, client)
        print(f"  {name:7} server {server:6.1f} us, client {client:6.1f} us CPU per round trip")
    s_ratio = us["frames"][0] / max(us["grpc"][0], 1e-9)  # (a tick-coarse count may read 0 on a tiny run)
    c_ratio = us["frames"][1] / max(us["grpc"][1], 1e-9)
    print(
        f"server_ratio_frames_vs_grpc={s_ratio:.2f} client_ratio_frames_vs_grpc={c_ratio:.2f} "
        f"server_us_grpc={us['grpc'][0]:.1f} server_us_frames={us['frames'][0]:.1f} "
        f"client_us_grpc={us['grpc'][1]:.1f} client_us_frames={us['frames'][1]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
