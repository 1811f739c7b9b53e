"""A minimal bot on the generated stubs alone, for the checker's tests.

Each test bot passes ``run`` its own ``choose`` (and maybe a different Hello or
message hook), so every broken bot differs from the good one in one way.
"""

from __future__ import annotations

import os
import queue
import sys
from collections.abc import Callable, Iterator

import grpc
from craits.v1 import referee_pb2 as pb
from craits.v1 import referee_pb2_grpc

Choose = Callable[[pb.DecisionRequest], int]


def hello(**overrides: object) -> pb.Hello:
    fields: dict[str, object] = {
        "token": os.environ["CRAITS_TOKEN"],
        "protocol_version": pb.PROTOCOL_VERSION_CURRENT,
        "name": os.environ.get("CRAITS_BOT_NAME", "test-bot"),
        "about": "tests/checker/bots",
    }
    fields.update(overrides)
    return pb.Hello(**fields)  # type: ignore[arg-type]


def first_legal(request: pb.DecisionRequest) -> int:
    return request.legal_actions[0].id


def announcing(request: pb.DecisionRequest) -> int:
    """The first legal action, except that a "+one-card" play wins when one is offered."""
    for action in request.legal_actions:
        if action.announce:
            return action.id
    return request.legal_actions[0].id


def run(
    choose: Choose,
    *,
    first: pb.Hello | None = None,
    send_hello: bool = True,
    on_message: Callable[[pb.RefereeMessage], None] | None = None,
    echo: Callable[[pb.DecisionRequest], int] | None = None,
) -> int:
    """Play until the referee closes the stream; return the exit code.

    ``echo`` gives the decision id to answer with (default: the request's own).
    """
    channel = grpc.insecure_channel(os.environ["CRAITS_SERVER"])
    stub = referee_pb2_grpc.RefereeStub(channel)
    outbox: queue.Queue[pb.BotMessage | None] = queue.Queue()
    if send_hello:
        outbox.put(pb.BotMessage(hello=first or hello()))

    def messages() -> Iterator[pb.BotMessage]:
        while (msg := outbox.get()) is not None:
            yield msg

    try:
        for msg in stub.Play(messages()):
            if on_message is not None:
                on_message(msg)
            if msg.WhichOneof("message") == "decision":
                request = msg.decision
                decision_id = echo(request) if echo else request.decision_id
                answer = pb.Answer(game_id=request.game_id, decision_id=decision_id, action_id=choose(request))
                outbox.put(pb.BotMessage(answer=answer))
    except grpc.RpcError as err:
        print(f"stream ended: {err.code().name}: {err.details()}", file=sys.stderr)
        return 1
    finally:
        outbox.put(None)
        channel.close()
    return 0
