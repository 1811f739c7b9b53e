"""Runs one game: asks the seats, enforces the clocks, applies, records.

:class:`GameReferee` owns a :class:`~server.engine.GameState` and its seats. For
every decision it either applies the only legal action itself (status "auto"),
lets an in-process policy choose, or sends the bot a DecisionRequest and waits on
the seat's mailbox for an answer, a reconnect, a disconnect or the clock.

Clocks (issue 2): a bot has ``decision_s`` per decision; an overrun is taken from
its per-game bank; when both are spent the referee plays the default action
(draw if legal, else the first legal action) and gives a strike. Refused answers
(malformed or illegal) are strikes too, and the request stays open until the
clock runs out. At ``max_strikes`` the default policy plays the seat for the rest
of the game. A disconnected bot may come back within ``reconnect_grace_s`` (the
decision clock keeps running meanwhile); after that, the default policy plays.

Nothing a bot does raises out of :meth:`GameReferee.run`: every fault becomes a
counter, a status and an entry in the seat's events, the log and the replay.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Sequence
from typing import Any, Protocol

from craits.v1 import referee_pb2 as pb

from server.engine import ACTIONS, GameState
from server.game.judge import Judgement, judge_answer
from server.game.policies import DefaultPolicy, default_action
from server.game.seats import (
    ABORT,
    CONNECTED,
    DISCONNECTED,
    EXITED,
    Arrival,
    Outgoing,
    Seat,
    Session,
    Wake,
    framed,
)
from server.logging import bind, bound, get_logger
from server.protocol import wire
from server.spec import GameRecord, GameSpec, SeatStatus

log = get_logger()
_perf = time.perf_counter

_YIELD_EVERY = 16
"""In-process decisions in a row before the game yields the event loop to others."""


class Hub(Protocol):
    """What a game needs from the server around it."""

    open_decisions: dict[int, Seat]

    def next_decision_id(self) -> int: ...


class _Aborted(Exception):
    """Unwinds the game task from wherever it waits once :meth:`GameReferee.abort` was called."""


def _ms(seconds: float) -> int:
    return max(0, int(seconds * 1000))


def _seat_entry(seat: Seat) -> dict[str, Any]:
    """A seat's report for the replay's result record: the SeatReport fields, with times
    in whole microseconds (every replay number is an integer)."""
    report = seat.report()
    entry: dict[str, Any] = {}
    for name in report.__dataclass_fields__:
        value = getattr(report, name)
        if name.endswith("_s") and isinstance(value, float):
            entry[name[:-2] + "_us"] = round(value * 1_000_000)
        elif name == "events":
            entry[name] = list(value)
        else:
            entry[name] = str(value) if name == "status" else value
    if seat.instances:
        entry["instances"] = list(seat.instances)
    return entry


_CONTROLS = {c: "\ufffd" for c in (*range(0x20), 0x7F) if c != 0x09}
"""Control characters a bot's text may carry, each kept as U+FFFD: a NUL cannot be stored in
PostgreSQL at all (the game's record was refused, and the tournament stopped on it), and terminal
escapes would reach the organizer's terminal and logs."""


def _one_line(text: str, limit: int = 200) -> str:
    """A bot's text for a record: its first line, at most ``limit`` characters, no control characters."""
    line = text.strip().split("\n", 1)[0].strip().translate(_CONTROLS)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def refusal_text(judgement: Judgement, strikes: int, max_strikes: int) -> str:
    """The Error message of a refused answer (the texts a bot is sent are also rebuilt from
    replays, by :mod:`server.game.transcript`: one place for each)."""
    return f"{judgement.message} (strike {strikes} of {max_strikes})"


def timeout_text(action: int, strikes: int, max_strikes: int) -> str:
    return (
        f"no answer within the decision time and the time bank: the referee played "
        f"{ACTIONS[action]} (the default action); strike {strikes} of {max_strikes}"
    )


def struck_out_text(strikes: int) -> str:
    return f"{strikes} strikes: the default policy plays this seat for the rest of the game"


def aborted_text(aborted: str) -> str:
    return f"game aborted: {aborted}"


def _exit_text(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-returncode).name}"
    return f"exited with code {returncode}"


class GameReferee:
    """One game in progress. The service calls the ``seat_*`` methods as streams come and go."""

    def __init__(self, spec: GameSpec, seats: Sequence[Seat], hub: Hub) -> None:
        if len(seats) != spec.config.players:
            raise ValueError(f"game {spec.game_id}: {len(seats)} seats for {spec.config.players} players")
        self.spec = spec
        self.game_id = spec.game_id
        self.clocks = spec.clocks
        self.seats = list(seats)
        self.hub = hub
        self.state = GameState(spec.config, spec.seed)
        self.encoder = wire.GameEncoder(self.state, self.game_id)
        """Serialises the requests and hand ends (each logged event once per view)."""
        self.started = False
        """GameStart has been sent (late joiners get it when they connect)."""
        self.over = False
        self.abort_reason = ""
        self.abort_code: int = pb.ERROR_CODE_UNSPECIFIED
        self._changed = asyncio.Event()
        self._names = [s.name for s in self.seats]
        self._replay: Any = None
        self._end: bytes | None = None
        self.aborted = ""
        """Why the game was stopped short (an abort or a cancellation), once it is over."""
        """The GameEnd, framed, once the game is over."""
        self._unrecorded: tuple[Any, ...] | None = None
        self._wire: dict[str, Any] | None = None
        """What the decision being asked put on the wire beyond what the engine derives (its id,
        the bank it offered, each refused answer and the request sent again): kept in the replay so
        ``craits replay messages`` rebuilds every message byte for byte."""
        self._record_failed: Exception | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The decision last applied, until the replay has it (see :meth:`_record`)."""
        for seat in self.seats:
            seat.game = self

    # ------------------------------------------------------------------ events from the service

    def seat_connected(self, seat: Seat, session: Session) -> None:
        """A stream said Hello with this seat's token (first time, or again after a loss)."""
        if self.over:
            return
        previous = seat.session
        seat.session = session
        if seat.disconnected_at is not None:
            away = time.monotonic() - seat.disconnected_at
            self._event(seat, f"reconnected after {away:.2f} s")
            seat.disconnected_at = None
        elif previous is not None and previous is not session:
            self._event(seat, "a new stream replaced the open one")
        if not seat.connected_once:
            seat.connected_once = True
            self._changed.set()
        if self.started:
            self._send_start(seat)
            seat.history_hand = 0  # a resumed bot may have lost everything: send the hand from its start
            if seat.open_decision:
                seat.mailbox.put(CONNECTED)

    def seat_disconnected(self, seat: Seat, session: Session, why: str, *, clean: bool = False) -> None:
        """The seat's stream ended (the bot closed it, died, or was cut off). ``clean``: the bot
        closed its side itself; a bot that connects on its own then left for good (its
        process stopped), so its seat goes to the default policy at once rather than after
        the reconnect grace. (A launched bot's exit is its process's to tell.)"""
        if seat.session is not session:
            return
        seat.session = None
        if self.over:
            return
        seat.disconnected_at = time.monotonic()
        if clean and seat.bot.command is None:
            seat.left_cleanly = True
            self._event(seat, f"left: {why}")
        else:
            seat.disconnects += 1
            self._event(seat, f"disconnected: {why}")
        seat.mailbox.put(DISCONNECTED)

    def seat_process_exited(self, seat: Seat, returncode: int | None, why: str = "") -> None:
        """A launched bot's process ended (or never started: ``why`` says why): there is
        nobody left to reconnect."""
        seat.process_exited = True
        if self.over:
            return
        self._event(seat, f"bot process {why or _exit_text(returncode)}")
        self._changed.set()
        seat.mailbox.put(EXITED)

    def abort(self, reason: str, code: int = pb.ERROR_CODE_UNSPECIFIED) -> None:
        """Stop the game at the next step; it is recorded as aborted with ``reason``."""
        if self.over or self.abort_reason:
            return
        self.abort_reason = reason
        self.abort_code = code
        self._changed.set()
        for seat in self.seats:
            seat.mailbox.put(ABORT)

    def stale_answer(self, seat: Seat, session: Session, answer: pb.Answer, code: int, why: str) -> None:
        """An answer that names no open decision of this seat: refused, counted, nothing changes."""
        seat.stale += 1
        self._event(seat, why)
        session.send_error(code, why, game_id=answer.game_id, decision_id=answer.decision_id, strikes=seat.strikes)

    # ------------------------------------------------------------------ the game

    async def run(self, replay: Any = None) -> GameRecord:
        """Play the game to the end (or to an abort) and return its record. Bot faults never raise.

        ``replay``: a writer from :meth:`open_replay` (opened before any bot is launched,
        so a replay path that cannot be written fails before anything starts).
        """
        spec = self.spec
        context = {"game": self.game_id, "hand": self.state.hand_number}
        if spec.tournament:
            context["tournament"] = spec.tournament
        with bound(**context):  # "hand" is rebound as hands go by, and reset on the way out
            aborted = ""
            try:
                log.info("game_started", seed=spec.seed, preset=spec.config.preset, players=spec.config.players,
                         bots=self._names)
                await self._wait_for_bots()
                self._announce()
                await self._play(replay)
                aborted = self.abort_reason
            except _Aborted:
                aborted = self.abort_reason
            except asyncio.CancelledError:
                # A cancelled game is not recorded by its caller (it will be played again):
                # tell the bots, drop the replay, keep nothing half-written.
                if replay is not None:
                    replay.abort()
                self._finish(None, self.abort_reason or "the game was cancelled")
                raise
            except Exception as err:  # a bug of ours: record the game as aborted, keep serving
                log.exception("game_crashed")
                aborted = f"internal error: {type(err).__name__}: {err}"
            return self._finish(replay, aborted)

    def open_replay(self) -> Any:
        """The replay writer for ``spec.replay_path`` (None when the spec asks for no replay)."""
        if self.spec.replay_path is None:
            return None
        from server.storage.replay import ReplayWriter

        return ReplayWriter.for_spec(self.spec, self.state)

    async def _wait_for_bots(self) -> None:
        """Wait for every remote seat's first Hello, up to the connect timeout."""
        waiting = [s for s in self.seats if s.remote]
        deadline = time.monotonic() + self.clocks.connect_timeout_s
        while not self.abort_reason:
            missing = [s for s in waiting if not s.connected_once and not s.process_exited and s.policy is None]
            left = deadline - time.monotonic()
            if not missing or left <= 0:
                break
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)
        if self.abort_reason:
            raise _Aborted
        for seat in waiting:
            if not seat.connected_once and seat.policy is None:
                seat.status = SeatStatus.NEVER_CONNECTED
                seat.policy = DefaultPolicy()
                if seat.refused:
                    what = f"refused at Hello ({seat.refused})"
                elif seat.process_exited:
                    what = "never connected (" + (
                        "its process could not be started" if seat.process is None else "its process exited") + ")"
                else:
                    what = f"never connected (no Hello within {self.clocks.connect_timeout_s:g} s" + (
                        f"; meanwhile {seat.refused_nearby}" if seat.refused_nearby else "") + ")"
                self._event(seat, f"{what}: the default policy plays this seat", warn=True)

    def _announce(self) -> None:
        self.started = True
        for seat in self.seats:
            if seat.session is not None:
                self._send_start(seat)

    def _send_start(self, seat: Seat) -> None:
        session = seat.session
        if session is None:
            return
        spec = self.spec
        session.send(
            pb.RefereeMessage(
                game_start=wire.game_start(
                    spec.config,
                    seat.index,
                    game_id=self.game_id,
                    seat_names=self._names,
                    clock=self.clocks,
                    tournament=spec.tournament,
                )
            )
        )
        if not self.state.game_over:
            session.send(framed("hand_start", wire.hand_start(self.state, self.game_id)))

    def _broadcast(self, message: Outgoing) -> None:
        for seat in self.seats:
            if seat.session is not None:
                seat.session.send(message)

    async def _play(self, replay: Any) -> None:
        state = self.state
        seats = self.seats
        hands_done = len(state.hand_results)
        bind(hand=state.hand_number)
        self._replay = replay
        in_process = 0
        while (decision := state.decision) is not None:
            if self.abort_reason:
                raise _Aborted
            seat = seats[decision.seat]
            legal = state.legal_action_ids()
            think: float | None = None
            transport: float | None = None
            note = ""
            if len(legal) == 1:
                action, status = legal[0], "auto"
            elif seat.policy is not None:
                started = _perf()
                action = seat.policy.choose(legal)
                if seat.builtin:
                    status = "ok"
                    seat.decisions += 1
                    think, transport = _perf() - started, 0.0
                    seat.think_s += think
                else:
                    status = "default"
                    seat.default_actions += 1
                in_process += 1
                if in_process % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)
            else:
                action, status, think, transport, note = await self._ask(seat, legal)
                if self._record_failed is not None:
                    raise self._record_failed
            self._record()
            state.apply(action)
            if replay is not None:
                wire_facts, self._wire = self._wire, None
                self._unrecorded = (
                    decision.seat,
                    decision.kind,
                    action,
                    status,
                    None if think is None else think * 1000,
                    None if transport is None else transport * 1000,
                    note,
                    wire_facts,
                )
            if len(state.hand_results) != hands_done:
                hands_done = self._hands_ended(hands_done)

    def _record(self) -> None:
        """Give the replay the decision last applied.

        Deferred from the apply until the next request is on its way to its bot (or the next
        apply, or the end), so writing the replay overlaps the bot's turn instead of
        lengthening it."""
        pending = self._unrecorded
        if pending is not None:
            self._unrecorded = None
            self._replay.decision(*pending)

    def _record_soon(self) -> None:
        """:meth:`_record`, called back in the loop's next round, right after the stream's
        writer (woken when the request was queued, so called back first). A failure is kept
        for the game task to raise: it is a bug of ours, and ends the game as one."""
        if self.over or self._record_failed is not None:
            return
        try:
            self._record()
        except Exception as err:
            self._record_failed = err

    def _hands_ended(self, hands_done: int) -> int:
        state = self.state
        results = state.hand_results
        for result in results[hands_done:]:
            for seat in self.seats:
                if seat.session is not None:
                    seat.session.send(framed("hand_end", self.encoder.hand_end(result, seat.index)))
        if not state.game_over:
            bind(hand=state.hand_number)
            self._broadcast(framed("hand_start", wire.hand_start(state, self.game_id)))
        return len(results)

    # ------------------------------------------------------------------ asking a bot

    def _request(self, seat: Seat, decision_id: int, history_from: int, deadline_s: float, bank_s: float,
                 repeated: bool) -> bytes:
        request = self.encoder.decision_request(
            seat.index,
            decision_id=decision_id,
            deadline_ms=_ms(deadline_s),
            bank_ms=_ms(bank_s),
            strikes=seat.strikes,
            repeated=repeated,
            history_from=history_from,
        )
        return framed("decision", request)

    def _send_request(self, seat: Seat, message: bytes) -> None:
        session = seat.session
        if session is not None:
            session.bucket.credit()
            session.send(message)

    async def _ask(self, seat: Seat, legal: list[int]) -> tuple[int, str, float | None, float | None, str]:
        """Ask the bot in ``seat``; return (action, status, think_s, transport_s, note).

        The action returned is always legal: the bot's, or the default one.
        """
        hub = self.hub
        state = self.state
        clocks = self.clocks
        decision_s = clocks.decision_s
        decision_id = hub.next_decision_id()
        seat.decisions += 1
        mailbox = seat.mailbox
        mailbox.clear()
        history_from = seat.history_from(state.hand_number)
        seat.history_hand = state.hand_number
        seat.history_sent = len(state.log) - state.hand_log_start
        message = self._request(seat, decision_id, history_from, decision_s, seat.bank_s, False)
        facts: dict[str, Any] = {"id": decision_id, "bank_ms": _ms(seat.bank_s)}
        if _ms(decision_s) != _ms(round(decision_s * 1000) / 1000):  # not what the header's decision_ms gives
            facts["deadline_ms"] = _ms(decision_s)
        if seat.session is None:
            facts["away"] = 1  # the request reached no bot (it was disconnected)
        self._wire = facts
        hub.open_decisions[decision_id] = seat
        seat.open_decision = decision_id
        seat.asked[decision_id] = self._record_number()
        now = sent = last_sent = _perf()
        deadline = sent + decision_s + seat.bank_s
        self._send_request(seat, message)
        notes: list[str] = []
        resend_from = history_from
        try:
            if self._unrecorded is not None:  # after the stream's writer has put the request on the wire
                loop = self._loop
                if loop is None:
                    loop = self._loop = asyncio.get_running_loop()
                loop.call_soon(self._record_soon)
            while True:
                if self.abort_reason:
                    raise _Aborted
                wait = deadline - now
                if wait <= 0:
                    return self._timed_out(seat, decision_id, legal, notes)
                if seat.session is None:
                    grace_end = self._grace_end(seat)
                    if now >= grace_end:
                        return self._gone(seat, legal, notes)
                    wait = min(wait, grace_end - now)
                item = await mailbox.get(wait)
                if item is None:
                    now = _perf()
                    continue
                if isinstance(item, Wake):
                    now = _perf()
                    if item is CONNECTED:
                        resend_from = 0  # the bot may have restarted: the hand's history from its start
                        facts["reconnects"] = facts.get("reconnects", 0) + 1
                        seat.history_hand = state.hand_number
                        elapsed = now - sent
                        last_sent = now
                        self._send_request(
                            seat,
                            self._request(seat, decision_id, 0, decision_s - elapsed,
                                          seat.bank_s - max(0.0, elapsed - decision_s), True),
                        )
                    continue
                answer = item.answer
                if answer.HasField("bot_error"):
                    self._bot_error(seat, decision_id, answer.bot_error, notes)
                action_id = answer.action_id
                judgement = None if action_id in legal else judge_answer(state, legal, action_id)
                if judgement is not None and not judgement.refused:
                    assert judgement.action is not None
                    action_id = judgement.action  # the announced form of an offered play (rule 7.1)
                    self._event(seat, judgement.message)
                    notes.append(judgement.note)
                if judgement is None or not judgement.refused:
                    elapsed = item.at - sent
                    think = min(answer.think_us / 1e6, max(0.0, item.at - last_sent))
                    transport = max(0.0, elapsed - think)
                    overrun = elapsed - decision_s
                    status = "ok"
                    if overrun > 0:
                        seat.bank_s = max(0.0, seat.bank_s - overrun)
                        status = "bank"
                    seat.think_s += think
                    seat.transport_s += transport
                    return action_id, status, think, transport, "; ".join(notes) if notes else ""
                notes.append(self._refuse(seat, decision_id, judgement))
                refused = [action_id]
                facts.setdefault("refused", []).append(refused)
                if seat.strikes >= clocks.max_strikes:
                    return self._strike_out(seat, legal, notes, "malformed" if judgement.malformed else "illegal")
                now = last_sent = _perf()
                elapsed = now - sent
                deadline_left, bank_left = decision_s - elapsed, seat.bank_s - max(0.0, elapsed - decision_s)
                refused += (_ms(deadline_left), _ms(bank_left))
                self._send_request(
                    seat, self._request(seat, decision_id, resend_from, deadline_left, bank_left, True)
                )
        finally:
            hub.open_decisions.pop(decision_id, None)
            seat.open_decision = 0
            if mailbox:
                self._drain(seat)

    def _grace_end(self, seat: Seat) -> float:
        """When a disconnected seat's grace runs out, on the perf_counter clock."""
        if seat.process_exited or seat.left_cleanly or seat.disconnected_at is None:
            return 0.0
        left = seat.disconnected_at + self.clocks.reconnect_grace_s - time.monotonic()
        return _perf() + left

    def _drain(self, seat: Seat) -> None:
        """Refuse answers that arrived for the decision after another answer settled it."""
        for item in seat.mailbox.drain():
            if isinstance(item, Arrival) and seat.session is not None:
                self.stale_answer(
                    seat, seat.session, item.answer, pb.ERROR_CODE_STALE_DECISION,
                    f"decision {item.answer.decision_id} was already settled; this answer changes nothing",
                )

    def _refuse(self, seat: Seat, decision_id: int, judgement: Judgement) -> str:
        """Tell the bot why its answer was refused (:func:`server.game.judge.judge_answer`),
        count the strike; return a note for the replay."""
        seat.strikes += 1
        if judgement.malformed:
            seat.malformed += 1
        else:
            seat.illegal += 1
        message = refusal_text(judgement, seat.strikes, self.clocks.max_strikes)
        self._event(seat, f"{judgement.note}: {message}")
        if seat.session is not None:
            seat.session.send_error(judgement.code, message, rule=judgement.rule, game_id=self.game_id,
                                    decision_id=decision_id, strikes=seat.strikes)
        return judgement.note

    def _record_number(self) -> int:
        """The number of the decision being asked as the replay, its viewer, ``replay show``,
        ``replay rerun --from`` and the fault lists count it (every seat's decisions, from 1),
        not the wire's ``decision_id`` (unique on the server, counting only the bots' requests):
        the organizer's notes of a fault must name the decision those tools find."""
        return self.state.decisions + 1

    def _bot_error(self, seat: Seat, decision_id: int, error: pb.BotError, notes: list[str]) -> None:
        """The bot's kit says its code failed on this decision and answered in its place: a
        fault of its own kind (no strike), kept with its first line for the organizer."""
        text = _one_line(error.message) or "(no message)"
        if error.where:
            text += f" at {_one_line(error.where)[:100]}"
        seat.bot_errors += 1
        if not seat.bot_error:
            seat.bot_error = text
        what = f"bot error on decision {self._record_number()}: {text}"
        if seat.bot_errors == 1:
            self._event(seat, what, warn=True)
        else:  # (the log has the first: a bot failing at every decision would write a line each)
            seat.note(what)
        notes.append(f"bot error: {text}")

    def _timed_out(self, seat: Seat, decision_id: int, legal: list[int], notes: list[str]) -> tuple[int, str, None, None, str]:
        seat.timeouts += 1
        seat.strikes += 1
        seat.bank_s = 0.0
        action = default_action(legal)
        seat.default_actions += 1
        message = timeout_text(action, seat.strikes, self.clocks.max_strikes)
        self._event(seat, f"timeout on decision {self._record_number()}")
        if seat.session is not None:
            seat.session.send_error(pb.ERROR_CODE_TIMEOUT, message, game_id=self.game_id, decision_id=decision_id,
                                    strikes=seat.strikes)
        notes.append("timeout: default action")
        if seat.strikes >= self.clocks.max_strikes:
            self._struck_out(seat)
        return action, "timeout", None, None, "; ".join(notes)

    def _strike_out(self, seat: Seat, legal: list[int], notes: list[str], status: str) -> tuple[int, str, None, None, str]:
        action = default_action(legal)
        seat.default_actions += 1
        notes.append("struck out: default action")
        self._struck_out(seat)
        return action, status, None, None, "; ".join(notes)

    def _struck_out(self, seat: Seat) -> None:
        seat.status = SeatStatus.STRUCK_OUT
        seat.policy = DefaultPolicy()
        message = struck_out_text(seat.strikes)
        self._event(seat, f"struck out: {message}", warn=True)
        if seat.session is not None:
            seat.session.send_error(pb.ERROR_CODE_STRUCK_OUT, message, game_id=self.game_id, strikes=seat.strikes)

    def _gone(self, seat: Seat, legal: list[int], notes: list[str]) -> tuple[int, str, None, None, str]:
        seat.status = SeatStatus.LEFT if seat.left_cleanly else SeatStatus.DISCONNECTED
        seat.policy = DefaultPolicy()
        seat.default_actions += 1
        why = ("its process exited" if seat.process_exited else "it closed its stream" if seat.left_cleanly
               else f"not back within {self.clocks.reconnect_grace_s:g} s")
        self._event(seat, f"gone ({why}): the default policy plays this seat", warn=True)
        notes.append(f"disconnected ({why}): default action")
        return default_action(legal), "disconnected", None, None, "; ".join(notes)

    # ------------------------------------------------------------------ the end

    def lost_messages(self) -> list[Outgoing]:
        """What a bot that was away when this (finished) game ended is told on its return:
        an Error GAME_LOST naming the game, then the game's GameEnd."""
        assert self._end is not None, "the game is not over"
        text = f"game {self.game_id} ended while you were away" + (
            f" (aborted: {self.abort_reason})" if self.abort_reason else "") + ": its GameEnd follows"
        error = pb.RefereeMessage(error=pb.Error(code=pb.ERROR_CODE_GAME_LOST, message=text, game_id=self.game_id))
        return [error, self._end]

    def _event(self, seat: Seat, what: str, *, warn: bool = False) -> None:
        seat.note(what)
        (log.warning if warn else log.info)("seat_event", seat=seat.index, bot=seat.name, what=what,
                                           hand=self.state.hand_number)

    def _finish(self, replay: Any, aborted: str) -> GameRecord:
        state = self.state
        self.over = True
        for seat in self.seats:
            seat.mailbox.close()
        try:
            end = framed("game_end", wire.game_end(state, self.game_id, aborted,
                                                   reveal_seed=not self.spec.shared_deal))
        except Exception:  # e.g. a total beyond the protocol's int64: the bots still learn the game ended
            log.exception("game_end_not_encodable")
            end = framed("game_end", pb.GameEnd(game_id=self.game_id,
                                                seed=0 if self.spec.shared_deal else state.seed & (2**64 - 1),
                                                aborted=aborted or "the result cannot be encoded in the protocol"))
        self._end = end
        self.aborted = aborted
        for seat in self.seats:
            if seat.session is not None:
                if aborted:
                    seat.session.send_error(self.abort_code, aborted_text(aborted), game_id=self.game_id)
                seat.session.send(end)
        record = GameRecord(
            game_id=self.game_id,
            result=state.result(),
            seats=tuple(seat.report() for seat in self.seats),
            replay_path=None,
            digest=state.digest(),
            aborted=aborted,
        )
        if replay is not None:
            try:
                self._record()
                path = replay.finish([_seat_entry(s) for s in self.seats], aborted=aborted)
            except Exception:
                log.exception("replay_not_written")
                replay.abort()
            else:
                record = GameRecord(record.game_id, record.result, record.seats, path, record.digest, record.aborted)
        log.info(
            "game_finished" if not aborted else "game_aborted",
            aborted=aborted or None,
            totals=list(state.result().totals),
            placings=list(state.result().placings),
            decisions=state.decisions,
            statuses=[str(s.status) for s in self.seats],
        )
        return record
