"""Never answers. argv[1] == "nohello": opens the stream and says nothing at all;
"hang": answers argv[2] decisions, then hangs (stream open, no answers)."""

import sys

from botlib import Bot, run

mode = sys.argv[1] if len(sys.argv) > 1 else "mute"
answered = int(sys.argv[2]) if len(sys.argv) > 2 else 0


async def decide(bot, request):
    if mode == "hang" and bot.decisions <= answered:
        await bot.answer(request, request.legal_actions[0].id)


async def say_nothing():
    import os

    import grpc
    from craits.v1 import referee_pb2_grpc

    async with grpc.aio.insecure_channel(os.environ["CRAITS_SERVER"]) as channel:
        call = referee_pb2_grpc.RefereeStub(channel).Play()
        try:
            await call.read()
            status = (await call.code()).name
        except grpc.aio.AioRpcError as err:
            status = err.code().name
    if os.environ.get("CRAITS_STATUS"):
        with open(os.environ["CRAITS_STATUS"], "w") as out:
            out.write(status)
    return status


if mode == "nohello":
    run(say_nothing)
else:
    run(lambda: Bot().play(decide))
