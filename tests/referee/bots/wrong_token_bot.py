"""Says Hello with a token that is not its own (argv[1], default "not-a-token")."""

import sys

from botlib import Bot, run

token = sys.argv[1] if len(sys.argv) > 1 else "not-a-token"


async def decide(bot, request):
    await bot.answer(request, request.legal_actions[0].id)


run(lambda: Bot(token=token).play(decide))
