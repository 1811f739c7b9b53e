"""Plays argv[1] decisions, then the process dies without closing anything."""

import os
import sys

from botlib import Bot, run

limit = int(sys.argv[1]) if len(sys.argv) > 1 else 3


async def decide(bot, request):
    if bot.decisions > limit:
        os._exit(9)
    await bot.answer(request, request.legal_actions[0].id)


run(lambda: Bot().play(decide))
