"""The server around the games: authentication, versions, health, reflection, shutdown, CLI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from craits.v1 import referee_pb2 as pb
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from server.spec import SeatStatus
from server.storage.replay import read_replay, verify_replay
from server.transport import sandbox

from .conftest import BOTS, Client, bot, builtin, errors, pid_alive, remote, spec, with_arena

ROOT = Path(__file__).resolve().parents[2]


async def _run_bot_process(arena, script: str, *args: str, token: str, tmp_path: Path) -> tuple[int, str]:
    status = tmp_path / f"{script}.status"
    env = {**os.environ, "CRAITS_SERVER": arena.target, "CRAITS_TOKEN": token, "CRAITS_STATUS": str(status)}
    proc = await asyncio.create_subprocess_exec(sys.executable, str(BOTS / script), *args, env=env)
    code = await asyncio.wait_for(proc.wait(), 30)
    return code, status.read_text()


# --------------------------------------------------------------------------- who may play


def test_a_wrong_token_is_refused_with_unauthenticated(tmp_path: Path) -> None:
    async def body(arena):
        arena.register_token("the-real-token", "real")
        code, status = await _run_bot_process(arena, "wrong_token_bot.py", "guessed", token="x", tmp_path=tmp_path)
        client = await Client(arena.target, "guessed").open()
        error = (await client.next("error")).error
        final = await client.status()
        await client.close()
        return code, status, error, final

    code, status, error, final = with_arena(body)
    assert status == "UNAUTHENTICATED" and code != 0
    assert error.code == pb.ERROR_CODE_UNAUTHENTICATED and error.fatal
    assert final == grpc.StatusCode.UNAUTHENTICATED


def test_a_roster_token_is_checked_off_the_event_loop_and_a_failed_check_is_worth_retrying() -> None:
    """Checking a participant's token reads the roster, whose database may be restarting: the
    referee goes on serving meanwhile, and a check that fails ends the stream UNAVAILABLE (the
    kits connect again), not with an error that tells the bot to give up."""
    import threading

    release = threading.Event()

    def resolve(token: str) -> tuple[str, str] | None:
        if token == "roster-broken":
            raise RuntimeError("roster class in postgresql://db/arena: connection refused")
        if not release.wait(60):  # (the roster's database, slow to answer; on the event loop, never released)
            return None
        return ("resolved:alice", "alice") if token == "roster-alice" else None

    async def body(arena):
        arena.resolve_token = resolve
        arena.register_token("the-real-token", "real")
        alice = await Client(arena.target, "roster-alice", name="alice").open()
        real = await Client(arena.target, "the-real-token", name="real").open()
        welcomed_meanwhile = (await real.next("welcome")).welcome.bot_name
        release.set()
        alice_welcome = (await alice.next("welcome")).welcome.bot_name
        broken = await Client(arena.target, "roster-broken").open()
        final = await broken.status()
        for client in (alice, real, broken):
            await client.close()
        return welcomed_meanwhile, alice_welcome, final, errors(broken.seen), await broken.call.details()

    welcomed_meanwhile, alice_welcome, final, refused, details = with_arena(body)
    assert (welcomed_meanwhile, alice_welcome) == ("real", "alice")
    assert final == grpc.StatusCode.UNAVAILABLE and refused == [] and "try again in a moment" in details


def test_a_token_is_accepted_only_while_its_games_are_scheduled(tmp_path: Path) -> None:
    """A launched bot's token stops working when its game is over."""
    seat = bot("a", "random_bot.py")

    async def body(arena):
        record = await arena.run_game(spec(seat, builtin("random")))
        client = await Client(arena.target, seat.token).open()
        final = await client.status()
        await client.close()
        return record, final

    record, final = with_arena(body)
    assert record.seats[0].status is SeatStatus.OK
    assert final == grpc.StatusCode.UNAUTHENTICATED


def test_a_protocol_version_mismatch_gets_a_clear_error_at_hello(tmp_path: Path) -> None:
    me = remote("me")

    async def body(arena):
        arena.register_token(me.token, "me")
        code, status = await _run_bot_process(arena, "wrong_version_bot.py", "2", token=me.token, tmp_path=tmp_path)
        client = await Client(arena.target, me.token, version=0).open()
        error = (await client.next("error")).error
        final = await client.status()
        await client.close()
        return code, status, error, final

    code, status, error, final = with_arena(body)
    assert status == "FAILED_PRECONDITION" and code != 0
    assert error.code == pb.ERROR_CODE_PROTOCOL_VERSION and error.fatal
    assert "protocol version 0 is not supported" in error.message and "version 1" in error.message
    assert final == grpc.StatusCode.FAILED_PRECONDITION


def test_the_first_message_must_be_hello() -> None:
    async def body(arena):
        client = await Client(arena.target, "t").open(hello=pb.BotMessage(answer=pb.Answer(decision_id=1)))
        error = (await client.next("error")).error
        final = await client.status()
        await client.close()
        return error, final

    error, final = with_arena(body)
    assert error.code == pb.ERROR_CODE_MALFORMED and "must be Hello" in error.message
    assert final == grpc.StatusCode.INVALID_ARGUMENT


def test_one_stream_carries_all_the_games_of_its_token() -> None:
    """A remote bot registered for the whole event plays two games at once on one stream."""
    me = remote("me")
    games = [spec(me, builtin("random"), seed=s) for s in (1, 2)]

    async def body(arena):
        arena.register_token(me.token, "me")
        client = await Client(arena.target, me.token).open()
        await client.next("welcome")
        tasks = [asyncio.create_task(arena.run_game(g)) for g in games]
        ended = set()
        while len(ended) < 2:
            message = await client.next()
            if message.HasField("decision"):
                await client.answer(message.decision, message.decision.legal_actions[0].id)
            elif message.HasField("game_end"):
                ended.add(message.game_end.game_id)
        records = await asyncio.gather(*tasks)
        await client.close()
        return records, ended

    records, ended = with_arena(body)
    assert ended == {g.game_id for g in games}
    assert all(r.seats[0].status is SeatStatus.OK and r.seats[0].decisions > 0 for r in records)


# --------------------------------------------------------------------------- operations


def test_health_checking_and_reflection_are_served() -> None:
    async def body(arena):
        async with grpc.aio.insecure_channel(arena.target) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            overall = await health.Check(health_pb2.HealthCheckRequest(service=""))
            referee = await health.Check(health_pb2.HealthCheckRequest(service="craits.v1.Referee"))
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            replies = stub.ServerReflectionInfo(iter([
                reflection_pb2.ServerReflectionRequest(list_services=""),
                reflection_pb2.ServerReflectionRequest(file_containing_symbol="craits.v1.Referee"),
            ]))
            answers = [r async for r in replies]
        return overall, referee, answers

    overall, referee, answers = with_arena(body)
    assert overall.status == referee.status == health_pb2.HealthCheckResponse.SERVING
    services = {s.name for s in answers[0].list_services_response.service}
    assert {"craits.v1.Referee", "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= services
    assert answers[1].file_descriptor_response.file_descriptor_proto  # grpcurl can describe the protocol


def test_shutdown_records_a_game_in_flight_as_aborted_with_a_complete_replay(tmp_path: Path) -> None:
    replay = tmp_path / "g.jsonl"
    game = spec(bot("slow", "slow_bot.py", 0.05), builtin("random"), replay=replay)

    async def body(arena):
        task = asyncio.create_task(arena.run_game(game))
        while not arena.games or not arena.games[game.game_id].state.decisions:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        await arena.shutdown(grace_s=0.1)
        return await task

    record = with_arena(body)
    assert record.aborted == "the referee is shutting down"
    assert replay.exists() and not list(tmp_path.glob("*.tmp"))
    summary = verify_replay(replay)
    assert "aborted" in json.loads(replay.read_text().splitlines()[-1])
    assert summary is not None


def test_a_cancelled_game_leaves_no_bot_process_behind() -> None:
    game = spec(bot("a", "slow_bot.py", 0.05), bot("b", "slow_bot.py", 0.05))

    async def body(arena):
        task = asyncio.create_task(arena.run_game(game))
        while not arena.games or not arena.games[game.game_id].state.decisions:
            await asyncio.sleep(0.05)
        seats = arena.games[game.game_id].seats
        pids = [s.process.pid for s in seats]
        assert all(pid_alive(p) for p in pids)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return pids

    pids = with_arena(body)
    assert not any(pid_alive(p) for p in pids)


# --------------------------------------------------------------------------- the commands


def _craits(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, **kw)


def test_craits_play_runs_a_game_between_builtin_names_and_commands_and_prints_the_result(tmp_path: Path) -> None:
    result = _craits("play", "random", str(BOTS / "random_bot.py"), "first", "--flag", "short_game=true",
                     "--seed", "5", "--log-dir", str(tmp_path / "logs"), "--replays", str(tmp_path / "replays"))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "craits, 3 players, seed 5" in out and "random_bot" in out and "lowest total wins" in out
    assert len(list((tmp_path / "replays").glob("*.jsonl.gz"))) == 1
    log_lines = (tmp_path / "logs" / "play.jsonl").read_text().splitlines()
    finished = [json.loads(line) for line in log_lines if '"game_finished"' in line]
    assert finished and finished[0]["game"].startswith("play-5")


def test_craits_play_explains_a_mistake_in_one_line(tmp_path: Path) -> None:
    result = _craits("play", "random", "random", "--preset", "crates-partners", "--log-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().startswith("craits: error:") and "4" in result.stderr
    assert "Traceback" not in result.stderr
    missing = _craits("play", "random", "no_such_bot.py", "--log-dir", str(tmp_path))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_craits_play_refuses_a_bot_command_that_cannot_run_before_any_game(tmp_path: Path) -> None:
    cases = {
        "pyhton bot.py": "command not found: pyhton",
        f"{sys.executable} no_such_script.py": "no such file no_such_script.py",
        "node no_such_bot.js": "no such file no_such_bot.js" if shutil.which("node") else "command not found: node",
    }
    for command, reason in cases.items():
        result = _craits("play", "random", command, "--log-dir", str(tmp_path / "logs"))
        assert result.returncode == 2, command
        assert result.stderr.strip() == f"craits: error: bot {command!r}: {reason}"
        assert not (tmp_path / "logs" / "bots").exists()  # nothing was launched


def test_craits_play_says_what_went_wrong_at_a_seat_and_where_the_bots_output_is(tmp_path: Path) -> None:
    crashing = f"{sys.executable} -c 'import sys; print(\"cannot import my_strategy\"); sys.exit(3)'"
    result = _craits("play", "random", crashing, str(BOTS / "illegal_bot.py"), "--flag", "short_game=true",
                     "--log-dir", str(tmp_path / "logs"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  seat 1 "))
    assert lines[at + 1] == "    bot process exited with code 3"
    assert "never connected (its process exited)" in lines[at + 2]
    output = Path(lines[at + 3].removeprefix("    its output: "))
    assert output.read_text().strip() == "cannot import my_strategy"
    assert lines[at + 4] == "    it ended with: cannot import my_strategy"  # (a SyntaxError's last line, say)
    struck = lines.index("  seat 2 illegal_bot:")
    assert "illegal answer" in lines[struck + 1] and "(strike 1 of 3)" in lines[struck + 1]
    assert lines[struck + 4] == "    ... and 1 more (--json lists them all)"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_craits_play_names_a_node_bots_error_not_the_node_version_printed_after_it(tmp_path: Path) -> None:
    # Node ends an uncaught error with its stack and "Node.js v20.x": a student must see the error.
    crashing = "node -e \"require('@grpc/no-such-package')\""
    result = _craits("play", "random", crashing, "--flag", "short_game=true", "--log-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    ended = [line for line in result.stdout.splitlines() if line.startswith("    it ended with: ")]
    assert ended == ["    it ended with: Error: Cannot find module '@grpc/no-such-package'"]


def test_craits_play_shows_a_launched_bots_errors_and_where_it_logged(tmp_path: Path) -> None:
    """The kit answers for a choose() that raises, prints the traceback in the bot's output and
    tells the referee (issue 30): the seat is "ok" (no strike), its bot errors are listed with
    their first line, and the table says where the traceback is."""
    tmp_path.chmod(0o755)  # (a sandboxed bot reads only what every user may read)
    bot = tmp_path / "raising_bot.py"
    bot.write_text("from craits_bot import Bot, run\n\n\nclass Raising(Bot):\n"
                   "    def choose(self, request):\n        return request.legal_actions[99]\n\n\nrun(Raising())\n")
    result = _craits("play", "random", str(bot), "--flag", "short_game=true", "--log-dir", str(tmp_path / "logs"),
                     "--replays", str(tmp_path / "replays"), "--seed", "1")  # (a deal where seat 0 plays first)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "raising_bot" in lines[3] and " ok " in lines[3], result.stdout
    game_id = lines[0].split(":")[0].removeprefix("game ")
    # the decision is numbered as in the replay (what `replay show`, the viewer and `rerun --from` use)
    first = next(d for d in read_replay(tmp_path / "replays" / f"{game_id}.jsonl.gz").decisions
                 if "bot error" in d.get("note", ""))
    assert first["seat"] == 1 and first["n"] > 1  # (seat 0's decisions count too: the wire's id would say 1)
    assert f"    bot error on decision {first['n']}: IndexError: list index out of range at raising_bot.py:6" in lines, \
        result.stdout
    assert f"    its output: {tmp_path / 'logs' / 'bots' / game_id}-seat1.log" in lines, result.stdout
    replay = tmp_path / "replays" / f"{game_id}.jsonl.gz"
    rerun = [line for line in lines if line.startswith("    rerun:  ")]  # docs/rerun.md from here
    assert rerun == [f"    rerun:  craits replay rerun {replay} --seat 1 -- {sys.executable} {bot}"], result.stdout
    output = (tmp_path / "logs" / "bots" / f"{game_id}-seat1.log").read_text()
    assert "choose() failed at raising_bot.py:6: IndexError" in output and "Traceback" in output


def test_craits_play_tells_a_bot_that_exited_0_before_connecting_how_a_bot_starts(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)  # (a sandboxed bot reads only what every user may read)
    bot = tmp_path / "no_run_bot.py"
    bot.write_text("from craits_bot import Bot\n\n\nclass MyBot(Bot):\n    def choose(self, request):\n"
                   "        return request.legal_actions[0]\n")
    result = _craits("play", "random", str(bot), "--flag", "short_game=true", "--log-dir", str(tmp_path / "logs"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines.index("  seat 1 no_run_bot:")
    assert lines[at + 1] == "    bot process exited with code 0"
    assert lines[at + 3].startswith("    (a bot that exits with code 0 before it connects never started playing: "
                                    "a Python bot of the kit ends with run(MyBot())"), result.stdout


def _listening(tmp_path: Path, *command: str) -> tuple[subprocess.Popen[str], str]:
    """``craits COMMAND...`` started with a remote seat for the bot "me" (token tok-me), and the
    line where it says where to connect."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.cli", *command, "--address", "127.0.0.1:0", "--flag", "short_game=true",
         "--log-dir", str(tmp_path / "logs")],
        cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    return proc, proc.stderr.readline()


def _bot_started_by_hand(proc: subprocess.Popen[str], line: str) -> str:
    """Start the kit's random bot as "me" at the address ``line`` gives, as a person would in
    another terminal; the referee's standard output once the bot and the referee are done."""
    import re

    try:
        address = re.search(r"listening on (\S+)", line)
        assert address is not None, line
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAITS_")}
        env.update(CRAITS_SERVER=address.group(1), CRAITS_TOKEN="tok-me")
        bot = subprocess.run([sys.executable, "-m", "craits_bot.examples.random_bot", "-q"], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert bot.returncode == 0, bot.stderr
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0
    return out


def _said_at_once(proc: subprocess.Popen[str], line: str) -> str:
    proc.kill()
    proc.wait()
    return line.rstrip()


def test_craits_play_gives_a_bot_started_by_hand_minutes_to_connect_and_says_so(tmp_path: Path) -> None:
    """docs/first-bot.md starts the game in one terminal and the bot in another: more than the
    10 s a launched bot gets. The referee says how long it waits; the bot then plays its seat."""
    play = ("play", "random", "remote:me:tok-me")
    proc, line = _listening(tmp_path, *play)
    assert line.rstrip().endswith("; the game waits up to 300 s for them"), line
    out = _bot_started_by_hand(proc, line)
    row = out.splitlines()[3]
    assert row.split()[1] == "me" and " ok " in row, out
    line = _said_at_once(*_listening(tmp_path, *play, "--connect-timeout-ms", "2000"))
    assert line.endswith("; the game waits up to 2 s for them"), line


def _need_sandbox() -> None:
    """Skip where bwrap cannot run, but never under CI (``make test`` installs it)."""
    if (why := sandbox.problem()) is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the sandbox cannot run here, and CI must test it: {why}")
        pytest.skip(f"the sandbox cannot run here: {why}")


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root referee runs a sandboxed bot as a uid of its own")
def test_craits_play_and_serve_refuse_before_any_game_a_bot_whose_folder_the_sandbox_cannot_read(
        tmp_path: Path) -> None:
    """A root referee runs a sandboxed bot as an unprivileged uid: a folder only root may read
    would lose the bot its game (never connected). Refused first, in one line, as check-bot and
    a tournament file do, with the fix; nothing is played."""
    _need_sandbox()
    folder = tmp_path / "hidden"
    folder.mkdir()
    shutil.copy(BOTS / "random_bot.py", folder)
    folder.chmod(0o700)
    bot = f"python {folder / 'random_bot.py'}"
    says = (f"craits: error: bot random_bot cannot run in the sandbox: {folder} is not readable by other users, "
            f"and a sandboxed bot reads only what every user may read (chmod a+rX {folder})\n")
    for command in (["play", "random", bot], ["serve", "--address", "127.0.0.1:0", "--bot", "random", "--bot", bot,
                                               "--games", "1"]):
        result = _craits(*command, "--flag", "short_game=true", "--log-dir", str(tmp_path / "logs"))
        assert result.returncode == 2 and result.stderr == says, result.stderr
        assert "game" not in result.stdout, result.stdout
    assert not (tmp_path / "logs" / "bots").exists()


def test_craits_play_says_what_its_command_line_can_do_for_a_program_the_sandbox_does_not_see(
        tmp_path: Path) -> None:
    """A program found on PATH outside the system lies outside a sandboxed bot's view. A tournament
    file adds its folder to allow_read; a command line has none: it gives the program's path."""
    _need_sandbox()
    program = tmp_path / "bin" / "mybot"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    env = {**os.environ, "PATH": f"{program.parent}{os.pathsep}{os.environ['PATH']}"}
    result = _craits("play", "random", "mybot", "--log-dir", str(tmp_path / "logs"), env=env)
    assert result.returncode == 2, result.stdout
    assert result.stderr == (f"craits: error: bot mybot cannot run in the sandbox: {program} is outside what a "
                             f"sandboxed bot sees (the system, this Python, its folder): give its path, {program}, "
                             "for its folder to be the bot's (or --no-sandbox for a trusted bot)\n")


def test_craits_serve_gives_a_remote_seat_minutes_to_connect_as_play_does_and_says_so(tmp_path: Path) -> None:
    """`craits serve --bot remote:NAME:TOKEN` is the same game as `craits play` with that seat: its
    bot is started by hand, so each game waits 300 s for it (not a launched bot's 10 s), says so
    where it says where to connect, and --connect-timeout-ms still sets it."""
    serve = ("serve", "--bot", "random", "--bot", "remote:me:tok-me", "--games", "1")
    proc, line = _listening(tmp_path, *serve)
    assert "me connect there with their tokens" in line, line
    assert line.rstrip().endswith("; each game waits up to 300 s for them"), line
    out = _bot_started_by_hand(proc, line)
    game = next(line for line in out.splitlines() if line.startswith("craits serve: game "))
    assert "totals" in game and "never_connected" not in game, out
    line = _said_at_once(*_listening(tmp_path, *serve, "--connect-timeout-ms", "2000"))
    assert line.endswith("; each game waits up to 2 s for them"), line
    assert "waits up to 300 s" in _craits("serve", "--help").stdout.replace("\n", " ")


def test_craits_serve_names_the_seats_in_trouble_in_each_game_line(tmp_path: Path) -> None:
    dying = f"{sys.executable} {BOTS / 'dying_bot.py'} 3"
    result = _craits("serve", "--address", "127.0.0.1:0", "--bot", "random", "--bot", dying, "--games", "1",
                     "--flag", "short_game=true", "--log-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("craits serve: game "))
    assert line.endswith("; dying_bot disconnected (see --results or the log)"), line


def test_craits_serve_finishes_or_records_every_game_on_sigterm(tmp_path: Path) -> None:
    """SIGTERM with games in flight: they get the grace to finish, the rest are recorded as
    aborted; every result line and replay is whole; no bot process is left."""
    results = tmp_path / "results.jsonl"
    replays = tmp_path / "replays"
    slow = f"{BOTS / 'slow_bot.py'} 0.02"
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--address", "127.0.0.1:0", "--bot", slow, "--bot", "random",
         "--bot", slow, "--parallel", "2", "--flag", "short_game=true", "--shutdown-grace", "0.5",
         "--results", str(results), "--replays", str(replays), "--log-dir", str(tmp_path / "logs")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith("craits serve: listening on 127.0.0.1:"), first + proc.stderr.read()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(list(replays.glob("*.tmp"))) < 2:
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "shutting down" in out
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert lines and any(line["aborted"] for line in lines)
    assert not list(replays.glob("*.tmp"))
    for line in lines:
        assert line["replay"] and Path(line["replay"]).exists()
        verify_replay(line["replay"])
    logs = (tmp_path / "logs" / "serve.jsonl").read_text().splitlines()
    events = [json.loads(x) for x in logs]
    assert any(e["event"] == "shutdown_finished" for e in events)
    launched = [e["pid"] for e in events if e["event"] == "bot_launched"]
    assert launched and not any(pid_alive(p) for p in launched)


def test_craits_serve_refuses_a_place_it_cannot_write_before_it_listens(tmp_path: Path) -> None:
    """A --results that is a folder, a --replays or --log-dir under a file: one line, exit 2,
    before the referee listens or plays (a game's result was lost after the game)."""
    (tmp_path / "afile").write_text("")
    (tmp_path / "adir").mkdir()
    cases = {
        ("--results", str(tmp_path / "adir")): "--results {}: cannot append to it: Is a directory",
        ("--replays", str(tmp_path / "afile" / "r")): "--replays {}: cannot write there: Not a directory",
        ("--log-dir", str(tmp_path / "afile")): "--log-dir {}: cannot write the log there: File exists",
    }
    for (option, value), says in cases.items():
        result = _craits("serve", "--address", "127.0.0.1:0", "--bot", "random", "--bot", "random", "--games", "1",
                         "--log-dir", str(tmp_path / "logs"), option, value)
        assert result.returncode == 2, (option, result.stderr)
        assert result.stderr.startswith("craits: error: " + says.format(value)), result.stderr
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr
        assert "listening" not in result.stdout


def test_craits_serve_stops_in_one_line_when_a_replay_cannot_be_written(tmp_path: Path) -> None:
    """The replays' folder replaced by a file while games are played: serve stops with the
    game and the reason in one line (exit 2), no traceback; every result line written is whole."""
    replays, results = tmp_path / "replays", tmp_path / "results.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--address", "127.0.0.1:0", "--bot", "random", "--bot", "first",
         "--flag", "short_game=true", "--replays", str(replays), "--results", str(results),
         "--log-dir", str(tmp_path / "logs")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("craits serve: game "):
                break
        for attempt in range(50):  # (serve makes a missing folder again: it may do so between the two steps)
            replays.rename(tmp_path / f"moved-{attempt}")
            try:
                replays.write_text("")
                break
            except IsADirectoryError:
                continue
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, err
    assert "Traceback" not in err and "never retrieved" not in err, err
    said = [line for line in err.splitlines() if line.startswith("craits: error:")]
    assert len(said) == 1 and said[0].startswith("craits: error: game serve-"), err
    assert "Not a directory" in said[0] or "File exists" in said[0], err  # (at the game's start or end)
    assert "stopped after" in out
    assert all(json.loads(line)["game_id"] for line in results.read_text().splitlines())


def test_craits_serve_on_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    """Not gRPC's own log line and its advice to set GRPC_VERBOSITY: what is wrong, what to do."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _craits("serve", "--address", f"127.0.0.1:{port}", "--log-dir", str(tmp_path / "logs"))
    assert result.returncode == 2, result.stderr
    assert result.stderr == (f"craits: error: --address 127.0.0.1:{port}: the port is in use (is another referee "
                             "running there?); choose another (port 0: any free port)\n")
    assert "listening" not in result.stdout


def test_an_address_in_use_is_a_clear_error() -> None:
    from server.transport.service import Arena, ArenaError

    async def body(arena):
        try:
            await Arena.start(f"127.0.0.1:{arena.port}")
        except ArenaError as err:
            return str(err)
        return "bound twice"

    assert "cannot listen on 127.0.0.1:" in with_arena(body)


def test_logs_are_json_lines_with_the_game_hand_and_seat_bound(tmp_path: Path) -> None:
    from server.logging import configure_logging

    path = configure_logging(tmp_path, name="t", console=False)
    try:
        game = spec(bot("slow", "slow_bot.py", 0.35), builtin("random"))
        with_arena(lambda arena: arena.run_game(game))
    finally:
        configure_logging(None, console=False)
    assert path == tmp_path / "t.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    timeouts = [e for e in events if e["event"] == "seat_event" and "timeout" in e["what"]]
    assert timeouts and all(e["game"] == game.game_id and e["seat"] == 0 and e["hand"] >= 1 for e in timeouts)
    finished = next(e for e in events if e["event"] == "game_finished")
    assert finished["statuses"] == ["struck_out", "ok"] and "timestamp" in finished and finished["level"] == "info"
    assert all("hand" not in e for e in events if e["event"] == "shutdown_finished")  # context does not leak


def test_a_log_moved_away_is_written_again_at_its_name(tmp_path: Path) -> None:
    """Logs are only appended to; rotating one (logrotate moves it, then the next event
    recreates it) loses no event and needs no restart nor copytruncate."""
    from server.logging import configure_logging, get_logger

    path = configure_logging(tmp_path, name="rotated", console=False)
    try:
        log = get_logger()
        log.info("before_rotation")
        assert path is not None
        path.rename(tmp_path / "rotated.jsonl.1")
        log.info("after_rotation")
    finally:
        configure_logging(None, console=False)
    old = [json.loads(line)["event"] for line in (tmp_path / "rotated.jsonl.1").read_text().splitlines()]
    new = [json.loads(line)["event"] for line in path.read_text().splitlines()]
    assert old == ["before_rotation"] and new == ["after_rotation"]


def test_a_log_named_relative_to_a_folder_stays_there_after_a_chdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The log's path is handed to worker processes and reopened by name after a rotation: a
    relative one would follow a later chdir (a test's, a daemon's) and write somewhere else."""
    from server.logging import AppendedFile, configure_logging, log_file

    (tmp_path / "there").mkdir()
    monkeypatch.chdir(tmp_path / "there")
    try:
        configure_logging("out", name="referee", console=False)
        events = AppendedFile("events.jsonl")
        monkeypatch.chdir(tmp_path)
        assert log_file() == tmp_path / "there" / "out" / "referee.jsonl"
        (tmp_path / "there" / "events.jsonl").rename(tmp_path / "there" / "events.jsonl.1")
        events.write("after the chdir\n")
        events.close()
    finally:
        configure_logging(None, console=False)
    assert (tmp_path / "there" / "events.jsonl").read_text() == "after the chdir\n"
    assert not (tmp_path / "out").exists() and not (tmp_path / "events.jsonl").exists()
