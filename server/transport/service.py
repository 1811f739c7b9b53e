"""The gRPC referee: the Play stream servicer, the token registry, and the server around them.

:class:`Arena` is what the rest of the project uses::

    arena = await Arena.start("127.0.0.1:0")        # port 0: an ephemeral port (arena.port)
    record = await arena.run_game(spec)             # GameSpec -> GameRecord (server/spec.py)
    await arena.shutdown(grace_s=10)

``run_game`` launches the seats' command bots (with CRAITS_SERVER, CRAITS_TOKEN and
CRAITS_BOT_NAME), plays built-in bots in-process, waits for the others to say
Hello with their token, plays the game (:mod:`server.game.referee`) and stops every
process it launched, whatever happens. Many games may run at once, each in the
caller's task; one stream may carry several games of the same token.

The servicer only translates: it checks Hello (protocol version, token), routes
each Answer to the seat whose decision it names (or refuses it), applies flood
control, and drains the stream's outbox. The standard health and reflection
services are registered so ``grpcurl`` works against the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from craits.v1 import referee_pb2 as pb
from craits.v1 import referee_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from server import __version__
from server.game.policies import make_policy
from server.game.referee import GameReferee
from server.game.seats import (
    LEFT_CLEANLY,
    Arrival,
    Outgoing,
    Seat,
    Session,
    StreamEnd,
    TokenBucket,
    is_close,
    serialize,
)
from server.logging import bound, get_logger
from server.spec import BotSpec, GameRecord, GameSpec, SeatStatus
from server.transport import frames
from server.transport import sandbox as sandboxes
from server.transport.launcher import DEFAULT_OUTPUT_LIMIT, LaunchedBot, LaunchError, make_room
from server.transport.pool import BotPool, PooledBot, RestartPolicy
from server.transport.presence import Presence
from server.transport.tls import ServerTLS, is_loopback, plain_text_warning

log = get_logger()
_perf = time.perf_counter

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Referee"].full_name
MAX_NAME = 64
"""Hello.name: at most this many characters (a longer name is refused, as protocol.md says)."""
MAX_ABOUT = 200
"""Hello.about: at most this many characters."""
MAX_MISSED = 16
"""Ends of games lost while away kept per token for its bot's return (the latest ones)."""


def _shown(text: str) -> str:
    """A bot's text as echoed in errors and logs: at most MAX_NAME characters."""
    return text if len(text) <= MAX_NAME else text[:MAX_NAME] + "..."



class ArenaError(Exception):
    """The referee cannot do what was asked (address in use, shutting down, bad spec)."""


class ArenaClosed(ArenaError):
    """The referee is shutting down and takes no new games."""


FRAMES_SWITCH = "CRAITS_FRAMES"
"""``CRAITS_FRAMES=0`` in the referee's environment: sandboxed bots are offered gRPC alone."""


@dataclass(frozen=True, slots=True)
class ArenaOptions:
    """Server-wide limits (per-game clocks are in each GameSpec)."""

    hello_timeout_s: float = 10.0
    """A stream that says nothing for this long after opening is closed."""
    max_message_bytes: int = 64 * 1024
    """Larger messages from a bot are refused by gRPC itself (RESOURCE_EXHAUSTED)."""
    max_streams_per_connection: int = 8
    """Streams open at once on one connection (HTTP/2's MAX_CONCURRENT_STREAMS; gRPC sets no
    limit of its own). A bot needs one; without a limit, a connection that opens streams
    and never says Hello holds about 8 KB of the referee's memory and a task per stream,
    as many as it likes. Further streams wait in the client until one ends."""
    flood_burst: float = 64.0
    flood_rate: float = 20.0
    """Messages per second a bot may send beyond its answers."""
    flood_per_request: float = 4.0
    """Messages allowed per DecisionRequest sent (the answer plus corrections)."""
    flood_close_after: int = 256
    """Messages dropped for flooding before the stream is closed."""
    bot_stop_grace_s: float = 2.0
    """How long a launched bot may take to exit on its own after its game."""
    bot_log_dir: Path | None = None
    """Where launched bots' stdout and stderr go (None: discarded)."""
    bot_output_limit_bytes: int = DEFAULT_OUTPUT_LIMIT
    """Bytes of a launched bot's output kept per game, or per process when bots are kept
    between games (the rest is discarded)."""
    sandbox: str = "bwrap"
    """"bwrap": every launched bot runs in a sandbox and connects through a Unix socket the
    referee listens on beside its TCP port (server.transport.sandbox); "none": unconfined."""
    limits: sandboxes.Limits = field(default_factory=sandboxes.Limits)
    """A sandboxed bot's limits (its output's is ``bot_output_limit_bytes``)."""
    frames: bool = field(default_factory=lambda: os.environ.get(FRAMES_SWITCH, "1") != "0")
    """Sandboxed bots are also offered the Play stream as frames on a second Unix socket
    (``server.transport.frames``; both kits use it, other bots gRPC). False (or
    ``CRAITS_FRAMES=0`` in the referee's environment): gRPC only."""


_UNFIT = {
    SeatStatus.STRUCK_OUT: "it was struck out",
    SeatStatus.DISCONNECTED: "it disconnected and did not come back",
    SeatStatus.LEFT: "it closed its stream mid-game",
    SeatStatus.NEVER_CONNECTED: "it never connected",
}
"""Why a kept process is not given another game, by its seat's status."""


class TokenEntry:
    """A token the referee accepts: its bot's name, the seats it plays, its current stream."""

    def __init__(self, token: str, name: str, persistent: bool, direct: bool = True) -> None:
        self.token = token
        self.name = name
        self.persistent = persistent
        self.direct = direct
        """False: a Hello reaches it only through :attr:`Arena.resolve_token` (a roster
        participant's entry, whose real token the referee never stores)."""
        self.seats: list[Seat] = []
        self.session: Session | None = None
        self.cut_short = False
        """Its last game ended aborted (e.g. a tournament interrupted): at shutdown its stream
        ends with SHUTTING_DOWN rather than OK."""
        self.missed: list[Outgoing] = []
        """What the bot missed while it was away: the ends of games that ended without it."""


CLEAN_EXIT_CHECK_S = 0.25
"""How long a stream whose requests ended is watched for a cancellation before it counts as a
clean exit: a killed bot's closed socket ends its requests and cancels its call, a moment apart
(a Node bot killed with SIGKILL read as one that left, and got no reconnect grace). A kit that
leaves waits for the referee to end the stream (docs/protocol.md), so it is not cancelled."""


class RefereeServicer(referee_pb2_grpc.RefereeServicer):  # type: ignore[misc]  # generated, untyped
    """Adapts the Play stream to the Arena: one reader task per stream, the handler writes."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena

    async def Play(
        self, request_iterator: AsyncIterator[pb.BotMessage], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.RefereeMessage]:
        arena = self.arena
        session = Session(context.peer(), arena.new_bucket())
        if arena.closing:
            session.send_error(pb.ERROR_CODE_SHUTTING_DOWN, "the referee is shutting down", fatal=True)
            session.close(StreamEnd.UNAVAILABLE, "the referee is shutting down")
        arena.sessions.add(session)
        reader = asyncio.create_task(arena.read_stream(session, request_iterator))

        def release(why: str) -> None:  # idempotent: also run by Session.cut_off
            reader.cancel()
            arena.sessions.discard(session)
            arena.session_ended(session, why)

        def cut() -> None:
            log.warning("stream_cut_off", bot=session.name or None, peer=session.peer, why=session.details)
            release(session.details)

        session.release = cut
        session.cancelled = context.cancelled
        why = "the bot closed the stream"
        try:
            while True:
                item = await session.outbox.get()
                if is_close(item):
                    why = session.details or "the referee closed the stream"
                    if session.half_closed:  # (a killed bot's requests may end just before its call is cancelled)
                        await asyncio.sleep(CLEAN_EXIT_CHECK_S)
                    break
                yield item
        except (asyncio.CancelledError, GeneratorExit):  # (gRPC closes the generator of a call gone)
            why = "the connection was lost or cancelled"
            session.half_closed = False  # (its requests' end was the connection's)
            raise
        finally:
            release(why)
        if session.status is not None:
            context.set_code(grpc.StatusCode[session.status.name])
            context.set_details(session.details)


class Arena:
    """The referee server: streams, tokens, open decisions and the games in progress."""

    def __init__(self, options: ArenaOptions | None = None) -> None:
        self.options = options or ArenaOptions()
        self.server: grpc.aio.Server | None = None
        self.health = HealthServicer()
        self.port = 0
        self.host = "127.0.0.1"
        self.tokens: dict[str, TokenEntry] = {}
        self.open_decisions: dict[int, Seat] = {}
        self.games: dict[str, GameReferee] = {}
        self.sessions: set[Session] = set()
        self.closing = False
        self.pool: BotPool | None = None
        self._launch_logs: dict[str, list[Path]] = {}
        """Each bot's logs of its launches for one game (oldest first), for its output budget."""
        """Launched bots kept between games (see :meth:`keep_bots`); None: a fresh process per game."""
        self._decision_ids = itertools.count(1)
        self._game_done: dict[str, asyncio.Event] = {}
        self._closed = asyncio.Event()
        self.resolve_token: Callable[[str], tuple[str, str] | None] | None = None
        """For a Hello whose token is not registered: (the key of the indirect entry it opens,
        the bot's name), or None (a roster's tokens, checked against their hashes:
        ``participants.entrants``). The entry is registered the first time."""
        self.on_waiting_bot: Callable[[str, str], None] | None = None
        """Called with (bot name, peer) when a bot connects with a token that has no game yet
        (``craits serve`` says so on standard error)."""
        self.sandbox: sandboxes.Sandbox | None = None
        """Where launched bots run (None: unsandboxed)."""
        self.tls: ServerTLS | None = None
        """The certificate the TCP port is served with (None: plain text)."""
        self.local_socket: str | None = None
        """The Unix socket launched bots connect through (sandboxed ones, and every one under TLS)."""
        self.presence = Presence()
        """The watched remote bots' comings and goings and the refused Hellos (for a board)."""
        self._frames_server: asyncio.AbstractServer | None = None
        self.framed_streams = 0
        """Streams served as frames on the sandbox's frames socket (the rest were gRPC's)."""

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def start(cls, address: str = "127.0.0.1:50051", options: ArenaOptions | None = None,
                    tls: ServerTLS | None = None) -> Arena:
        """Bind ``address`` (port 0 picks a free port) and start serving, over TLS with ``tls``."""
        arena = cls(options)
        arena.tls = tls
        await arena._start(address)
        return arena

    async def _start(self, address: str) -> None:
        host, _, port_text = address.rpartition(":")
        if not host or not port_text.isdigit():
            raise ArenaError(f"address {address!r} is not HOST:PORT (e.g. 127.0.0.1:50051, or port 0 for any free port)")
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", self.options.max_message_bytes),
                ("grpc.max_concurrent_streams", self.options.max_streams_per_connection),
                ("grpc.so_reuseport", 0),
                ("grpc.keepalive_time_ms", 20_000),
                ("grpc.keepalive_timeout_ms", 10_000),
                ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
            ]
        )
        # Registered by hand rather than with add_RefereeServicer_to_server: the same method,
        # with a serializer that lets the referee send pre-framed bytes (seats.framed).
        servicer = RefereeServicer(self)
        handlers = {
            "Play": grpc.stream_stream_rpc_method_handler(
                servicer.Play, request_deserializer=pb.BotMessage.FromString, response_serializer=serialize
            )
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
        server.add_registered_method_handlers(SERVICE_NAME, handlers)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflection.enable_server_reflection(
            [SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME],
            server,
        )
        try:
            port = (server.add_secure_port(address, self.tls.credentials()) if self.tls is not None
                    else server.add_insecure_port(address))
        except RuntimeError as err:
            raise ArenaError(f"cannot listen on {address}: {err} (is another referee running there?)") from None
        if port == 0:
            raise ArenaError(f"cannot listen on {address} (is another referee running there?)")
        socket_path = None
        # Sandboxed bots have no network: they come through a socket. Under TLS unsandboxed
        # ones do too: a certificate names the hosts bots reach, not necessarily this one's loopback.
        if self.options.sandbox == "bwrap" or self.tls is not None:
            socket_path = sandboxes.socket_path()
            server.add_insecure_port(f"unix:{socket_path}")
        await server.start()
        if socket_path is not None:
            sandboxes.open_socket(socket_path)
            self.local_socket = socket_path
        if socket_path is not None and self.options.sandbox == "bwrap":
            frames_path = None
            if self.options.frames:
                frames_path = sandboxes.frames_socket_path(socket_path)
                loop = asyncio.get_running_loop()
                self._frames_server = await loop.create_unix_server(lambda: frames.Stream(self), frames_path)
                sandboxes.open_socket(frames_path)
            self.sandbox = sandboxes.Sandbox(socket_path, self.options.limits, frames_path)
        self.server = server
        self.port = port
        self.host = host.strip("[]")
        await self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        await self.health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        log.info("referee_listening", address=f"{self.host}:{port}", version=__version__, tls=self.tls is not None)

    @property
    def target(self) -> str:
        """Where a bot on this machine connects (a wildcard bind is reached on loopback)."""
        host = self.host
        if host in ("0.0.0.0", "", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"{host}:{self.port}"

    async def shutdown(self, grace_s: float = 10.0) -> None:
        """Stop taking games, let games in flight finish for ``grace_s``, abort (and record) the
        rest, close every stream, stop the server. Safe to call more than once."""
        if self.closing:
            await self._closed.wait()
            return
        self.closing = True
        await self.health.enter_graceful_shutdown()
        pending = [done.wait() for done in self._game_done.values()]
        log.info("shutdown_started", games_in_flight=len(pending), grace_s=grace_s)
        if pending:
            await asyncio.wait([asyncio.ensure_future(p) for p in pending], timeout=grace_s)
        unfinished = list(self.games.values())
        for game in unfinished:
            game.abort("the referee is shutting down", pb.ERROR_CODE_SHUTTING_DOWN)
        waits = [asyncio.ensure_future(done.wait()) for done in self._game_done.values()]
        if waits:
            _, late = await asyncio.wait(waits, timeout=self.options.bot_stop_grace_s + 5.0)
            for w in late:
                w.cancel()
        # A stream whose games were all played out ends with OK, as a launched bot's does when
        # its game is over: the referee has nothing more for it. SHUTTING_DOWN is for a stream
        # whose game was cut short, or that had not said Hello yet.
        cut_short = {seat.token for game in unfinished for seat in game.seats if not seat.builtin}
        cut_short |= {entry.token for entry in self.tokens.values() if entry.cut_short}
        if self.pool is not None:
            await self.pool.close()  # their streams end with OK: the bots exit on their own
        for session in list(self.sessions):
            if session.closed:
                continue
            if session.token and session.token not in cut_short:
                session.close()
            else:
                session.send_error(pb.ERROR_CODE_SHUTTING_DOWN, "the referee is shutting down", fatal=True)
                session.close(StreamEnd.UNAVAILABLE, "the referee is shutting down")
        if self._frames_server is not None:  # (its streams' sessions are closed: each has sent its END frame)
            self._frames_server.close()
        if self.server is not None:
            await self.server.stop(1.0)
        if self.local_socket is not None:
            sandboxes.remove_socket(self.local_socket)
        log.info("shutdown_finished", aborted_games=len(unfinished))
        self._closed.set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    # ------------------------------------------------------------------ the hub games use

    def next_decision_id(self) -> int:
        return next(self._decision_ids)

    def new_bucket(self) -> TokenBucket:
        o = self.options
        return TokenBucket(o.flood_burst, o.flood_rate, o.flood_per_request)

    def connected_bots(self) -> set[str]:
        """The names of the bots whose stream is open now (remote bots online, launched bots running)."""
        return {entry.name for entry in self.tokens.values() if entry.session is not None}

    def register_token(self, token: str, name: str, *, direct: bool = True) -> None:
        """Accept ``token`` from now on, even between games (a remote bot that waits for its games);
        ``direct`` False: only a token :attr:`resolve_token` maps to it opens it."""
        entry = self.tokens.get(token)
        if entry is None:
            self.tokens[token] = TokenEntry(token, name, persistent=True, direct=direct)
        else:
            entry.persistent = True

    def unregister_token(self, token: str) -> None:
        entry = self.tokens.get(token)
        if entry is None:
            return
        entry.persistent = False
        if not entry.seats:
            self._drop_token(entry)

    def cut_off(self, token: str, why: str) -> bool:
        """End the stream of ``token``'s bot now, for ``why`` (its token was revoked): a fatal
        UNAUTHENTICATED error, the board shows it away; its seats are disconnected as for any
        stream that ends. False when no stream of it is open."""
        entry = self.tokens.get(token)
        session = entry.session if entry is not None else None
        if entry is None or session is None or session.closed:
            return False
        log.warning("stream_cut_off", bot=entry.name, peer=session.peer, why=why)
        self.presence.revoked(entry.name)
        session.send_error(pb.ERROR_CODE_UNAUTHENTICATED, why, fatal=True)
        session.close(StreamEnd.UNAUTHENTICATED, why)
        return True

    def _drop_token(self, entry: TokenEntry, *, cut_short: bool = False) -> None:
        self.tokens.pop(entry.token, None)
        session = entry.session
        if session is None:
            return
        if cut_short:  # its game was aborted because the referee is stopping
            session.send_error(pb.ERROR_CODE_SHUTTING_DOWN, "the referee is shutting down", fatal=True)
            session.close(StreamEnd.UNAVAILABLE, "the referee is shutting down")
        else:
            session.close()  # the games it was scheduled for are over: end the stream with OK

    # ------------------------------------------------------------------ games

    async def run_game(self, spec: GameSpec, referee: Callable[..., GameReferee] = GameReferee) -> GameRecord:
        """Play one game and return its record (the tournament scheduler's entry point).

        Raises ArenaClosed when shutting down, ArenaError for a spec that cannot be
        played (duplicate game id, unknown built-in bot, unwritable replay path);
        nothing a bot does raises. ``referee`` makes the game's referee from the spec, the
        seats and this hub (``craits replay rerun`` gives one that follows a recorded game).
        """
        if self.closing:
            raise ArenaClosed(f"game {spec.game_id}: the referee is shutting down")
        if spec.game_id in self.games:
            raise ArenaError(f"game {spec.game_id} is already being played")
        seats: list[Seat] = []
        for index, bot in enumerate(spec.seats):
            policy = None
            if bot.builtin:
                try:
                    policy = make_policy(bot.builtin, seed=spec.seed * 1_000_003 + index)
                except ValueError as err:
                    raise ArenaError(f"game {spec.game_id}, seat {index}: {err}") from None
            elif not bot.token and not bot.command:
                raise ArenaError(f"game {spec.game_id}, seat {index} ({bot.name}): a remote bot needs a token")
            seat = Seat(index, bot, bank_s=spec.clocks.bank_s, policy=policy)
            if bot.command:
                # A launched process gets a token of its own: a tournament gives a bot one token
                # for all its games, and two games at once must not share a stream.
                seat.token = secrets.token_urlsafe(24)
            seats.append(seat)
        try:
            game = referee(spec, seats, self)
            replay = game.open_replay()
        except (ValueError, OSError) as err:
            raise ArenaError(f"game {spec.game_id}: {err}") from None
        done = asyncio.Event()
        self.games[spec.game_id] = game
        self._game_done[spec.game_id] = done
        launched: list[LaunchedBot] = []
        leased: list[tuple[Seat, PooledBot]] = []
        watchers: list[asyncio.Task[None]] = []
        playing = False
        finished: GameRecord | None = None
        try:
            with bound(game=spec.game_id, **({"tournament": spec.tournament} if spec.tournament else {})):
                if self.pool is not None:  # before the tokens are seated: a kept process has its own
                    for seat in seats:
                        if seat.remote and seat.bot.command:
                            pooled = await self._lease(spec, seat)
                            if pooled is not None:
                                leased.append((seat, pooled))
                                watchers.append(asyncio.create_task(self._watch_kept(spec, game, seat, leased)))
                for seat in seats:
                    if seat.remote:
                        self._seat_token(seat)
                for seat in seats:
                    if seat.remote and seat.bot.command and self.pool is None:
                        process = await self._launch(spec, seat)
                        if process is not None:
                            launched.append(process)
                            watchers.append(asyncio.create_task(self._watch(game, seat, process)))
                playing = True  # from here on the game finishes or drops its own replay
                finished = await game.run(replay)
                return finished
        except BaseException:
            if replay is not None and not playing:
                replay.abort()
            raise
        finally:
            for task in watchers:
                task.cancel()
            self._release_seats(seats)
            self._give_back(leased, finished)
            try:
                if launched:
                    await asyncio.gather(*(p.stop(self.options.bot_stop_grace_s) for p in launched))
            finally:
                for process in launched:
                    process.kill_now()
                self.games.pop(spec.game_id, None)
                self._game_done.pop(spec.game_id, None)
                done.set()

    def _seat_token(self, seat: Seat) -> None:
        entry = self.tokens.get(seat.token)
        if entry is None:
            entry = self.tokens[seat.token] = TokenEntry(seat.token, seat.name, persistent=False)
        entry.seats.append(seat)
        if entry.session is not None and not entry.session.closed:
            seat.game.seat_connected(seat, entry.session)

    def _release_seats(self, seats: list[Seat]) -> None:
        for seat in seats:
            if seat.builtin:
                continue
            entry = self.tokens.get(seat.token)
            if entry is None:
                continue
            with contextlib.suppress(ValueError):
                entry.seats.remove(seat)
            game = seat.game
            entry.cut_short = bool(game.aborted)
            if entry.persistent and seat.connected_once and seat.session is None and game.over:
                # It played, left, and was not back before the game ended: tell it on its return.
                entry.missed = [*entry.missed, *game.lost_messages()][-2 * MAX_MISSED:]
            if not entry.seats and not entry.persistent:
                self._drop_token(entry, cut_short=game.abort_code == pb.ERROR_CODE_SHUTTING_DOWN)

    async def _launch(self, spec: GameSpec, seat: Seat) -> LaunchedBot | None:
        bot = seat.bot
        assert bot.command is not None
        out = None
        if self.options.bot_log_dir is not None:
            out = self.options.bot_log_dir / f"{spec.game_id}-seat{seat.index}.log"
            logs = self._launch_logs.setdefault(bot.name, [])
            if note := make_room(logs, self.options.limits.output_budget, self.options.bot_output_limit_bytes):
                with contextlib.suppress(OSError):
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_text(note + "\n", encoding="utf-8")
            logs[:] = [*(p for p in logs if p.exists()), out]
        try:
            launched = await self._start_bot(bot, seat.token, out)
        except LaunchError as err:
            log.warning("bot_not_launched", seat=seat.index, bot=bot.name, error=str(err))
            seat.game.seat_process_exited(seat, None, why=f"could not be started: {err}")
            return None
        seat.process = launched
        seat.instances.append(secrets.token_hex(6))  # (a process of its own, for this game only)
        return launched

    # ------------------------------------------------------------------ bots kept between games

    def keep_bots(self, restart: RestartPolicy | None = None) -> None:
        """Keep launched bots between games from now on (:mod:`server.transport.pool`), unless
        ``restart.every_game``: a tournament's referee. Their processes end at :meth:`shutdown`."""
        restart = restart or RestartPolicy()
        if restart.every_game or self.pool is not None:
            return
        o = self.options
        self.pool = BotPool(
            start=self._start_bot, register=self.register_token, unregister=self.unregister_token,
            session_of=self._session_of, policy=restart, log_dir=o.bot_log_dir, stop_grace_s=o.bot_stop_grace_s,
            output_budget=o.limits.output_budget, output_limit=o.bot_output_limit_bytes,
        )

    def _session_of(self, token: str) -> Session | None:
        entry = self.tokens.get(token)
        return entry.session if entry is not None else None

    async def _lease(self, spec: GameSpec, seat: Seat) -> PooledBot | None:
        """A kept process of the seat's bot for this game (launched if none is idle)."""
        assert self.pool is not None
        try:
            pooled = await self.pool.acquire(seat.bot, spec.game_id, deal=spec.seed)
        except LaunchError as err:
            log.warning("bot_not_launched", seat=seat.index, bot=seat.bot.name, error=str(err))
            seat.game.seat_process_exited(seat, None, why=f"could not be started: {err}")
            return None
        seat.token = pooled.token
        seat.process = pooled.process
        seat.instances.append(pooled.instance)
        pooled.process.new_game(spec.game_id)  # a kept process's limits per game (CPU seconds) start afresh
        return pooled

    async def _watch_kept(self, spec: GameSpec, game: GameReferee, seat: Seat,
                          leased: list[tuple[Seat, PooledBot]]) -> None:
        """A kept process's watcher in a game. One that exits, or ends its stream, before it
        answered anything in this game most likely ended with its previous game (a bot written
        for one game per process or per stream): it is replaced at once by a fresh process,
        which takes the seat over as a reconnect would (within the reconnect grace), so the
        bot loses no game for it. A process started for this game that does the same crashed:
        it is not replaced (a bot that dies at start would be relaunched until the connect
        timeout, hundreds of times a game), and the seat is treated as a launched bot's exit."""
        assert self.pool is not None
        index = next(i for i, (s, _) in enumerate(leased) if s is seat)
        while True:
            pooled = leased[index][1]
            exited = asyncio.ensure_future(pooled.process.exited())
            lost = asyncio.ensure_future(pooled.lost.wait())
            try:
                await asyncio.wait((exited, lost), return_when=asyncio.FIRST_COMPLETED)
            finally:
                lost.cancel()
                exited.cancel()
            code = pooled.process.returncode
            answered = seat.think_s + seat.transport_s > 0
            fresh = pooled.games <= 1  # started for this game: no previous game it could have ended with
            if answered or fresh or game.over or self.closing:
                if code is None:
                    pooled.lost.clear()  # a stream lost mid-game: the bot may reconnect (the game decides)
                    await pooled.process.exited()
                why = pooled.process.verdict()
                if why:
                    log.warning("bot_limit_hit", seat=seat.index, bot=seat.name, why=why)
                game.seat_process_exited(seat, pooled.process.returncode, why=why)
                return
            why = f"it exited (code {code})" if code is not None else "it closed its stream"
            log.warning("bot_replaced", bot=pooled.name, pid=pooled.pid, game=spec.game_id,
                        why=f"{why} as its game began, before answering anything",
                        effect="a fresh process takes its seat")
            self._unseat_token(seat)
            self.pool.release(pooled, fit=False, why=why)
            fresh = await self._lease(spec, seat)
            if fresh is None:
                return  # could not be started: the seat says so
            leased[index] = (seat, fresh)
            self._seat_token(seat)

    def _unseat_token(self, seat: Seat) -> None:
        entry = self.tokens.get(seat.token)
        if entry is not None:
            with contextlib.suppress(ValueError):
                entry.seats.remove(seat)

    def _give_back(self, leased: list[tuple[Seat, PooledBot]], record: GameRecord | None) -> None:
        """Return a game's kept processes to the pool; one whose game went wrong for it is stopped."""
        if self.pool is None:
            return
        for seat, pooled in leased:
            if record is None:
                why = "its game did not finish"
            elif record.aborted:
                why = "its game was aborted"
            elif seat.status is not SeatStatus.OK:
                why = _UNFIT.get(seat.status, str(seat.status))
            elif not pooled.process.alive:
                why = f"it exited (code {pooled.process.returncode})"
            else:
                why = ""
            if record is None:  # cancelled or failed: no waiting for it
                self.pool.kill_now(pooled)
            else:
                self.pool.release(pooled, fit=not why, why=why)

    async def _start_bot(self, bot: BotSpec, token: str, output_path: Path | None) -> LaunchedBot:
        """Start a launched bot's process, for one game or kept between games: the one place
        the referee starts a bot (raises LaunchError)."""
        assert bot.command is not None
        if self.sandbox is not None and (why := sandboxes.problem()) is not None:
            raise LaunchError(f"bot {bot.name}: cannot sandbox it: {why}")
        server = f"unix:{self.local_socket}" if self.local_socket else self.target
        return await LaunchedBot.start(
            bot.command, server=server, token=token, name=bot.name, cwd=bot.cwd, output_path=output_path,
            output_limit=self.options.bot_output_limit_bytes, sandbox=self.sandbox, allow_read=bot.allow_read,
        )

    async def _watch(self, game: GameReferee, seat: Seat, bot: LaunchedBot) -> None:
        code = await bot.exited()
        why = bot.verdict()
        if why:
            log.warning("bot_limit_hit", seat=seat.index, bot=seat.name, why=why)
        game.seat_process_exited(seat, code, why=why)

    # ------------------------------------------------------------------ streams

    async def read_stream(self, session: Session, messages: AsyncIterator[pb.BotMessage]) -> None:
        """Read one stream: Hello first, then answers; refuse everything else. Never raises."""
        try:
            try:
                first = await asyncio.wait_for(anext(messages), self.options.hello_timeout_s)
            except TimeoutError:
                self.no_hello(session)
                return
            except StopAsyncIteration:
                session.close()
                return
            resolved = await self._resolve(session, first)
            if resolved is False or not self.hello(session, first, resolved or None):
                return
            async for message in messages:
                if not self.read_message(session, message, _perf()):
                    return
            # The bot closed its side itself (a clean exit), unless the call was cancelled (a crash, a drop).
            session.half_closed = session.cancelled is None or not session.cancelled()
            session.close(None, LEFT_CLEANLY)  # it can answer nothing more
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a broken stream (reset, undecodable bytes, oversize message)
            log.info("stream_broken", peer=session.peer, bot=session.name or None, error=f"{type(err).__name__}: {err}")
            session.close(StreamEnd.INVALID_ARGUMENT, f"stream error: {type(err).__name__}")

    def no_hello(self, session: Session) -> None:
        """End a stream that said nothing within the Hello timeout."""
        wait = self.options.hello_timeout_s
        session.send_error(pb.ERROR_CODE_MALFORMED, f"no Hello within {wait:g} s of opening the stream", fatal=True)
        session.close(StreamEnd.DEADLINE_EXCEEDED, f"no Hello within {wait:g} s")
        log.info("stream_refused", peer=session.peer, why="no hello")
        self._refused(session, "", f"it sent no Hello within {wait:g} s of opening")

    def read_message(self, session: Session, message: pb.BotMessage, at: float) -> bool:
        """A message after the Hello, read at ``at``; False once nothing more it sends counts."""
        if session.closed:  # taken over by a newer stream, or cut off: nothing it sends counts
            return False
        if not session.bucket.take():
            return not self._flood(session)
        which = message.WhichOneof("message")
        if which == "answer":
            self._answer(session, message.answer, at)
        elif which == "hello":
            session.send_error(pb.ERROR_CODE_MALFORMED, "Hello is only the first message of a stream")
            self._note(session, "sent a second Hello (refused)")
        else:
            session.send_error(pb.ERROR_CODE_MALFORMED, "empty message: send an Answer (or Hello first)")
            self._note(session, "sent an empty message (refused)")
        return True

    async def _resolve(self, session: Session, message: pb.BotMessage) -> tuple[str, str] | bool | None:
        """What :attr:`resolve_token` makes of a Hello's token that only it can open (a roster
        participant's), asked in a thread: it hashes the token and reads the roster, whose
        database may be far away or restarting, and the games on this event loop must not wait
        for it. False when it failed: the stream is closed UNAVAILABLE, which a kit tries again."""
        token = message.hello.token if message.WhichOneof("message") == "hello" else ""
        entry = self.tokens.get(token)
        if not token or self.resolve_token is None or (entry is not None and entry.direct):
            return None
        try:
            return await asyncio.to_thread(self.resolve_token, token)
        except Exception as err:  # (the roster's database unreachable past its wait, say)
            text = "the referee cannot check this token now (it cannot read its roster): try again in a moment"
            log.warning("token_unchecked", peer=session.peer, bot=_shown(message.hello.name), error=str(err))
            session.close(StreamEnd.UNAVAILABLE, text)
            return False

    def hello(self, session: Session, message: pb.BotMessage, resolved: tuple[str, str] | None = None) -> bool:
        """The first message of a stream: False if it was refused (the stream is closed).
        ``resolved``: what :meth:`_resolve` made of its token (the Unix socket's launched bots
        have tokens of their own, and are not resolved)."""
        if message.WhichOneof("message") != "hello":
            text = "the first message of a stream must be Hello"
            session.send_error(pb.ERROR_CODE_MALFORMED, text, fatal=True)
            session.close(StreamEnd.INVALID_ARGUMENT, text)
            self._refused(session, "", f"its first message was not Hello ({message.WhichOneof('message') or 'empty'})")
            return False
        hello = message.hello
        if hello.protocol_version != pb.PROTOCOL_VERSION_CURRENT:
            text = (
                f"protocol version {hello.protocol_version} is not supported: this referee speaks version "
                f"{pb.PROTOCOL_VERSION_CURRENT} (craits.v1); update the bot's generated code"
            )
            session.send_error(pb.ERROR_CODE_PROTOCOL_VERSION, text, fatal=True)
            session.close(StreamEnd.FAILED_PRECONDITION, text)
            log.info("stream_refused", peer=session.peer, why="protocol version", version=hello.protocol_version)
            self._refused(session, hello.token, f"its Hello has protocol version {hello.protocol_version}, not 1")
            return False
        too_long = [f"{field} has {len(text)} characters (at most {limit})"
                    for field, text, limit in (("name", hello.name, MAX_NAME), ("about", hello.about, MAX_ABOUT))
                    if len(text) > limit]
        if too_long:
            text = f"Hello refused: {' and '.join(too_long)}"
            session.send_error(pb.ERROR_CODE_MALFORMED, text, fatal=True)
            session.close(StreamEnd.INVALID_ARGUMENT, text)
            log.info("stream_refused", peer=session.peer, why="hello too long", bot=_shown(hello.name))
            self._refused(session, hello.token, text)
            return False
        entry = self.tokens.get(hello.token)
        if entry is not None and not entry.direct:
            entry = None
        if entry is None and resolved is not None:
            alias, name = resolved
            self.register_token(alias, name, direct=False)
            self.presence.watch((name,))  # (a board shows a participant's own bot here or away)
            entry = self.tokens[alias]
        if entry is None:
            # An empty token is a bot started without one, not a wrong one: say which.
            text = "unknown token" if hello.token else "no token: the Hello's token is empty"
            session.send_error(pb.ERROR_CODE_UNAUTHENTICATED, text, fatal=True)
            session.close(StreamEnd.UNAUTHENTICATED, text)
            log.warning("stream_refused", peer=session.peer, why=text, bot=_shown(hello.name))
            self._refused(session, "", "its Hello had an unknown token" if hello.token else "its Hello had no token")
            self.presence.refuse(hello.name, text)
            return False
        if self.closing:
            session.send_error(pb.ERROR_CODE_SHUTTING_DOWN, "the referee is shutting down", fatal=True)
            session.close(StreamEnd.UNAVAILABLE, "the referee is shutting down")
            return False
        session.token = entry.token
        session.name = entry.name
        old = entry.session
        entry.session = session
        if old is not None and not old.closed:
            old.send_error(pb.ERROR_CODE_TAKEN_OVER, "another stream with this token took over", fatal=True)
            old.close(StreamEnd.ABORTED, "another stream with this token took over")
        resumed = any(seat.game.started and not seat.game.over for seat in entry.seats)
        session.send(
            pb.RefereeMessage(
                welcome=pb.Welcome(
                    protocol_version=pb.PROTOCOL_VERSION_CURRENT,
                    server_version=__version__,
                    bot_name=entry.name,
                    resumed=resumed,
                )
            )
        )
        log.info("bot_connected", bot=entry.name, says=hello.name, about=hello.about,
                 peer=session.peer, resumed=resumed, games=[s.game.game_id for s in entry.seats])
        self.presence.connected(entry.name)
        missed, entry.missed = entry.missed, []
        for item in missed:
            session.send(item)
        for seat in list(entry.seats):
            seat.game.seat_connected(seat, session)
        if not entry.seats:
            log.info("bot_waiting", bot=entry.name, peer=session.peer)
            if self.on_waiting_bot is not None:
                self.on_waiting_bot(entry.name, session.peer)
        return True

    def _refused(self, session: Session, token: str, why: str) -> None:
        """Keep a refused Hello for the report of the seats still waiting for their bot: the
        seats of ``token`` if it is one of ours, else every waiting seat (a stream refused
        before it named a token may well have been theirs)."""
        entry = self.tokens.get(token) if token else None
        entries = [entry] if entry is not None else list(self.tokens.values())
        for each in entries:
            for seat in each.seats:
                if not seat.connected_once:
                    if entry is not None:
                        seat.refused = why
                    else:
                        seat.refused_nearby = f"a stream from {session.peer} was refused: {why}"

    def session_ended(self, session: Session, why: str) -> None:
        """A stream is over: its seats are disconnected (their games decide what that means)."""
        entry = self.tokens.get(session.token) if session.token else None
        if entry is None or entry.session is not session:
            return
        entry.session = None
        self.presence.left(entry.name, clean=session.half_closed, shutdown=self.closing)
        for seat in list(entry.seats):
            seat.game.seat_disconnected(seat, session, why, clean=session.half_closed)
        if self.pool is not None:
            self.pool.stream_ended(entry.token)

    def _answer(self, session: Session, answer: pb.Answer, at: float) -> None:
        seat = self.open_decisions.get(answer.decision_id)
        if seat is not None and seat.token == session.token and seat.game.game_id == answer.game_id:
            seat.mailbox.put(Arrival(answer, at))
            return
        entry = self.tokens.get(session.token)
        mine = [s for s in entry.seats if s.game.game_id == answer.game_id] if entry is not None else []
        if not mine:
            shown = _shown(answer.game_id)  # the bot's text, echoed: kept short
            session.send_error(
                pb.ERROR_CODE_STALE_DECISION,
                f"you sit in no game {shown!r} in progress: answer with the game_id of the request",
                game_id=shown,
                decision_id=answer.decision_id,
            )
            log.info("answer_refused", bot=session.name, game=shown, decision=answer.decision_id, why="no such game")
            return
        own = next((s for s in mine if answer.decision_id in s.asked), mine[0])
        game = own.game
        to_act = next((s for s in game.seats if s.open_decision), None)
        number = own.asked.get(answer.decision_id)
        named = f"decision {number} (id {answer.decision_id})" if number else f"decision id {answer.decision_id}"
        if number is None and to_act is not None and to_act.token != session.token:
            code = pb.ERROR_CODE_NOT_YOUR_TURN
            why = f"answer to {named} refused: it is not your turn (seat {to_act.index} is to act)"
        else:
            code = pb.ERROR_CODE_STALE_DECISION
            why = f"answer to {named} refused: that decision is not open (answered, timed out or unknown)"
        game.stale_answer(own, session, answer, code, why)

    def _flood(self, session: Session) -> bool:
        """Drop a message for flooding; return True when the stream has been closed for it."""
        session.dropped += 1
        limit = self.options.flood_close_after
        if session.dropped >= limit:
            text = f"too many messages: {session.dropped} dropped; closing the stream"
            session.send_error(pb.ERROR_CODE_FLOOD, text, fatal=True)
            session.close(StreamEnd.RESOURCE_EXHAUSTED, text)
            self._note(session, f"flood: stream closed after {session.dropped} dropped messages")
            log.warning("stream_closed_for_flood", bot=session.name, peer=session.peer, dropped=session.dropped)
            return True
        now = time.monotonic()
        if now - session.flood_warned_at >= 1.0:  # one warning a second at most: no echo flood
            session.flood_warned_at = now
            session.send_error(
                pb.ERROR_CODE_FLOOD,
                f"too many messages: this one and the next ones are dropped until you slow down "
                f"(the stream is closed after {limit} dropped)",
            )
            self._note(session, "flood: messages dropped")
            log.warning("flood", bot=session.name, peer=session.peer, dropped=session.dropped)
        return False

    def _note(self, session: Session, what: str) -> None:
        """Record a stream-level fault on every seat the token plays."""
        entry = self.tokens.get(session.token)
        if entry is None:
            return
        for seat in entry.seats:
            seat.note(what)


def listening_text(arena: Arena, remote: Sequence[str]) -> str:
    """Where bots that connect on their own find the referee, for the one who tells them."""
    host, port = arena.host, arena.port
    if host in ("0.0.0.0", "", "::"):
        where = (f"{host or '0.0.0.0'}:{port}, every network interface: bots connect to this machine's address, "
                 f"e.g. {socket.gethostname()}:{port}")
    else:
        where = arena.target + (" (this machine only)" if is_loopback(host) else "")
    if arena.tls is not None:
        return (f"referee listening on {where}, over TLS; {', '.join(remote)} connect there with their tokens "
                f"(CRAITS_SERVER=grpcs://HOST:PORT, CRAITS_TOKEN{', CRAITS_TLS_CA' if arena.tls.self_signed else ''})")
    return f"referee listening on {where}; {', '.join(remote)} connect there with their tokens (CRAITS_SERVER, CRAITS_TOKEN)"


def security_notes(arena: Arena) -> list[str]:
    """What to say at start about the bot port's encryption: the certificate bots check (and
    where it is), or the risk of plain text beyond this machine; nothing for plain loopback."""
    host = arena.host
    shown = socket.gethostname() if host in ("0.0.0.0", "", "::") else f"[{host}]" if ":" in host else host
    if arena.tls is not None:
        return [arena.tls.announcement(f"{shown}:{arena.port}")]
    warning = plain_text_warning(host, arena.port)
    return [warning] if warning else []
