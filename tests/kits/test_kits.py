"""The Java and C++ kits, built the Debian way (tests/kits/conftest.py), play where bots play:
a sandboxed tournament with the Python and JavaScript kits, check-bot, a bot error reproduced
and fixed with replay rerun, the offline runner over a replay's messages."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from server.checker.driver import CheckOptions, check_bot
from server.checker.report import Status
from server.cli import main as craits_main
from server.transport import sandbox
from tests.kits.conftest import ROOT, Kits

CRAITS = str(Path(sys.executable).with_name("craits"))

pytestmark = pytest.mark.skipif(sandbox.problem() is not None, reason=f"no sandbox here: {sandbox.problem()}")


def craits(*args: str, cwd: Path | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """The installed ``craits`` command (``craits_main``: the same in this process, where a test
    needs only its output file and not the command's own start-up)."""
    return subprocess.run([CRAITS, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False)


@pytest.fixture(scope="module")
def languages(kits: Kits, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tournaments/examples/languages.toml, played: the four kits' heuristic bots, sandboxed."""
    out = tmp_path_factory.mktemp("languages")
    done = craits("tournament", "run", str(ROOT / "tournaments/examples/languages.toml"), "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_the_four_kits_play_a_sandboxed_tournament_every_seat_ok_each_bot_kept_between_games(languages: Path) -> None:
    with sqlite3.connect(languages / "tournament.db") as db:
        seats = db.execute("SELECT game_id, seat, bot, status, decisions, bot_errors FROM seats").fetchall()
    assert len({s[0] for s in seats}) == 4 and len(seats) == 16
    assert {s[2] for s in seats} == {"python-heuristic", "js-heuristic", "java-heuristic", "cpp-heuristic"}
    assert all(status == "ok" and decisions > 0 and errors == 0 for _, _, _, status, decisions, errors in seats), seats
    logs = sorted(p.name for p in (languages / "bots").iterdir())
    assert len(logs) == 4, logs  # one process per bot, kept for all four games
    for kit, language in (("java", "java"), ("cpp", "cpp")):
        log = next((languages / "bots").glob(f"{kit}-heuristic-*.log")).read_text()
        assert f"craits_bot_{language} INFO connected to /run/craits/frames.sock" in log  # frames, in the sandbox
        assert "the referee closed the stream: done (4 game(s) ended" in log


@pytest.mark.parametrize("bot", ["java/heuristic-bot", "cpp/heuristic_bot"])
def test_the_java_and_cpp_heuristics_are_ports_of_the_python_one_they_answer_its_game_as_it_did(
        kits: Kits, languages: Path, tmp_path: Path, bot: str) -> None:
    """The kits' example heuristics are ports of one another: given every request the Python
    heuristic was sent in a real game, each answers exactly as it did (a port that drifted would
    show here). (Rotating one deal's seats showed it before deals became fresh for every game.)"""
    replay = languages / "replays" / "d0001-t00001-r1.jsonl.gz"
    seat = json.loads((languages / "standings.json").read_text())["games"][0]["bots"].index("python-heuristic")
    messages = tmp_path / "seat.jsonl"
    assert craits_main(["replay", "messages", str(replay), "--seat", str(seat), "-o", str(messages)]) == 0
    port = subprocess.run([str(kits.java.parent / bot), "--offline", str(messages)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert port.returncode == 0 and "every answer is the recorded one" in port.stdout, port.stdout + port.stderr


@pytest.mark.parametrize("bot", ["java/heuristic-bot", "cpp/heuristic_bot"])
def test_check_bot_passes_each_kits_example_bot_in_the_sandbox_on_frames(kits: Kits, bot: str) -> None:
    report = check_bot([str(kits.java.parent / bot)], CheckOptions())
    assert report.ok and report.count(Status.WARN) == 0, report.render()
    assert report.exit_code == 0


BUGGY_JAVA = """
import craits.bot.Bot;
import craits.bot.Request;
import craits.bot.Runner;
import craits.v1.LegalAction;
import craits.v1.Rank;
import java.util.Arrays;

public class BuggyBot implements Bot {
    static boolean fixed;

    @Override
    public LegalAction choose(Request request) {
        int last = request.legalActions().size() - 1;
        if (!fixed && request.observation().getTopCard().getRank() == Rank.RANK_EIGHT) {
            last += 1;  // the bug: one past the end on an 8
        }
        return request.legalActions().get(last);
    }

    public static void main(String[] args) {
        fixed = Arrays.asList(args).contains("--fixed");
        Runner.run(new BuggyBot(), Arrays.stream(args).filter(a -> !a.equals("--fixed")).toArray(String[]::new));
    }
}
"""

BUGGY_CPP = """
#include <cstring>
#include <vector>
#include "craits/bot.hpp"

static bool fixed = false;

class BuggyBot : public craits::bot::Bot {
  craits::v1::LegalAction choose(const craits::bot::Request& request) override {
    std::vector<craits::v1::LegalAction> actions(request.legal_actions().begin(), request.legal_actions().end());
    size_t last = actions.size() - 1;
    if (!fixed && request.observation.top_card().rank() == craits::v1::RANK_EIGHT) last += 1;  // the bug
    return actions.at(last);
  }
};

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i)
    if (std::strcmp(argv[i], "--fixed") == 0) fixed = true; else args.push_back(argv[i]);
  BuggyBot bot;
  return craits::bot::run(bot, int(args.size()), args.data());
}
"""


def buggy_java(kits: Kits, folder: Path) -> Path:
    """BuggyBot.class beside the kit's jar and launcher (a sandboxed bot sees its own folder only)."""
    for name in ("craits-bot.jar", "classpath", "java-bot"):
        shutil.copy2(kits.java / name, folder / name)
    (folder / "BuggyBot.java").write_text(BUGGY_JAVA)
    classpath = f"{kits.java / 'craits-bot.jar'}:{(kits.java / 'classpath').read_text().strip()}"
    subprocess.run(["javac", "-cp", classpath, "-d", str(folder), str(folder / "BuggyBot.java")], check=True,
                   timeout=120)
    bot = folder / "bot.sh"
    bot.write_text('#!/bin/sh\nhere="$(dirname "$0")"\nCLASSPATH="$here" exec "$here/java-bot" BuggyBot "$@"\n')
    bot.chmod(0o755)
    return bot


def buggy_cpp(kits: Kits, folder: Path) -> Path:
    """buggy_bot, linked against the kit's library and Debian's gRPC, as a student's CMake would."""
    (folder / "buggy_bot.cpp").write_text(BUGGY_CPP)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "grpc++", "protobuf"], capture_output=True,
                           text=True, check=True).stdout.split()
    bot = folder / "buggy_bot"
    subprocess.run(["g++", "-std=c++17", "-O0", "-o", str(bot), str(folder / "buggy_bot.cpp"),
                    f"-I{ROOT / 'clients/cpp/include'}", f"-I{kits.cpp / 'gen'}", str(kits.cpp / "libcraits_bot.a"),
                    *flags, "-pthread"], check=True, timeout=300)
    return bot


@pytest.mark.parametrize(("language", "make", "error", "where"), [
    ("java", buggy_java, "IndexOutOfBoundsException: Index", "BuggyBot.java:"),
    ("cpp", buggy_cpp, "std::out_of_range: vector::_M_range_check", ""),
])
def test_a_bot_error_is_reproduced_by_replay_rerun_and_gone_once_fixed(kits: Kits, tmp_path: Path, language: str,
                                                                        make, error: str, where: str) -> None:
    folder = tmp_path / f"bot-{language}"
    folder.mkdir()
    bot = make(kits, folder)
    played = craits("play", "random", str(bot), "--seed", "1", "--replays", str(tmp_path / "replays"),
                    "--log-dir", str(tmp_path / "logs"), cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    assert "bot error on decision" in played.stdout and error in played.stdout, played.stdout
    assert where in played.stdout
    rerun = next(line.split("rerun:", 1)[1].strip() for line in played.stdout.splitlines() if "rerun:" in line)
    assert str(bot) in rerun  # (absolute: it runs from anywhere)
    again = subprocess.run(rerun.replace("craits ", f"{CRAITS} ", 1), shell=True, capture_output=True, text=True,
                           timeout=240, cwd=tmp_path / "logs", check=False)
    assert "FAULT: the bot still faults" in again.stdout + again.stderr, again.stdout + again.stderr
    fixed = subprocess.run(rerun.replace("craits ", f"{CRAITS} ", 1) + " --fixed", shell=True, capture_output=True,
                           text=True, timeout=240, cwd=tmp_path, check=False)
    assert "FAULT GONE" in fixed.stdout + fixed.stderr, fixed.stdout + fixed.stderr


@pytest.mark.parametrize(("seat_bot", "bot", "other"), [
    ("java-heuristic", "java/heuristic-bot", "java/random-bot"),
    ("cpp-heuristic", "cpp/heuristic_bot", "cpp/random_bot"),
])
def test_the_offline_runner_gives_the_recorded_answers_for_the_same_bot_and_shows_another_bots_first_difference(
        kits: Kits, languages: Path, tmp_path: Path, seat_bot: str, bot: str, other: str) -> None:
    replay = languages / "replays" / "d0001-t00001-r1.jsonl.gz"
    seat = json.loads((languages / "standings.json").read_text())["games"][0]["bots"].index(seat_bot)
    messages = tmp_path / "seat.jsonl"
    assert craits_main(["replay", "messages", str(replay), "--seat", str(seat), "-o", str(messages)]) == 0
    same = subprocess.run([str(kits.java.parent / bot), "--offline", str(messages)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert same.returncode == 0 and "every answer is the recorded one" in same.stdout, same.stdout + same.stderr
    count = int(same.stdout.split()[0])
    assert count > 10 and f"{count} requests answered, {count} with a recorded answer" in same.stdout
    another = subprocess.run([str(kits.java.parent / other), "--offline", str(messages)], capture_output=True,
                             text=True, timeout=60, check=False)
    assert another.returncode == 1 and "first difference at decision " in another.stdout, another.stdout
    binary = tmp_path / "seat.bin"
    assert craits_main(["replay", "messages", str(replay), "--seat", str(seat), "--format", "binary", "-o",
                        str(binary)]) == 0
    unrecorded = subprocess.run([str(kits.java.parent / bot), "--offline", str(binary)], capture_output=True,
                                text=True, timeout=60, check=False)
    assert unrecorded.stdout.startswith(f"{count} requests answered, 0 with a recorded answer"), unrecorded.stdout


def test_a_kit_bot_stopped_with_sigterm_leaves_cleanly_and_exits_0(kits: Kits, tmp_path: Path) -> None:
    """SIGTERM is a stop (exit 0, the half-close of a clean leave), told apart from a crash."""
    import signal
    import time

    for bot in (kits.java / "random-bot", kits.cpp / "random_bot"):
        proc = subprocess.Popen([str(bot), "--server", "127.0.0.1:9", "--reconnect-s", "30"], stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "CRAITS_TOKEN": "t"})
        time.sleep(1.5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err


def _blocks(section: str, language: str) -> list[str]:
    """The ```language blocks of a section of docs/first-bot.md, as written."""
    text = (ROOT / "docs/first-bot.md").read_text()
    part = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return [block.split("```", 1)[0] for block in part.split(f"```{language}\n")[1:]]


@pytest.mark.parametrize("language", ["java", "cpp"])
def test_the_first_bot_guides_java_and_cpp_bots_play_sandboxed_as_written(kits: Kits, tmp_path: Path,
                                                                           language: str) -> None:
    """docs/first-bot.md, sections 6 and 7: the bot, compiled as it says, plays and passes check-bot."""
    folder = tmp_path / "mybot"
    folder.mkdir()
    if language == "java":
        (folder / "MyBot.java").write_text(_blocks("6. Your first Java bot", "java")[0])
        script = _blocks("6. Your first Java bot", "sh")[1].replace("../build/kits/java", str(kits.java))
        (folder / "bot.sh").write_text(script)
        (folder / "bot.sh").chmod(0o755)
        subprocess.run([str(kits.java / "javac-bot"), str(folder / "MyBot.java")], check=True, timeout=120)
        bot = folder / "bot.sh"
    else:
        (folder / "my_bot.cpp").write_text(_blocks("7. Your first C++ bot", "cpp")[0])
        subprocess.run([str(kits.cpp / "cxx-bot"), str(folder / "my_bot.cpp")], check=True, timeout=300)
        bot = folder / "my_bot"
    played = craits("play", "random", str(bot), "--flag", "short_game=true", "--log-dir", str(tmp_path / "logs"))
    assert played.returncode == 0 and " ok " in played.stdout.splitlines()[3], played.stdout + played.stderr
    report = check_bot([str(bot)], CheckOptions())
    assert report.ok and report.count(Status.WARN) == 0, report.render()


def test_over_tls_the_cpp_kit_plays_with_the_referees_certificate_and_the_java_kit_says_why_it_cannot(
        kits: Kits, tmp_path: Path) -> None:
    """A referee with --tls self-signed: the C++ kit trusts the file given (--tls-ca) and plays;
    the Java kit built with Debian's jars cannot speak TLS (their Netty gives the JDK's TLS no
    ALPN) and says so, refused (3), rather than crashing or falling back to plain text."""
    import socket
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    serve = subprocess.Popen([CRAITS, "serve", "--address", f"127.0.0.1:{port}", "--tls", "self-signed", "--bot",
                              "remote:me:tok-me-1", "--bot", "random", "--games", "1", "--flag", "short_game=true",
                              "--log-dir", str(tmp_path / "logs")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        cert = tmp_path / "logs" / "tls" / "referee-cert.pem"
        for _ in range(200):
            if cert.exists():
                break
            time.sleep(0.1)
        env = {**os.environ, "CRAITS_TOKEN": "tok-me-1"}
        server = f"grpcs://127.0.0.1:{port}"
        java = subprocess.run([str(kits.java / "random-bot"), "--server", server, "--tls-ca", str(cert)], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert java.returncode == 3 and "TLS is not available with these grpc-java jars" in java.stderr, java.stderr
        cpp = subprocess.run([str(kits.cpp / "random_bot"), "--server", server, "--tls-ca", str(cert)], env=env,
                             capture_output=True, text=True, timeout=120, check=False)
        assert cpp.returncode == 0 and f"connected to {server} as 'me'" in cpp.stderr, cpp.stderr
        assert serve.wait(timeout=60) == 0
    finally:
        serve.kill()
        serve.communicate()
