"""The one rule for running a bot command, shared by every command that takes one.

``craits play`` and ``craits serve --bot`` (a command as one string), ``craits check-bot``
(the words after ``--``), and the ``command`` of a bot in a tournament or ladder file all
pass their command through :func:`bot_command`, so the same words start the same program
everywhere; each command's ``--help`` quotes :data:`BOT_COMMAND_RULE`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

PYTHON_NAMES = ("python", "python3")

BOT_COMMAND_RULE = (
    'A bot command runs as given, except that "python" or "python3" as its program means the Python '
    "that runs craits (so the packages installed with craits, such as craits_bot, are found without "
    "activating anything), a first word ending in .py runs with that Python, and one ending in .js "
    "with node."
)


def bot_command(argv: Sequence[str]) -> list[str]:
    """``argv`` as the referee runs it (see :data:`BOT_COMMAND_RULE`)."""
    command = list(argv)
    if not command:
        return command
    first = command[0]
    if first in PYTHON_NAMES:
        return [sys.executable, *command[1:]]
    if first.endswith(".py"):
        return [sys.executable, *command]
    if first.endswith(".js"):
        return ["node", *command]
    return command


def bot_command_help() -> str:
    """:data:`BOT_COMMAND_RULE` as a help epilog (wrapped: some commands keep their text raw)."""
    import textwrap

    return textwrap.fill("Bot commands: " + BOT_COMMAND_RULE, width=78)
