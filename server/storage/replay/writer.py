"""Writing replays: the referee's :class:`ReplayWriter` (a record per decision, written
through at each hand's end) and :func:`record_game` for in-process games (golden files,
tests, demos). Reads the wall clock only for ``started_at``."""

from __future__ import annotations

import contextvars
import datetime as _dt
import functools
import hashlib
import itertools
import os
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from server.engine import ACTIONS, DecisionKind, GameConfig, GameState
from server.storage.replay.compact import CompactWriter, decision_line, result_line
from server.storage.replay.format import (
    GENESIS,
    SCHEMA,
    V1_SUFFIX,
    ReplayUsageError,
    canonical_json,
    commit_file,
    event_json,
    hashed_line,
)

JsonDict = dict[str, Any]

REPLAY_TAP: contextvars.ContextVar[Callable[[ReplayWriter], Any] | None] = contextvars.ContextVar(
    "craits_replay_tap", default=None
)
"""While set (``--web`` sets it around the games it shows live, a referee worker around the
games of a tournament that does: ``server.storage.replay.relay``), each new
:class:`ReplayWriter` calls it with itself; what it returns gets ``decision(fields,
raw_events)`` after each decision, then ``finish(result_record)`` or ``abort()``, from
whatever thread plays the game. A context variable, so only the games started inside the
block that set it are seen (their tasks, and ``asyncio.to_thread``, copy the context). Unset,
a writer costs nothing more."""


_WRITERS = itertools.count(1)
"""Numbers the writers of this process, for their temporary files' names."""

_ACTION_TEXT = tuple("" if action is None else str(action) for action in ACTIONS)

# A decision record is written on every decision of every game, so its line is put together
# from pieces already in canonical JSON instead of going through a dict and the encoder
# (half the cost). A test in ``tests/replay/test_replay.py`` checks that every line written is
# exactly ``canonical_json`` of what it parses to, and hashes the same.
_ACTION_JSON = tuple(canonical_json(text) for text in _ACTION_TEXT)
_KIND_JSON = {kind: canonical_json(kind.name) for kind in DecisionKind}


@functools.lru_cache(maxsize=8192)
def _event_text(raw: tuple[Any, ...]) -> str:
    """:func:`event_json` of a raw engine event as canonical JSON; cached, as most events
    (a given seat playing a given card) recur in every game."""
    return canonical_json(event_json(raw))


@functools.lru_cache(maxsize=4096)
def _plain_line(action: int, status: str) -> str:
    """The format 2 line of a decision with no timings, no note and no wire facts (the referee's
    auto decisions, a third of a game's): the same few hundred lines recur in every game."""
    return decision_line(action, status, None, None)


@functools.lru_cache(maxsize=256)
def _string_text(value: str) -> str:
    return canonical_json(value)


def _int_text(value: int | None) -> str:
    return "null" if value is None else str(int(value))


def _decision_line(
    prev: str, n: int, hand: int, seat: int, kind: DecisionKind, legal: int, action: int, sent: int | None,
    status: str, think_us: int | None, transport_us: int | None, events: str, note: str, wire: str = "",
) -> tuple[str, str]:
    """``hashed_line`` of a decision record, from its fields (keys in canonical order)."""
    head = f'"action":{action:d},"events":{events},"hand":{hand:d}'
    tail = "".join((
        f'"kind":{_KIND_JSON[kind]},"legal":{legal:d},"n":{n:d},',
        f'"note":{canonical_json(note)},' if note else "",
        f'"prev":"{prev}","seat":{seat:d},',
        "" if sent is None else f'"sent":{int(sent):d},',
        f'"status":{_string_text(status)},"text":{_ACTION_JSON[action]},',
        f'"think_us":{_int_text(think_us)},"transport_us":{_int_text(transport_us)},"type":"decision"',
        f',"wire":{wire}' if wire else "",
    ))
    digest = hashlib.sha256(f"{{{head},{tail}}}".encode()).hexdigest()
    return f'{{{head},"hash":"{digest}",{tail}}}', digest


def _wire_text(wire: Mapping[str, Any]) -> str:
    """``canonical_json(wire)``; the usual decision's (its id and bank alone) put together directly."""
    if len(wire) == 2 and "id" in wire and "bank_ms" in wire:
        return f'{{"bank_ms":{int(wire["bank_ms"]):d},"id":{int(wire["id"]):d}}}'
    return canonical_json(wire)


def _utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------- writing


def _seat_entries(seats: Sequence[Any], players: int) -> list[JsonDict]:
    """Header seat entries from names, BotSpecs or mappings; never copies a token."""
    if len(seats) != players:
        raise ValueError(f"{len(seats)} seats given for a game of {players} players")
    out: list[JsonDict] = []
    for i, seat in enumerate(seats):
        if isinstance(seat, str):
            entry: JsonDict = {"bot": seat}
        elif isinstance(seat, Mapping):
            entry = {k: v for k, v in seat.items() if k not in ("token", "seat")}
            entry.setdefault("bot", entry.pop("name", f"seat {i}"))
        else:  # a BotSpec (duck-typed so this module does not force gamespec on callers)
            entry = {"bot": seat.name}
            if getattr(seat, "builtin", None):
                entry["via"] = "builtin"
                entry["builtin"] = seat.builtin
            elif getattr(seat, "command", None):
                entry["via"] = "command"
            else:
                entry["via"] = "remote"
        out.append({"seat": i, **entry})
    return out


def _clocks_entry(clocks: Any) -> JsonDict | None:
    if clocks is None:
        return None
    if isinstance(clocks, Mapping):
        return dict(clocks)
    return {
        "decision_ms": round(clocks.decision_s * 1000),
        "bank_ms": round(clocks.bank_s * 1000),
        "max_strikes": clocks.max_strikes,
        "reconnect_grace_ms": round(clocks.reconnect_grace_s * 1000),
    }


def _seat_report_entry(report: Any) -> JsonDict:
    if isinstance(report, Mapping):
        return dict(report)
    entry: JsonDict = {}
    for name in report.__dataclass_fields__:
        value = getattr(report, name)
        if name.endswith("_s") and isinstance(value, float):
            entry[name[:-2] + "_us"] = round(value * 1_000_000)
        else:
            entry[name] = str(value) if name == "status" else value
    return entry


def result_entry(state: GameState) -> JsonDict:
    """The engine's result of ``state`` as replay JSON (also what verify recomputes)."""
    res = state.result()
    return {
        "totals": list(res.totals),
        "placings": list(res.placings),
        "team_totals": None if res.team_totals is None else list(res.team_totals),
        "team_placings": None if res.team_placings is None else list(res.team_placings),
        "lower_wins": res.lower_wins,
        "pressure_totals": list(res.pressures),
        "hands": [
            {
                "number": h.number,
                "dealer": h.dealer,
                "reason": h.reason,
                "scores": list(h.scores),
                "pressures": list(h.pressures),
                "cards_left": [[str(c) for c in cards] for cards in h.cards_left],
            }
            for h in res.hands
        ],
        "decisions": state.decisions,
        "digest": state.digest(),
    }


class ReplayWriter:
    """Records one game as the referee plays it.

    Create it with the fresh :class:`GameState` (the writer reads new raw events from
    ``state.log``), call :meth:`decision` right after every ``state.apply()``, then
    :meth:`finish`. Records go to ``<path>.tmp`` and are moved to ``path`` only by
    ``finish``, so a file at the final path is always complete; :meth:`abort` (or
    leaving a ``with`` block by an exception) deletes the temporary file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        state: GameState,
        *,
        seats: Sequence[Any],
        game_id: str = "",
        tournament: str = "",
        clocks: Any = None,
        started_at: str | None = None,
        extra: Mapping[str, Any] | None = None,
        format: int | None = None,
    ) -> None:
        """``seats``: one bot name, BotSpec or mapping per seat. ``started_at``: None for now,
        "" to leave the time out (golden files must not change when regenerated). ``format``:
        2 (compact) or 1 (one hash-chained JSON line per record); by default the one the
        file's name says (``.jsonl`` is format 1, anything else, ``.jsonl.gz`` first, 2)."""
        if format is None:
            format = format_for(path)
        if format not in (1, 2):
            raise ValueError(f"replay format {format!r}: this writer writes 1 or 2")
        if state.decisions or state.game_over:
            raise ReplayUsageError("a ReplayWriter starts from a fresh game (no decision applied yet)")
        self.path = Path(path)
        # (a name of its own: a game played twice at once, a worker's stalled game given again,
        # must not write into the other's file; the last to finish is renamed into place)
        self.tmp_path = self.path.with_name(f"{self.path.name}.{os.getpid()}-{next(_WRITERS)}.tmp")
        self.state = state
        self._seen = 0
        self._n = 0
        self._prev = GENESIS
        self._done = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._compact: CompactWriter | None = None
        self._out: TextIO | None = None
        if format == 2:
            self._compact = CompactWriter(self.path, self.tmp_path)
        else:
            self._out = self.tmp_path.open("w", encoding="utf-8", newline="\n")
        header: JsonDict = {
            "type": "header",
            "schema": SCHEMA,
            "game_id": game_id,
            "tournament": tournament,
            "config": state.config.to_dict(),
            "seed": state.seed,
            "seats": _seat_entries(seats, state.n),
        }
        clocks_entry = _clocks_entry(clocks)
        if clocks_entry is not None:
            header["clocks"] = clocks_entry
        stamp = _utc_now() if started_at is None else started_at
        if stamp:
            header["started_at"] = stamp
        if extra:
            header["extra"] = dict(extra)
        self._tap: Any = None
        try:
            self.start_events = [event_json(e) for e in self._take_new_events()]
            if self._compact is not None:  # (format 2 keeps no start record: the seed gives it)
                self._compact.header(header)
                self._compact.flush()
            else:
                self._write(header)
                self._write({"type": "start", "events": self.start_events})
        except BaseException:
            self.abort()
            raise
        self._snapshot()
        self.game_id, self.header = game_id, header
        tap = REPLAY_TAP.get()
        if tap is not None:
            try:
                self._tap = tap(self)
            except Exception:
                _tap_failed()

    @classmethod
    def for_spec(
        cls, spec: Any, state: GameState, path: str | os.PathLike[str] | None = None
    ) -> ReplayWriter:
        """A writer for a :class:`server.spec.GameSpec` (path defaults to ``spec.replay_path``)."""
        target = path if path is not None else spec.replay_path
        if target is None:
            raise ValueError(f"game {spec.game_id}: no replay path given")
        return cls(
            target,
            state,
            seats=spec.seats,
            game_id=spec.game_id,
            tournament=spec.tournament,
            clocks=spec.clocks,
        )

    def __enter__(self) -> ReplayWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self.abort()
        elif not self._done:
            self.finish()

    # ---- recording

    def _snapshot(self) -> None:
        """Remember the decision now pending, to record it once it has been applied. (The legal
        list is the engine's own, kept until its next ``apply`` and never changed: no copy.)"""
        state = self.state
        self._pending = None if state.game_over else (state.to_act, state.kind, state.legal_action_ids())
        self._pending_hand = state.hand_number

    def _take_new_events(self) -> list[Any]:
        """The raw engine events logged since the last call."""
        log = self.state.log
        events = log[self._seen :]
        self._seen = len(log)
        return events

    def _write(self, record: JsonDict) -> None:
        """Append a record other than a decision, and flush. (Decisions, written by
        :meth:`decision`, are flushed with the last one of their hand: a write per decision
        would cost the referee time on every round trip. A referee killed mid-hand leaves its
        ``.tmp`` up to the last hand it finished.)"""
        if self._out is None:
            raise ReplayUsageError(f"replay {self.path} is already finished or aborted")
        record["prev"] = self._prev
        line, record["hash"] = hashed_line(record)
        self._prev = record["hash"]
        self._out.write(line + "\n")
        self._out.flush()

    def decision(
        self,
        seat: int,
        kind: DecisionKind | str | int | None,
        action_id: int,
        status: str = "ok",
        think_ms: float | None = None,
        transport_ms: float | None = None,
        note: str = "",
        wire: Mapping[str, Any] | None = None,
    ) -> None:
        """Record the decision just applied: who, what kind, which action, how it went.

        ``status`` says how the action was obtained ("ok", "auto" for a single legal action
        the referee applied itself, "timeout", "illegal", "default", ...); ``note`` may carry
        detail (e.g. the illegal text the bot sent before the default action was applied);
        ``wire``, for a decision asked of a bot, what its requests carried that the engine
        does not derive (docs/replay-format.md, ``wire``).
        """
        pending = self._pending
        if pending is None:
            raise ReplayUsageError("decision() after the last decision of the game")
        n = self._n + 1
        if self.state.decisions != n:
            raise ReplayUsageError(
                f"decision() must follow exactly one state.apply(): the game has applied "
                f"{self.state.decisions} decisions, the replay has {self._n} before this one"
            )
        p_seat, p_kind, legal = pending
        if seat != p_seat:
            raise ReplayUsageError(f"decision {n} belonged to seat {p_seat}, not seat {seat}")
        if kind is not p_kind and kind is not None:
            named = (
                kind.name
                if isinstance(kind, DecisionKind)
                else DecisionKind(kind).name
                if isinstance(kind, int)
                else kind
            )
            if named != p_kind.name:
                raise ReplayUsageError(f"decision {n} was {p_kind.name}, not {named}")
        if not isinstance(status, str) or not status:
            raise ReplayUsageError(f"status must be a non-empty string, got {status!r}")
        if action_id in legal:
            applied, sent = action_id, None
        else:
            applied = _applied_id(action_id, legal)  # type: ignore[assignment]
            if applied is None:
                raise ReplayUsageError(
                    f"decision {n}: action {action_id!r} was not legal, so the game cannot have applied it"
                )
            sent = None if applied == action_id else action_id
        out, compact, tap = self._out, self._compact, self._tap
        if out is None and (compact is None or compact.closed):
            raise ReplayUsageError(f"replay {self.path} is already finished or aborted")
        self._n = n
        hand = self._pending_hand
        think_us = None if think_ms is None else round(think_ms * 1000)
        transport_us = None if transport_ms is None else round(transport_ms * 1000)
        if compact is not None:  # (format 2 keeps no events: the reader re-derives them)
            if think_us is None and transport_us is None and sent is None and not note and not wire:
                compact.line(_plain_line(applied, status))
            else:
                compact.line(decision_line(applied, status, think_us, transport_us, sent, note, wire))
            raw_events: list[Any] = [] if tap is None else self._take_new_events()
        else:
            assert out is not None
            raw_events = self._take_new_events()
            events = "[" + ",".join([_event_text(raw) for raw in raw_events]) + "]"
            line, self._prev = _decision_line(
                self._prev, n, hand, seat, p_kind, len(legal), applied, sent,
                status, think_us, transport_us, events, note,
                _wire_text(wire) if wire else "",
            )
            out.write(line + "\n")
        if tap is not None:
            fields = (n, hand, seat, p_kind.name, applied, _ACTION_TEXT[applied], status, think_us, transport_us)
            self._tell_tap("decision", fields, raw_events)
        self._snapshot()
        if self._pending_hand != hand or self._pending is None:
            if compact is not None:
                compact.flush()
            else:
                assert out is not None
                out.flush()

    def _tell_tap(self, method: str, *args: Any) -> None:
        """Pass a record to the tap; a tap that fails is dropped and never stops the game."""
        if self._tap is None:
            return
        try:
            getattr(self._tap, method)(*args)
        except Exception:
            self._tap = None
            _tap_failed()

    def finish(self, outcome: Any = None, *, aborted: str = "") -> Path:
        """Write the result record and move the file to its final name; return that path.

        ``outcome`` may be a GameRecord (its seat reports and ``aborted`` are kept), a
        sequence of SeatReports or mappings, or None. Scores always come from the engine.
        A game that is not over is recorded as aborted.
        """
        if self.state.decisions != self._n:
            raise ReplayUsageError(
                f"the game applied {self.state.decisions} decisions but only {self._n} were recorded"
            )
        reports: Sequence[Any] = ()
        if outcome is not None and hasattr(outcome, "seats") and hasattr(outcome, "result"):
            reports = outcome.seats
            aborted = aborted or getattr(outcome, "aborted", "")
        elif isinstance(outcome, Sequence) and not isinstance(outcome, str):
            reports = outcome
        if not self.state.game_over and not aborted:
            aborted = "the game was not played to the end"
        record: JsonDict = {"type": "result", **result_entry(self.state)}
        if reports:
            record["seat_reports"] = [_seat_report_entry(r) for r in reports]
        if aborted:
            record["aborted"] = aborted
        if self._compact is not None:
            if self._compact.closed:
                raise ReplayUsageError(f"replay {self.path} is already finished or aborted")
            self._compact.line(result_line(record))
            self._tell_tap("finish", record)
            self._tap = None
            self._compact.close()
            self._done = True
            return self.path
        self._write(record)
        self._tell_tap("finish", record)
        self._tap = None
        out = self._out
        assert out is not None
        self._out = None
        commit_file(out, self.tmp_path, self.path)
        self._done = True
        return self.path

    def abort(self) -> None:
        """Drop the game: close and delete the temporary file (no replay is left)."""
        if self._out is not None:
            self._out.close()
            self._out = None
        compact = getattr(self, "_compact", None)
        if compact is not None:
            compact.abort()
        self.tmp_path.unlink(missing_ok=True)
        self._done = True
        if getattr(self, "_tap", None) is not None:
            self._tell_tap("abort")
            self._tap = None


def format_for(path: str | os.PathLike[str]) -> int:
    """The format a replay named ``path`` is written in: 1 for ``*.jsonl``, else 2 (new games
    are named ``*.jsonl.gz``)."""
    return 1 if Path(path).name.endswith(V1_SUFFIX) else 2


def _tap_failed() -> None:
    from server.logging import get_logger

    get_logger().exception("replay_tap_failed")


def _applied_id(action_id: int, legal: Sequence[int]) -> int | None:
    """The id the engine applies for ``action_id``: itself if legal, the same play without
    "one card" if only the announcement was out of place (rule 7.1: it is ignored), else None."""
    if action_id in legal:
        return action_id
    if isinstance(action_id, int) and 0 <= action_id < len(ACTIONS):
        action = ACTIONS[action_id]
        if action is not None and action.announce and action_id - 1 in legal:
            return action_id - 1
    return None


Policy = Callable[[GameState, random.Random], int]


def random_policy(state: GameState, rng: random.Random) -> int:
    """Uniform over the legal action ids (announcements included, so some are missed)."""
    return rng.choice(state.legal_action_ids())


def record_game(
    path: str | os.PathLike[str],
    config: GameConfig,
    seed: int,
    *,
    policy: Policy = random_policy,
    policy_seed: int | None = None,
    seats: Sequence[Any] | None = None,
    game_id: str = "",
    tournament: str = "",
    started_at: str | None = "",
    format: int | None = None,
) -> GameState:
    """Play a whole game in-process with ``policy`` and record it (golden files, tests, demos).

    Deterministic by default: the policy draws from ``Random(policy_seed or seed)``, no
    timings and no timestamp are written, so the same arguments give the same bytes.
    """
    state = GameState(config, seed)
    rng = random.Random(seed if policy_seed is None else policy_seed)
    names = seats if seats is not None else [f"random-{i}" for i in range(config.players)]
    with ReplayWriter(
        path,
        state,
        seats=names,
        game_id=game_id or Path(path).name.split(".")[0],
        tournament=tournament,
        started_at=started_at,
        format=format,
    ) as writer:
        while (decision := state.decision) is not None:
            legal = state.legal_action_ids()
            action = legal[0] if len(legal) == 1 else policy(state, rng)
            state.apply(action)
            writer.decision(decision.seat, decision.kind, action, "auto" if len(legal) == 1 else "ok")
    return state


