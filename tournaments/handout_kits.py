"""The Java and C++ handouts: the kit's sources, the protocol, a bot to start from, and the two
scripts a student needs (``build.sh``, ``bot.sh``), for ``craits handout --kit java|cpp``.

Each kit is three functions, the shape of a handout kit (:class:`Kit`): ``prepare`` gathers
what every student's folder shares, once; ``write`` fills one student's folder; ``readme``
says how to build and play. A student builds with Debian's packages (``./build.sh``, no network)
or their usual tool (Maven's ``pom.xml``; CMake finds gRPC's package or pkg-config's
``grpc++``). The code for craits.v1 is generated from the handout's ``proto/`` when it builds.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.transport.tls import CERT_FILE

ROOT = Path(__file__).resolve().parents[1]
PROTO = Path("proto") / "craits" / "v1" / "referee.proto"
TOKEN_FILE = "token.txt"


@dataclass(frozen=True, slots=True)
class Kit:
    """One language's handout (Python, JavaScript: tournaments.handout; Java, C++: here): what goes
    in the folder beside the README, and the README's parts."""

    name: str
    prepare: Callable[[Path], list[Path]]
    """Make what every handout of this kit shares (in a temporary folder): its files, once."""
    write: Callable[[Path, Any, list[Path]], None]
    """Write the kit's files and the bot to start from into a student's folder (the student:
    tournaments.handout.Student, its ``name`` and ``server`` at least)."""
    readme: Callable[[Any, list[Path]], str]
    """The README's install, play and (with a roster) submit sections."""


_BOT_SH = """#!/bin/sh
# Runs your bot ({what}); build it first with ./build.sh. The token: {token_file} here, or CRAITS_TOKEN.
here="$(cd "$(dirname "$0")" && pwd)"
if [ -z "$CRAITS_TOKEN" ] && [ -f "$here/{token_file}" ]; then CRAITS_TOKEN="$(cat "$here/{token_file}")"; export CRAITS_TOKEN; fi
if [ -z "$CRAITS_FRAMED_SOCKET" ] && [ -z "$CRAITS_TLS_CA" ] && [ -f "$here/{cert_file}" ]; then
  CRAITS_TLS_CA="$here/{cert_file}"; export CRAITS_TLS_CA  # (the referee's certificate: it speaks TLS)
fi
CRAITS_SERVER="${{CRAITS_SERVER:-{server}}}"; export CRAITS_SERVER
CRAITS_BOT_NAME="${{CRAITS_BOT_NAME:-{name}}}"; export CRAITS_BOT_NAME
exec {run} "$@"
"""


def _bot_sh(folder: Path, student: Any, what: str, run: str) -> None:
    script = folder / "bot.sh"
    script.write_text(_BOT_SH.format(what=what, token_file=TOKEN_FILE, cert_file=CERT_FILE, server=student.server,
                                     name=student.name, run=run), encoding="utf-8")
    script.chmod(0o755)


def _copy_proto(folder: Path) -> None:
    (folder / PROTO).parent.mkdir(parents=True)
    shutil.copy2(ROOT / PROTO, folder / PROTO)


# ---------------------------------------------------------------------------- Java

JAVA = ROOT / "clients" / "java"


def _java_prepare(into: Path) -> list[Path]:
    return [JAVA / "src" / "main" / "java" / "craits", JAVA / "build-debian.sh", JAVA / "pom.xml"]


def _java_write(folder: Path, student: Any, parts: list[Path]) -> None:
    sources, build, pom = parts
    shutil.copytree(sources, folder / "src" / "craits")
    shutil.copy2(build, folder / "build.sh")
    text = pom.read_text(encoding="utf-8").replace("${project.basedir}/../../proto", "${project.basedir}/proto")
    text = text.replace("  <build>\n", "  <build>\n    <sourceDirectory>src</sourceDirectory>\n", 1)
    (folder / "pom.xml").write_text(text, encoding="utf-8")
    _copy_proto(folder)
    (folder / "src" / "MyBot.java").write_text(_JAVA_BOT.format(name=student.name), encoding="utf-8")
    _bot_sh(folder, student, "MyBot, with the kit's jar and Debian's grpc-java jars", '"$here/build/java-bot" MyBot')


def _java_readme(student: Any, parts: list[Path]) -> str:
    return _JAVA_README.format(name=student.name, server=student.server, token_file=TOKEN_FILE)


_JAVA_BOT = """import craits.bot.Bot;
import craits.bot.Request;
import craits.bot.Runner;
import craits.v1.ActionKind;
import craits.v1.LegalAction;

/**
 * {name}'s bot for Craits Arena. Change choose(), then ./build.sh and ./bot.sh again.
 *
 * The kit calls choose() for every decision with the legal actions, sorted; return one of them.
 * If your code throws, the kit answers the first legal action instead, prints the stack trace,
 * and the referee counts a bot error on the board: look at this terminal.
 */
public class MyBot implements Bot {{
    @Override
    public LegalAction choose(Request request) {{
        // request.legalActions(): what you may do (each has getText(), e.g. "5S", "8H:clubs", "draw")
        // request.hand(): your cards; request.observation(): the table as you may see it;
        // request.history(): this hand's events so far
        LegalAction play = null;
        for (LegalAction action : request.legalActions()) {{
            if (action.getAnnounce()) {{
                return action;  // "one card": a play that leaves one card without it costs a turn
            }}
            if (play == null && action.getKind() == ActionKind.ACTION_KIND_PLAY_CARD) {{
                play = action;
            }}
        }}
        return play != null ? play : request.legalActions().get(0);
    }}

    @Override
    public String name() {{
        return "{name}";
    }}

    public static void main(String[] args) {{
        Runner.run(new MyBot(), args);
    }}
}}
"""

_JAVA_README = """
## Build (Java 17 or later)

With Debian's (or Ubuntu's) packages, no network needed:

    sudo apt-get install openjdk-17-jdk-headless libgrpc-java libprotobuf-java libnetty-java \\
        libperfmark-java protobuf-compiler protobuf-compiler-grpc-java-plugin \\
        libgeronimo-annotation-1.3-spec-java
    ./build.sh

`build.sh` generates the protocol's classes (`craits.v1`) from `proto/`, compiles them with the
kit (`src/craits/bot/`) and your `src/MyBot.java` into `build/`. Elsewhere (Windows, macOS), with
Maven: `mvn -q package`, then run `java -cp target/craits-bot-0.1.0-jar-with-dependencies.jar MyBot`.

## Play

    ./bot.sh

The bot connects to {server}, says it is {name}, and plays every game it is given; leave it
running. Ctrl-C stops it. To improve it, edit `choose()` in `src/MyBot.java`, then `./build.sh`
and `./bot.sh` again. The kit's examples are there to read and to play against:
`build/random-bot` and `build/heuristic-bot` (`src/craits/bot/examples/`).

If your code throws an exception, the kit plays the first legal action instead, prints the
stack trace in this terminal between two lines of `!`, and the board counts it as a
**bot error** of yours: read it and fix it. A decision of a game you lost can be replayed with
no referee: `craits replay messages REPLAY --seat N -o seat.jsonl`, then
`./bot.sh --offline seat.jsonl` prints the first answer that differs from the game's.
"""


# ---------------------------------------------------------------------------- C++

CPP = ROOT / "clients" / "cpp"
CPP_PARTS = ("CMakeLists.txt", "include", "src", "examples")


def _cpp_prepare(into: Path) -> list[Path]:
    return [CPP / part for part in CPP_PARTS]


def _cpp_write(folder: Path, student: Any, parts: list[Path]) -> None:
    for part in parts:
        if part.is_dir():
            shutil.copytree(part, folder / part.name)
        else:
            shutil.copy2(part, folder / part.name)
    _copy_proto(folder)
    (folder / "my_bot.cpp").write_text(_CPP_BOT.format(name=student.name), encoding="utf-8")
    build = folder / "build.sh"
    build.write_text(_CPP_BUILD, encoding="utf-8")
    build.chmod(0o755)
    _bot_sh(folder, student, "my_bot, built by ./build.sh", '"$here/build/my_bot"')


def _cpp_readme(student: Any, parts: list[Path]) -> str:
    return _CPP_README.format(name=student.name, server=student.server, token_file=TOKEN_FILE)


_CPP_BUILD = """#!/bin/sh
# Builds my_bot (and the kit, and the protocol's code from proto/) into build/.
# -DCRAITS_EXAMPLES=ON builds the kit's random_bot and heuristic_bot too.
set -e
[ "$(dirname "$0")" = . ] || cd "$(dirname "$0")"
jobs="$(nproc 2>/dev/null || echo 2)"
if ! [ -r "$PWD/CMakeLists.txt" ]; then
  # A submission's build sandbox shows this folder but not the ones above it, and CMake names
  # files by their absolute paths: build a copy in /tmp, and bring back the program.
  stage="$(mktemp -d)"
  cp -R CMakeLists.txt include src examples proto my_bot.cpp "$stage/"
  cmake -S "$stage" -B "$stage/build" -DCMAKE_BUILD_TYPE=Release -DCRAITS_EXAMPLES=OFF "$@" >/dev/null
  cmake --build "$stage/build" -j "$jobs"
  mkdir -p build && cp "$stage/build/my_bot" build/my_bot
  rm -rf "$stage"
  exit 0
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCRAITS_EXAMPLES=OFF "$@" >/dev/null
cmake --build build -j "$jobs"
"""

_CPP_BOT = """// {name}'s bot for Craits Arena. Change choose(), then ./build.sh and ./bot.sh again.
//
// The kit calls choose() for every decision with the legal actions, sorted; return one of them.
// If your code throws, the kit answers the first legal action instead, prints what was thrown,
// and the referee counts a bot error on the board: look at this terminal.
#include "craits/bot.hpp"

namespace pb = craits::v1;

class MyBot : public craits::bot::Bot {{
 public:
  pb::LegalAction choose(const craits::bot::Request& request) override {{
    // request.legal_actions(): what you may do (each has text(), e.g. "5S", "8H:clubs", "draw")
    // request.hand(): your cards; request.observation: the table as you may see it;
    // request.history(): this hand's events so far
    const pb::LegalAction* play = nullptr;
    for (const pb::LegalAction& action : request.legal_actions()) {{
      if (action.announce()) return action;  // "one card": a play that leaves one card without it costs a turn
      if (!play && action.kind() == pb::ACTION_KIND_PLAY_CARD) play = &action;
    }}
    return play ? *play : request.legal_actions(0);
  }}
  std::string name() const override {{ return "{name}"; }}
}};

int main(int argc, char** argv) {{
  MyBot bot;
  return craits::bot::run(bot, argc, argv);
}}
"""

_CPP_README = """
## Build (a C++17 compiler, CMake, gRPC)

With Debian's (or Ubuntu's) packages:

    sudo apt-get install g++ cmake pkg-config libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
    ./build.sh

CMake generates the protocol's code (`craits/v1/referee.pb.h`) from `proto/`, and builds the kit
(`include/`, `src/`) and your `my_bot.cpp` into `build/my_bot` (about a minute the first time:
the protocol's code is large; then only what you change). Elsewhere, gRPC from vcpkg, Homebrew
or conda: `cmake -S . -B build && cmake --build build` finds its CMake package.

## Play

    ./bot.sh

The bot connects to {server}, says it is {name}, and plays every game it is given; leave it
running. Ctrl-C stops it. To improve it, edit `choose()` in `my_bot.cpp`, then `./build.sh` and
`./bot.sh` again.

If your code throws an exception, the kit plays the first legal action instead, prints what was
thrown in this terminal between two lines of `!`, and the board counts it as a **bot error**
of yours. A decision of a game you lost can be replayed with no referee:
`craits replay messages REPLAY --seat N -o seat.jsonl`, then `./bot.sh --offline seat.jsonl`
prints the first answer that differs from the game's.
"""

KITS: dict[str, Kit] = {
    "java": Kit("java", _java_prepare, _java_write, _java_readme),
    "cpp": Kit("cpp", _cpp_prepare, _cpp_write, _cpp_readme),
}
"""The compiled languages' handouts, by ``--kit`` name (tournaments.handout adds them to its own)."""
