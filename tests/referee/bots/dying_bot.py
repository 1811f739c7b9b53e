"""Plays argv[1] decisions, then the process dies without closing anything.

With argv[2] == "orphan" it first starts a child that inherits its stdout and stderr and
outlives it (the referee must notice the bot's exit although its output is still open);
with "escape" that child also leaves the bot's process group (the referee must still end it);
argv[3] names a file that gets the child's pid."""

import os
import subprocess
import sys

from botlib import Bot, run

limit = int(sys.argv[1]) if len(sys.argv) > 1 else 3


async def decide(bot, request):
    if bot.decisions > limit:
        if sys.argv[2:3] in (["orphan"], ["escape"]):
            child = subprocess.Popen(["sleep", "30"], start_new_session=sys.argv[2] == "escape")
            if len(sys.argv) > 3:
                with open(sys.argv[3], "w") as out:
                    out.write(str(child.pid))
        os._exit(9)
    await bot.answer(request, request.legal_actions[0].id)


run(lambda: Bot().play(decide))
