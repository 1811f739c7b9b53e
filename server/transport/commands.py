"""The one rule for running a bot command, shared by every command that takes one.

``craits play`` and ``craits serve --bot`` (a command as one string), ``craits check-bot``
(the words after ``--``), and the ``command`` of a bot in a tournament or ladder file all
pass their command through :func:`bot_command`, so the same words start the same program
everywhere; each command's ``--help`` quotes :data:`BOT_COMMAND_RULE`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

PYTHON_NAMES = ("python", "python3")
JS_KIT = "craits-js-bot"
"""A command's program that means the JavaScript kit's bot (:data:`JS_KIT_BOT`): ``craits-js-bot
--strategy my_strategy.js`` runs a strategy from any folder, a submitted bot's in its sandbox
too (the kit is readable there, as the Python kit is), on whichever machine launches it."""
JS_KIT_BOT = Path(__file__).resolve().parents[2] / "clients" / "js" / "bot.js"
JAVA_KIT = "craits-java-bot"
"""``craits-java-bot CLASS``: a Java bot class run with the Java kit as ``make kits`` built it
(:data:`KITS_BUILD` ``/java/java-bot``: the kit's jar and Debian's grpc-java jars, the bot's
folder first on the classpath), on whichever machine launches it."""
CPP_KIT = "craits-cpp-bot"
"""``craits-cpp-bot random_bot|heuristic_bot``: the C++ kit's example bots as ``make kits`` built them."""
KITS_BUILD = Path(__file__).resolve().parents[2] / "build" / "kits"
"""Where ``make kits`` builds the Java and C++ kits (shown read-only in the sandbox)."""

BOT_COMMAND_RULE = (
    'A bot command runs as given, except that "python" or "python3" as its program means the Python '
    "that runs craits (so the packages installed with craits, such as craits_bot, are found without "
    "activating anything), a first word ending in .py runs with that Python, one ending in .js "
    f"with node, {JS_KIT} is the JavaScript kit's clients/js/bot.js ({JS_KIT} --strategy my_strategy.js), "
    f"{JAVA_KIT} CLASS runs a Java bot class with the Java kit and {CPP_KIT} NAME one of the C++ kit's "
    "example bots, as make kits built them."
)


def bot_command(argv: Sequence[str]) -> list[str]:
    """``argv`` as the referee runs it (see :data:`BOT_COMMAND_RULE`)."""
    command = list(argv)
    if not command:
        return command
    first = command[0]
    if first in (JS_KIT, JAVA_KIT, CPP_KIT):
        return kit_command(command)
    if first in PYTHON_NAMES:
        return [sys.executable, *command[1:]]
    if first.endswith(".py"):
        return [sys.executable, *command]
    if first.endswith(".js"):
        return ["node", *command]
    return command


def kit_command(argv: Sequence[str]) -> list[str]:
    """``craits-js-bot ARGS`` as ``node .../clients/js/bot.js ARGS`` (this machine's kit); any
    other command as it is. Applied where a command is launched or checked, so a stored
    command (a submitted version's) names no path of the machine that admitted it."""
    command = list(argv)
    if command[:1] == [JS_KIT]:
        return ["node", str(JS_KIT_BOT), *command[1:]]
    if command[:1] == [JAVA_KIT]:
        return [str(KITS_BUILD / "java" / "java-bot"), *command[1:]]
    if command[:1] == [CPP_KIT] and len(command) > 1 and "/" not in command[1]:
        return [str(KITS_BUILD / "cpp" / command[1]), *command[2:]]
    return command


def bot_command_help() -> str:
    """:data:`BOT_COMMAND_RULE` as a help epilog (wrapped: some commands keep their text raw)."""
    import textwrap

    return textwrap.fill("Bot commands: " + BOT_COMMAND_RULE, width=78)


def runnable_command(command: Sequence[str], cwd: str | os.PathLike[str] | None) -> list[str]:
    """``command`` with each path in it that names a file in ``cwd`` made absolute (``./bot.sh``,
    ``bot.py``, ``build/MyBot.jar``); a program found on the PATH (``python``) and options stay."""
    base = Path(cwd) if cwd is not None else Path.cwd()
    out = list(command)
    for i, arg in enumerate(out):
        if arg.startswith("-") or os.path.isabs(arg) or (i == 0 and os.sep not in arg):
            continue
        if (base / arg).exists():
            out[i] = os.path.abspath(base / arg)
    return out
