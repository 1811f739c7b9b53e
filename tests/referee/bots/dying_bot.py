"""Plays argv[1] decisions, then the process dies without closing anything.

With argv[2] == "orphan" it first starts a child that inherits its stdout and stderr and
outlives it (the referee must notice the bot's exit although its output is still open)."""

import os
import subprocess
import sys

from botlib import Bot, run

limit = int(sys.argv[1]) if len(sys.argv) > 1 else 3


async def decide(bot, request):
    if bot.decisions > limit:
        if sys.argv[2:] == ["orphan"]:
            subprocess.Popen(["sleep", "20"])
        os._exit(9)
    await bot.answer(request, request.legal_actions[0].id)


run(lambda: Bot().play(decide))
