"""A bot started without a token, against the real referee: both sides say that the token is
missing, not that it is wrong, and the bot says where a token comes from."""

from __future__ import annotations

import asyncio

import pytest

from server.transport.service import Arena
from tests.bots.commands import JS_RANDOM, PY_RANDOM, finish, needs, start_bot


@pytest.mark.parametrize("command", [PY_RANDOM, JS_RANDOM], ids=["python", "js"])
def test_a_bot_without_a_token_is_told_it_sent_none_and_where_one_comes_from(command: tuple[str, ...]) -> None:
    needs(command)

    async def refused() -> tuple[int, str]:
        arena = await Arena.start("127.0.0.1:0")
        arena.register_token("the-real-token", "me")
        try:
            process = start_bot(command, "--server", arena.target)  # (no CRAITS_TOKEN, no --token)
            return await asyncio.to_thread(finish, process)
        finally:
            await arena.shutdown(grace_s=0)

    code, err = asyncio.run(refused())
    assert code == 3, err
    assert "ERROR_CODE_UNAUTHENTICATED: no token: the Hello's token is empty" in err
    assert "this bot sent no token: give it --token TOKEN or set CRAITS_TOKEN" in err
