"""What a field trial hit (issue 16): a bot written from the .proto and docs alone, and the
project used from a fresh clone. One test (or two) per point, named for what it holds."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest
from craits.v1 import referee_pb2 as pb
from craits.v1 import referee_pb2_grpc

from server.cli.play import flag_words, format_record
from server.engine import make_config
from server.spec import Clocks, GameSpec, SeatStatus
from tests.bots.commands import EXAMPLE_BOTS, need_node
from tests.cli import wait_for_line

from .conftest import OPTIONS, Client, builtin, errors, remote, spec, with_arena
from .test_protocol_doc import PATIENT, drain, flooded, game_lost, long_hello, not_reading, taken_over

ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"referee listening on (127\.0\.0\.1:\d+)")


def _doc_bot(target: str, token: str) -> tuple[list[pb.RefereeMessage], grpc.StatusCode]:
    """The main loop of docs/protocol.md, as a bot in another language would write it: answer
    every request with its first legal action until the stream ends; return what came."""
    seen: list[pb.RefereeMessage] = []
    with grpc.insecure_channel(target) as channel:
        outbox: queue.Queue[pb.BotMessage | None] = queue.Queue()
        outbox.put(pb.BotMessage(hello=pb.Hello(token=token, protocol_version=1, name="doc_bot")))
        call = referee_pb2_grpc.RefereeStub(channel).Play(iter(outbox.get, None))
        try:
            for message in call:
                seen.append(message)
                if message.HasField("decision"):
                    r = message.decision
                    outbox.put(pb.BotMessage(answer=pb.Answer(game_id=r.game_id, decision_id=r.decision_id,
                                                              action_id=r.legal_actions[0].id)))
            status = call.code()
        except grpc.RpcError as err:
            status = err.code()
        outbox.put(None)
    return seen, status


def _craits(*args: str) -> tuple[subprocess.Popen[str], queue.Queue[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "server.cli", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr or ()], daemon=True).start()
    return proc, lines


# --------------------------------------------------------------------------- 1. a clean end is OK


def test_1_a_remote_bot_that_follows_the_doc_ends_a_clean_craits_play_with_ok_and_no_error(tmp_path: Path) -> None:
    proc, lines = _craits("play", "remote:me:SECRET-1", "random", "--flag", "short_game=true",
                          "--log-dir", str(tmp_path))
    try:
        target = wait_for_line(lines, LISTENING).group(1)
        seen, status = _doc_bot(target, "SECRET-1")
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    assert sum(m.HasField("game_end") for m in seen) == 1
    assert status == grpc.StatusCode.OK and errors(seen) == []


def test_1_a_token_bot_gets_ok_when_the_referee_has_nothing_more_for_it_and_shutting_down_only_when_cut_short() -> None:
    async def body(arena):
        me, other = remote("me"), remote("other")
        for bot in (me, other):
            arena.register_token(bot.token, bot.name)
        done = await Client(arena.target, me.token).open()
        cut = await Client(arena.target, other.token).open()
        done_seen = asyncio.create_task(drain(done))
        await arena.run_game(spec(me, builtin("random")))
        game = asyncio.create_task(arena.run_game(spec(other, builtin("random"), clocks=PATIENT)))
        await cut.next("decision")
        await arena.shutdown(0)
        await game
        return await done_seen, await drain(cut, answer=False)

    done, cut = with_arena(body)
    assert done.status == grpc.StatusCode.OK and done.errors == []
    assert cut.status == grpc.StatusCode.UNAVAILABLE
    assert [(e.code, e.fatal) for e in cut.errors] == [(pb.ERROR_CODE_SHUTTING_DOWN, False),
                                                      (pb.ERROR_CODE_SHUTTING_DOWN, True)]


# --------------------------------------------------------------------------- 2. takeover


def test_2_a_stream_taken_over_by_its_token_gets_the_taken_over_code_then_aborted() -> None:
    seen = with_arena(taken_over)
    assert [(e.code, e.fatal) for e in seen.errors] == [(pb.ERROR_CODE_TAKEN_OVER, True)]
    assert seen.status == grpc.StatusCode.ABORTED


# --------------------------------------------------------------------------- 3. rules.md and the proto


def test_3_rules_md_says_what_the_proto_says_a_bot_answers_with_a_legal_action_id() -> None:
    rules = (ROOT / "docs" / "rules.md").read_text()
    actions = rules.split("## Actions: ids and text forms", 1)[1].split("\n## ", 1)[0]
    assert "index" not in actions, "rules.md lets a bot answer with an index; the proto takes ids only"
    assert "`LegalAction.id`" in actions and "`Answer.action_id`" in actions
    proto = (ROOT / "proto" / "craits" / "v1" / "referee.proto").read_text()
    assert "// One of the LegalAction.id values in that request." in proto


def test_3_an_index_into_the_legal_list_is_not_an_answer() -> None:
    """Index 1 of a list that does not offer id 1 (naming clubs) is refused, not taken as the second action."""
    me = remote("me")

    async def body(arena):
        task = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=PATIENT)))
        client = await Client(arena.target, me.token).open()
        request = (await client.next("decision")).decision
        while 1 in [a.id for a in request.legal_actions]:  # naming a suit: 1 is an id there
            await client.answer(request, request.legal_actions[0].id)
            request = (await client.next("decision")).decision
        await client.answer(request, 1)
        error = (await client.next("error")).error
        await client.play_out()
        await client.close()
        return error, await task

    error, record = with_arena(body)
    assert error.code == pb.ERROR_CODE_ILLEGAL_ACTION and record.seats[0].strikes == 1


# --------------------------------------------------------------------------- 5. the connecting example


def test_5_serve_says_on_stderr_that_a_connected_bot_waits_for_a_game_and_the_doc_shows_how_to_start_one(
    tmp_path: Path,
) -> None:
    proc, lines = _craits("serve", "--token", "me=SECRET-5", "--address", "127.0.0.1:0", "--log-dir", str(tmp_path))
    try:
        assert proc.stdout is not None
        target = re.search(r"listening on (\S+)", proc.stdout.readline()).group(1)  # type: ignore[union-attr]

        async def idle() -> tuple[re.Match[str], bool]:
            client = await Client(target, "SECRET-5").open()
            await client.next("welcome")
            line = await asyncio.to_thread(wait_for_line, lines, "me connected .* and waits for a game", 30)
            try:
                await client.next(timeout=0.5)
            except TimeoutError:
                quiet = True
            else:
                quiet = False
            await client.close()
            return line, quiet

        line, quiet = asyncio.run(idle())
        assert quiet, "a bot waiting for a game is sent nothing"
        assert "--bot" in line.string and "remote:NAME:TOKEN" in line.string
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    doc = (ROOT / "docs" / "protocol.md").read_text()
    assert "craits serve --bot remote:me:SECRET --bot random" in doc
    assert "receiving nothing" in doc and "waiting for a game" in doc


# --------------------------------------------------------------------------- 6. a game lost while away


def test_6_a_bot_back_after_its_game_ended_gets_game_lost_and_the_game_end() -> None:
    me = remote("me")
    clocks = Clocks(decision_s=10, bank_s=10, max_strikes=3, reconnect_grace_s=0.2, connect_timeout_s=15)

    async def body(arena):
        arena.register_token(me.token, me.name)
        game = spec(me, builtin("random"), clocks=clocks)
        task = asyncio.create_task(arena.run_game(game))
        client = await Client(arena.target, me.token).open()
        await client.next("decision")
        await client.close()
        record = await task
        back = await Client(arena.target, me.token).open()
        kinds = [(await back.next()).WhichOneof("message") for _ in range(3)]
        return game, record, kinds, back.seen

    game, record, kinds, seen = with_arena(body)
    assert record.seats[0].status is SeatStatus.DISCONNECTED
    assert kinds == ["welcome", "error", "game_end"]
    welcome, error, end = seen[0].welcome, seen[1].error, seen[2].game_end
    assert not welcome.resumed
    assert (error.code, error.game_id, error.fatal) == (pb.ERROR_CODE_GAME_LOST, game.game_id, False)
    assert end.game_id == game.game_id and list(end.totals) == list(record.result.totals)


def test_6_the_scenario_of_the_protocol_doc_agrees() -> None:
    assert with_arena(game_lost).codes == {"GAME_LOST"}


# --------------------------------------------------------------------------- 7. RESOURCE_EXHAUSTED


def test_7_a_flood_and_a_backlog_end_differently_do_not_reconnect_versus_reconnect() -> None:
    flood = with_arena(flooded, options=dataclasses.replace(OPTIONS, flood_burst=0, flood_rate=0, flood_close_after=8))
    backlog = with_arena(not_reading)
    assert flood.status == grpc.StatusCode.RESOURCE_EXHAUSTED and flood.errors[-1].code == pb.ERROR_CODE_FLOOD
    assert flood.errors[-1].fatal
    assert backlog.status == grpc.StatusCode.UNAVAILABLE
    assert [(e.code, e.fatal) for e in backlog.errors] == [(pb.ERROR_CODE_NOT_READING, False)]


# --------------------------------------------------------------------------- 8. Hello limits


def test_8_a_hello_with_a_name_or_about_over_the_documented_limits_is_refused() -> None:
    async def body(arena):
        me = remote("me")
        arena.register_token(me.token, me.name)
        at_limit = await Client(arena.target, me.token, name="n" * 64).open(
            pb.BotMessage(hello=pb.Hello(token=me.token, protocol_version=1, name="n" * 64, about="a" * 200)))
        welcome = await at_limit.next("welcome")
        await at_limit.close()
        long_about = await Client(arena.target, me.token).open(
            pb.BotMessage(hello=pb.Hello(token=me.token, protocol_version=1, name="ok", about="a" * 201)))
        return welcome, await long_hello(arena), await drain(long_about)

    welcome, long_name, long_about = with_arena(body)
    assert welcome.welcome.protocol_version == 1
    for seen, what in ((long_name, "name has 65 characters (at most 64)"),
                       (long_about, "about has 201 characters (at most 200)")):
        assert seen.status == grpc.StatusCode.INVALID_ARGUMENT
        assert [(e.code, e.fatal) for e in seen.errors] == [(pb.ERROR_CODE_MALFORMED, True)]
        assert what in seen.errors[0].message


# --------------------------------------------------------------------------- 9. the organizer's report


def test_9_a_bot_refused_at_hello_is_reported_as_refused_not_as_never_having_said_hello() -> None:
    quick = Clocks(decision_s=1, bank_s=1, max_strikes=3, reconnect_grace_s=1, connect_timeout_s=1.0)
    versioned, nameless = remote("versioned"), remote("nameless")

    async def body(arena):
        one = asyncio.create_task(arena.run_game(spec(versioned, builtin("random"), clocks=quick)))
        await drain(await Client(arena.target, versioned.token, version=2).open())
        first = await one
        two = asyncio.create_task(arena.run_game(spec(nameless, builtin("random"), clocks=quick)))
        junk = Client(arena.target, "")
        await drain(await junk.open(pb.BotMessage(answer=pb.Answer(game_id="g", decision_id=1, action_id=0))))
        return first, await two

    first, second = with_arena(body)
    for record in (first, second):
        assert record.seats[0].status is SeatStatus.NEVER_CONNECTED
    assert "refused at Hello (its Hello has protocol version 2, not 1)" in first.seats[0].events[0]
    assert "no Hello within" not in first.seats[0].events[0]
    event = second.seats[0].events[0]
    assert event.startswith("never connected (no Hello within 1 s; meanwhile a stream from ipv4:127.0.0.1:")
    assert "was refused: its first message was not Hello (answer)" in event


def test_9_protocol_md_says_how_long_a_remote_seat_has_to_connect() -> None:
    doc = (ROOT / "docs" / "protocol.md").read_text()
    assert "`never_connected`" in doc and "--connect-timeout-ms" in doc and "default 10 000 ms" in doc


# --------------------------------------------------------------------------- 10. rule and header


def test_10_a_bad_id_is_malformed_without_a_rule() -> None:
    me = remote("me")

    async def body(arena):
        task = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=PATIENT)))
        client = await Client(arena.target, me.token).open()
        request = (await client.next("decision")).decision
        await client.answer(request, 99_999)
        error = (await client.next("error")).error
        await client.play_out()
        await client.close()
        await task
        return error

    error = with_arena(body)
    assert error.code == pb.ERROR_CODE_MALFORMED and error.rule == ""


def test_10_the_play_header_names_every_flag_that_is_not_the_default() -> None:
    config = make_config("craits", 4, seven_hits="next", decks=2, strip_kings_queens=True, voluntary_draw=True)
    game = GameSpec("g", config, 3, tuple(builtin("random") for _ in range(4)), PATIENT)
    record = with_arena(lambda arena: arena.run_game(game))
    header = format_record(game, record).splitlines()[0]
    assert header == "game g: craits, 4 players, seed 3, voluntary_draw seven_hits=next strip_kings_queens decks=2"
    assert flag_words(make_config("craits", 7)) == []  # two decks are the default for 7 players



@pytest.mark.parametrize("kit", ["py-random", "js-random"])
def test_1_the_bundled_bots_connecting_on_their_own_exit_0_by_themselves_after_a_clean_craits_play(
    tmp_path: Path, kit: str
) -> None:
    command = EXAMPLE_BOTS[kit]
    if kit.startswith("js"):
        need_node()
    proc, lines = _craits("play", "remote:me:SECRET-K", "random", "--flag", "short_game=true",
                          "--log-dir", str(tmp_path))
    try:
        target = wait_for_line(lines, LISTENING).group(1)
        bot = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "CRAITS_SERVER": target, "CRAITS_TOKEN": "SECRET-K"})
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    assert bot.returncode == 0, bot.stderr
    assert "SHUTTING_DOWN" not in bot.stderr and "referee error" not in bot.stderr, bot.stderr


def test_1_a_token_bot_whose_game_was_cancelled_gets_shutting_down_not_ok() -> None:
    """A tournament stopped with Ctrl-C cancels its games, then shuts the referee down: the
    bot's games were not all played out, so its stream does not end with OK."""
    me = remote("me")

    async def body(arena):
        arena.register_token(me.token, me.name)
        client = await Client(arena.target, me.token).open()
        game = asyncio.create_task(arena.run_game(spec(me, builtin("random"), clocks=PATIENT)))
        await client.next("decision")
        game.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await game
        await arena.shutdown(0)
        return await drain(client, answer=False)

    seen = with_arena(body)
    assert seen.status == grpc.StatusCode.UNAVAILABLE
    assert [(e.code, e.fatal) for e in seen.errors][-1] == (pb.ERROR_CODE_SHUTTING_DOWN, True)
