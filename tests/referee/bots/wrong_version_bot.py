"""Says Hello with protocol version argv[1] (default 2)."""

import sys

from botlib import Bot, run

version = int(sys.argv[1]) if len(sys.argv) > 1 else 2


async def decide(bot, request):
    await bot.answer(request, request.legal_actions[0].id)


run(lambda: Bot(version=version).play(decide))
