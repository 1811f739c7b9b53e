"""A correct bot: answers every request with a random legal action (seeded by CRAITS_BOT_SEED)."""

import os
import random

from botlib import Bot, run

rng = random.Random(int(os.environ.get("CRAITS_BOT_SEED", "0")))


async def decide(bot, request):
    await bot.answer(request, rng.choice(request.legal_actions).id)


run(lambda: Bot().play(decide))
