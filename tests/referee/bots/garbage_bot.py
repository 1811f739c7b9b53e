"""Sends what the referee must survive. argv[1]:
"huge": a Hello larger than the size limit; "bytes": raw bytes that are no BotMessage;
"empty": Hello, then an empty BotMessage and a second Hello, then plays correctly."""

import os
import sys

import grpc
from botlib import Bot, run
from craits.v1 import referee_pb2 as pb

mode = sys.argv[1]


async def raw_bytes():
    async with grpc.aio.insecure_channel(os.environ["CRAITS_SERVER"]) as channel:
        play = channel.stream_stream("/craits.v1.Referee/Play", request_serializer=None, response_deserializer=None)
        call = play()
        await call.write(b"\xff\xff\xff\xff\x0fthis is not a protocol buffer")
        try:
            while await call.read() is not grpc.aio.EOF:
                pass
            return (await call.code()).name
        except grpc.aio.AioRpcError as err:
            return err.code().name


async def decide(bot, request):
    if bot.decisions == 1 and mode == "empty":
        await bot.send(pb.BotMessage())
        await bot.send(pb.BotMessage(hello=pb.Hello(token=bot.token, protocol_version=1)))
    await bot.answer(request, request.legal_actions[0].id)


async def main():
    if mode == "bytes":
        status = await raw_bytes()
    elif mode == "huge":
        bot = Bot()
        status = await bot.play(decide, hello=pb.BotMessage(hello=pb.Hello(
            token=bot.token, protocol_version=1, name="x" * 100_000)))
    else:
        return await Bot().play(decide)
    if os.environ.get("CRAITS_STATUS"):
        with open(os.environ["CRAITS_STATUS"], "w") as out:
            out.write(status)
    return status


run(main)
