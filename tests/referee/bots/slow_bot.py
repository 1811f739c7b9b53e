"""Thinks for argv[1] seconds before every answer (argv[2]: only from that many decisions on)."""

import asyncio
import sys

from botlib import Bot, run

delay = float(sys.argv[1])
after = int(sys.argv[2]) if len(sys.argv) > 2 else 0


async def decide(bot, request):
    if bot.decisions > after:
        await asyncio.sleep(delay)
    await bot.answer(request, request.legal_actions[0].id)


run(lambda: Bot().play(decide))
