"""The checker's referee behind ``craits check-bot``: its gRPC server on a loopback port, the bot's
process, the scenario games and the checks (what it does, as its users read it: the docstring of
server/cli/check_bot.py, which ``craits check-bot --help`` prints)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import secrets
import shlex
import shutil
import signal
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from craits import frames
from craits.v1 import referee_pb2 as pb
from craits.v1 import referee_pb2_grpc
from google.protobuf.message import DecodeError

from server import __version__
from server.checker.report import EXITED_AT_ONCE, TAIL_LINES, Check, Report, Status
from server.checker.scenarios import BOT_SEAT_NAME, SCENARIOS, Mode, Scenario
from server.checker.timeouts import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_EXIT_TIMEOUT_S, DEFAULT_TIMEOUT_S
from server.engine import (
    ACTIONS,
    DRAW_ID,
    ActionKind,
    DecisionKind,
    GameState,
    is_announced_play,
)
from server.errors import UserError
from server.game.judge import judge_answer
from server.protocol import wire
from server.spec import Clocks
from server.transport import sandbox as sandboxes
from server.transport.commands import bot_command
from server.transport.launcher import bot_env, command_problem

LATE_WAIT_S = 0.3
"""How long the late-answer scenario lets a 1 ms decision run before timing it out."""
MAX_DECISIONS_PER_GAME = 5000
"""A guard against a scenario game that will not end (it never should)."""


@dataclass(frozen=True, slots=True)
class CheckOptions:
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Time allowed for each answer (and for Hello once connected)."""
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    """Time allowed from launch to the stream opening."""
    exit_timeout_s: float = DEFAULT_EXIT_TIMEOUT_S
    """Time allowed for the bot to exit once its stream is closed."""
    seed: int = 1
    """Seeds the checker's own players in the other seats."""
    sandboxed: bool = True
    """Run the bot in the sandbox a referee's launched bot gets (server.transport.sandbox)."""
    limits: sandboxes.Limits = field(default_factory=sandboxes.Limits)
    """What the sandboxed bot may use (a tournament's ``[limits]``; CPU seconds count the whole check)."""
    progress: Callable[[int, int, str], None] | None = None
    """Called with (number, of, title) as each check starts: a slow bot's check takes minutes."""
    cwd: str | None = None
    """The bot's folder (a submitted version's); None: its script's folder, as on a command line."""


# ---------------------------------------------------------------------------- the stream


@dataclass
class _Close:
    """Put on the outbound queue to end the stream (with a gRPC error status, if code is set)."""

    code: grpc.StatusCode | None = None
    details: str = ""


class _Stream:
    """One bot stream as the checker sees it: messages in, messages out."""

    def __init__(self) -> None:
        self.inbound: asyncio.Queue[pb.BotMessage | None] = asyncio.Queue()
        self.outbound: asyncio.Queue[pb.RefereeMessage | _Close] = asyncio.Queue()
        self.closed = False


class _Servicer(referee_pb2_grpc.RefereeServicer):
    """Adapts the Play rpc to a _Stream; the checker reads and writes the queues."""

    def __init__(self) -> None:
        self.streams: asyncio.Queue[_Stream] = asyncio.Queue()
        self.active: _Stream | None = None
        self.extra_streams = 0

    async def Play(
        self, request_iterator: AsyncIterator[pb.BotMessage], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.RefereeMessage]:
        if self.active is not None:
            self.extra_streams += 1
            yield pb.RefereeMessage(
                error=pb.Error(
                    code=pb.ERROR_CODE_MALFORMED,
                    message="conformance check: one bot opens one stream; this second stream is refused",
                    fatal=True,
                )
            )
            return
        stream = self.active = _Stream()
        self.streams.put_nowait(stream)
        pump = asyncio.create_task(self._pump(request_iterator, stream))
        try:
            while True:
                item = await stream.outbound.get()
                if isinstance(item, _Close):
                    if item.code is not None:
                        await context.abort(item.code, item.details)
                    return
                yield item
        finally:
            pump.cancel()
            stream.inbound.put_nowait(None)

    @staticmethod
    async def _pump(request_iterator: AsyncIterator[pb.BotMessage], stream: _Stream) -> None:
        try:
            with contextlib.suppress(Exception):  # a broken connection ends the stream like a close
                async for msg in request_iterator:
                    stream.inbound.put_nowait(msg)
        finally:
            stream.inbound.put_nowait(None)


class _FramesServer:
    """The frames socket a sandboxed bot is offered (CRAITS_FRAMED_SOCKET), as a tournament's
    referee offers it: the same stream as :class:`_Servicer`'s, its messages as frames
    (``craits.frames``), so a bot whose kit speaks only frames (the Java kit in the sandbox)
    is checked as it plays."""

    def __init__(self, servicer: _Servicer) -> None:
        self.servicer = servicer

    async def connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        servicer = self.servicer
        try:
            if servicer.active is not None:
                servicer.extra_streams += 1
                refusal = pb.RefereeMessage(error=pb.Error(
                    code=pb.ERROR_CODE_MALFORMED, fatal=True,
                    message="conformance check: one bot opens one stream; this second stream is refused"))
                writer.write(frames.frame(refusal.SerializeToString()) + frames.end_frame("OK"))
                await writer.drain()
                return
            stream = servicer.active = _Stream()
            servicer.streams.put_nowait(stream)
            pump = asyncio.create_task(self._pump(reader, stream))
            try:
                while True:
                    item = await stream.outbound.get()
                    if isinstance(item, _Close):
                        writer.write(frames.end_frame(item.code.name if item.code else "OK", item.details))
                        await writer.drain()
                        return
                    writer.write(frames.frame(item.SerializeToString()))
                    await writer.drain()
            finally:
                pump.cancel()
                stream.inbound.put_nowait(None)
        except ConnectionError:
            pass  # (the bot went: its stream's end says so)
        finally:
            writer.close()

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, stream: _Stream) -> None:
        """The bot's frames to the stream's inbound queue; its END frame (a half-close), a
        broken frame or a lost connection end it, as a gRPC request stream ends."""
        try:
            while True:
                kind, size = frames.HEADER.unpack(await reader.readexactly(frames.HEADER.size))
                if kind not in frames.KINDS or size > MAX_BOT_FRAME:
                    return
                payload = await reader.readexactly(size)
                if kind == frames.END:
                    return
                stream.inbound.put_nowait(pb.BotMessage.FromString(payload))
        except (asyncio.IncompleteReadError, ConnectionError, DecodeError):
            return
        finally:
            stream.inbound.put_nowait(None)


MAX_BOT_FRAME = 64 * 1024
"""The most a bot's message may hold (as at the referee)."""


# ---------------------------------------------------------------------------- the bot process


class _BotProcess:
    """The launched bot: its own process group, its output's last lines kept."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def launch(cls, command: Sequence[str], env: dict[str, str]) -> _BotProcess:
        try:
            proc = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        except FileNotFoundError as err:
            raise UserError(f"cannot run the bot: command not found: {command[0]}") from err
        except PermissionError as err:
            raise UserError(f"cannot run the bot: {command[0]} is not executable") from err
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            try:
                line = await self.proc.stdout.readline()
            except ValueError:  # a line longer than the reader's limit: it is dropped
                self.tail.append("[a line of more than 64 KiB, not shown]")
                continue
            if not line:
                return
            self.tail.append(line.decode(errors="replace").rstrip())

    @property
    def exit_code(self) -> int | None:
        return self.proc.returncode

    async def wait(self, timeout: float) -> int | None:
        """The exit code, or None if still running after ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), timeout)
        return self.proc.returncode

    async def kill(self) -> None:
        """End the whole process group: politely, then not."""
        for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            if await self.wait(grace) is not None and sig == signal.SIGTERM:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)  # children left behind
                break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._reader, 2.0)


# ---------------------------------------------------------------------------- the checks


class _BotGone(Exception):
    """The bot's stream closed while the checker needed it."""


class _NoAnswer(Exception):
    """A request got no answer in time (the checker already sent TIMEOUT)."""

    def __init__(self, said: list[str]) -> None:
        super().__init__("no answer")
        self.said = said


def _text(action_id: int) -> str:
    if 0 <= action_id < len(ACTIONS) and ACTIONS[action_id] is not None:
        return str(ACTIONS[action_id])
    return f"id {action_id} (no such action)"


def _texts(ids: Sequence[int]) -> str:
    return ", ".join(_text(i) for i in ids)


def _default_action(legal: Sequence[int]) -> int:
    """The referee's default: draw, or the first legal action when drawing is not legal."""
    return DRAW_ID if DRAW_ID in legal else legal[0]


def _describe(msg: pb.BotMessage) -> str:
    which = msg.WhichOneof("message")
    if which is None:
        return "an empty BotMessage (no hello, no answer)"
    if which == "hello":
        return "a second Hello"
    return f"a {which}"


@dataclass(frozen=True, slots=True)
class _Answered:
    action: int
    """The action to apply (the bot's, or the default after a second illegal answer)."""
    said: list[str]
    """What the bot sent for this decision, in text form."""


@dataclass(frozen=True, slots=True)
class Offer:
    """A play of the bot's where "+one-card" was offered."""

    scenario: str
    played: str
    announced: bool
    announced_text: str


def _repeated(request: pb.DecisionRequest) -> pb.DecisionRequest:
    repeat = pb.DecisionRequest()
    repeat.CopyFrom(request)
    repeat.repeated_request = True
    return repeat


@dataclass
class _Table:
    """One scenario game in progress."""

    game_id: str
    state: GameState
    seat: int
    policy: random.Random
    history_from: int = 0
    """Events of this hand the bot has already received."""
    strikes: int = 0
    """Refused answers in this game (the referee counts them the same way)."""


class _Checker:
    def __init__(self, options: CheckOptions, servicer: _Servicer, bot: _BotProcess, token: str,
                 jail: sandboxes.Jail | None = None) -> None:
        self.options = options
        self.jail = jail
        self.servicer = servicer
        self.bot = bot
        self.token = token
        self.stream: _Stream | None = None
        self.bot_name = BOT_SEAT_NAME
        self.fatal_close = False
        self.finished = False
        """Every scenario ran (the bot may then exit before the stream is closed)."""
        self._ids = itertools.count(101)
        self._closed: dict[int, str] = {}
        """Decision id -> "answered" or "timed out": answers to these are stale."""
        self._timeouts_in_row = 0
        self.one_card: list[Offer] = []
        self.current = ""
        """The scenario being played."""
        self.waiting_for = ""
        """The request the checker last waited on (to say when the stream closed)."""
        self.latencies: list[float] = []
        self.clocks = Clocks(decision_s=options.timeout_s, bank_s=0.0, reconnect_grace_s=0.0)

    # ------------------------------------------------------------------ stream plumbing

    async def _send(self, **message: Any) -> None:
        if self.stream is not None:
            self.stream.outbound.put_nowait(pb.RefereeMessage(**message))

    async def _error(
        self, code: int, message: str, *, game_id: str = "", decision_id: int = 0, rule: str = "", fatal: bool = False,
        strikes: int = 0,
    ) -> None:
        await self._send(
            error=pb.Error(
                code=code, message=message, rule=rule, game_id=game_id, decision_id=decision_id, fatal=fatal,
                strikes=strikes,
            )
        )

    async def _receive(self, timeout: float) -> pb.BotMessage | None:
        """The bot's next message, or None if none came in ``timeout`` s; _BotGone if the stream closed."""
        assert self.stream is not None
        if self.stream.closed:
            raise _BotGone
        try:
            if timeout <= 0:
                msg = self.stream.inbound.get_nowait()
            else:
                msg = await asyncio.wait_for(self.stream.inbound.get(), timeout)
        except (TimeoutError, asyncio.QueueEmpty):
            return None
        if msg is None:
            self.stream.closed = True
            raise _BotGone
        return msg

    async def _gone_reason(self) -> str:
        code = await self.bot.wait(2.0)
        if code is None:
            return "the bot closed its stream (its process is still running)"
        return f"the bot closed its stream; its process exited with code {code}{self._verdict(code)}"

    def _verdict(self, code: int | None) -> str:
        """" (killed: memory limit 128 MiB)" when a sandbox limit ended the bot, else ""."""
        why = self.jail.verdict(code) if self.jail is not None else ""
        return f" ({why})" if why else ""

    # ------------------------------------------------------------------ connect and hello

    async def connect(self, check: Check) -> bool:
        """Wait for the stream and a good Hello; answer Welcome. False (check failed) otherwise."""
        opts = self.options
        stream_task = asyncio.create_task(self.servicer.streams.get())
        exit_task = asyncio.create_task(self.bot.proc.wait())
        done, _ = await asyncio.wait(
            {stream_task, exit_task}, timeout=opts.connect_timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        exit_task.cancel()
        if stream_task not in done:
            stream_task.cancel()
            if exit_task in done:
                code = self.bot.exit_code
                check.fail(f"the bot exited with code {code} before connecting to CRAITS_SERVER{self._verdict(code)}"
                           + (f"; {EXITED_AT_ONCE}" if code == 0 else ""))
            else:
                check.fail(f"the bot did not connect to CRAITS_SERVER within {opts.connect_timeout_s:g} s")
            return False
        self.stream = stream_task.result()
        try:
            msg = await self._receive(opts.timeout_s)
        except _BotGone:
            check.fail(f"the stream closed before a Hello: {await self._gone_reason()}")
            return False
        if msg is None:
            check.fail(f"no Hello within {opts.timeout_s:g} s after the stream opened")
            await self._refuse_hello(pb.ERROR_CODE_MALFORMED, "no Hello in time", grpc.StatusCode.DEADLINE_EXCEEDED)
            return False
        if msg.WhichOneof("message") != "hello":
            check.sent.append(_describe(msg))
            check.fail(f"the first message was {_describe(msg)}; a stream starts with Hello")
            await self._refuse_hello(pb.ERROR_CODE_MALFORMED, "the first message must be Hello")
            return False
        hello = msg.hello
        token = "token matches CRAITS_TOKEN" if hello.token == self.token else "wrong token"
        check.sent.append(
            f"Hello(protocol_version={hello.protocol_version}, name={hello.name!r}, about={hello.about!r}, {token})"
        )
        if hello.protocol_version != wire.PROTOCOL_VERSION:
            check.fail(
                f"Hello.protocol_version is {hello.protocol_version}; expected {wire.PROTOCOL_VERSION} "
                "(PROTOCOL_VERSION_CURRENT)"
            )
            await self._refuse_hello(
                pb.ERROR_CODE_PROTOCOL_VERSION,
                f"protocol_version {hello.protocol_version} is not supported; send {wire.PROTOCOL_VERSION}",
                grpc.StatusCode.FAILED_PRECONDITION,
            )
            return False
        if hello.token != self.token:
            what = "is empty" if not hello.token else "does not match"
            check.fail(f"Hello.token {what}: send the value of the environment variable CRAITS_TOKEN")
            await self._refuse_hello(
                pb.ERROR_CODE_UNAUTHENTICATED, "unknown token", grpc.StatusCode.UNAUTHENTICATED
            )
            return False
        if len(hello.name) > 64:  # the referee refuses such a Hello; the checker goes on to check the rest
            check.fail(f"Hello.name has {len(hello.name)} characters; at most 64 are allowed (the referee "
                       "refuses a longer one: MALFORMED, fatal)")
        if len(hello.about) > 200:
            check.fail(f"Hello.about has {len(hello.about)} characters; at most 200 are allowed (the referee "
                       "refuses a longer one: MALFORMED, fatal)")
        if not hello.name:
            check.notes.append("Hello.name is empty: the referee will use the tournament's name for the bot")
        self.bot_name = hello.name or BOT_SEAT_NAME
        await self._send(
            welcome=pb.Welcome(
                protocol_version=wire.PROTOCOL_VERSION,
                server_version=f"craits-arena {__version__} (conformance check)",
                bot_name=self.bot_name,
            )
        )
        return True

    async def _refuse_hello(self, code: int, message: str, status: grpc.StatusCode | None = None) -> None:
        self.fatal_close = True
        await self._error(code, f"conformance check: {message}", fatal=True)
        if self.stream is not None:
            self.stream.outbound.put_nowait(_Close(status or grpc.StatusCode.FAILED_PRECONDITION, message))

    # ------------------------------------------------------------------ asking

    def _request(self, t: _Table, decision_id: int, *, deadline_ms: int | None = None) -> pb.DecisionRequest:
        history_from = t.history_from
        t.history_from = len(t.state.hand_events)
        return wire.decision_request(
            t.state,
            t.seat,
            game_id=t.game_id,
            decision_id=decision_id,
            deadline_ms=int(self.options.timeout_s * 1000) if deadline_ms is None else deadline_ms,
            bank_ms=0,
            strikes=0,
            history_from=history_from,
        )

    async def _ask(self, t: _Table, check: Check) -> tuple[_Answered, pb.DecisionRequest]:
        request = self._request(t, next(self._ids))
        await self._send(decision=request)
        return await self._answer(t, check, request), request

    async def _answer(self, t: _Table, check: Check, request: pb.DecisionRequest, what: str = "") -> _Answered:
        """Wait for the answer to ``request``; return the action to apply and what the bot said.

        Mirrors the referee: an answer to another decision gets STALE_DECISION, an
        illegal one ILLEGAL_ACTION and the request again (a second illegal answer
        gets the default action), no answer in time gets TIMEOUT (and _NoAnswer).
        """
        did = request.decision_id
        legal = [a.id for a in request.legal_actions]
        what = what or f"decision {request.decision_number} (id {did})"  # (as the kits' logs name it)
        self.waiting_for = what
        said: list[str] = []
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.options.timeout_s
        while True:
            msg = await self._receive(deadline - loop.time())
            if msg is None:
                default = _default_action(legal)
                check.fail(f"no answer to {what} within {self.options.timeout_s:g} s", kind="timeout")
                self._closed[did] = "timed out"
                self._timeouts_in_row += 1
                await self._error(
                    pb.ERROR_CODE_TIMEOUT,
                    f"conformance check: no answer in {self.options.timeout_s:g} s; played {_text(default)}",
                    game_id=t.game_id,
                    decision_id=did,
                )
                raise _NoAnswer(said)
            if msg.WhichOneof("message") != "answer":
                said.append(_describe(msg))
                check.fail(f"sent {_describe(msg)} while {what} was open; expected an Answer", kind="malformed")
                await self._error(
                    pb.ERROR_CODE_MALFORMED,
                    f"conformance check: expected an Answer, got {_describe(msg)}",
                    game_id=t.game_id,
                    decision_id=did,
                )
                continue
            answer = msg.answer
            if answer.decision_id != did or answer.game_id != t.game_id:
                if await self._stale(answer, check, t.game_id, did):
                    said.append(f"{_text(answer.action_id)} for decision id {answer.decision_id} (refused as stale)")
                continue
            aid = answer.action_id
            said.append(_text(aid))
            if aid in legal:
                self._timeouts_in_row = 0
                self.latencies.append(loop.time() - started)
                self._closed[did] = "answered"
                self._note_one_card(aid, legal)
                return _Answered(aid, said)
            judgement = judge_answer(t.state, legal, aid)  # exactly as the referee judges it
            if not judgement.refused:
                assert judgement.action is not None
                check.warn(f"sent {_text(aid)} (id {aid}): {judgement.message}; answer with an id from the list",
                           kind="unoffered-announcement")
                self._closed[did] = "answered"
                return _Answered(judgement.action, said)
            t.strikes += 1
            check.fail(
                f"sent {_text(aid)} (id {aid}) to {what}, which is not among the legal actions "
                f"[{_texts(legal)}]: {judgement.message} (a strike)",
                kind="malformed" if judgement.malformed else "illegal",
            )
            allowed = self.clocks.max_strikes
            message = f"{judgement.message} (strike {t.strikes} of {allowed})" if t.strikes <= allowed else (
                f"{judgement.message} (strike {t.strikes}: a game strikes a bot out at {allowed}; "
                "the checker plays on to see the rest)")
            if len(said) >= 2:
                default = _default_action(legal)
                self._closed[did] = "answered"
                said[-1] += f" (refused again: the checker played {_text(default)})"
                await self._error(judgement.code, f"{message}; a second refused answer: the checker played "
                                  f"{_text(default)}", rule=judgement.rule, game_id=t.game_id, decision_id=did,
                                  strikes=t.strikes)
                return _Answered(default, said)
            said[-1] += " (refused)"
            await self._error(judgement.code, message, rule=judgement.rule, game_id=t.game_id, decision_id=did,
                              strikes=t.strikes)
            await self._send(decision=_repeated(request))
            deadline = loop.time() + self.options.timeout_s

    async def _stale(self, answer: pb.Answer, check: Check, game_id: str, did: int) -> bool:
        """Refuse an answer to a decision that is not open; True if it named no decision ever closed."""
        closed = self._closed.get(answer.decision_id)
        if closed == "timed out":
            pass  # a late answer: the referee refuses it too, and the bot can do nothing about the race
        elif closed == "answered":
            check.warn(
                f"answered decision id {answer.decision_id} again after it was closed (the referee "
                "refuses it as stale); answer each request once",
                kind="answered-twice",
            )
        else:
            check.fail(
                f"answered decision id {answer.decision_id} of game {answer.game_id!r}, but the open "
                f"decision has id {did}, of game {game_id!r}: echo the request's decision_id and game_id",
                kind="wrong-decision",
            )
        await self._error(
            pb.ERROR_CODE_STALE_DECISION,
            f"decision id {answer.decision_id} of game {answer.game_id!r} is not open"
            + (f" ({closed})" if closed else ""),
            game_id=answer.game_id,
            decision_id=answer.decision_id,
        )
        return closed is None

    def _note_one_card(self, aid: int, legal: Sequence[int]) -> None:
        action = ACTIONS[aid]
        assert action is not None
        if action.kind is not ActionKind.PLAY or not any(is_announced_play(i) for i in legal):
            return
        alternative = aid if action.announce else aid + 1
        self.one_card.append(Offer(self.current, str(action), action.announce, _text(alternative)))

    # ------------------------------------------------------------------ the two error paths

    async def _refused(self, t: _Table, check: Check) -> _Answered:
        first, request = await self._ask(t, check)
        did = request.decision_id
        if len(first.said) != 1:  # already refused for real (and reported): no need to pretend
            check.sent.append(f"{' then '.join(first.said)} to decision id {did}")
            return _Answered(first.action, [])
        await self._error(
            pb.ERROR_CODE_ILLEGAL_ACTION,
            f"conformance check: your answer {_text(first.action)} was legal; this refusal tests that the bot "
            f"answers the repeated request that follows (decision id {did} again, repeated_request=true)",
            game_id=t.game_id,
            decision_id=did,
        )
        self._closed.pop(did, None)
        await self._send(decision=_repeated(request))
        check.sent.append(f"{' then '.join(first.said)} to decision id {did}")
        again = await self._answer(t, check, request, f"the repeated request (decision id {did}) after the refusal")
        return _Answered(again.action, [f"{' then '.join(again.said)} to the repeated request"])

    async def _late(self, t: _Table, check: Check) -> _Answered:
        did = next(self._ids)
        request = self._request(t, did, deadline_ms=1)
        legal = [a.id for a in request.legal_actions]
        await self._send(decision=request)
        loop = asyncio.get_running_loop()
        until = loop.time() + LATE_WAIT_S
        early: list[pb.Answer] = []
        while (msg := await self._receive(until - loop.time())) is not None:
            if msg.WhichOneof("message") == "answer" and msg.answer.decision_id == did:
                early.append(msg.answer)
            elif msg.WhichOneof("message") == "answer":
                await self._stale(msg.answer, check, t.game_id, did)
            else:
                check.fail(f"sent {_describe(msg)} while decision id {did} was open; expected an Answer")
        default = _default_action(legal)
        self._closed[did] = "timed out"
        await self._error(
            pb.ERROR_CODE_TIMEOUT,
            f"conformance check: decision id {did} allowed 1 ms (deadline_ms=1, no time bank) and timed out "
            f"on purpose; the default action {_text(default)} was played. This tests the late-answer path: "
            "the next request is a new decision",
            game_id=t.game_id,
            decision_id=did,
        )
        for _ in early:
            await self._error(
                pb.ERROR_CODE_STALE_DECISION,
                f"decision id {did} had timed out when this answer arrived; it is closed",
                game_id=t.game_id,
                decision_id=did,
            )
        if early:
            said = f"{_text(early[0].action_id)} to the 1 ms decision id {did} (late: refused as stale)"
        else:
            said = f"no answer to the 1 ms decision id {did} within {LATE_WAIT_S:g} s"
        return _Answered(default, [said])

    # ------------------------------------------------------------------ scenario games

    async def scenario(self, sc: Scenario, check: Check) -> None:
        """Play the scenario's game with the bot in its seat; record on ``check`` what it did."""
        self.current = sc.key
        state = sc.build()
        t = _Table(f"check-{sc.key}", state, sc.seat, random.Random(f"{self.options.seed}:{sc.key}"))
        names = [self.bot_name if s == sc.seat else f"checker-{s}" for s in range(state.n)]
        await self._send(
            game_start=wire.game_start(
                state.config, sc.seat, game_id=t.game_id, seat_names=names, clock=self.clocks,
                tournament="conformance check",
            )
        )
        await self._send(hand_start=wire.hand_start(state, t.game_id))
        focus = sc.focus
        asked = 0
        latencies_before = len(self.latencies)
        king_lefts: list[int] = []
        try:
            while state.decision is not None:
                if state.decisions > MAX_DECISIONS_PER_GAME:
                    check.notes.append(f"stopped after {MAX_DECISIONS_PER_GAME} decisions")
                    await self._send(game_end=wire.game_end(state, t.game_id, aborted="conformance check: too long"))
                    return
                decision = state.decision
                legal = state.legal_action_ids()
                if decision.seat != sc.seat:
                    aid = t.policy.choice(legal)
                elif len(legal) == 1:
                    aid = legal[0]  # the referee applies a single-action decision itself
                else:
                    asked += 1
                    if asked == 1 and sc.kind is not None:
                        if decision.kind is not sc.kind:  # the scenario is wrong, not the bot
                            raise AssertionError(f"scenario {sc.key}: first decision is {decision}, not {sc.kind}")
                        check.expected += f"; offered {_texts(legal)}"
                    if decision.kind is DecisionKind.KING_SEQUENCE and focus:
                        king_lefts.append(state.king_left)
                    answered = await self._decide(t, check, sc.mode if asked == 1 else Mode.ASK)
                    aid = answered.action
                    if focus:
                        focus -= 1
                        suffix = " to the next request" if sc.mode is Mode.LATE and asked == 2 else ""
                        if answered.said:
                            check.sent.append(" then ".join(answered.said) + suffix)
                    elif not sc.whole_game:
                        check.more += 1
                hands_before = len(state.hand_results)
                state.apply(aid)
                if len(state.hand_results) > hands_before:
                    for result in state.hand_results[hands_before:]:
                        await self._send(hand_end=wire.hand_end(state, result, sc.seat, t.game_id))
                    if state.game_over:
                        await self._send(game_end=wire.game_end(state, t.game_id))
                        return
                    if not sc.whole_game:
                        await self._send(
                            game_end=wire.game_end(
                                state, t.game_id, aborted="conformance check: this scenario ends after its hand"
                            )
                        )
                        return
                    t.history_from = 0
                    await self._send(hand_start=wire.hand_start(state, t.game_id))
        except _NoAnswer as no_answer:
            if focus:
                check.sent.append(" then ".join([*no_answer.said, "no answer in time"]))
            await self._send(
                game_end=wire.game_end(state, t.game_id, aborted="conformance check: the bot did not answer")
            )
        finally:
            if sc.whole_game:
                check.sent.append(f"{asked} answers")
                if len(self.latencies) > latencies_before:
                    slowest = max(self.latencies[latencies_before:])
                    check.notes.append(f"slowest answer {slowest * 1000:.0f} ms")
                    judge_speed(check, self.latencies[latencies_before:])
            elif check.more:
                s = "s" if check.more != 1 else ""
                check.notes.append(f"then {check.more} more answer{s} to the end of the hand")
            if king_lefts:
                check.notes.append(f"king_cards_left went {', '.join(map(str, king_lefts))}")

    async def _decide(self, t: _Table, check: Check, mode: Mode) -> _Answered:
        if mode is Mode.REFUSE:
            return await self._refused(t, check)
        if mode is Mode.LATE:
            return await self._late(t, check)
        answered, _ = await self._ask(t, check)
        return answered


# ---------------------------------------------------------------------------- running a check


GAME_CLOCKS = Clocks()
"""A game's clocks unless its organizer sets others (``craits play``, a tournament file)."""


def judge_speed(check: Check, latencies: Sequence[float]) -> None:
    """Warn when answers take longer than a game gives a decision by default: the checker
    waits for them, a game does not (its bank absorbs a few overruns, then each is a timeout).
    Fail when, answering as slowly in a game with those clocks, the bot would be struck out."""
    slow = [s for s in latencies if s > GAME_CLOCKS.decision_s]
    if not slow:
        return
    words = (
        f"{len(slow)} of {len(latencies)} answers took longer than {GAME_CLOCKS.decision_s * 1000:.0f} ms "
        f"(the slowest {max(slow) * 1000:.0f} ms), a game's time per decision unless its organizer sets "
        f"another: a game takes each overrun from a {GAME_CLOCKS.bank_s:g} s time bank, then times the "
        f"decision out and plays the default action, a strike; {GAME_CLOCKS.max_strikes} strikes and the "
        "default policy plays the bot's seat for the rest of the game. Make choose() faster"
    )
    struck_at = struck_out_at(latencies, GAME_CLOCKS)
    if struck_at is None:
        check.warn(words)
    else:
        check.fail(f"{words}: at these times a game would strike the bot out at its answer {struck_at} "
                   f"of {len(latencies)}")


def struck_out_at(latencies: Sequence[float], clocks: Clocks) -> int | None:
    """The answer at which a game with ``clocks`` would strike out a bot answering in ``latencies``
    (the referee's clock: overruns come out of the bank, a timeout empties it), None if none."""
    bank, strikes = clocks.bank_s, 0
    for n, took in enumerate(latencies, 1):
        over = took - clocks.decision_s
        if over <= 0:
            continue
        if over <= bank:
            bank -= over
            continue
        bank, strikes = 0.0, strikes + 1
        if strikes >= clocks.max_strikes:
            return n
    return None


def judge_one_card(check: Check, offers: Sequence[Offer]) -> None:
    """Rule 7.1 over every offer of the run: always announcing passes; never fails; sometimes warns.

    A bot that picks at random announces about half the time: that costs it turns
    but breaks no rule, so it gets a warning; a bot that never announces (the
    classic ``legal_actions[0]`` bot) almost surely does not know the rule: a failure.
    """
    if not offers:
        check.fail("the bot was never asked for a play that leaves one card")
        return
    announced = sum(1 for o in offers if o.announced)
    missed = sorted((o for o in offers if not o.announced), key=lambda o: o.scenario != check.key)
    cost = (
        'a play that leaves one card without "+one-card" is legal but forfeits the next turn: '
        "the player draws two instead (rule 7.1). Choose the action with announce=true whenever one is offered"
    )
    check.notes.append(f"announced in {announced} of {len(offers)} plays that left one card")
    if not missed:
        check.verdict = Status.PASS
        return
    example = missed[0]
    if announced == 0:
        check.fail(
            f'never announced "one card" in {len(offers)} chances (e.g. sent {example.played}, '
            f"not {example.announced_text}): {cost}"
        )
    else:
        check.verdict = Status.WARN
        check.warn(
            f"missed the announcement {len(missed)} of {len(offers)} times (e.g. sent {example.played}, "
            f"not {example.announced_text}), as a bot choosing at random does: {cost}"
        )


def _checks() -> list[Check]:
    checks = [Check("hello", "hello", "a Hello with CRAITS_TOKEN and protocol_version 1, first on the stream")]
    checks += [Check(sc.key, sc.title, sc.expected) for sc in SCENARIOS]
    checks.append(Check("exit", "exit when the stream ends", "the bot exits by itself once the referee closes the stream"))
    return checks


def resolve_command(command: Sequence[str], cwd: str | None = None) -> list[str]:
    """The bot's argv; UserError for a missing or unknown command."""
    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UserError("no bot command: use craits check-bot [options] -- COMMAND [ARGS...]")
    if len(argv) == 1 and " " in argv[0] and not shutil.which(argv[0]):
        argv = shlex.split(argv[0])  # the whole command given as one quoted string
    argv = bot_command(argv)
    problem = command_problem(argv, cwd)
    if problem is not None:
        raise UserError(f"cannot run the bot: {problem}")
    return argv


def _sandbox_problem(command: Sequence[str]) -> str | None:
    """Why ``command`` cannot run sandboxed (outside what it may see, unreadable), or None; the
    advice is for a command line, which has no allow_read."""
    return sandboxes.outside_problem(command, None, command_line=True)


async def _check(command: list[str], options: CheckOptions) -> Report:
    started = time.monotonic()
    checks = _checks()
    report = Report(command, checks)
    servicer = _Servicer()
    server = grpc.aio.server()
    referee_pb2_grpc.add_RefereeServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    socket_path = sandboxes.socket_path() if options.sandboxed else None
    if socket_path is not None:  # a sandboxed bot has no network: it comes through a Unix socket
        server.add_insecure_port(f"unix:{socket_path}")
    await server.start()
    token = secrets.token_hex(16)
    jail: sandboxes.Jail | None = None
    problem = (sandboxes.outside_problem(command, options.cwd) if options.cwd is not None
               else _sandbox_problem(command)) if socket_path is not None else None
    if problem:
        sandboxes.remove_socket(socket_path)
        await server.stop(grace=0)
        raise UserError(f"cannot run the bot in the sandbox: {problem}")
    frames_server: asyncio.Server | None = None
    if socket_path is not None:
        sandboxes.open_socket(socket_path)
        frames_path = sandboxes.frames_socket_path(socket_path)  # (offered as a tournament offers it)
        frames_server = await asyncio.start_unix_server(_FramesServer(servicer).connected, frames_path)
        sandboxes.open_socket(frames_path)
        box = sandboxes.Sandbox(socket_path, limits=options.limits, frames=frames_path)
        env = box.env(token, BOT_SEAT_NAME)
        jail = box.confine(command, cwd=options.cwd, watched=False)
        argv = jail.argv
    else:
        env = bot_env(f"127.0.0.1:{port}", token, BOT_SEAT_NAME)
        argv = command
    bot: _BotProcess | None = None
    try:
        bot = await _BotProcess.launch(argv, env)
        checker = _Checker(options, servicer, bot, token, jail)
        await _run_checks(checker, checks, options.progress)
        if options.progress is not None:
            options.progress(len(checks), len(checks), checks[-1].title)
        await _check_exit(checker, checks[-1], options)
        if servicer.extra_streams:
            checks[0].fail(f"opened {servicer.extra_streams} more stream(s); one stream carries every game")
    finally:
        if bot is not None:
            await bot.kill()
            report.exit_code = bot.exit_code
            report.output_tail = list(bot.tail)
            if jail is not None and (why := jail.verdict(bot.exit_code)):
                report.output_tail.append(f"[craits: {why}]")
        if jail is not None:
            jail.release()
        if frames_server is not None:
            frames_server.close()
        await server.stop(grace=0.5)
        if socket_path is not None:
            sandboxes.remove_socket(socket_path)
    report.seconds = time.monotonic() - started
    return report


async def _check_exit(checker: _Checker, check: Check, options: CheckOptions) -> None:
    """Close the stream (unless it is gone) and expect the bot to exit by itself."""
    bot = checker.bot
    if checker.stream is None:
        check.skipped = "the bot never connected"
        return
    if bot.exit_code is not None:
        if checker.stream.closed and not checker.finished:
            check.skipped = f"the bot had already exited, with code {bot.exit_code}"
            return
        check.sent.append(f"exit code {bot.exit_code}, before the referee closed the stream")
    else:
        checker.stream.outbound.put_nowait(_Close())
        code = await bot.wait(options.exit_timeout_s)
        if code is None:
            check.sent.append("nothing: still running")
            stuck = (
                f" (it had stopped answering {checker.waiting_for}: a bot still busy with a decision, "
                "e.g. stuck in choose(), cannot see that its stream ended)"
                if checker._timeouts_in_row >= 2 else ""
            )
            check.fail(
                f"still running {options.exit_timeout_s:g} s after the referee closed the stream, so the "
                f"checker killed it; a launched bot should exit when its stream ends{stuck}"
            )
            return
        check.sent.append(f"exit code {code}")
    if bot.exit_code != 0 and not checker.fatal_close:
        check.warn(f"exited with code {bot.exit_code} after a normal end of the stream; 0 is expected")


async def _run_checks(checker: _Checker, checks: list[Check],
                      progress: Callable[[int, int, str], None] | None = None) -> None:
    hello, *scenario_checks, _exit = checks
    one_card = next(c for c in scenario_checks if c.key == "one-card")
    if progress is not None:
        progress(1, len(checks), hello.title)
    if not await checker.connect(hello):
        for c in scenario_checks:
            c.skipped = "the bot did not get past Hello"
        return
    for i, (sc, check) in enumerate(zip(SCENARIOS, scenario_checks, strict=True)):
        if progress is not None:
            progress(i + 2, len(checks), check.title)
        try:
            await checker.scenario(sc, check)
        except _BotGone:
            check.fail(f"while waiting for an answer to {checker.waiting_for}, {await checker._gone_reason()}")
            for rest in scenario_checks[i + 1 :]:
                rest.skipped = "the bot's stream had closed"
            break
        if checker._timeouts_in_row >= 2:
            for rest in scenario_checks[i + 1 :]:
                rest.skipped = "the bot stopped answering"
            break
    else:
        checker.finished = True
    if not one_card.problems and not one_card.skipped:
        judge_one_card(one_card, checker.one_card)


def check_bot(command: Sequence[str], options: CheckOptions | None = None) -> Report:
    """Run every check against the bot ``command`` launches; the report says what passed."""
    options = options or CheckOptions()
    return asyncio.run(_check(resolve_command(command, options.cwd), options))
