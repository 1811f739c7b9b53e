"""Referee speed, side by side with a bare grpc.aio bidirectional echo.

Three phases in one run, all with this process as the server and bot processes as
clients on 127.0.0.1:

1. **Referee.** An :class:`~server.transport.service.Arena` plays games of four-player Craits
   between four bots, each a separate process (this file with ``--bot``: a grpc.aio
   client that answers each request with a random legal action), recording a replay of
   every game as a tournament does (to a temporary directory). Measured per
   decision put to a bot, from the moment the referee starts building the request
   to the moment the answer is back in the game task (the request's construction,
   its serialisation, the network both ways, the bot, the answer's routing). The
   ratio uses this whole span less the bot's own time (``think_us``: parsing the request,
   choosing, building the answer); the span from the send on is printed beside it.
2. **Echo.** A bare grpc.aio stream-stream method with raw bytes (no protobuf, no
   game): the server sends a payload and awaits the client's reply, the client
   (``--echo-client``, a separate process) replies at once. The payload sizes are the
   sizes of the referee's DecisionRequests recorded in phase 1, the replies the
   size of an Answer, so both move the same bytes.
3. **Four bots in turn, no referee** (for information): four bench bots (as in phase 1)
   answer real requests recorded in phase 1, handed to them in turn by a server that does
   nothing else. It is the floor for any referee with four bot processes, and the ratio of
   the referee to it is the referee's own share.
4. **Echo with an idle client** (for information): the echo of phase 2, but before each
   round trip the client is left idle as long as a bot waits between its turns in phase 1
   (the p50 of that wait). It shows what the wait alone costs a round trip on this machine.

Also printed: the server's own CPU per round trip in each phase (process time of
this process, which is only the server: the bots are other processes), and the
engine's share (applying an action; building the request in ``server.protocol.wire``).

    python bench/referee.py            # ~2 minutes
    python bench/referee.py --quick    # under a minute
    python bench/referee.py --quick --breakdown   # where a round trip goes, step by step

The last line is machine-readable: ``p50_ratio_vs_echo=X decisions_per_s=Y``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/referee.py` as well as `python -m bench.referee`
    sys.path.insert(0, str(ROOT))

from bench import grpc_io, played_by_their_bots  # noqa: E402  # (first: it chooses gRPC's I/O layer before grpc is imported)

GOAL_RATIO = 1.5
LEGS = ("  writer to bot", "  in the bot", "  bot to reader")
"""The wire and the bot, split (``--breakdown`` on Linux): the bot's time here is all of it."""
ECHO_METHOD = "/bench.Echo/Stream"


UNSANDBOXED = "none"
"""The bots run unsandboxed, as the bare echo's client does: this bench prices the referee's
round trip (and the bots write their stamps into a folder of ours); bench/sandbox.py prices
the sandbox."""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------------- client processes


async def _bot_main(seed: int, stamps: str | None = None) -> None:
    """A fast correct bot: a random legal action. It reads raw bytes and parses them itself,
    so the time it reports as thinking (think_us) includes parsing the request: the part
    of the round trip that is the bot's own work, which the bare echo's client does not do.

    With ``stamps`` (a file) it also writes, at the end, when each request was read and each
    answer sent, on the machine's monotonic clock (``--breakdown`` splits the wire with them)."""
    import grpc
    from craits.v1 import referee_pb2 as pb

    rng = random.Random(seed)
    perf = time.perf_counter
    seen: list[str] = []
    async with grpc.aio.insecure_channel(os.environ["CRAITS_SERVER"]) as channel:
        call = channel.stream_stream("/craits.v1.Referee/Play")()
        await call.write(pb.BotMessage(hello=pb.Hello(
            token=os.environ["CRAITS_TOKEN"], protocol_version=1,
            name=os.environ.get("CRAITS_BOT_NAME", "bench"))).SerializeToString())
        while True:
            data = await call.read()
            if data is grpc.aio.EOF:
                break
            start = perf()
            message = pb.RefereeMessage.FromString(data)
            if message.WhichOneof("message") == "decision":
                request = message.decision
                legal = request.legal_actions
                choice = legal[rng.randrange(len(legal))].id
                answer = pb.BotMessage(answer=pb.Answer(
                    game_id=request.game_id, decision_id=request.decision_id, action_id=choice,
                    think_us=int((perf() - start) * 1e6))).SerializeToString()
                if stamps is not None:
                    seen.append(f"{request.decision_id} {start:.9f} {perf():.9f}")
                await call.write(answer)
    if stamps is not None:
        Path(stamps).write_text("\n".join(seen) + "\n")


async def _echo_client_main(target: str, reply_size: int) -> None:
    import grpc

    reply = b"a" * reply_size
    async with grpc.aio.insecure_channel(target) as channel:
        call = channel.stream_stream(ECHO_METHOD)()
        await call.write(reply)  # hello
        try:
            while True:
                message = await call.read()
                if message is grpc.aio.EOF:
                    return
                await call.write(reply)
        except grpc.aio.AioRpcError:  # the bench stopped the server
            return


# --------------------------------------------------------------------------- the two servers


async def _start_echo_server(stream: Any, service: str = "bench.Echo", method: str = "Stream") -> tuple[Any, int]:
    """A grpc.aio server on an ephemeral port whose one method (raw bytes both ways) is ``stream``."""
    import grpc

    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler(
        service, {method: grpc.stream_stream_rpc_method_handler(stream)}
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


async def _start_echo_client(port: int, reply_size: int) -> Any:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__).resolve()), "--echo-client", f"127.0.0.1:{port}", str(reply_size)
    )


async def _idle(seconds: float) -> None:
    """Let the echo's client wait ``seconds``: the loop sleeps all but the last millisecond (its
    timers have about that resolution) and the server spins the rest, as a referee is busy
    with the other bots while one waits for its turn."""
    end = time.perf_counter() + seconds
    if seconds > 0.001:
        await asyncio.sleep(seconds - 0.001)
    while time.perf_counter() < end:
        pass


class EchoServer:
    """A bare grpc.aio stream-stream method on raw bytes, driven in batches: the handler sends
    each payload of a batch and awaits the client's reply, timing the round trip."""

    def __init__(self) -> None:
        self.batches: asyncio.Queue[tuple[list[bytes], float]] = asyncio.Queue()
        self.results: asyncio.Queue[list[float]] = asyncio.Queue()
        self.server: Any = None
        self.client: Any = None

    async def start(self, reply_size: int) -> None:

        async def stream(request_iterator: Any, context: Any) -> Any:
            await anext(request_iterator)  # the client's hello
            perf = time.perf_counter
            while True:
                payloads, idle_s = await self.batches.get()
                rts = []
                for payload in payloads:
                    if idle_s:
                        await _idle(idle_s)
                    start = perf()
                    yield payload
                    await anext(request_iterator)
                    rts.append(perf() - start)
                self.results.put_nowait(rts)

        self.server, port = await _start_echo_server(stream)
        self.client = await _start_echo_client(port, reply_size)

    async def run(self, payloads: list[bytes], idle_s: float = 0.0) -> tuple[list[float], float, float]:
        """Round trips of one batch, with its wall and CPU time; with ``idle_s``, the client is
        left idle that long before each round trip (not timed)."""
        c0, w0 = time.process_time(), time.perf_counter()
        self.batches.put_nowait((payloads, idle_s))
        rts = await asyncio.wait_for(self.results.get(), 600)
        return rts, time.perf_counter() - w0, time.process_time() - c0

    async def stop(self) -> None:
        await self.server.stop(0.5)
        if self.client.returncode is None:
            self.client.kill()
        await self.client.wait()


class TurnsEcho:
    """The game's exchange with no referee behind it: four bench bots (the same ``--bot``
    processes as phase 1) answer in turn, as in a game, real DecisionRequests recorded from
    the warm-up game. The server only hands request i to stream i % 4 and waits for the
    answer (one writer per stream fed by a driver, one reader task passing the answer back:
    the least any server needs to serve several streams from one sequence of turns).

    Not the baseline of the ratio (the issue sets that as the one-stream echo); printed beside
    it because it is the floor for any referee with four bot processes: a bot that waited
    through three other turns answers more slowly than a client that answers every time."""

    STREAMS = 4

    def __init__(self) -> None:
        self.streams: list[tuple[Any, list[Any]]] = []
        self.ready = asyncio.Event()
        self.server: Any = None
        self.clients: list[Any] = []

    async def start(self, seed: int) -> None:
        from server.game.seats import Outbox

        async def stream(request_iterator: Any, context: Any) -> Any:
            await anext(request_iterator)  # the bot's Hello
            outbox, waiter = Outbox(), [None]
            self.streams.append((outbox, waiter))
            if len(self.streams) == self.STREAMS:
                self.ready.set()

            async def read() -> None:
                async for answer in request_iterator:
                    if waiter[0] is not None and not waiter[0].done():
                        waiter[0].set_result(answer)

            reader = asyncio.create_task(read())
            try:
                while (payload := await outbox.get()) is not None:
                    yield payload
            finally:
                reader.cancel()

        self.server, port = await _start_echo_server(stream, "craits.v1.Referee", "Play")
        for i in range(self.STREAMS):
            env = {**os.environ, "CRAITS_SERVER": f"127.0.0.1:{port}", "CRAITS_TOKEN": f"turns-{i}"}
            self.clients.append(await asyncio.create_subprocess_exec(
                sys.executable, str(Path(__file__).resolve()), "--bot", str(seed * 10 + i), env=env
            ))
        await asyncio.wait_for(self.ready.wait(), 60)

    async def run(self, payloads: list[bytes]) -> list[float]:
        """Round trips less each bot's reported think time, as for the referee."""
        from craits.v1 import referee_pb2 as pb

        loop = asyncio.get_running_loop()
        perf = time.perf_counter
        rts = []
        for i, payload in enumerate(payloads):
            outbox, waiter = self.streams[i % self.STREAMS]
            start = perf()
            reply = waiter[0] = loop.create_future()
            outbox.put_nowait(payload)
            answer = await reply
            rts.append(perf() - start - pb.BotMessage.FromString(answer).answer.think_us / 1e6)
        return rts

    async def stop(self) -> None:
        for outbox, _ in self.streams:
            outbox.put_nowait(None)
        await self.server.stop(0.5)
        for client in self.clients:
            if client.returncode is None:
                client.kill()
            await client.wait()


async def run_bench(games: int, seed: int, reply_size: int) -> dict[str, Any]:
    """Referee games and echo batches take turns, so a noisy neighbour hurts both alike;
    each echo batch has as many round trips as the game before it asked."""
    from server.engine import make_config
    from server.game.referee import GameReferee
    from server.game.seats import framed
    from server.protocol import wire
    from server.spec import BotSpec, Clocks, GameSpec
    from server.transport.service import Arena, ArenaOptions

    arena = await Arena.start("127.0.0.1:0", ArenaOptions(sandbox=UNSANDBOXED))
    echo = EchoServer()
    await echo.start(reply_size)
    turns = TurnsEcho()
    await turns.start(seed)
    config = make_config("craits", 4, short_game=True)
    clocks = Clocks(decision_s=5.0, bank_s=30.0, connect_timeout_s=30.0)

    replays = tempfile.TemporaryDirectory(prefix="craits-bench-")

    def make_spec(n: int) -> GameSpec:
        bots = tuple(
            BotSpec(f"bot{i}", secrets.token_urlsafe(12),
                    command=(sys.executable, str(Path(__file__).resolve()), "--bot", str(seed * 10 + i)))
            for i in range(4)
        )
        return GameSpec(f"bench-{n}", config, seed + n, bots, clocks, replay_path=Path(replays.name) / f"bench-{n}.jsonl")

    # Warm-up game: record the request sizes (for the echo) without timing anything.
    sizes: list[int] = []
    requests: list[bytes] = []
    original_request = wire.GameEncoder.decision_request

    def sized(*args: Any, **kwargs: Any) -> bytes:
        message = original_request(*args, **kwargs)
        requests.append(framed("decision", message))
        sizes.append(len(requests[-1]))
        return message

    wire.GameEncoder.decision_request = sized  # type: ignore[method-assign]
    try:
        played_by_their_bots([await arena.run_game(make_spec(10_000))])
    finally:
        wire.GameEncoder.decision_request = original_request  # type: ignore[method-assign]

    # Timed games: wrap GameReferee._ask to time each decision put to a bot. A game is
    # timed from its first request to its last answer (bot start-up excluded).
    original_ask, original_send = GameReferee._ask, GameReferee._send_request
    perf, cpu_now = time.perf_counter, time.process_time
    span: dict[str, list[float]] = {}
    rts: list[float] = []
    wire_rts: list[float] = []
    thinks: list[float] = []
    sent_at = [0.0]
    answered: dict[tuple[str, int], float] = {}
    waits: list[float] = []
    """How long a bot waited between its answer and its next request."""

    async def timed_ask(self: GameReferee, seat: Any, legal: list[int]) -> Any:
        start = perf()
        if self.game_id not in span:
            span[self.game_id] = [start, cpu_now(), 0.0, 0.0]
        if (self.game_id, seat.index) in answered:
            waits.append(start - answered[self.game_id, seat.index])
        result = await original_ask(self, seat, legal)
        end = answered[self.game_id, seat.index] = perf()
        rts.append(end - start)
        wire_rts.append(end - sent_at[0])
        thinks.append(result[2] or 0.0)
        span[self.game_id][2:] = [end, cpu_now()]
        return result

    def stamped_send(self: GameReferee, seat: Any, message: bytes) -> None:
        sent_at[0] = perf()
        original_send(self, seat, message)

    rng = random.Random(seed)
    echo_rts: list[float] = []
    echo_wall = echo_cpu = 0.0
    turns_rts: list[float] = []
    turns_cpu = 0.0
    idle_rts: list[float] = []
    GameReferee._ask = timed_ask  # type: ignore[method-assign]
    GameReferee._send_request = stamped_send  # type: ignore[method-assign]
    try:
        for n in range(games):
            before = len(rts)
            played_by_their_bots([await arena.run_game(make_spec(n))])
            batch = [b"q" * rng.choice(sizes) for _ in range(len(rts) - before)]
            got, wall, cpu = await echo.run(batch)
            echo_rts += got
            echo_wall += wall
            echo_cpu += cpu
            turns_started = time.process_time()
            turns_rts += await turns.run([rng.choice(requests) for _ in batch])
            turns_cpu += time.process_time() - turns_started
            idle_rts += (await echo.run(batch, _pct(waits, 0.5)))[0]
    finally:
        GameReferee._ask = original_ask  # type: ignore[method-assign]
        GameReferee._send_request = original_send  # type: ignore[method-assign]
        await arena.shutdown(0)
        await echo.stop()
        await turns.stop()
        replays.cleanup()
    wall = sum(s[2] - s[0] for s in span.values())
    cpu = sum(s[3] - s[1] for s in span.values())
    return {
        "sizes": sizes,
        "referee": {
            "round_trips": len(rts), "per_s": len(rts) / wall, "p50_ms": _pct(rts, 0.5) * 1000,
            "p99_ms": _pct(rts, 0.99) * 1000, "cpu_ms": cpu / len(rts) * 1000,
            "sent_p50_ms": _pct(wire_rts, 0.5) * 1000,
            "think_p50_ms": _pct(thinks, 0.5) * 1000,
            "net_p50_ms": _pct([rt - t for rt, t in zip(rts, thinks, strict=True)], 0.5) * 1000,
            "net_p99_ms": _pct([rt - t for rt, t in zip(rts, thinks, strict=True)], 0.99) * 1000,
        },
        "echo": {
            "round_trips": len(echo_rts), "per_s": len(echo_rts) / echo_wall, "p50_ms": _pct(echo_rts, 0.5) * 1000,
            "p99_ms": _pct(echo_rts, 0.99) * 1000, "cpu_ms": echo_cpu / len(echo_rts) * 1000,
        },
        "turns": {
            "round_trips": len(turns_rts), "p50_ms": _pct(turns_rts, 0.5) * 1000,
            "p99_ms": _pct(turns_rts, 0.99) * 1000, "cpu_ms": turns_cpu / len(turns_rts) * 1000,
        },
        "idle": {
            "round_trips": len(idle_rts), "p50_ms": _pct(idle_rts, 0.5) * 1000,
            "p99_ms": _pct(idle_rts, 0.99) * 1000, "wait_ms": _pct(waits, 0.5) * 1000,
        },
    }


# --------------------------------------------------------------------------- where the time goes


async def run_breakdown(games: int, seed: int) -> dict[str, list[float]]:
    """Referee games only, with timestamps at each step of a decision put to a bot: building
    the request, handing it to the stream's writer, the wire and the bot (less the bot's own
    time), handing the answer from the stream's reader to the game, and the rest. The extra
    stamps cost a little, so this is a separate run from the ratio's.

    On Linux, where ``time.perf_counter`` is the machine's monotonic clock in every process,
    the bots stamp too, and the wire is split into its legs: from the stream's writer to the
    bot's read, the bot (parse, choose, reply), and from the bot's write to the stream's reader."""
    from server.engine import make_config
    from server.game.referee import GameReferee
    from server.game.seats import Arrival, Mailbox, Outbox
    from server.spec import BotSpec, Clocks, GameSpec
    from server.transport.service import Arena, ArenaOptions

    perf = time.perf_counter
    steps: dict[str, list[float]] = {k: [] for k in ("build", "to writer", "wire and bot", "to game", "rest")}
    now: dict[str, Any] = {}
    legs: dict[int, tuple[float, float]] = {}
    """decision id -> (written, arrived), to match with the bots' stamps."""
    original = GameReferee._ask, GameReferee._send_request, Outbox.get, Mailbox.get

    async def ask(self: GameReferee, seat: Any, legal: list[int]) -> Any:
        now.clear()
        now["start"] = perf()
        result = await original[0](self, seat, legal)
        end = perf()
        if {"sent", "written", "resumed"} <= now.keys():
            steps["build"].append(now["sent"] - now["start"])
            steps["to writer"].append(now["written"] - now["sent"])
            steps["wire and bot"].append(now["at"] - now["written"] - (result[2] or 0.0))
            steps["to game"].append(now["resumed"] - now["at"])
            steps["rest"].append(end - now["resumed"])
            legs[now["decision"]] = (now["written"], now["at"])
        return result

    def send(self: GameReferee, seat: Any, message: bytes) -> None:
        now["sent"], now["message"] = perf(), message
        original[1](self, seat, message)

    async def outbox_get(self: Outbox) -> Any:
        item = await original[2](self)
        if item is now.get("message") and "written" not in now:
            now["written"] = perf()
        return item

    async def mailbox_get(self: Mailbox, timeout: float) -> Any:
        item = await original[3](self, timeout)
        if isinstance(item, Arrival):
            now["at"], now["resumed"], now["decision"] = item.at, perf(), item.answer.decision_id
        return item

    arena = await Arena.start("127.0.0.1:0", ArenaOptions(sandbox=UNSANDBOXED))
    config = make_config("craits", 4, short_game=True)
    clocks = Clocks(decision_s=5.0, bank_s=30.0, connect_timeout_s=30.0)
    replays = tempfile.TemporaryDirectory(prefix="craits-bench-")
    GameReferee._ask, GameReferee._send_request, Outbox.get, Mailbox.get = (  # type: ignore[method-assign]
        ask, send, outbox_get, mailbox_get)
    try:
        for n in range(games + 1):  # the first game warms up and is not counted
            if n == 1:
                for values in steps.values():
                    values.clear()
            bots = tuple(
                BotSpec(f"bot{i}", secrets.token_urlsafe(12),
                        command=(sys.executable, str(Path(__file__).resolve()), "--bot", str(seed * 10 + i),
                                 *(("--stamps", str(Path(replays.name) / f"stamps-{n}-{i}.txt")) if n else ())))
                for i in range(4)
            )
            await arena.run_game(GameSpec(f"steps-{n}", config, seed + n, bots, clocks,
                                          replay_path=Path(replays.name) / f"steps-{n}.jsonl"))
        if sys.platform.startswith("linux"):
            for name in LEGS:
                steps[name] = []
            for path in Path(replays.name).glob("stamps-*.txt"):
                for row in path.read_text().splitlines():
                    decision, read_at, sent_at = row.split()
                    if int(decision) in legs:
                        written, arrived = legs[int(decision)]
                        steps[LEGS[0]].append(float(read_at) - written)
                        steps[LEGS[1]].append(float(sent_at) - float(read_at))
                        steps[LEGS[2]].append(arrived - float(sent_at))
    finally:
        GameReferee._ask, GameReferee._send_request, Outbox.get, Mailbox.get = original  # type: ignore[method-assign]
        await arena.shutdown(0)
        replays.cleanup()
    return steps


# --------------------------------------------------------------------------- the engine's share


def engine_share(games: int, seed: int) -> dict[str, float]:
    """In-process, per decision put to a bot: applying actions, and building what the referee
    sends (the request, and the hand ends at the end of each hand, serialised and framed), both
    the referee's way (``wire.GameEncoder``) and through ``observe()`` (the reference path).
    The two builders run in separate passes over the same games, so neither pays for the
    other's garbage."""
    from server.engine import GameState, make_config
    from server.game.seats import framed
    from server.protocol import wire

    config = make_config("craits", 4, short_game=True)
    perf = time.perf_counter

    def one_pass(fast: bool) -> tuple[float, float, int]:
        apply_s = build_s = 0.0
        asked = 0
        for g in range(games):
            state = GameState(config, seed + g)
            encoder = wire.GameEncoder(state, f"bench-{g}")
            rng = random.Random(g)
            sent: dict[int, tuple[int, int]] = {}
            hands_done = 0
            while (decision := state.decision) is not None:
                legal = state.legal_action_ids()
                if len(legal) > 1:
                    hand, count = sent.get(decision.seat, (0, 0))
                    history_from = count if hand == state.hand_number else 0
                    start = perf()
                    if fast:
                        framed("decision", encoder.decision_request(
                            decision.seat, decision_id=asked + 1, deadline_ms=5000, bank_ms=30_000, strikes=0,
                            history_from=history_from))
                    else:
                        framed("decision", wire.decision_request(
                            state, decision.seat, game_id=encoder.game_id, decision_id=asked + 1, deadline_ms=5000,
                            bank_ms=30_000, strikes=0, history_from=history_from))
                    build_s += perf() - start
                    sent[decision.seat] = (state.hand_number, len(state.hand_events))
                    asked += 1
                action = legal[rng.randrange(len(legal))]
                start = perf()
                state.apply(action)
                apply_s += perf() - start
                if len(state.hand_results) != hands_done:
                    start = perf()
                    for result in state.hand_results[hands_done:]:
                        for seat in range(state.n):
                            framed("hand_end", encoder.hand_end(result, seat) if fast
                                   else wire.hand_end(state, result, seat, encoder.game_id))
                    build_s += perf() - start
                    hands_done = len(state.hand_results)
        return apply_s, build_s, asked

    apply_s, build_s, asked = one_pass(True)
    _, reference_s, _ = one_pass(False)
    return {"apply_ms": apply_s / asked * 1000, "build_ms": build_s / asked * 1000,
            "reference_build_ms": reference_s / asked * 1000}


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer games (under a minute)")
    parser.add_argument("--games", type=int, help="referee games to time (default 16, 4 with --quick)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--breakdown", action="store_true",
                        help="instead: where a decision's round trip goes, step by step (referee games only)")
    parser.add_argument("--bot", metavar="SEED", help=argparse.SUPPRESS)
    parser.add_argument("--stamps", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--echo-client", nargs=2, metavar=("TARGET", "REPLY_SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bot is not None:
        asyncio.run(_bot_main(int(args.bot), args.stamps))
        return 0
    if args.echo_client is not None:
        asyncio.run(_echo_client_main(args.echo_client[0], int(args.echo_client[1])))
        return 0

    from craits.v1 import referee_pb2 as pb

    from server.logging import configure_logging

    configure_logging(None, console=False)
    games = args.games or (4 if args.quick else 16)
    if args.breakdown:
        steps = asyncio.run(run_breakdown(games, args.seed))
        print(f"where a decision's round trip goes ({games} referee games, {len(steps['build'])} decisions; "
              f"p50 and mean, ms):")
        for step, values in steps.items():
            if step == LEGS[0]:
                print("  the wire and the bot, from the bots' own stamps (the bot's whole time included):")
            print(f"  {step:15} {_pct(values, 0.5) * 1000:7.3f} {statistics.mean(values) * 1000:7.3f}")
        return 0
    print(f"referee bench: {games} games of 4-player craits (short_game), 4 bot processes (bots launched unsandboxed: "
          f"this bench prices the referee's round trip, bench/sandbox.py the sandbox), replays recorded, taking turns with a bare echo; python {sys.version.split()[0]}, {os.cpu_count()} cpus; {grpc_io()}", flush=True)
    answer_size = pb.BotMessage(answer=pb.Answer(game_id="bench-0", decision_id=123456, action_id=318,
                                                 think_us=42)).ByteSize()
    result = asyncio.run(run_bench(games, args.seed, answer_size))
    ref, echo, turns, idle = result["referee"], result["echo"], result["turns"], result["idle"]
    sizes = result["sizes"]
    share = engine_share(3, args.seed)
    ratio = ref["net_p50_ms"] / echo["p50_ms"]
    print(f"message sizes: requests mean {statistics.mean(sizes):.0f} B (max {max(sizes)} B), answers {answer_size} B")
    print(f"{'':26} {'round trips':>11} {'per s':>8} {'p50 ms':>8} {'p99 ms':>8} {'server CPU ms/rt':>17}")
    print(f"{'referee, whole':26} {ref['round_trips']:>11} {ref['per_s']:>8.0f} {ref['p50_ms']:>8.3f} "
          f"{ref['p99_ms']:>8.3f} {ref['cpu_ms']:>17.3f}")
    print(f"{'referee, less bot time':26} {ref['round_trips']:>11} {'':>8} {ref['net_p50_ms']:>8.3f} "
          f"{ref['net_p99_ms']:>8.3f}")
    print(f"{'echo':26} {echo['round_trips']:>11} {echo['per_s']:>8.0f} {echo['p50_ms']:>8.3f} "
          f"{echo['p99_ms']:>8.3f} {echo['cpu_ms']:>17.3f}")
    print(f"{'4 bots in turn, no referee':26} {turns['round_trips']:>11} {'':>8} {turns['p50_ms']:>8.3f} "
          f"{turns['p99_ms']:>8.3f} {turns['cpu_ms']:>17.3f}   (less bot time)")
    print(f"{'echo, client idle between':26} {idle['round_trips']:>11} {'':>8} {idle['p50_ms']:>8.3f} "
          f"{idle['p99_ms']:>8.3f}   (idle {idle['wait_ms']:.3f} ms before each: a bot's p50 wait for its turn)")
    print(f"bot time per decision (parse the request, choose, reply; reported as think_us): "
          f"p50 {ref['think_p50_ms']:.3f} ms")
    print(f"referee from the request's send to its answer (the build excluded, bot time included): "
          f"p50 {ref['sent_p50_ms']:.3f} ms")
    print(f"engine per decision put to a bot: apply {share['apply_ms']:.3f} ms, "
          f"build the request and hand ends (server.protocol.wire.GameEncoder) {share['build_ms']:.3f} ms "
          f"({(share['apply_ms'] + share['build_ms']) / echo['p50_ms']:.0%} of the echo's p50); "
          f"the same through observe() {share['reference_build_ms']:.3f} ms")
    verdict = "meets" if ratio <= GOAL_RATIO else "misses"
    print(f"referee p50 (less bot time) / echo p50 = {ratio:.2f} ({verdict} the goal of {GOAL_RATIO}x); "
          f"whole round trip {ref['p50_ms'] / echo['p50_ms']:.2f}x; "
          f"server CPU per round trip {ref['cpu_ms'] / echo['cpu_ms']:.2f}x the echo's")
    print(f"for information: referee p50 (less bot time) / p50 of the same four bots answering recorded "
          f"requests in turn with no referee = {ref['net_p50_ms'] / turns['p50_ms']:.2f} (the referee's own share); "
          f"those bots alone are {turns['p50_ms'] / echo['p50_ms']:.2f}x the one-stream echo")
    print(f"for information: server CPU per round trip, referee / the server handing recorded requests to the four "
          f"bots in turn = {ref['cpu_ms'] / turns['cpu_ms']:.2f} (the referee's own share of the CPU); that server "
          f"is {turns['cpu_ms'] / echo['cpu_ms']:.2f}x the one-stream echo's")
    print(f"for information: the one-stream echo whose client idles {idle['wait_ms']:.3f} ms before each round trip "
          f"(as long as a bot waits for its turn) is {idle['p50_ms'] / echo['p50_ms']:.2f}x the echo without the wait")
    print(f"p50_ratio_vs_echo={ratio:.3f} decisions_per_s={ref['per_s']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
