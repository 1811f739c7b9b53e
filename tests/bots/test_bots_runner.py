"""The Python and JavaScript runners speak the protocol, against a scripted fake referee.

Each test runs a real bot process (both languages) against a real gRPC server on
127.0.0.1 that plays a real game and checks every answer it gets.
"""

from __future__ import annotations

import signal
import socket
import sys
import time
from pathlib import Path

import grpc
import pytest

from tests.bots.commands import JS_RANDOM, PY_RANDOM, finish, needs, start_bot
from tests.bots.fake_referee import FakeServer, Script

RUNNERS = {"python": PY_RANDOM, "js": JS_RANDOM}


@pytest.fixture(params=sorted(RUNNERS))
def bot(request: pytest.FixtureRequest) -> tuple[str, ...]:
    command = RUNNERS[request.param]
    needs(command)
    return command


def test_plays_a_whole_game_with_legal_answers_and_exits_0(bot: tuple[str, ...]) -> None:
    with FakeServer() as server:
        code, err = finish(start_bot(bot, "--server", server.address, "--token", "good-token", "--name", "tester"))
    assert code == 0, err
    assert server.seen.finished
    assert server.seen.illegal == []
    assert len(server.seen.answers) > 5
    hello = server.seen.hellos[0]
    assert (hello.protocol_version, hello.name, hello.token) == (1, "tester", "good-token")
    assert "done" in err


def test_takes_server_token_and_name_from_the_environment(bot: tuple[str, ...]) -> None:
    with FakeServer() as server:
        env = {"CRAITS_SERVER": server.address, "CRAITS_TOKEN": "good-token", "CRAITS_BOT_NAME": "from-env"}
        code, err = finish(start_bot(bot, env=env))
    assert code == 0, err
    assert server.seen.hellos[0].name == "from-env"
    assert server.seen.finished


def test_reconnects_after_dropped_connections_and_answers_the_repeated_request(bot: tuple[str, ...]) -> None:
    with FakeServer(Script(drop_after=(2, 6))) as server:
        code, err = finish(start_bot(bot, "--server", server.address, "--token", "good-token"))
    assert code == 0, err
    assert len(server.seen.hellos) == 3
    assert server.seen.repeated_sent == 2
    assert server.seen.finished
    assert server.seen.illegal == []


def test_an_unknown_token_exits_3_with_a_one_line_reason(bot: tuple[str, ...]) -> None:
    with FakeServer() as server:
        code, err = finish(start_bot(bot, "--server", server.address, "--token", "wrong"))
    assert code == 3, err
    assert len(server.seen.hellos) == 1, "a refused token must not be retried"
    assert "refused" in err and "token" in err
    assert "Traceback" not in err


def test_a_token_withdrawn_after_welcome_exits_3_saying_why(bot: tuple[str, ...]) -> None:
    said = "your token was revoked (or renewed): ask the organizer for your new one"
    with FakeServer(Script(end_with=grpc.StatusCode.UNAUTHENTICATED, end_said=said)) as server:
        code, err = finish(start_bot(bot, "--server", server.address, "--token", "good-token"))
    assert code == 3, err
    assert len(server.seen.hellos) == 1 and said in err
    assert "its games are over" not in err and "Traceback" not in err


def test_no_referee_exits_4_after_the_reconnect_window(bot: tuple[str, ...]) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, err = finish(start_bot(bot, "--server", f"127.0.0.1:{port}", "--reconnect-s", "0.5"))
    assert code == 4, err
    assert "giving up" in err


def test_sigterm_closes_the_stream_and_exits_0(bot: tuple[str, ...]) -> None:
    with FakeServer(Script(hang=True)) as server:
        process = start_bot(bot, "--server", server.address, "--token", "good-token")
        deadline = time.monotonic() + 30
        while not server.seen.hellos and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert server.seen.hellos, "the bot never said Hello"
        process.send_signal(signal.SIGTERM)
        code, err = finish(process, timeout=30)
    assert code == 0, err
    assert "Traceback" not in err


def test_bad_arguments_exit_2_without_a_traceback(bot: tuple[str, ...]) -> None:
    code, err = finish(start_bot(bot, "--server", "no-port-here"))
    assert code == 2
    assert "HOST:PORT" in err
    assert "Traceback" not in err


CRASHY_PY = """
from craits_bot import Bot, run

class Crashy(Bot):
    def choose(self, request):
        if request.decision_id % 2:
            raise ZeroDivisionError("on purpose")
        return 99999

run(Crashy())
"""

CRASHY_JS = """
module.exports = {
  name: 'crashy',
  choose(request) {
    if (Number(request.decision_id) % 2) throw new Error('on purpose');
    return 99999;
  },
};
"""


@pytest.mark.parametrize("language", ["python", "js"])
def test_a_failing_choose_is_logged_and_answered_with_the_first_legal_action(language: str, tmp_path: Path) -> None:
    if language == "python":
        script = tmp_path / "crashy.py"
        script.write_text(CRASHY_PY)
        command: tuple[str, ...] = (sys.executable, str(script))
    else:
        script = tmp_path / "crashy.js"
        script.write_text(CRASHY_JS)
        command = (*JS_RANDOM[:2], "--strategy", str(script))
        needs(command)
    with FakeServer() as server:
        code, err = finish(start_bot(command, "--server", server.address, "--token", "good-token"))
    assert code == 0, err
    assert server.seen.finished
    assert server.seen.illegal == []
    assert "choose() failed" in err and "on purpose" in err
    assert "99999, which is not a legal action id" in err
    assert "answered the first legal action" in err


def test_resource_exhausted_is_not_retried_and_a_cut_off_for_not_reading_is(bot: tuple[str, ...]) -> None:
    """docs/protocol.md: RESOURCE_EXHAUSTED (a flood, an oversize message) says do not reconnect;
    UNAVAILABLE (a lost connection, or cut off for not reading) says reconnect."""
    import grpc

    with FakeServer(Script(end_with=grpc.StatusCode.RESOURCE_EXHAUSTED)) as server:
        code, err = finish(start_bot(bot, "--server", server.address, "--token", "good-token", "--reconnect-s", "5"))
    assert code == 1, err
    assert len(server.seen.hellos) == 1, "RESOURCE_EXHAUSTED must not be retried"
    with FakeServer(Script(end_with=grpc.StatusCode.UNAVAILABLE)) as server:
        process = start_bot(bot, "--server", server.address, "--token", "good-token")
        deadline = time.monotonic() + 30
        while len(server.seen.hellos) < 2 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)  # it would reconnect for as long as the referee answers
        finish(process, timeout=30)
    assert len(server.seen.hellos) >= 2, "UNAVAILABLE is retried"


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        ("run(MyBot)", "error: run() takes a bot, not its class: run(MyBot()), not run(MyBot)"),
        ("run(Typo())", "error: Typo does not define choose(self, request) (it has chose(): a typo?)"),
    ],
)
def test_a_bot_that_cannot_play_is_refused_before_it_connects(mistake: str, message: str, tmp_path: Path) -> None:
    """Not a game of fallback answers (and a PASS from check-bot for code that never ran): exit 2 at once."""
    script = tmp_path / "mistaken_bot.py"
    script.write_text(
        "from craits_bot import Bot, run\n\n"
        "class MyBot(Bot):\n    def choose(self, request):\n        return request.legal_actions[0]\n\n"
        "class Typo(Bot):\n    def chose(self, request):\n        return request.legal_actions[0]\n\n"
        f"{mistake}\n"
    )
    code, err = finish(start_bot((sys.executable, str(script)), "--server", "127.0.0.1:9", "--reconnect-s", "0"))
    assert code == 2, err
    assert f"mistaken_bot.py: {message}" in err
    assert "Traceback" not in err and "connect" not in err
