"""Drops its stream after argv[1] decisions (with a request open), waits argv[2] seconds,
reconnects with the same token and plays the game to the end."""

import asyncio
import sys

from botlib import Bot, run

after = int(sys.argv[1]) if len(sys.argv) > 1 else 3
pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2


async def decide(bot, request):
    await bot.answer(request, request.legal_actions[0].id)


async def main():
    first = Bot()

    async def watch(message):
        return message.HasField("decision") and first.decisions >= after  # drop with this request open

    await first.play(decide, on_message=watch)
    await asyncio.sleep(pause)
    second = Bot()
    return await second.play(decide)


run(main)
