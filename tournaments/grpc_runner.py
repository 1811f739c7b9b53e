"""The referee as a tournament's game runner: an :class:`~server.transport.service.Arena`
that plays each scheduled game, with the remote bots' tokens accepted for the whole run,
its launched bots kept between games (:mod:`server.transport.pool`), and games spread over
referee worker processes when more than one is in flight (:mod:`server.transport.workers`)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from server.errors import UserError
from server.logging import get_logger, log_file
from server.transport import presence
from server.transport.cores import allowed_cores, one_core
from server.transport.pool import RestartPolicy
from server.transport.sandbox import Limits
from server.transport.service import Arena, ArenaError, ArenaOptions, listening_text, security_notes
from server.transport.tls import TLSRequest, server_tls
from server.transport.workers import RefereeWorkers, WorkerSetup
from tournaments.config import RESOLVED_PREFIX

log = get_logger()


@contextlib.asynccontextmanager
async def tournament_runner(
    config: Any, out_dir: Any, *, address: str | None = None, workers: int | None = None,
    resolve_token: Callable[[str], tuple[str, str] | None] | None = None,
    revoked: Callable[[], list[str]] | None = None,
) -> AsyncIterator[Any]:
    """The referee as a tournament's game runner (``tournaments.runner`` looks this up).

    Starts an :class:`~server.transport.service.Arena` on ``address`` (default: the file's, see
    ``TournamentConfig.listen_address``), accepts the remote bots' tokens for the whole
    tournament, yields the game runner (with ``online_bots()``: the remote bots connected now,
    for a ladder's matchmaking), and shuts the server down on the way out (the
    runner has finished or cancelled its games by then). With remote bots it says on
    standard error where they connect: they cannot be told otherwise.

    ``resolve_token``: maps a token no bot of the file has to (the ``RESOLVED_PREFIX`` token,
    the name) of the remote bot it opens (a roster's participants, whose tokens are stored only
    hashed). ``revoked``: asked every :data:`REVOKED_EVERY_S` (in a thread) for the names whose
    resolved token stopped working since; their bots' streams are ended at once.

    Launched bots stay up between games unless the file says ``restart = "game"``. Games
    go to up to ``workers`` referee processes (this one included; default one per core),
    a new one started only while every one has a game in progress: ``--concurrency 1``
    plays everything here.
    """
    if address is None:
        listen = getattr(config, "listen_address", None)
        address = listen() if listen is not None else "127.0.0.1:0"
    options = ArenaOptions(bot_log_dir=Path(out_dir) / "bots")
    if isinstance(limits := getattr(config, "limits", None), Limits):
        options = dataclasses.replace(options, sandbox=getattr(config, "sandbox", "bwrap"), limits=limits,
                                      bot_output_limit_bytes=limits.output)
    restart = getattr(config, "restart", None) or RestartPolicy()
    wanted = getattr(config, "tls", None)
    tls = server_tls(wanted, out_dir, address) if isinstance(wanted, TLSRequest) else None
    try:
        arena = await Arena.start(address, options, tls)
    except ArenaError as err:
        raise UserError(f"{err}; choose another with `address = \"HOST:PORT\"` in the file or --address") from None
    remote = [bot for bot in getattr(config, "bots", ()) if bot.builtin is None and bot.command is None and bot.token]
    for bot in remote:  # (a roster participant's entry opens only to their real token, through the resolver)
        arena.register_token(bot.token, bot.name, direct=not bot.token.startswith(RESOLVED_PREFIX))
    arena.resolve_token = resolve_token
    if remote or resolve_token is not None:
        arena.presence.watch(bot.name for bot in remote)
        arena.presence.on_change = PresenceReport(arena.presence, Path(out_dir) / presence.FILENAME).changed
    log.info("tournament_referee", address=arena.target, tournament=getattr(config, "name", ""), tls=tls is not None)
    for note in security_notes(arena):
        print(note, file=sys.stderr, flush=True)
    if remote or resolve_token is not None:  # (a roster's participants connect with their tokens too: say where)
        print(listening_text(arena, [bot.name for bot in remote] or ["the roster's participants"]), file=sys.stderr,
              flush=True)
    arena.keep_bots(restart)
    logs = log_file()
    setup = WorkerSetup(options, restart, str(logs.parent) if logs else None, logs.stem if logs else "referee",
                        cores=allowed_cores())
    pool = RefereeWorkers(arena, setup, workers)
    watcher = asyncio.ensure_future(_cut_off_revoked(arena, revoked)) if revoked is not None else None
    try:
        with one_core(0):  # (the games here and their bots on one core, each worker on another)
            yield pool
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        try:
            await pool.close()
        finally:
            await arena.shutdown(grace_s=0)
            if remote:  # (as the run ends: every bot away)
                presence.write_file(Path(out_dir) / presence.FILENAME, arena.presence.snapshot())


REVOKED_EVERY_S = 2.0
REVOKED_TEXT = "your token was revoked (or renewed): ask the organizer for your new one"


async def _cut_off_revoked(arena: Arena, revoked: Callable[[], list[str]]) -> None:
    """End the streams of the participants whose token stopped working (``craits roster revoke``
    or ``renew``, in any process): at once, not when their bot next connects."""
    while True:
        await asyncio.sleep(REVOKED_EVERY_S)
        try:
            names = await asyncio.to_thread(revoked)
        except Exception as err:  # (the roster's store unreadable for a moment: asked again next time)
            log.warning("revoked_tokens_unreadable", error=str(err))
            continue
        for name in names:  # (the presence report says "NAME: token revoked" on the terminal and the board)
            arena.cut_off(f"{RESOLVED_PREFIX}{name}", REVOKED_TEXT)


class PresenceReport:
    """Shows the remote bots' comings and goings (:mod:`server.transport.presence`): one line
    each on the organizer's terminal (a refused Hello by the name it claimed, never its token),
    and the output folder's ``connections.json`` for the board, rewritten at most every
    :data:`WRITE_S` (a bot retrying a wrong token in a loop costs one write a half second)."""

    WRITE_S = 0.5

    def __init__(self, tracker: presence.Presence, path: Path) -> None:
        self.tracker = tracker
        self.path = path
        self._pending = False
        self._said: dict[tuple[str, str], float] = {}
        presence.write_file(path, tracker.snapshot())

    def changed(self, kind: str, what: Any) -> None:
        if kind == "refused":
            key = (what.claimed, what.why)
            if what.at - self._said.get(key, 0.0) >= 60.0:  # the same refusal once a minute
                self._said[key] = what.at
                claimed = repr(what.claimed) if what.claimed else "(no name)"
                print(f"refused a bot that says it is {claimed}: {what.why} (check the token it was given)",
                      file=sys.stderr, flush=True)
        else:
            state = self.tracker.bots[what]
            print(f"{what}: {state.state}", file=sys.stderr, flush=True)
        if not self._pending:
            self._pending = True
            asyncio.get_running_loop().call_later(self.WRITE_S, self._write)

    def _write(self) -> None:
        self._pending = False
        presence.write_file(self.path, self.tracker.snapshot())
