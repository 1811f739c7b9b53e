"""Answers wrongly, then (unless argv[1] == "always") correctly within the deadline.

Modes: "illegal" sends a real action that is not legal first; "malformed" sends an id
that names no action; "always" never sends a legal action (so it strikes out).
"""

import sys

from botlib import Bot, run

mode = sys.argv[1] if len(sys.argv) > 1 else "illegal"
ALL_PLAYS = [8 + 10 * card for card in range(52) if card // 4 + 1 not in (8, 9)]


def wrong(request):
    legal = {a.id for a in request.legal_actions}
    if mode == "malformed":
        return 99999
    return next(a for a in [0, *ALL_PLAYS] if a not in legal)


async def decide(bot, request):
    if request.repeated_request and mode != "always":
        await bot.answer(request, request.legal_actions[0].id)
    else:
        await bot.answer(request, wrong(request))


run(lambda: Bot().play(decide))
