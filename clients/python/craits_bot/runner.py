"""Connect a Bot to a referee and play until the referee is done with it.

``run(bot)`` is all a bot script needs: it reads ``--server/--token/--name`` (or
the environment variables CRAITS_SERVER, CRAITS_TOKEN, CRAITS_BOT_NAME; over TLS,
``CRAITS_SERVER=grpcs://HOST:PORT`` and CRAITS_TLS_CA for a self-signed certificate), says
Hello, answers every DecisionRequest, logs the referee's errors one line each,
reconnects with backoff when the connection drops, and exits with a code that
says how it ended (see :class:`ExitCode`). SIGTERM and SIGINT close the stream
cleanly.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import enum
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from craits import frames
from craits.v1 import referee_pb2 as pb

from .bot import Bot, Dispatcher

if TYPE_CHECKING:
    import asyncio

    import grpc

log = logging.getLogger("craits_bot")

ENV_SERVER = "CRAITS_SERVER"
ENV_TOKEN = "CRAITS_TOKEN"
ENV_NAME = "CRAITS_BOT_NAME"
ENV_TLS = "CRAITS_TLS"
ENV_TLS_CA = "CRAITS_TLS_CA"
TLS_SCHEME = "grpcs://"
DEFAULT_SERVER = "127.0.0.1:50051"
DEFAULT_RECONNECT_S = 30.0


class ExitCode(enum.IntEnum):
    """How a bot process ends; the same codes as the JavaScript bot."""

    OK = 0
    """The referee closed the stream normally (its games are over), or SIGTERM."""
    FAILED = 1
    """The referee ended the stream with an unexpected status."""
    USAGE = 2
    """Bad command-line arguments, or a bot that cannot play (a class, no ``choose``)."""
    REFUSED = 3
    """The referee refused this bot: unknown token or unsupported protocol version."""
    UNREACHABLE = 4
    """No referee answered (or it stayed gone) for the whole reconnect window."""
    INTERRUPTED = 130
    """Ctrl-C."""


class StatusCode(enum.Enum):
    """How the referee ended a stream: gRPC's status codes, by the same names (the frames
    path's END frame carries the name), kept here so a bot on frames never imports grpc
    (with asyncio, a third of its start-up)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16

    @classmethod
    def named(cls, name: str) -> StatusCode:
        """The status of that name; UNKNOWN for a name gRPC does not have."""
        return cls.__members__.get(name, cls.UNKNOWN)


# Statuses after which the same token may simply connect again. RESOURCE_EXHAUSTED is not
# one: the referee ends a stream with it for a flood or an oversize message, which
# reconnecting would only repeat (a bot cut off for not reading gets UNAVAILABLE).
_RETRYABLE = frozenset(
    {
        StatusCode.UNAVAILABLE,
        StatusCode.INTERNAL,
        StatusCode.UNKNOWN,
        StatusCode.ABORTED,
        StatusCode.CANCELLED,
    }
)
# Statuses that trying again cannot fix.
_REFUSED = frozenset(
    {
        StatusCode.UNAUTHENTICATED,
        StatusCode.FAILED_PRECONDITION,
        StatusCode.PERMISSION_DENIED,
        StatusCode.INVALID_ARGUMENT,
    }
)
_REFUSING_ERRORS = frozenset({pb.ERROR_CODE_UNAUTHENTICATED, pb.ERROR_CODE_PROTOCOL_VERSION})
_HINTS = {
    StatusCode.UNAUTHENTICATED: f"check the token (--token or {ENV_TOKEN})",
    StatusCode.FAILED_PRECONDITION: "this kit speaks protocol version 1; update it or the referee",
}
LEAVE_S = 5.0
"""How long a stopping bot waits for the referee to end its half-closed stream (it takes
milliseconds; a referee on a busy machine may take seconds, and a bot that cancels first is
read as a lost connection rather than a clean leave)."""
_FIRST_DELAY_S = 0.2
_MAX_DELAY_S = 5.0


def connection(server: str, *, tls: bool = False, ca_file: str | None = None) -> tuple[str, Any]:
    """Where to dial and, over TLS, the credentials that check the referee's certificate (None:
    plain text). ``grpcs://HOST:PORT``, ``tls`` or a ``ca_file`` (the organizer's self-signed
    certificate, else the system's authorities) ask for TLS; then there is no plain-text
    fall-back, ever: a token sent in clear can be read by anyone on the network. Raises
    ValueError for a CA file that cannot be read."""
    target = server.removeprefix(TLS_SCHEME)
    if not (tls or ca_file or server.startswith(TLS_SCHEME)):
        return target, None
    root = None
    if ca_file:
        try:
            root = Path(ca_file).read_bytes()
        except OSError as err:
            raise ValueError(f"{ENV_TLS_CA}/--tls-ca {ca_file}: cannot read it: {err.strerror or err}") from None
        if b"-----BEGIN CERTIFICATE-----" not in root:
            raise ValueError(f"{ENV_TLS_CA}/--tls-ca {ca_file}: not a PEM certificate (-----BEGIN CERTIFICATE-----)")
    import grpc  # (only over TLS: frames never come to this; craits_bot chose gRPC's I/O first)

    return target, grpc.ssl_channel_credentials(root_certificates=root)


def _tls_refusal(details: str) -> str | None:
    """Why a TLS connection could not be made, from gRPC's details (None: not a TLS failure)."""
    if "Hostname Verification Check failed" in details:
        return ("the referee's certificate does not name the host dialled: connect by a name or address it names "
                "(the one the organizer gave); this bot never falls back to plain text")
    if "handshake failed" not in details.lower():
        return None
    reason = details[details.lower().index("handshake failed"):].removesuffix(": OK")
    if "CERTIFICATE_VERIFY_FAILED" in reason:
        return (f"the referee's certificate is not one this bot trusts ({reason.rpartition('VERIFY_FAILED: ')[2]}): "
                f"set {ENV_TLS_CA} (or --tls-ca) to the certificate file the organizer gave you, and check its "
                "SHA-256 fingerprint with them; this bot never falls back to plain text")
    if "WRONG_VERSION_NUMBER" in reason:
        return ("the referee does not speak TLS on that port (a plain-text referee?); this bot never falls back "
                "to plain text, which would send its token in clear: ask the organizer for its address")
    return f"the TLS handshake with the referee failed ({reason}); this bot never falls back to plain text"


class Runner:
    """Plays one bot against one referee; :meth:`play` returns an :class:`ExitCode`."""

    def __init__(
        self,
        bot: Bot,
        *,
        server: str = DEFAULT_SERVER,
        token: str = "",
        name: str = "",
        reconnect_s: float = DEFAULT_RECONNECT_S,
        tls: bool = False,
        tls_ca: str | None = None,
        framed_socket: str | None = None,
    ) -> None:
        """``framed_socket``: the referee's frames socket (``CRAITS_FRAMED_SOCKET``, set by a
        referee that launched this bot in its sandbox): the same stream without gRPC."""
        self.bot = bot
        self.server = server
        self.target, self.credentials = connection(server, tls=tls, ca_file=tls_ca)
        self.framed_socket = framed_socket if self.credentials is None else None
        self.token = token
        self.name = name or bot.name or type(bot).__name__
        self.reconnect_s = reconnect_s
        self.dispatcher = Dispatcher(bot)
        self._stop = threading.Event()
        self._stop_code = ExitCode.OK
        self._lock = threading.Lock()
        self._call: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._writing: asyncio.Lock | None = None
        """Held by the stream's writes and by the leave's close (one at a time on a gRPC call)."""
        self._welcomed = False
        self._ever_welcomed = False
        """This token was welcomed before in this run: a later refusal means its games are over."""
        self._last_failure = ""
        self._late_answer = ""
        """Why the last stream ended, when it was the bot's answer that found it ended."""

    # ------------------------------------------------------------------ public

    def play(self) -> ExitCode:
        """Connect, play until the referee closes the stream, reconnect when it drops."""
        failing_since = 0.0
        delay = _FIRST_DELAY_S
        failed_before = False
        while not self._stop.is_set():
            self._welcomed = False
            self._late_answer = ""
            code = self._session()
            if code is not None:
                return code
            now = time.monotonic()
            fresh = self._welcomed or not failed_before
            if fresh:  # a new run of failures: say so once, then quietly retry
                failing_since, delay, failed_before = now, _FIRST_DELAY_S, True
            if now - failing_since >= self.reconnect_s:
                log.error(
                    "giving up: no referee at %s for %g s (is it running? is --server right?) last error: %s",
                    self.server, self.reconnect_s, self._last_failure,
                )
                return ExitCode.UNREACHABLE
            if self._late_answer:
                log.warning("%s; connecting to the referee at %s again (it may have more games for this bot)",
                            self._late_answer, self.server)
            else:
                log.log(
                    logging.WARNING if fresh else logging.DEBUG,
                    "%s the referee at %s: %s; retrying for up to %g s",
                    "lost the connection to" if self._welcomed else "cannot reach",
                    self.server, self._last_failure, self.reconnect_s,
                )
            if self._stop.wait(delay):
                break
            delay = min(delay * 2, _MAX_DELAY_S)
        return self._stop_code

    def stop(self, code: ExitCode = ExitCode.OK) -> None:
        """Close the stream and make :meth:`play` return ``code``. Safe from any thread or a signal handler."""
        if not self._stop.is_set():
            self._stop_code = code
            self._stop.set()
        with self._lock:
            call, loop = self._call, self._loop
        if isinstance(call, FramedSocket):
            call.leave()
        elif call is not None and loop is not None:
            with contextlib.suppress(RuntimeError):  # the session's loop has just closed
                loop.call_soon_threadsafe(self._leave, call, loop, self._writing)

    @staticmethod
    def _leave(call: Any, loop: asyncio.AbstractEventLoop, writing: asyncio.Lock | None) -> None:
        """Close this side of the stream (the referee reads a clean exit: it hands the bot's
        seats in games in progress to its default policy at once, rather than waiting the
        reconnect grace for a bot that is not coming back), and cancel it if the referee has
        not ended it within :data:`LEAVE_S`. After the answer being written, if any: gRPC
        refuses a close beside a write, and the kit then cancelled, which the referee read as
        a lost connection (a bot stopped mid-game, on a loaded machine)."""

        import asyncio  # (already imported by the stream's loop)

        async def leave() -> None:
            try:
                async with writing or contextlib.nullcontext():
                    await asyncio.wait_for(call.done_writing(), LEAVE_S)
            except Exception:  # (already ended: cancelling says the same)
                call.cancel()
                return
            loop.call_later(LEAVE_S, call.cancel)

        loop.create_task(leave())

    # ------------------------------------------------------------------ one stream

    def _session(self) -> ExitCode | None:
        """One stream from Hello to its end: an exit code, or None to reconnect."""
        if self.framed_socket:
            return self._framed(self.framed_socket)
        from craits import grpc_io  # (gRPC and asyncio only here: a bot on frames never pays their import)

        return grpc_io.run(self._stream())

    def _hello(self) -> pb.BotMessage:
        return pb.BotMessage(
            hello=pb.Hello(
                token=self.token,
                protocol_version=pb.PROTOCOL_VERSION_CURRENT,
                name=self.name[:64],
                about=(self.bot.about or f"craits_bot (Python) {type(self.bot).__name__}")[:200],
            )
        )

    def _late_text(self, answer: pb.Answer) -> str:
        return _late_text(answer, self.dispatcher.decision_words(answer.game_id, answer.decision_id))

    def _on_error(self, error: pb.Error) -> pb.Error | None:
        """Log a referee Error; return it if it is fatal."""
        # a token welcomed before and now unknown is news, not a problem (see _ended)
        _log_referee_error(error, quiet=self._ever_welcomed and not self._welcomed
                           and error.code == pb.ERROR_CODE_UNAUTHENTICATED,
                           decision=self.dispatcher.decision_words(error.game_id, error.decision_id))
        return error if error.fatal else None

    def _framed(self, path: str) -> ExitCode | None:
        """The stream as frames on the referee's frames socket (``craits.frames``): this thread
        alone reads, answers and writes on a blocking socket, with no event loop and no gRPC
        threads (a third of a bot's CPU per decision). The same ends as :meth:`_stream`."""
        fatal: pb.Error | None = None
        call = FramedSocket(path)
        try:
            call.open()
            with self._lock:
                self._call = call
            if self._stop.is_set():
                call.leave()
            call.write(self._hello())
            dispatch = self.dispatcher.handle
            while (msg := call.read()) is not None:
                if msg.HasField("error"):
                    fatal = self._on_error(msg.error) or fatal
                elif msg.HasField("welcome"):
                    self._on_welcome(msg.welcome)
                reply = dispatch(msg)
                if reply is not None:
                    try:
                        call.write(reply)
                    except _Ended:
                        if reply.WhichOneof("message") == "answer":
                            self._late_answer = self._late_text(reply.answer)
                        raise
            if self._stop.is_set():
                log.info("stopped; stream closed")
                return self._stop_code
            return self._ended(_Ended(call.code, call.details), fatal)
        except _Ended as err:
            return self._ended(err, fatal)
        finally:
            with self._lock:
                self._call = None
            call.close()

    async def _stream(self) -> ExitCode | None:
        """The stream itself, on grpc.aio: one thread reads, answers and writes (the threads
        of the synchronous API cost a bot more CPU than its whole game's thinking)."""
        import asyncio

        import grpc
        import grpc.aio
        from craits.v1 import referee_pb2_grpc

        fatal: pb.Error | None = None
        call: Any = None
        channel = (grpc.aio.secure_channel(self.target, self.credentials) if self.credentials is not None
                   else grpc.aio.insecure_channel(self.target))
        try:
            call = referee_pb2_grpc.RefereeStub(channel).Play()
            writing = asyncio.Lock()
            with self._lock:
                self._call, self._loop, self._writing = call, asyncio.get_running_loop(), writing
            if self._stop.is_set():
                call.cancel()
            async with writing:
                await call.write(self._hello())
            while True:
                msg = await call.read()
                if msg is grpc.aio.EOF:
                    break
                if msg.HasField("error"):
                    fatal = self._on_error(msg.error) or fatal
                elif msg.HasField("welcome"):
                    self._on_welcome(msg.welcome)
                reply = self.dispatcher.handle(msg)
                if reply is not None and not self._stop.is_set():  # (leaving: no more answers)
                    try:
                        async with writing:
                            if not self._stop.is_set():
                                await call.write(reply)
                    except grpc.RpcError as err:
                        # gRPC reports an answer written after the referee ended the stream as
                        # INTERNAL, and drops what the referee sent before its end: say what it was.
                        if err.code() == grpc.StatusCode.INTERNAL and reply.WhichOneof("message") == "answer":
                            self._late_answer = self._late_text(reply.answer)
                        raise
            code = await call.code()
            if self._stop.is_set():  # (the referee ended the stream this bot closed on stopping)
                log.info("stopped; stream closed")
                return self._stop_code
            if code != grpc.StatusCode.OK:
                return self._ended(_Ended.of_grpc(code, await call.details()), fatal)
            log.info("the referee closed the stream: done (%s)", self._summary())
            return ExitCode.OK
        except (grpc.RpcError, asyncio.CancelledError, asyncio.InvalidStateError) as err:
            # (gRPC's errors become the kit's _Ended here, at the edge of the gRPC path)
            return await self._ended_async(err, call, fatal)
        finally:
            with self._lock:
                self._call = self._loop = self._writing = None
            await channel.close()

    async def _ended_async(self, err: BaseException, call: Any, fatal: pb.Error | None) -> ExitCode | None:
        """How a stream that raised ended: stopped, refused, failed, or worth reconnecting (None)."""
        import asyncio

        import grpc

        if self._stop.is_set():
            log.info("stopped; stream closed")
            return self._stop_code
        if isinstance(err, grpc.RpcError):
            return self._ended(_Ended.of_grpc(err.code(), err.details()), fatal)
        # Cancelled or written after its end without an RpcError: the call's status says how.
        with contextlib.suppress(asyncio.CancelledError, AttributeError):
            return self._ended(_Ended.of_grpc(await call.code(), await call.details()), fatal)
        return self._ended(_Ended(StatusCode.CANCELLED, "cancelled"), fatal)

    def _summary(self) -> str:
        d = self.dispatcher
        return f"{d.games_ended} game(s) ended, {d.decisions} decision(s), {d.fallbacks} fallback answer(s)"

    def _on_welcome(self, welcome: pb.Welcome) -> None:
        self._welcomed = self._ever_welcomed = True
        log.info(
            "connected to %s as %r (referee %s, protocol %d)%s",
            self.server, welcome.bot_name or self.name, welcome.server_version or "?",
            welcome.protocol_version, "; resuming games in progress" if welcome.resumed else "",
        )

    def _ended(self, err: _Ended, fatal: pb.Error | None) -> ExitCode | None:
        if self._stop.is_set():
            log.info("stopped; stream closed")
            return self._stop_code
        code, details = err.code, err.details
        if code == StatusCode.OK:
            log.info("the referee closed the stream: done (%s)", self._summary())
            return ExitCode.OK
        if fatal is not None and fatal.code == pb.ERROR_CODE_SHUTTING_DOWN:
            log.info("the referee shut down: done (%s)", self._summary())
            return ExitCode.OK
        if code == StatusCode.UNAUTHENTICATED and self._welcomed:
            # Welcomed on this very stream, then refused: the token was withdrawn (revoked or renewed).
            log.error("the referee at %s ended this bot's stream: %s", self.server,
                      (fatal.message if fatal else "") or details)
            return ExitCode.REFUSED
        if code == StatusCode.UNAUTHENTICATED and self._ever_welcomed:
            # The same token was welcomed before: it is not mistyped, the referee is done with it
            # (its games ended while this bot was away, or before it read their end).
            log.info("the referee at %s no longer knows this bot's token: its games are over; done (%s)",
                     self.server, self._summary())
            return ExitCode.OK
        if code in _REFUSED or (fatal is not None and fatal.code in _REFUSING_ERRORS):
            hint = _HINTS.get(code)
            if code == StatusCode.UNAUTHENTICATED and not self.token:
                hint = f"this bot sent no token: give it --token TOKEN or set {ENV_TOKEN}"
            log.error(
                "the referee at %s refused this bot: %s (%s)%s",
                self.server, details or (fatal.message if fatal else ""), code.name, f"; {hint}" if hint else "",
            )
            return ExitCode.REFUSED
        if fatal is not None:  # e.g. another stream took over this token: connecting again would fight it
            log.error("the referee at %s closed the stream: %s (%s)", self.server, fatal.message or details, code.name)
            return ExitCode.FAILED
        if code == StatusCode.UNAVAILABLE and (why := _tls_refusal(details)):
            log.error("cannot connect to the referee at %s: %s", self.server, why)
            return ExitCode.REFUSED
        if code in _RETRYABLE:
            self._last_failure = self._late_answer or f"{details} ({code.name})"
            if self.credentials is None and not self._ever_welcomed and details.endswith("Socket closed"):
                self._last_failure += f" (a referee that speaks TLS closes plain connections: is it {TLS_SCHEME}?)"
            return None
        log.error("the referee at %s ended the stream: %s (%s)", self.server, details, code.name)
        return ExitCode.FAILED


class _Ended(Exception):
    """A stream's end (its status code and details), on either path, for :meth:`Runner._ended`."""

    def __init__(self, code: StatusCode, details: str | None) -> None:
        super().__init__(code.name, details)
        self.code = code
        self.details = details or ""

    @classmethod
    def of_grpc(cls, code: grpc.StatusCode, details: str | None) -> _Ended:
        """The end of a gRPC call, as gRPC gives it."""
        return cls(StatusCode.named(code.name), details)


class FramedSocket:
    """The Play stream as frames (``craits.frames``) on a blocking Unix socket, for
    :meth:`Runner._framed`. :meth:`leave` may be called from any thread or a signal handler."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.code = StatusCode.UNAVAILABLE
        self.details = "the referee closed the connection without ending the stream"
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._in: Any = None
        self._writing = threading.Lock()
        self._leave_pending = False
        self._left = False

    def open(self) -> None:
        try:
            self._sock.connect(self.path)
        except OSError as err:
            raise _Ended(StatusCode.UNAVAILABLE, f"cannot connect to {self.path}: {err.strerror or err}") from None
        self._in = self._sock.makefile("rb", buffering=64 * 1024)

    def write(self, message: pb.BotMessage) -> None:
        data = frames.frame(message.SerializeToString())
        with self._writing:
            if self._left:  # (as gRPC says it of a message written after the call ended)
                raise _Ended(StatusCode.INTERNAL, "the stream had ended")
            try:
                self._sock.sendall(data)
            except OSError as err:
                raise _Ended(StatusCode.UNAVAILABLE, f"the connection to the referee broke: {err}") from None
        if self._leave_pending:
            self.leave()

    def read(self) -> pb.RefereeMessage | None:
        """The next RefereeMessage, or None once the referee's END frame came (``code``, ``details``)."""
        header = self._read(frames.HEADER.size)
        kind, size = frames.HEADER.unpack(header)
        if kind not in frames.KINDS or size > frames.MAX_FROM_REFEREE:
            raise _Ended(StatusCode.UNAVAILABLE, f"a frame the referee cannot have sent (kind {kind}, {size} bytes)")
        payload = self._read(size)
        if kind == frames.END:
            status, self.details = frames.parse_end(payload)
            self.code = StatusCode.named(status)
            return None
        try:
            return pb.RefereeMessage.FromString(payload)
        except Exception:  # (protobuf's DecodeError)
            raise _Ended(StatusCode.INTERNAL, f"a frame of {size} bytes is not a RefereeMessage") from None

    def _read(self, size: int) -> bytes:
        try:
            data: bytes = self._in.read(size)
        except OSError as err:
            raise _Ended(StatusCode.UNAVAILABLE, f"the connection to the referee broke: {err}") from None
        if len(data) < size:
            raise _Ended(self.code, self.details)
        return data

    def leave(self) -> None:
        """Close this side with an END frame (the referee reads a clean leave and ends the
        stream), and drop the connection if it has not within :data:`LEAVE_S`."""
        if not self._writing.acquire(blocking=False):  # mid-write (this is a signal handler): after it
            self._leave_pending = True
            return
        try:
            if self._left:
                return
            self._left = True
            with contextlib.suppress(OSError):
                self._sock.sendall(frames.frame(b"", frames.END))
        finally:
            self._writing.release()
        timer = threading.Timer(LEAVE_S, self._drop)
        timer.daemon = True
        timer.start()

    def _drop(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        if self._in is not None:
            self._in.close()
        self._sock.close()


def _late_text(answer: pb.Answer, decision: str) -> str:
    """Why a stream ended when the bot's answer found it closed: the bot was behind the referee."""
    return (
        f"the referee had ended the stream when the answer to {decision} of game "
        f"{answer.game_id} was sent ({answer.think_us / 1e6:.1f} s after its request arrived): "
        "choose() took longer than the referee waited (a timeout, then the game went on without this bot)"
    )


def _log_referee_error(error: pb.Error, *, quiet: bool = False, decision: str = "") -> None:
    """One line per referee Error: what, where (``decision``: how the kit names the decision
    it is about, see Dispatcher.decision_words), and the strikes it cost."""
    parts = [f"referee error {pb.ErrorCode.Name(error.code)}: {error.message}"]
    if error.rule:
        parts.append(f"rule {error.rule}")
    if error.game_id:
        parts.append(f"game {error.game_id} {decision or f'decision id {error.decision_id}'}" if error.decision_id
                     else f"game {error.game_id}")
    if error.strikes:
        parts.append(f"strikes {error.strikes}")
    if error.fatal:
        parts.append("fatal")
    quiet = quiet or error.code == pb.ERROR_CODE_SHUTTING_DOWN  # news, not a problem of the bot's
    log.log(logging.INFO if quiet else logging.WARNING, "; ".join(parts))


# ---------------------------------------------------------------------- command line


def parse_args(
    argv: Sequence[str] | None,
    *,
    prog: str | None = None,
    description: str | None = None,
    server: str | None = None,
    token: str | None = None,
    name: str | None = None,
) -> argparse.Namespace:
    """Command line first, then the environment, then the arguments given in code, then defaults."""
    env = os.environ
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "--server",
        default=env.get(ENV_SERVER) or server or DEFAULT_SERVER,
        help=f"referee address HOST:PORT, or {TLS_SCHEME}HOST:PORT over TLS (env {ENV_SERVER}; default {DEFAULT_SERVER})",
    )
    parser.add_argument("--tls", action="store_true", default=env.get(ENV_TLS, "") not in ("", "0"),
                        help=f"connect over TLS (env {ENV_TLS}=1; implied by {TLS_SCHEME} and --tls-ca)")
    parser.add_argument("--tls-ca", default=env.get(ENV_TLS_CA) or None, metavar="FILE",
                        help=f"the referee's (self-signed) certificate to trust (env {ENV_TLS_CA})")
    parser.add_argument(
        "--token", default=env.get(ENV_TOKEN) or token or "", help=f"this bot's secret token (env {ENV_TOKEN})"
    )
    parser.add_argument(
        "--name", default=env.get(ENV_NAME) or name or "", help=f"display name (env {ENV_NAME})"
    )
    parser.add_argument(
        "--reconnect-s",
        type=float,
        default=DEFAULT_RECONNECT_S,
        metavar="SECONDS",
        help=f"how long to keep trying to reach the referee (default {DEFAULT_RECONNECT_S:g})",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every decision")
    parser.add_argument("-q", "--quiet", action="store_true", help="log only problems")
    args = parser.parse_args(argv)
    address = args.server.removeprefix(TLS_SCHEME)
    if ":" not in address or address.startswith(":"):
        parser.error(f"--server takes HOST:PORT or {TLS_SCHEME}HOST:PORT, e.g. {DEFAULT_SERVER}; got {args.server!r}")
    try:
        connection(args.server, tls=args.tls, ca_file=args.tls_ca)
    except ValueError as err:
        parser.error(str(err))
    if args.reconnect_s < 0:
        parser.error("--reconnect-s must be 0 or more")
    return args


def bot_problem(bot: object) -> str | None:
    """Why ``bot`` cannot play at all (a class instead of a bot, no ``choose``), or None."""
    if isinstance(bot, type):
        name = bot.__name__
        return f"run() takes a bot, not its class: run({name}()), not run({name})"
    cls = type(bot)
    if getattr(cls, "choose", None) is Bot.choose or not callable(getattr(bot, "choose", None)):
        own = [n for klass in cls.__mro__ if klass not in (Bot, object) for n in vars(klass) if not n.startswith("_")]
        near = difflib.get_close_matches("choose", own, n=1)
        hint = f" (it has {near[0]}(): a typo?)" if near else ""
        return f"{cls.__name__} does not define choose(self, request){hint}; the kit calls it for every decision"
    return None


def configure_logging(verbose: bool = False, quiet: bool = False) -> None:
    """One line per event on stderr, unless the program configured logging itself."""
    if log.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s craits_bot %(levelname)s %(message)s", "%H:%M:%S"))
    log.addHandler(handler)
    log.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    log.propagate = False


def run(
    bot: Bot,
    *,
    server: str | None = None,
    token: str | None = None,
    name: str | None = None,
    argv: Sequence[str] | None = None,
) -> NoReturn:
    """Play ``bot`` against the referee and exit the process with an :class:`ExitCode`."""
    problem = bot_problem(bot)
    if problem is not None:  # said before connecting: a game of fallback answers would hide it
        print(f"{Path(sys.argv[0]).name}: error: {problem}", file=sys.stderr)
        sys.exit(ExitCode.USAGE)
    args = parse_args(
        argv, description=f"Run the Craits bot {type(bot).__name__}.", server=server, token=token, name=name
    )
    configure_logging(args.verbose, args.quiet)
    runner = Runner(bot, server=args.server, token=args.token, name=args.name, reconnect_s=args.reconnect_s,
                    tls=args.tls, tls_ca=args.tls_ca, framed_socket=os.environ.get(frames.ENV) or None)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: runner.stop(ExitCode.OK))
        signal.signal(signal.SIGINT, lambda *_: runner.stop(ExitCode.INTERRUPTED))
    sys.exit(int(runner.play()))
