"""Answers every request twice (the second is stale) and once for a decision that is not open."""

from botlib import Bot, run


async def decide(bot, request):
    await bot.answer(request, request.legal_actions[0].id)
    await bot.answer(request, request.legal_actions[0].id)
    if bot.decisions == 1:
        await bot.send_answer_elsewhere(request)


async def elsewhere(self, request):
    from craits.v1 import referee_pb2 as pb

    await self.send(pb.BotMessage(answer=pb.Answer(game_id=request.game_id, decision_id=request.decision_id + 1,
                                                   action_id=0)))


Bot.send_answer_elsewhere = elsewhere
run(lambda: Bot().play(decide))
