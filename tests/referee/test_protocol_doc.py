"""docs/protocol.md, the .proto and the referee agree: every error code and every status at the
end of a stream that the page names exists in the proto, and the real referee produces it.

Each code and status has a scenario below, played against a real server with a scripted
client; the first test checks that the scenarios cover exactly what the page lists, the
second that each scenario gets from the referee what it claims.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from craits.v1 import referee_pb2 as pb

from server.engine import GameState
from server.spec import Clocks
from server.transport.service import Arena, ArenaOptions

from .conftest import OPTIONS, Client, builtin, remote, spec, with_arena

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL_MD = ROOT / "docs" / "protocol.md"
PATIENT = Clocks(decision_s=10.0, bank_s=10.0, max_strikes=3, reconnect_grace_s=10.0, connect_timeout_s=15.0)


@dataclass(frozen=True)
class Seen:
    """What one stream got from the referee: its Errors, in order, and its final status."""

    errors: list[pb.Error]
    status: grpc.StatusCode

    @property
    def codes(self) -> set[str]:
        return {pb.ErrorCode.Name(e.code).removeprefix("ERROR_CODE_") for e in self.errors}


async def drain(client: Client, answer: bool = True, timeout: float = 30.0) -> Seen:
    """Read the stream to its end (answering requests with the first legal action if asked)."""
    status = grpc.StatusCode.OK
    try:
        while True:
            message = await client.next(timeout=timeout)
            if answer and message.HasField("decision"):
                await client.answer(message.decision, message.decision.legal_actions[0].id)
    except EOFError:
        status = await client.call.code()
    except grpc.aio.AioRpcError as err:
        status = err.code()
    await client.close()
    return Seen([m.error for m in client.seen if m.HasField("error")], status)


# --------------------------------------------------------------------------- scenarios


async def played_out(arena: Arena) -> Seen:
    """A remote bot whose game is played out: when the referee has nothing more for it (here
    `craits play` ends), the stream ends with OK, and no Error came."""
    me = remote("me")
    arena.register_token(me.token, me.name)  # as `craits play remote:me:...` does
    client = await Client(arena.target, me.token).open()
    await client.next("welcome")
    task = asyncio.create_task(arena.run_game(spec(me, builtin("random"))))
    seen = asyncio.create_task(drain(client))
    await task
    await arena.shutdown(0)
    return await seen


async def refused_answers(arena: Arena) -> Seen:
    """A bad id (MALFORMED), then two illegal ones (ILLEGAL_ACTION): three strikes, STRUCK_OUT."""
    me = remote("me")
    task = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=PATIENT)))
    client = await Client(arena.target, me.token).open()
    request = (await client.next("decision")).decision
    offered = {a.id for a in request.legal_actions}
    illegal = next(8 + 10 * card for card in range(52)  # a play of a card not in hand (not an 8 or a 9)
                   if card // 4 + 1 not in (8, 9) and not {8 + 10 * card, 9 + 10 * card} & offered)
    await client.answer(request, 99_999)
    await client.next("error")
    for _ in range(2):
        await client.next("decision")
        await client.answer(request, illegal)
        await client.next("error")
    seen = asyncio.create_task(drain(client))
    await task
    await arena.shutdown(0)
    return await seen


async def stale_and_out_of_turn(arena: Arena) -> Seen:
    """An answer to a decision that is not open (STALE_DECISION), and one to the other seat's
    open decision (NOT_YOUR_TURN)."""
    a, b = remote("a"), remote("b")
    game = spec(a, b, clocks=PATIENT, seed=3)
    engine = GameState(game.config, game.seed)
    while len(engine.legal_action_ids()) == 1:  # the referee applies those itself
        engine.apply(engine.legal_action_ids()[0])
    assert engine.decision is not None
    task = asyncio.create_task(arena.run_game(game))
    clients = [await Client(arena.target, a.token).open(), await Client(arena.target, b.token).open()]
    asked, other = clients[engine.decision.seat], clients[1 - engine.decision.seat]
    request = (await asked.next("decision")).decision
    await other.answer(request, request.legal_actions[0].id)                      # not its turn
    await other.answer(request, request.legal_actions[0].id, game_id="no-game")  # no such game: not open
    other.seen.clear()
    for _ in range(2):
        await other.next("error")
    seen = Seen([m.error for m in other.seen if m.HasField("error")], grpc.StatusCode.OK)
    await asked.answer(request, request.legal_actions[0].id)
    await asyncio.gather(drain(asked), drain(other))
    await task
    return seen


async def timed_out(arena: Arena) -> Seen:
    """No answer within the decision time and the bank: TIMEOUT (and with one strike allowed,
    STRUCK_OUT at once)."""
    me = remote("me")
    clocks = Clocks(decision_s=0.05, bank_s=0.0, max_strikes=1, reconnect_grace_s=1.0, connect_timeout_s=15.0)
    task = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=clocks)))
    client = await Client(arena.target, me.token).open()
    await client.next("decision")
    await client.next("error")
    seen = asyncio.create_task(drain(client))
    await task
    await arena.shutdown(0)
    return await seen


async def wrong_version(arena: Arena) -> Seen:
    me = remote("me")
    arena.register_token(me.token, me.name)
    return await drain(await Client(arena.target, me.token, version=2).open())


async def unknown_token(arena: Arena) -> Seen:
    return await drain(await Client(arena.target, "no-such-token").open())


async def no_hello_first(arena: Arena) -> Seen:
    client = Client(arena.target, "")
    return await drain(await client.open(pb.BotMessage(answer=pb.Answer(game_id="g", decision_id=1, action_id=0))))


async def silent(arena: Arena) -> Seen:
    """A stream that sends nothing: DEADLINE_EXCEEDED after the Hello timeout (0.3 s here)."""
    client = Client(arena.target, "")
    client._channel = grpc.aio.insecure_channel(arena.target)
    from craits.v1 import referee_pb2_grpc

    client.call = referee_pb2_grpc.RefereeStub(client._channel).Play()
    return await drain(client)


async def long_hello(arena: Arena) -> Seen:
    me = remote("me")
    arena.register_token(me.token, me.name)
    return await drain(await Client(arena.target, me.token, name="n" * 65).open())


async def shut_down_mid_game(arena: Arena) -> Seen:
    me = remote("me")
    task = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=PATIENT)))
    client = await Client(arena.target, me.token).open()
    await client.next("decision")
    await arena.shutdown(0)
    await task
    return await drain(client, answer=False)


async def flooded(arena: Arena) -> Seen:
    me = remote("me")
    arena.register_token(me.token, me.name)
    client = await Client(arena.target, me.token).open()
    await client.next("welcome")
    for _ in range(8):  # no message is allowed at all here: each is dropped, the 8th closes the stream
        await client.call.write(pb.BotMessage())
    return await drain(client, answer=False)


async def taken_over(arena: Arena) -> Seen:
    me = remote("me")
    arena.register_token(me.token, me.name)
    first = await Client(arena.target, me.token).open()
    await first.next("welcome")
    second = await Client(arena.target, me.token).open()
    await second.next("welcome")
    seen = await drain(first)
    await second.close()
    return seen


async def not_reading(arena: Arena) -> Seen:
    """What Session.send does to a bot that leaves too many messages unread (cut_off)."""
    me = remote("me")
    task = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=PATIENT)))
    client = await Client(arena.target, me.token).open()
    await client.next("decision")
    (session,) = [s for s in arena.sessions if s.token == me.token]
    session.cut_off("1024 messages left unread: the bot is not reading its stream")
    seen = await drain(client, answer=False)
    await arena.shutdown(0)
    await task
    return seen


async def game_lost(arena: Arena) -> Seen:
    """A bot back after its game ended without it: Welcome(resumed=false), GAME_LOST, GameEnd."""
    me = remote("me")
    arena.register_token(me.token, me.name)
    clocks = Clocks(decision_s=10, bank_s=10, max_strikes=3, reconnect_grace_s=0.2, connect_timeout_s=15)
    task = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=clocks)))
    client = await Client(arena.target, me.token).open()
    await client.next("decision")
    await client.close()
    await task
    back = await Client(arena.target, me.token).open()
    welcome = (await back.next("welcome")).welcome
    assert not welcome.resumed
    await back.next("game_end")
    await arena.shutdown(0)
    return await drain(back)


@dataclass(frozen=True)
class Scenario:
    play: Callable[[Arena], Awaitable[Seen]]
    codes: frozenset[str]
    status: str
    options: ArenaOptions = OPTIONS


SCENARIOS = {
    "played out": Scenario(played_out, frozenset(), "OK"),
    "refused answers": Scenario(refused_answers, frozenset({"MALFORMED", "ILLEGAL_ACTION", "STRUCK_OUT"}), "OK"),
    "stale and out of turn": Scenario(stale_and_out_of_turn, frozenset({"STALE_DECISION", "NOT_YOUR_TURN"}), "OK"),
    "timed out": Scenario(timed_out, frozenset({"TIMEOUT", "STRUCK_OUT"}), "OK"),
    "wrong version": Scenario(wrong_version, frozenset({"PROTOCOL_VERSION"}), "FAILED_PRECONDITION"),
    "unknown token": Scenario(unknown_token, frozenset({"UNAUTHENTICATED"}), "UNAUTHENTICATED"),
    "no hello first": Scenario(no_hello_first, frozenset({"MALFORMED"}), "INVALID_ARGUMENT"),
    "long hello": Scenario(long_hello, frozenset({"MALFORMED"}), "INVALID_ARGUMENT"),
    "silent": Scenario(silent, frozenset({"MALFORMED"}), "DEADLINE_EXCEEDED",
                       dataclasses.replace(OPTIONS, hello_timeout_s=0.3)),
    "shut down mid-game": Scenario(shut_down_mid_game, frozenset({"SHUTTING_DOWN"}), "UNAVAILABLE"),
    "flooded": Scenario(flooded, frozenset({"FLOOD"}), "RESOURCE_EXHAUSTED",
                        dataclasses.replace(OPTIONS, flood_burst=0, flood_rate=0, flood_close_after=8)),
    "taken over": Scenario(taken_over, frozenset({"TAKEN_OVER"}), "ABORTED"),
    "not reading": Scenario(not_reading, frozenset({"NOT_READING"}), "UNAVAILABLE"),
    "game lost": Scenario(game_lost, frozenset({"GAME_LOST"}), "OK"),
}


# --------------------------------------------------------------------------- what the page names


def documented_codes() -> set[str]:
    """The codes in the first column of the errors table."""
    text = PROTOCOL_MD.read_text()
    section = text.split("## Errors, strikes and what to do", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([A-Z_]+)` \|", section.split("gRPC statuses", 1)[0], re.M))


def documented_statuses() -> set[str]:
    """The statuses in the first column of the table of statuses at the end of a stream."""
    text = PROTOCOL_MD.read_text()
    section = text.split("### gRPC statuses at the end of a stream", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `([A-Z_]+)` \|", section, re.M))


def test_every_code_and_status_the_page_names_is_in_the_proto_and_has_a_scenario() -> None:
    codes, statuses = documented_codes(), documented_statuses()
    assert len(codes) >= 10 and len(statuses) >= 8, (codes, statuses)
    in_proto = {name.removeprefix("ERROR_CODE_") for name in pb.ErrorCode.DESCRIPTOR.values_by_name} - {"UNSPECIFIED"}
    assert codes == in_proto, "the errors table and the proto's ErrorCode differ"
    assert statuses <= set(grpc.StatusCode.__members__)
    assert set().union(*(s.codes for s in SCENARIOS.values())) == codes
    assert {s.status for s in SCENARIOS.values()} == statuses


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_referee_produces_each_documented_code_and_status(name: str) -> None:
    scenario = SCENARIOS[name]
    seen = with_arena(scenario.play, options=scenario.options, timeout=60)
    assert seen.codes == scenario.codes, [(pb.ErrorCode.Name(e.code), e.message) for e in seen.errors]
    assert seen.status.name == scenario.status


def test_every_error_code_is_commented_in_the_proto() -> None:
    """The proto is the contract: a code a bot may receive says there what it means."""
    lines = (ROOT / "proto" / "craits" / "v1" / "referee.proto").read_text().splitlines()
    codes = [i for i, line in enumerate(lines) if re.match(r"\s*ERROR_CODE_(?!UNSPECIFIED)[A-Z_]+ = \d+;", line)]
    assert len(codes) == len(documented_codes())
    assert all(lines[i - 1].strip().startswith("//") for i in codes), [lines[i] for i in codes]
