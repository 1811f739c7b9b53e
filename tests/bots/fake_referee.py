"""A tiny scripted referee for testing the bot runners' protocol handling.

It plays one real two-player game (the engine, requests built with ``server.protocol.wire``)
with the connected bot in seat 0 and a seeded random player in seat 1, checks
every answer against the legal actions it offered, and can misbehave on purpose:
drop the connection after a few decisions (to test reconnecting), refuse the
token, or never finish (to test SIGTERM). The real referee (server.transport.service) is
tested elsewhere; this one exists so each runner behaviour has a test that can fail.
"""

from __future__ import annotations

import random
import threading
from concurrent import futures
from dataclasses import dataclass, field

import grpc
from craits.v1 import referee_pb2 as pb
from craits.v1 import referee_pb2_grpc

from server.engine import make_config
from server.engine.state import GameState
from server.protocol import wire
from server.spec import Clocks

GAME_ID = "fake-1"


@dataclass
class Script:
    token: str = "good-token"
    drop_after: tuple[int, ...] = ()
    """Abort the stream (UNAVAILABLE) right after sending these decision numbers, before the answer."""
    hang: bool = False
    """After Welcome, send nothing more and never close (the bot must be stopped)."""
    end_with: grpc.StatusCode | None = None
    """After Welcome, end every stream with this status."""
    end_said: str = ""
    """With ``end_with``: a fatal Error saying this comes first (as the referee cutting off a revoked token)."""
    seed: int = 5


@dataclass
class Seen:
    """What the fake referee observed; tests assert on it."""

    hellos: list[pb.Hello] = field(default_factory=list)
    answers: list[pb.Answer] = field(default_factory=list)
    illegal: list[str] = field(default_factory=list)
    repeated_sent: int = 0
    finished: bool = False
    totals: tuple[int, ...] = ()


class FakeReferee(referee_pb2_grpc.RefereeServicer):
    def __init__(self, script: Script) -> None:
        self.script = script
        self.seen = Seen()
        self.state = GameState(make_config("craits", 2, short_game=True), script.seed)
        self.rng = random.Random(script.seed)
        self.decision_id = 0
        self.pending: pb.DecisionRequest | None = None
        self.sent_events = (0, 0)  # (hand number, events of it already sent to seat 0)
        self.lock = threading.Lock()
        self.started = False
        self.closing = threading.Event()

    def Play(self, request_iterator, context):  # the rpc's name, as generated
        first = next(request_iterator, None)
        if first is None or first.WhichOneof("message") != "hello":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first message of a stream must be Hello")
        hello = first.hello
        with self.lock:
            self.seen.hellos.append(hello)
        if hello.token != self.script.token:
            yield pb.RefereeMessage(error=pb.Error(code=pb.ERROR_CODE_UNAUTHENTICATED, message="unknown token", fatal=True))
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown token")
        resumed = self.started
        yield pb.RefereeMessage(welcome=pb.Welcome(protocol_version=1, server_version="fake", bot_name=hello.name,
                                                   resumed=resumed))
        if self.script.end_with is not None:
            if self.script.end_said:
                yield pb.RefereeMessage(error=pb.Error(code=pb.ERROR_CODE_UNAUTHENTICATED, message=self.script.end_said,
                                                       fatal=True))
            context.abort(self.script.end_with, self.script.end_said or "fake referee: ended on purpose")
        if self.script.hang:
            while context.is_active() and not self.closing.wait(0.05):
                pass
            return
        if not self.started:
            self.started = True
            start = wire.game_start(self.state.config, 0, game_id=GAME_ID, seat_names=["bot", "fake-random"],
                                    clock=Clocks())
            yield pb.RefereeMessage(game_start=start)
        state = self.state
        while state.decision is not None:
            ids = state.legal_action_ids()
            if state.decision.seat != 0 or len(ids) == 1:
                state.apply(ids[0] if len(ids) == 1 else self.rng.choice(ids))
                continue
            if self.pending is not None:  # resend the open request after a reconnect
                request = pb.DecisionRequest()
                request.CopyFrom(self.pending)
                request.repeated_request = True
                self.seen.repeated_sent += 1
            else:
                self.decision_id += 1
                hand, already = self.sent_events
                request = wire.decision_request(
                    state, 0, game_id=GAME_ID, decision_id=self.decision_id, deadline_ms=1000, bank_ms=10_000,
                    strikes=0, history_from=already if hand == state.hand_number else 0,
                )
                self.sent_events = (state.hand_number, len(state.hand_events))
                self.pending = request
            yield pb.RefereeMessage(decision=request)
            if not request.repeated_request and self.decision_id in self.script.drop_after:
                context.abort(grpc.StatusCode.UNAVAILABLE, "fake referee: connection dropped on purpose")
            message = next(request_iterator, None)
            if message is None:
                return  # the bot went away; a reconnect resumes
            answer = message.answer
            self.seen.answers.append(answer)
            if answer.decision_id != request.decision_id or answer.action_id not in ids:
                self.seen.illegal.append(f"decision {request.decision_id}: answered {answer}")
                yield pb.RefereeMessage(error=pb.Error(code=pb.ERROR_CODE_ILLEGAL_ACTION, message="not legal",
                                                       game_id=GAME_ID, decision_id=request.decision_id))
                state.apply(ids[0])
            else:
                state.apply(answer.action_id)
            self.pending = None
        self.seen.finished = True
        self.seen.totals = state.result().totals
        yield pb.RefereeMessage(game_end=wire.game_end(state, GAME_ID))


class FakeServer:
    """The fake referee on 127.0.0.1 with an ephemeral port."""

    def __init__(self, script: Script | None = None) -> None:
        self.referee = FakeReferee(script or Script())
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        referee_pb2_grpc.add_RefereeServicer_to_server(self.referee, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{self.port}"

    @property
    def seen(self) -> Seen:
        return self.referee.seen

    def __enter__(self) -> FakeServer:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.referee.closing.set()
        self.server.stop(grace=None)
