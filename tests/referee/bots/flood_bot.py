"""After its first request, floods the stream with thousands of answers to decisions that are
not open, writing from a task of its own so that it keeps reading (and recording) meanwhile."""

import asyncio

from botlib import Bot, run
from craits.v1 import referee_pb2 as pb

tasks = set()


async def flood(bot, request):
    junk = pb.BotMessage(answer=pb.Answer(game_id=request.game_id, decision_id=request.decision_id + 10**9))
    try:
        for _ in range(5000):
            await bot.send(junk)
        await bot.answer(request, request.legal_actions[0].id)
    except Exception:  # the referee closed the stream
        pass


async def decide(bot, request):
    if bot.decisions == 1:
        task = asyncio.create_task(flood(bot, request))
        tasks.add(task)


run(lambda: Bot().play(decide))
