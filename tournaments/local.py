"""An in-process runner: plays a game with the engine and built-in policies.

It has the same shape as the referee's gRPC runner, ``async run_game(spec) ->
GameRecord``, so the scheduler cannot tell them apart. It plays only bots with
``builtin`` set (a command or remote bot needs the referee) and is used by the
fast tests, the benchmark's baseline and as a fallback for builtin-only files.

Policies (deterministic given the game seed): ``random``, ``first`` and
``default`` are the referee's own (``server.game.policies``, seeded as the referee
seeds them, so a builtin-only tournament gives the same games with either
runner); ``greedy`` (also in ``server.game.policies``) is played only here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import multiprocessing
import threading
import time
from collections.abc import Sequence

from server.engine import GameState
from server.game.policies import POLICY_NAMES, GreedyPolicy, Policy, make_policy
from server.spec import BotSpec, GameRecord, GameSpec, SeatReport
from server.storage.replay import ReplayWriter

BUILTINS = (*POLICY_NAMES, "greedy")


def seat_policy(name: str, spec: GameSpec, seat: int) -> Policy:
    """The same policy, seeded the same way, as the referee gives a builtin seat,
    so a builtin-only tournament plays the same games with either runner."""
    if name == "greedy":
        return GreedyPolicy(spec.config.crazy_eights)
    return make_policy(name, seed=spec.seed * 1_000_003 + seat)


def _builtin(bot: BotSpec, spec: GameSpec, seat: int) -> Policy:
    if bot.builtin is None or bot.builtin not in BUILTINS:
        what = "runs a command" if bot.command else "connects remotely" if bot.builtin is None else f"is builtin {bot.builtin!r}"
        raise ValueError(f"the local runner plays only builtin bots ({', '.join(BUILTINS)}); {bot.name!r} {what}")
    return seat_policy(bot.builtin, spec, seat)


class GameCancelled(Exception):
    """The runner was asked to stop in the middle of a game (nothing is recorded)."""


def play_local(spec: GameSpec, cancel: threading.Event | None = None,
               policies: Sequence[Policy] | None = None) -> GameRecord:
    """Play ``spec`` to the end with the seats' built-in policies (or ``policies``, one per
    seat: a bench's own bots), writing its replay (the referee's format, ``server.replay``)
    when ``spec.replay_path`` is set."""
    if policies is None:
        policies = [_builtin(bot, spec, seat) for seat, bot in enumerate(spec.seats)]
    state = GameState(spec.config, spec.seed)
    asked = [0] * len(spec.seats)
    think = [0.0] * len(spec.seats)
    with contextlib.ExitStack() as stack:
        writer = None if spec.replay_path is None else stack.enter_context(ReplayWriter.for_spec(spec, state))
        while (decision := state.decision) is not None:
            if cancel is not None and cancel.is_set():
                raise GameCancelled(spec.game_id)
            legal = state.legal_action_ids()
            seat = decision.seat
            if len(legal) == 1:
                choice, status = legal[0], "auto"
            else:
                asked[seat] += 1
                started = time.perf_counter()
                choice, status = policies[seat].choose(legal), "ok"
                think[seat] += time.perf_counter() - started
            state.apply(choice)
            if writer is not None:
                writer.decision(seat, decision.kind, choice, status)
        record = GameRecord(
            game_id=spec.game_id,
            result=state.result(),
            seats=tuple(
                SeatReport(bot=bot.name, decisions=asked[s], think_s=think[s]) for s, bot in enumerate(spec.seats)
            ),
            replay_path=spec.replay_path,
            digest=state.digest(),
        )
        if writer is not None:
            writer.finish(record)
    return record


class LocalRunner:
    """``await runner(spec)`` plays a game off the event loop.

    ``workers=0`` plays in a thread of this process: simple, but games share one
    core (the GIL), so concurrency buys nothing. ``workers=N`` plays in a pool of
    N processes, which is what the benchmark uses to measure the scheduler's
    parallelism without the referee. Call ``close()`` when done.
    """

    def __init__(self, workers: int = 0) -> None:
        self.workers = workers
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        if workers > 0:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("spawn")
            )

    async def __call__(self, spec: GameSpec) -> GameRecord:
        loop = asyncio.get_running_loop()
        if self._pool is not None:
            return await loop.run_in_executor(self._pool, play_local, spec)
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(play_local, spec, cancel)
        except asyncio.CancelledError:
            cancel.set()  # the thread stops at its next decision
            raise

    def warm_up(self) -> None:
        """Start every pool worker now, so a benchmark does not time interpreter start-up."""
        if self._pool is not None:
            list(self._pool.map(time.sleep, [0.05] * self.workers))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
