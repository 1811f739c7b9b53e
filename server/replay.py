"""Replays: one JSON Lines file per game, hash-chained, verifiable by re-simulation.

A replay is the seed plus the decisions (a game is fully determined by its
configuration, its seed and the decisions made), with every engine event and
every bot timing recorded beside them so a reader needs no engine, and a SHA-256
chain so any edit is detected. The format is documented in docs/replay-format.md.

This is an edge module: it does file I/O and reads the wall clock (for
``started_at``); the engine stays pure. The referee writes with
:class:`ReplayWriter`; ``craits replay verify|show|html`` read with
:func:`read_replay`, :func:`verify_replay`, :func:`format_walkthrough` and
:func:`render_html`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import functools
import hashlib
import html
import json
import os
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from server.engine import ACTIONS, CARDS, DecisionKind, Flags, GameConfig, GameState, Suit, make_config
from server.engine.errors import ConfigError
from server.errors import UserError

SCHEMA = "craits-replay/1"
GENESIS = "0" * 64
"""The ``prev`` of the header: there is no record before it."""
REPLAY_SUFFIX = ".jsonl"
STATUSES = ("ok", "auto", "bank", "timeout", "illegal", "malformed", "default", "disconnected")
"""Decision statuses the project uses (documented in docs/replay-format.md); others are
accepted so a newer referee can add one without breaking older readers."""

_VIEWER_DIR = Path(__file__).with_name("viewer")

JsonDict = dict[str, Any]


# --------------------------------------------------------------------------- errors


class ReplayError(Exception):
    """A replay that cannot be read or does not verify; says which file, which record, what."""

    def __init__(self, path: str | os.PathLike[str], record: int | None, message: str) -> None:
        self.path = str(path)
        self.record = record
        self.message = message
        where = f"{self.path}: record {record}" if record is not None else self.path
        super().__init__(f"{where}: {message}")


class ReplayUsageError(RuntimeError):
    """The writer was driven out of order (a bug in the caller, not in the game)."""


# --------------------------------------------------------------------------- canonical form


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """The one text a record is hashed as: sorted keys, no spaces, UTF-8 kept as is."""
    return _CANONICAL.encode(value)


def record_hash(record: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``record`` without its ``hash`` field."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def hashed_line(record: Mapping[str, Any]) -> tuple[str, str]:
    """``(canonical_json(record + hash), hash)`` for a record without its ``hash``, encoding
    the record once: the hash is taken over the canonical JSON of the keys before and
    after where ``hash`` sorts, joined, and the line is the same two parts around it.
    (Canonical JSON of a dict is its sorted ``"key":value`` pairs joined by commas, so
    the parts concatenate exactly.)"""
    head = _CANONICAL.encode({k: v for k, v in record.items() if k < "hash"})[1:-1]
    tail = _CANONICAL.encode({k: v for k, v in record.items() if k > "hash"})[1:-1]
    digest = hashlib.sha256(f"{{{head}{',' if head and tail else ''}{tail}}}".encode()).hexdigest()
    parts = [part for part in (head, f'"hash":"{digest}"', tail) if part]
    return "{" + ",".join(parts) + "}", digest


def chain_records(records: Iterable[Mapping[str, Any]]) -> list[JsonDict]:
    """Set ``prev`` and ``hash`` on each record in order (for writers and tools that edit replays)."""
    out: list[JsonDict] = []
    prev = GENESIS
    for rec in records:
        body = {k: v for k, v in rec.items() if k not in ("hash", "prev")}
        body["prev"] = prev
        body["hash"] = prev = record_hash(body)
        out.append(body)
    return out


def write_records(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``records`` as a replay file, re-chaining the hashes (tests and repair tools)."""
    target = Path(path)
    with target.open("w", encoding="utf-8", newline="\n") as out:
        for rec in chain_records(records):
            out.write(canonical_json(rec) + "\n")
    return target


def event_json(raw: Sequence[Any]) -> list[Any]:
    """An engine raw event as JSON: [kind, seat, [card codes], suit or -1, value]."""
    kind, seat, cards, suit, value = raw
    return [kind, seat, list(cards), suit, value]


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


@functools.lru_cache(maxsize=256)
def _string_text(value: str) -> str:
    return canonical_json(value)


def _int_text(value: int | None) -> str:
    return "null" if value is None else str(int(value))


def _decision_line(
    prev: str, n: int, hand: int, seat: int, kind: DecisionKind, legal: int, action: int, sent: int | None,
    status: str, think_us: int | None, transport_us: int | None, events: str, note: str,
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
    ))
    digest = hashlib.sha256(f"{{{head},{tail}}}".encode()).hexdigest()
    return f'{{{head},"hash":"{digest}",{tail}}}', digest


def _micros(ms: float | None) -> int | None:
    """Milliseconds (float) to whole microseconds: every number in a replay is an integer,
    so the canonical JSON is the same in any language."""
    return None if ms is None else round(ms * 1000)


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
    ) -> None:
        """``seats``: one bot name, BotSpec or mapping per seat. ``started_at``: None for now,
        "" to leave the time out (golden files must not change when regenerated)."""
        if state.decisions or state.game_over:
            raise ReplayUsageError("a ReplayWriter starts from a fresh game (no decision applied yet)")
        self.path = Path(path)
        self.tmp_path = self.path.with_name(self.path.name + ".tmp")
        self.state = state
        self._seen = 0
        self._n = 0
        self._prev = GENESIS
        self._done = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._out: TextIO | None = self.tmp_path.open("w", encoding="utf-8", newline="\n")
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
        try:
            self._write(header)
            self._write({"type": "start", "events": [event_json(e) for e in self._take_new_events()]})
        except BaseException:
            self.abort()
            raise
        self._snapshot()

    @classmethod
    def for_spec(
        cls, spec: Any, state: GameState, path: str | os.PathLike[str] | None = None
    ) -> ReplayWriter:
        """A writer for a :class:`server.gamespec.GameSpec` (path defaults to ``spec.replay_path``)."""
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
        """Remember the decision now pending, to record it once it has been applied."""
        decision = self.state.decision
        self._pending = (
            None if decision is None else (decision.seat, decision.kind, tuple(self.state.legal_action_ids()))
        )
        self._pending_hand = self.state.hand_number

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
    ) -> None:
        """Record the decision just applied: who, what kind, which action, how it went.

        ``status`` says how the action was obtained ("ok", "auto" for a single legal action
        the referee applied itself, "timeout", "illegal", "default", ...); ``note`` may carry
        detail (e.g. the illegal text the bot sent before the default action was applied).
        """
        if self._pending is None:
            raise ReplayUsageError("decision() after the last decision of the game")
        if self.state.decisions != self._n + 1:
            raise ReplayUsageError(
                f"decision() must follow exactly one state.apply(): the game has applied "
                f"{self.state.decisions} decisions, the replay has {self._n} before this one"
            )
        p_seat, p_kind, legal = self._pending
        if seat != p_seat:
            raise ReplayUsageError(f"decision {self._n + 1} belonged to seat {p_seat}, not seat {seat}")
        if kind is not None and kind is not p_kind:
            named = (
                kind.name
                if isinstance(kind, DecisionKind)
                else DecisionKind(kind).name
                if isinstance(kind, int)
                else kind
            )
            if named != p_kind.name:
                raise ReplayUsageError(f"decision {self._n + 1} was {p_kind.name}, not {named}")
        if not isinstance(status, str) or not status:
            raise ReplayUsageError(f"status must be a non-empty string, got {status!r}")
        applied = _applied_id(action_id, legal)
        if applied is None:
            raise ReplayUsageError(
                f"decision {self._n + 1}: action {action_id!r} was not legal, so the game cannot have applied it"
            )
        out = self._out
        if out is None:
            raise ReplayUsageError(f"replay {self.path} is already finished or aborted")
        self._n += 1
        events = "[" + ",".join([_event_text(raw) for raw in self._take_new_events()]) + "]"
        hand = self._pending_hand
        line, self._prev = _decision_line(
            self._prev, self._n, hand, seat, p_kind, len(legal), applied, None if applied == action_id else action_id,
            status, _micros(think_ms), _micros(transport_ms), events, note,
        )
        out.write(line + "\n")
        self._snapshot()
        if self._pending_hand != hand or self._pending is None:
            out.flush()

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
        self._write(record)
        out = self._out
        assert out is not None
        out.flush()
        os.fsync(out.fileno())
        out.close()
        self._out = None
        os.replace(self.tmp_path, self.path)
        _fsync_dir(self.path.parent)
        self._done = True
        return self.path

    def abort(self) -> None:
        """Drop the game: close and delete the temporary file (no replay is left)."""
        if self._out is not None:
            self._out.close()
            self._out = None
        self.tmp_path.unlink(missing_ok=True)
        self._done = True


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


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # not every platform can open a directory
        return
    try:
        with contextlib.suppress(OSError):  # not every file system syncs a directory
            os.fsync(fd)
    finally:
        os.close(fd)


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
    ) as writer:
        while (decision := state.decision) is not None:
            legal = state.legal_action_ids()
            action = legal[0] if len(legal) == 1 else policy(state, rng)
            state.apply(action)
            writer.decision(decision.seat, decision.kind, action, "auto" if len(legal) == 1 else "ok")
    return state


# --------------------------------------------------------------------------- reading


def config_from_dict(data: Mapping[str, Any]) -> GameConfig:
    """Rebuild (and re-validate) a configuration from ``GameConfig.to_dict()``.

    Flags at their default value are left out, since a preset may refuse a flag it does
    not take even at its default (crazy-eights takes ``decks`` alone)."""
    defaults = Flags()
    flags = {k: v for k, v in dict(data.get("flags", {})).items() if getattr(defaults, k, None) != v}
    return make_config(data["preset"], data["players"], **flags)


@dataclass(frozen=True)
class Replay:
    """A replay as read from disk: the header, the start record, the decisions, the result."""

    path: Path
    header: JsonDict
    start: JsonDict
    decisions: tuple[JsonDict, ...]
    result: JsonDict
    records: tuple[JsonDict, ...] = field(repr=False)

    @property
    def config(self) -> GameConfig:
        return config_from_dict(self.header["config"])

    @property
    def seed(self) -> int:
        return int(self.header["seed"])

    @property
    def game_id(self) -> str:
        return str(self.header.get("game_id", ""))

    @property
    def bots(self) -> list[str]:
        return [str(s.get("bot", f"seat {i}")) for i, s in enumerate(self.header["seats"])]

    @property
    def aborted(self) -> str:
        return str(self.result.get("aborted", ""))


_REQUIRED = {
    "header": ("schema", "config", "seed", "seats"),
    "start": ("events",),
    "decision": ("n", "seat", "kind", "legal", "action", "status", "events"),
    "result": ("totals", "placings", "hands", "digest"),
}

MAX_LINE_BYTES = 1 << 20
"""The longest line a reader accepts. A real record is a few KB (the longest golden line
is under 3 KB); the limit keeps a damaged file from being read whole into memory."""

MAX_RECORDS = 1_000_000
"""The most records a reader accepts. The engine has no hard cap on decisions, but random
play that draws voluntarily at every chance was measured at ~260,000 decisions (see
tests/engine/play.py), so a file with more records than this is not a game."""

_INT_BOUND = 2**64
"""Integers in a replay stay within 64 bits, so every language reads them the same way."""

_NESTING_LIMIT = 32
"""Free-form fields (``extra``, seat entries, clocks, seat reports) nest at most this deep;
deeper values could overflow the JSON encoder when the viewer page embeds them."""

_SEAT_REPORT_INTS = (
    "decisions", "timeouts", "strikes", "illegal", "malformed", "disconnects",
    "default_actions", "think_us", "transport_us", "stale",
)  # fmt: skip


class _FieldError(Exception):
    """A field of the wrong type or range; load_records adds the file and record number."""


def _shown(value: Any) -> str:
    """A short description of a bad value for an error message (never the whole value)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return json.dumps(value[:40] + ("..." if len(value) > 40 else ""), ensure_ascii=False)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_BOUND:
        return "an integer of more than 64 bits"
    return json.dumps(value)


def _check_int(value: Any, where: str, low: int = -_INT_BOUND, high: int = _INT_BOUND) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _FieldError(f"{where} must be a JSON integer, not {_shown(value)}")
    if abs(value) >= _INT_BOUND:
        raise _FieldError(f"{where} must fit in 64 bits, not {_shown(value)}")
    if not low <= value <= high:
        raise _FieldError(f"{where} must be from {low} to {high}, not {value}")
    return value


def _check_str(value: Any, where: str, *, nonempty: bool = False) -> str:
    if not isinstance(value, str) or (nonempty and not value):
        raise _FieldError(f"{where} must be a {'non-empty ' if nonempty else ''}JSON string, not {_shown(value)}")
    return value


def _check_object(value: Any, where: str) -> JsonDict:
    if not isinstance(value, dict):
        raise _FieldError(f"{where} must be a JSON object, not {_shown(value)}")
    _check_shallow(value, where)
    return value


def _check_shallow(value: Any, where: str) -> None:
    """Refuse a value nested deeper than _NESTING_LIMIT (iteratively: no recursion to overflow)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > _NESTING_LIMIT:
            raise _FieldError(f"{where} is nested more than {_NESTING_LIMIT} levels deep")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def _check_int_list(value: Any, where: str, length: int | None = None, low: int = -_INT_BOUND) -> list[int]:
    if not isinstance(value, list):
        raise _FieldError(f"{where} must be a JSON array of integers, not {_shown(value)}")
    if length is not None and len(value) != length:
        raise _FieldError(f"{where} must have {length} entries (one per seat), not {len(value)}")
    for i, item in enumerate(value):
        _check_int(item, f"{where}[{i}]", low)
    return value


def _check_events(value: Any, where: str, players: int) -> None:
    """Each event is [kind, seat, [card, ...], suit, value] with seat, cards and suit in range."""
    if not isinstance(value, list):
        raise _FieldError(f"{where} must be a JSON array of events, not {_shown(value)}")
    for i, event in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(event, list) or len(event) != 5:
            raise _FieldError(f"{at} must be an event [kind, seat, [card, ...], suit, value], not {_shown(event)}")
        kind, seat, cards, suit, amount = event
        _check_str(kind, f"{at} kind")
        _check_int(seat, f"{at} seat", -1, players - 1)
        if not isinstance(cards, list):
            raise _FieldError(f"{at} cards must be a JSON array, not {_shown(cards)}")
        for j, card in enumerate(cards):
            _check_int(card, f"{at} card {j}", 0, len(CARDS) - 1)
        _check_int(suit, f"{at} suit", -1, 3)
        _check_int(amount, f"{at} value")


def _check_header(rec: JsonDict) -> int:
    """Check the header's fields; return the number of players (the range of every seat after it)."""
    _check_str(rec["schema"], "header field schema")
    if rec["schema"] != SCHEMA:
        raise _FieldError(f"unsupported schema {rec['schema']!r} (this reader knows {SCHEMA})")
    for key in ("game_id", "tournament", "started_at"):
        if key in rec:
            _check_str(rec[key], f"header field {key}")
    config = _check_object(rec["config"], "header field config")
    _check_str(config.get("preset"), "header field config.preset")
    _check_int(config.get("players"), "header field config.players", 1, 64)
    if "flags" in config:
        _check_object(config["flags"], "header field config.flags")
    try:
        players = config_from_dict(config).players
    except (ConfigError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise _FieldError(f"the header's configuration is not a valid game: {err}") from None
    _check_int(rec["seed"], "header field seed")
    seats = rec["seats"]
    if not isinstance(seats, list):
        raise _FieldError(f"header field seats must be a JSON array, not {_shown(seats)}")
    if len(seats) != players:
        raise _FieldError(f"header field seats lists {len(seats)} seats for a game of {players} players")
    for i, seat in enumerate(seats):
        entry = _check_object(seat, f"header field seats[{i}]")
        if "seat" in entry and _check_int(entry["seat"], f"header field seats[{i}].seat") != i:
            raise _FieldError(f"header field seats[{i}].seat must be {i}, not {entry['seat']}")
        for key in ("bot", "via", "builtin"):
            if key in entry:
                _check_str(entry[key], f"header field seats[{i}].{key}")
    if "clocks" in rec:
        clocks = _check_object(rec["clocks"], "header field clocks")
        for key in ("decision_ms", "bank_ms", "max_strikes"):
            if key in clocks:
                _check_int(clocks[key], f"header field clocks.{key}", 0)
    if "extra" in rec:
        _check_object(rec["extra"], "header field extra")
    return players


def _check_decision(rec: JsonDict, expected_n: int, players: int) -> None:
    if _check_int(rec["n"], "decision field n") != expected_n:
        raise _FieldError(f"decision numbered {rec['n']}, expected {expected_n}")
    if "hand" in rec:
        _check_int(rec["hand"], "decision field hand", 0)
    _check_int(rec["seat"], "decision field seat", 0, players - 1)
    _check_str(rec["kind"], "decision field kind")
    _check_int(rec["legal"], "decision field legal", 0, len(ACTIONS))
    _check_int(rec["action"], "decision field action")  # its range is checked against the legal ones
    if "sent" in rec:
        _check_int(rec["sent"], "decision field sent")
    _check_str(rec["status"], "decision field status", nonempty=True)
    for key in ("text", "note"):
        if key in rec:
            _check_str(rec[key], f"decision field {key}")
    for key in ("think_us", "transport_us"):
        if rec.get(key) is not None:
            _check_int(rec[key], f"decision field {key}")
    _check_events(rec["events"], "decision field events", players)


def _check_result(rec: JsonDict, players: int) -> None:
    _check_int_list(rec["totals"], "result field totals", players)
    _check_int_list(rec["placings"], "result field placings", players, low=1)
    if "pressure_totals" in rec:
        _check_int_list(rec["pressure_totals"], "result field pressure_totals", players)
    teams = [rec.get(key) for key in ("team_totals", "team_placings")]
    if any(team is not None for team in teams):
        totals = _check_int_list(teams[0], "result field team_totals")
        _check_int_list(teams[1], "result field team_placings", len(totals), low=1)
    if "lower_wins" in rec and not isinstance(rec["lower_wins"], bool):
        raise _FieldError(f"result field lower_wins must be true or false, not {_shown(rec['lower_wins'])}")
    hands = rec["hands"]
    if not isinstance(hands, list):
        raise _FieldError(f"result field hands must be a JSON array, not {_shown(hands)}")
    for i, hand in enumerate(hands):
        at = f"result field hands[{i}]"
        if not isinstance(hand, dict):
            raise _FieldError(f"{at} must be a JSON object, not {_shown(hand)}")
        for key in ("number", "dealer", "reason", "scores", "pressures"):
            if key not in hand:
                raise _FieldError(f"{at} lacks {key}")
        _check_int(hand["number"], f"{at}.number")
        _check_int(hand["dealer"], f"{at}.dealer", 0, players - 1)
        _check_str(hand["reason"], f"{at}.reason")
        _check_int_list(hand["scores"], f"{at}.scores", players)
        _check_int_list(hand["pressures"], f"{at}.pressures", players)
        left = hand.get("cards_left", [[]] * players)
        if not isinstance(left, list) or len(left) != players:
            raise _FieldError(f"{at}.cards_left must be a JSON array with one entry per seat")
        for seat, cards in enumerate(left):
            if not isinstance(cards, list) or not all(isinstance(c, str) for c in cards):
                raise _FieldError(f"{at}.cards_left[{seat}] must be a JSON array of card texts")
    if "decisions" in rec:
        _check_int(rec["decisions"], "result field decisions", 0)
    _check_str(rec["digest"], "result field digest")
    if "aborted" in rec:
        _check_str(rec["aborted"], "result field aborted")
    if "seat_reports" in rec:
        reports = rec["seat_reports"]
        if not isinstance(reports, list):
            raise _FieldError(f"result field seat_reports must be a JSON array, not {_shown(reports)}")
        for i, report in enumerate(reports):
            at = f"result field seat_reports[{i}]"
            entry = _check_object(report, at)
            for key in ("bot", "status"):
                if key in entry:
                    _check_str(entry[key], f"{at}.{key}")
            for key in _SEAT_REPORT_INTS:
                if entry.get(key) is not None:
                    _check_int(entry[key], f"{at}.{key}")


class _RecordChecker:
    """Checks each record's place in the file (header, start, decisions 1.., result last)
    and its fields' types and ranges, so that whatever the reader accepts can be shown."""

    def __init__(self) -> None:
        self.players = 0
        self.decisions = 0
        self.finished = False

    def check(self, number: int, rec: JsonDict) -> None:
        kind = rec["type"]
        if self.finished:
            raise _FieldError("a record after the result record")
        if number == 1:
            if kind != "header":
                raise _FieldError(f"the first record must be the header, not {kind!r}")
            self.players = _check_header(rec)
        elif number == 2:
            if kind != "start":
                raise _FieldError(f"truncated or malformed: no start record after the header (found {kind!r})")
            _check_events(rec["events"], "start field events", self.players)
        elif kind == "decision":
            _check_decision(rec, self.decisions + 1, self.players)
            self.decisions += 1
        elif kind == "result":
            _check_result(rec, self.players)
            self.finished = True
        else:
            raise _FieldError(f"unexpected {kind} record")


def _lines(target: Path) -> Iterator[bytes]:
    """The file's lines (each with its end of line, the last perhaps without), one at a time,
    none longer than MAX_LINE_BYTES: memory stays bounded whatever the file holds."""
    try:
        handle = target.open("rb")
    except FileNotFoundError:
        raise ReplayError(target, None, "no such file") from None
    except IsADirectoryError:
        raise ReplayError(target, None, "is a directory, not a replay file") from None
    except OSError as err:
        raise ReplayError(target, None, f"cannot read: {err.strerror}") from None
    with handle:
        number = 0
        while True:
            try:
                line = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as err:
                raise ReplayError(target, number + 1, f"cannot read: {err.strerror}") from None
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE_BYTES:
                raise ReplayError(
                    target, number, f"line longer than {MAX_LINE_BYTES} bytes: not a replay record"
                )
            if number > MAX_RECORDS:
                raise ReplayError(
                    target, number, f"more than {MAX_RECORDS} records: longer than any game, not a replay"
                )
            yield line


def load_records(path: str | os.PathLike[str]) -> list[JsonDict]:
    """Parse a replay file into records, line by line; check the hash chain, each record's
    fields (type and range) and its place in the file, and that the file is complete."""
    target = Path(path)
    records: list[JsonDict] = []
    prev = GENESIS
    checker = _RecordChecker()
    for number, raw in enumerate(_lines(target), start=1):
        complete = raw.endswith(b"\n")
        cut_off = ReplayError(target, number, "truncated: the last line is cut off (no end of line)")
        try:
            rec = json.loads(raw.decode("utf-8"))
        except RecursionError:
            raise ReplayError(target, number, "not a JSON record: nested too deeply") from None
        except (UnicodeDecodeError, ValueError) as err:  # ValueError: JSON errors, ints over 4300 digits
            if not complete:
                raise cut_off from None
            raise ReplayError(target, number, f"not a JSON record: {err}") from None
        if not isinstance(rec, dict):
            raise ReplayError(target, number, f"not a JSON object but {type(rec).__name__}")
        kind = rec.get("type")
        if not isinstance(kind, str) or kind not in _REQUIRED:
            raise ReplayError(target, number, f"unknown record type {_shown(kind)}")
        missing = [k for k in (*_REQUIRED[kind], "prev", "hash") if k not in rec]
        if missing:
            raise ReplayError(target, number, f"{kind} record lacks {', '.join(missing)}")
        try:
            computed = record_hash(rec)
        except (RecursionError, ValueError):
            raise ReplayError(target, number, "not a JSON record: nested too deeply") from None
        if rec["hash"] != computed:
            raise ReplayError(
                target,
                number,
                f"hash mismatch: the record was changed after it was written "
                f"(stored {str(rec['hash'])[:16]}..., computed {computed[:16]}...)",
            )
        if rec["prev"] != prev:
            raise ReplayError(
                target,
                number,
                f"chain broken: prev is {str(rec['prev'])[:16]}... but the previous record's hash "
                f"is {prev[:16]}... (a record was removed, inserted or reordered)",
            )
        prev = rec["hash"]
        try:
            checker.check(number, rec)
        except _FieldError as err:
            raise ReplayError(target, number, str(err)) from None
        if not complete:
            raise cut_off
        records.append(rec)
    if not records:
        raise ReplayError(target, None, "truncated: the file is empty")
    return records


def read_replay(path: str | os.PathLike[str]) -> Replay:
    """Read and check a replay (chain, record order, field types, completeness); no re-simulation."""
    target = Path(path)
    records = load_records(target)
    if len(records) < 2:
        raise ReplayError(target, None, "truncated or malformed: no start record after the header")
    if records[-1]["type"] != "result":
        raise ReplayError(
            target,
            None,
            f"truncated: the file ends after record {len(records)} without a result record",
        )
    return Replay(target, records[0], records[1], tuple(records[2:-1]), records[-1], tuple(records))


# --------------------------------------------------------------------------- verifying


@dataclass(frozen=True)
class VerifySummary:
    path: Path
    game_id: str
    preset: str
    players: int
    decisions: int
    hands: int
    totals: tuple[int, ...]
    digest: str
    aborted: str = ""

    def line(self) -> str:
        end = f"aborted ({self.aborted})" if self.aborted else "totals " + " ".join(map(str, self.totals))
        return (
            f"OK {self.path}: {self.game_id or '-'} {self.preset} {self.players}p, "
            f"{self.decisions} decisions, {self.hands} hands, {end}, digest {self.digest[:12]}"
        )


def _describe_legal(state: GameState) -> str:
    return ", ".join(str(a) for a in state.legal_actions())


def _compare_events(path: Path, number: int, what: str, engine: list[list[Any]], found: Any) -> None:
    if not isinstance(found, list):
        raise ReplayError(path, number, f"{what}: events is not a list")
    for i, (want, got) in enumerate(zip(engine, found, strict=False)):
        if want != got:
            raise ReplayError(
                path,
                number,
                f"{what}: event {i} differs: the engine gives {canonical_json(want)}, "
                f"the file has {canonical_json(got)}",
            )
    if len(engine) != len(found):
        if len(engine) > len(found):
            extra = f"the engine gives {len(engine) - len(found)} more, first {canonical_json(engine[len(found)])}"
        else:
            extra = (
                f"the file has {len(found) - len(engine)} more, first {canonical_json(found[len(engine)])}"
            )
        raise ReplayError(
            path,
            number,
            f"{what}: the engine gives {len(engine)} events, the file has {len(found)} ({extra})",
        )


def simulate(replay: Replay, upto: int | None = None) -> Iterator[tuple[int, JsonDict, GameState]]:
    """Re-simulate a replay with the engine, checking each record; yield (record number,
    record, state after it). ``upto`` stops after that many decisions."""
    path = replay.path
    try:
        config = replay.config
        state = GameState(config, replay.seed)
    except (ConfigError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise ReplayError(path, 1, f"the header's configuration is not a valid game: {err}") from None
    seen = len(state.log)
    _compare_events(path, 2, "start", [event_json(e) for e in state.log], replay.start["events"])
    yield 2, replay.start, state
    for number, rec in enumerate(replay.decisions, start=3):
        if upto is not None and rec["n"] > upto:
            return
        what = f"decision {rec['n']}"
        decision = state.decision
        if decision is None:
            raise ReplayError(path, number, f"{what}: the game is already over")
        if rec["seat"] != decision.seat or rec["kind"] != decision.kind.name:
            raise ReplayError(
                path,
                number,
                f"{what}: the engine asks seat {decision.seat} ({decision.kind.name}), "
                f"the file has seat {rec['seat']} ({rec['kind']})",
            )
        legal = state.legal_action_ids()
        if rec["legal"] != len(legal):
            raise ReplayError(
                path,
                number,
                f"{what}: the engine has {len(legal)} legal actions, the file says {rec['legal']}",
            )
        action = rec["action"]
        if not isinstance(action, int) or isinstance(action, bool) or action not in legal:
            raise ReplayError(
                path,
                number,
                f"{what}: action {action!r} ({rec.get('text', '?')}) is not legal for seat {decision.seat} "
                f"({decision.kind.name}); legal: {_describe_legal(state)}",
            )
        text = str(ACTIONS[action])
        if rec.get("text", text) != text:
            raise ReplayError(
                path, number, f"{what}: action {action} is {text!r}, the file says {rec['text']!r}"
            )
        if "hand" in rec and rec["hand"] != state.hand_number:
            raise ReplayError(
                path,
                number,
                f"{what}: the engine is in hand {state.hand_number}, the file says {rec['hand']}",
            )
        state.apply(action)
        new = [event_json(e) for e in state.log[seen:]]
        seen = len(state.log)
        _compare_events(path, number, what, new, rec["events"])
        yield number, rec, state


def verify_replay(path: str | os.PathLike[str]) -> VerifySummary:
    """Check the chain and re-simulate every decision; raise ReplayError at the first difference."""
    replay = read_replay(path)
    state = _last_state(simulate(replay))
    number = len(replay.records)
    result = replay.result
    aborted = replay.aborted
    if not state.game_over and not aborted:
        decision = state.decision
        assert decision is not None
        raise ReplayError(
            path,
            number,
            f"the result comes after decision {len(replay.decisions)} but the game is not over "
            f"(seat {decision.seat} to act, {decision.kind.name}) and the result does not say it was aborted",
        )
    if state.game_over and aborted:
        raise ReplayError(path, number, f"the result says aborted ({aborted}) but the game is over")
    expected = result_entry(state)
    for key, want in expected.items():
        got = result.get(key)
        if key == "hands" and isinstance(got, list):
            for i, (w, g) in enumerate(zip(want, got, strict=False)):
                if w != g:
                    diffs = [k for k in w if w[k] != (g.get(k) if isinstance(g, dict) else None)]
                    field_name = diffs[0] if diffs else "entry"
                    raise ReplayError(
                        path,
                        number,
                        f"result: hand {i + 1} {field_name} differ: the engine gives "
                        f"{canonical_json(w.get(field_name, w))}, the file has "
                        f"{canonical_json(g.get(field_name) if isinstance(g, dict) else g)}",
                    )
        if got != want:
            raise ReplayError(
                path,
                number,
                f"result: {key} differ: the engine gives {canonical_json(want)}, the file has {canonical_json(got)}",
            )
    return VerifySummary(
        replay.path,
        replay.game_id,
        state.config.preset,
        state.n,
        len(replay.decisions),
        len(state.hand_results),
        tuple(state.totals),
        state.digest(),
        aborted,
    )


def replay_state(replay: Replay, decisions: int) -> GameState:
    """The engine state after the first ``decisions`` decisions of a replay (checked on the way)."""
    return _last_state(simulate(replay, upto=decisions))


def _last_state(steps: Iterable[tuple[int, JsonDict, GameState]]) -> GameState:
    state: GameState | None = None
    for step in steps:
        state = step[2]
    assert state is not None, "simulate() always yields the start"
    return state


# --------------------------------------------------------------------------- walkthrough


def _cards(codes: Iterable[int]) -> str:
    return " ".join(str(CARDS[c]) for c in codes) or "-"


def _suit_word(suit: int) -> str:
    """A suit's word; a replay that fails verify may name a suit where the engine would not."""
    return Suit(suit).word if 0 <= suit <= 3 else f"suit {suit}"


def describe_event(event: Sequence[Any], name: Callable[[int], str]) -> str:
    """One engine event in words (the omniscient view)."""
    kind, seat, cards, suit, value = event
    who = name(seat) if seat >= 0 else ""
    match kind:
        case "dealer_draw":
            return f"{who} draws {_cards(cards)} for the deal"
        case "hand_start":
            return f"hand {value} starts, {who} deals"
        case "deal":
            return f"{who} is dealt {_cards(cards)}"
        case "turn_up":
            return f"turned up: {_cards(cards)}"
        case "name_suit":
            return f"{who} names {_suit_word(suit)}"
        case "play":
            text = f"{who} plays {_cards(cards)}"
            if suit >= 0:
                text += f" naming {_suit_word(suit)}"
            return text + (" and announces one card" if value else "")
        case "missed_announcement":
            return f"{who} did not announce one card: the next turn is forfeited"
        case "count":
            return f"the count is {value}"
        case "cooper":
            return f"{who} made a Cooper (out on a 6): draws one, the hand goes on"
        case "draw":
            return f"{who} draws {len(cards)}: {_cards(cards)}" if cards else f"{who} draws nothing"
        case "forfeit":
            return f"{who} forfeits the turn"
        case "skip":
            return f"{who} is skipped"
        case "reverse":
            return "direction reverses: now " + ("clockwise" if value > 0 else "counter-clockwise")
        case "pressure":
            return f"{who} takes a pressure of {value}"
        case "reshuffle":
            return f"the discard pile is reshuffled into a stock of {value}"
        case "penalty_draw":
            return f"{who} pays the one-card penalty"
        case "hand_end":
            return f"hand {value} ends"
        case "game_end":
            return "the game is over"
    return f"{kind} {who} {_cards(cards)} {value}".strip()


def _score_sheet(replay: Replay, name: Callable[[int], str]) -> list[str]:
    result = replay.result
    players = len(replay.header["seats"])
    names = [name(s) for s in range(players)]
    width = max(8, *(len(n) for n in names))
    head = f"{'hand':>4} {'dealer':<{width}} " + " ".join(f"{n:>{width}}" for n in names) + "  end"
    lines = ["Score sheet", head, "-" * len(head)]
    for h in result["hands"]:
        cells = []
        for s in range(players):
            cell = str(h["scores"][s]) + (f" (p{h['pressures'][s]})" if h["pressures"][s] else "")
            cells.append(f"{cell:>{width}}")
        lines.append(
            f"{h['number']:>4} {names[h['dealer']]:<{width}} " + " ".join(cells) + f"  {h['reason']}"
        )
    lines.append("-" * len(head))
    lines.append(f"{'':>4} {'total':<{width}} " + " ".join(f"{t:>{width}}" for t in result["totals"]))
    lines.append(f"{'':>4} {'place':<{width}} " + " ".join(f"{p:>{width}}" for p in result["placings"]))
    if result.get("team_totals"):
        lines.append(
            "teams: "
            + ", ".join(
                f"team {t} (seats {t} and {t + 2}) {tot}, place {pl}"
                for t, (tot, pl) in enumerate(
                    zip(result["team_totals"], result["team_placings"], strict=True)
                )
            )
        )
    lines.append("lowest total wins" if result.get("lower_wins", True) else "highest total wins")
    return lines


def _timing(rec: Mapping[str, Any]) -> str:
    parts = [rec["status"]]
    if rec.get("think_us") is not None:
        parts.append(f"think {rec['think_us'] / 1000:.1f} ms")
    if rec.get("transport_us") is not None:
        parts.append(f"transport {rec['transport_us'] / 1000:.1f} ms")
    if rec.get("note"):
        parts.append(str(rec["note"]))
    return ", ".join(parts)


def format_walkthrough(replay: Replay) -> str:
    """The game hand by hand in words, every decision with its timing, then the score sheet."""
    header = replay.header
    bots = replay.bots

    def name(seat: int) -> str:
        return f"seat {seat} ({bots[seat]})" if 0 <= seat < len(bots) else f"seat {seat}"

    cfg = header["config"]
    flags = ", ".join(
        f"{k}={v}" for k, v in sorted(cfg.get("flags", {}).items()) if v not in (False, "next_but_one")
    )
    lines = [
        f"Replay {replay.game_id or replay.path.name}"
        + (f" (tournament {header['tournament']})" if header.get("tournament") else ""),
        f"{cfg['preset']}, {cfg['players']} players, seed {header['seed']}" + (f", {flags}" if flags else ""),
        "Seats: " + ", ".join(name(s) for s in range(len(bots))),
    ]
    if header.get("started_at"):
        lines.append(f"Started {header['started_at']}")
    hands = {h["number"]: h for h in replay.result["hands"]}

    def emit(events: Iterable[Sequence[Any]], skip_first: bool = False) -> None:
        for i, ev in enumerate(events):
            if skip_first and i == 0:
                continue
            kind = ev[0]
            if kind == "hand_start":
                lines.append("")
                lines.append(f"Hand {ev[4]}: {name(ev[1])} deals")
            elif kind == "hand_end":
                h = hands.get(ev[4])
                if h is not None:
                    scores = ", ".join(f"{bots[s]} {v}" for s, v in enumerate(h["scores"]))
                    lines.append(f"  Hand {ev[4]} ends ({h['reason']}): {scores}")
                else:
                    lines.append(f"  Hand {ev[4]} ends")
            elif kind == "game_end":
                lines.append("")
                lines.append("The game is over.")
            else:
                lines.append(("    " if not skip_first else "      ") + describe_event(ev, name))

    lines.append("")
    lines.append("Choosing the first dealer:")
    emit(replay.start["events"])
    for rec in replay.decisions:
        events = rec["events"]
        first = events[0] if events else None
        own = first is not None and first[1] == rec["seat"] and first[0] in ("play", "name_suit", "draw")
        text = rec.get("text", str(rec["action"]))
        if own and first is not None and first[0] == "draw":
            text = f"draw {len(first[2])}: {_cards(first[2])}"
        lines.append(f"  #{rec['n']} {name(rec['seat'])} [{rec['kind']}] {text}  ({_timing(rec)})")
        emit(events, skip_first=own)
    if replay.aborted:
        lines.append(f"The game was aborted: {replay.aborted}")
    lines.append("")
    lines.extend(_score_sheet(replay, name))
    reports = replay.result.get("seat_reports")
    if reports:
        lines.append("")
        lines.append("Seats:")
        for s, rep in enumerate(reports):
            think = rep.get("think_us")
            lines.append(
                f"  {name(s)}: {rep.get('status', '?')}, {rep.get('decisions', 0)} decisions asked, "
                f"{rep.get('timeouts', 0)} timeouts, {rep.get('illegal', 0)} illegal, "
                f"{rep.get('malformed', 0)} malformed"
                + (f", think {think / 1000:.1f} ms in all" if isinstance(think, int) else "")
            )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- HTML


def _viewer_asset(name: str) -> str:
    return (_VIEWER_DIR / name).read_text(encoding="utf-8")


def _embed_json(value: Any) -> str:
    """JSON safe inside <script type="application/json">: no "</", "<!--" or "]]>" can close it."""
    return (
        json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _fill(template: str, values: Mapping[str, str]) -> str:
    """Replace each {{KEY}} in one pass, so a value never has markers of its own filled."""
    missing = [k for k in values if "{{" + k + "}}" not in template]
    if missing:
        raise RuntimeError(f"viewer template lacks {', '.join(missing)}")
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: values.get(m.group(1), m.group(0)), template)


def render_html(replay: Replay, *, index_href: str | None = None) -> str:
    """One self-contained page (inline CSS, JS and data; no network) that plays the replay."""
    title = f"Craits replay {replay.game_id or replay.path.name}"
    data = {"records": list(replay.records), "index_href": index_href, "file": replay.path.name}
    page = _fill(
        _viewer_asset("viewer.html"),
        {
            "TITLE": html.escape(title),
            "CSS": _viewer_asset("viewer.css"),
            "JS": _viewer_asset("viewer.js").replace("</", "<\\/"),
            "DATA": _embed_json(data),
        },
    )
    return page + ("" if page.endswith("\n") else "\n") + _page_mark(replay)


_PAGE_MARK = "<!-- craits-replay-page {} -->\n"
"""Written last on a viewer page with the hash of its replay's last record, so a page that is
complete and made from this very replay can be told from a stale or cut-off one."""


def _page_mark(replay: Replay) -> str:
    return _PAGE_MARK.format(replay.records[-1]["hash"])


def viewer_is_current(page: str | os.PathLike[str], replay: Replay) -> bool:
    """True if ``page`` is a complete viewer page of this replay (its end mark names the
    replay's last record), so it need not be written again."""
    return _ends_with(page, _page_mark(replay).encode())


def _ends_with(page: str | os.PathLike[str], mark: bytes) -> bool:
    try:
        with Path(page).open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size < len(mark):
                return False
            handle.seek(size - len(mark))
            return handle.read() == mark
    except OSError:
        return False


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path.tmp`` then rename it into place: a full disk or a kill leaves
    the old file or none, never a cut-off page."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


def write_html(
    replay: Replay | str | os.PathLike[str], out_path: str | os.PathLike[str], *, index_href: str | None = None
) -> Path:
    """Write a replay's viewer page (a path is read first, its chain and fields checked)."""
    rep = replay if isinstance(replay, Replay) else read_replay(replay)
    return write_text_atomic(out_path, render_html(rep, index_href=index_href))


@dataclass(frozen=True)
class IndexEntry:
    """One game on an index page: where its viewer is and how it ended."""

    href: str
    game_id: str
    seats: tuple[str, ...]
    totals: tuple[int, ...] = ()
    placings: tuple[int, ...] = ()
    description: str = ""
    """e.g. "craits 4p short_game"."""
    note: str = ""
    """e.g. "aborted: ..." or a round label."""


def index_entry(replay: Replay | str | os.PathLike[str], href: str) -> IndexEntry:
    """An index entry for a replay whose viewer page is at ``href``."""
    rep = replay if isinstance(replay, Replay) else read_replay(replay)
    return _index_entry(rep.header, rep.result, rep.path.name, href)


def current_page_entry(
    replay: str | os.PathLike[str], page: str | os.PathLike[str], href: str
) -> IndexEntry | None:
    """The index entry of a replay whose viewer ``page`` is complete and current, read from the
    replay's first and last lines only; None when the page is to be written (from the whole
    replay, checked). A folder of thousands of games (a ladder) lists them without reading
    every replay again; ``craits replay verify`` is what checks a replay through."""
    try:
        with Path(replay).open("rb") as handle:
            header = json.loads(handle.readline(MAX_LINE_BYTES + 1))
            result = json.loads(_last_line(handle))
        if not (isinstance(header, dict) and isinstance(result, dict)) or result.get("type") != "result":
            return None
        if not isinstance(result.get("hash"), str) or not _ends_with(page, _PAGE_MARK.format(result["hash"]).encode()):
            return None
        return _index_entry(header, result, Path(replay).name, href)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def _last_line(handle: Any) -> bytes:
    """The last line of a file open for binary reading (at most MAX_LINE_BYTES)."""
    end = handle.seek(0, os.SEEK_END)
    tail = b""
    position = end
    while position > 0 and len(tail) <= MAX_LINE_BYTES:
        step = min(65536, position)
        position -= step
        handle.seek(position)
        tail = handle.read(step) + tail
        cut = tail.rfind(b"\n", 0, len(tail) - 1)
        if cut >= 0:
            return tail[cut + 1 :]
    return tail


def _index_entry(header: JsonDict, result: JsonDict, name: str, href: str) -> IndexEntry:
    cfg = header["config"]
    flags = [k for k, v in sorted(cfg.get("flags", {}).items()) if v is True]
    if cfg.get("flags", {}).get("seven_hits", "next_but_one") != "next_but_one":
        flags.append(f"seven_hits={cfg['flags']['seven_hits']}")
    if cfg.get("flags", {}).get("decks") == 2:
        flags.append("2 decks")
    aborted = str(result.get("aborted", ""))
    return IndexEntry(
        href=href,
        game_id=str(header.get("game_id", "")) or name,
        seats=tuple(str(s.get("bot", f"seat {i}")) for i, s in enumerate(header["seats"])),
        totals=tuple(result["totals"]),
        placings=tuple(result["placings"]),
        description=" ".join([cfg["preset"], f"{cfg['players']}p", *flags]),
        note=f"aborted: {aborted}" if aborted else "",
    )


def write_index_html(
    entries: Iterable[IndexEntry | Mapping[str, Any]],
    out_path: str | os.PathLike[str],
    *,
    title: str = "Craits games",
) -> Path:
    """Write a page listing games, each linking to its viewer, with seats, totals and placings.

    ``entries`` are :class:`IndexEntry` values or mappings with the same keys; ``href`` is
    relative to the index page (the pages work from the file system, no server).
    """
    rows = []
    for i, item in enumerate(entries, start=1):
        entry = (
            item
            if isinstance(item, IndexEntry)
            else IndexEntry(
                href=str(item["href"]),
                game_id=str(item.get("game_id", "")),
                seats=tuple(item.get("seats", ())),
                totals=tuple(item.get("totals", ())),
                placings=tuple(item.get("placings", ())),
                description=str(item.get("description", "")),
                note=str(item.get("note", "")),
            )
        )
        players = []
        for s, bot in enumerate(entry.seats):
            score = ""
            if s < len(entry.totals):
                place = entry.placings[s] if s < len(entry.placings) else None
                cls = ' class="win"' if place == 1 else ""
                score = (
                    f" <span{cls}>{entry.totals[s]}"
                    + (f" <small>#{place}</small>" if place else "")
                    + "</span>"
                )
            players.append(f"<li>{html.escape(bot)}{score}</li>")
        rows.append(
            f'<tr><td>{i}</td><td><a href="{html.escape(entry.href, quote=True)}">'
            f"{html.escape(entry.game_id or entry.href)}</a></td>"
            f'<td>{html.escape(entry.description)}</td><td><ol start="0">{"".join(players)}</ol></td>'
            f"<td>{html.escape(entry.note)}</td></tr>"
        )
    page = _fill(
        _viewer_asset("index.html"),
        {
            "TITLE": html.escape(title),
            "CSS": _viewer_asset("viewer.css"),
            "ROWS": "\n".join(rows) or '<tr><td colspan="5">no games</td></tr>',
            "COUNT": str(len(rows)),
        },
    )
    return write_text_atomic(out_path, page)


# --------------------------------------------------------------------------- CLI


def _replay_files(items: Sequence[str]) -> list[Path]:
    """Files named on the command line; a directory stands for its *.jsonl files."""
    files: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            found = sorted(p.glob(f"*{REPLAY_SUFFIX}"))
            if not found:
                raise UserError(f"{item}: no *{REPLAY_SUFFIX} replay files in this directory")
            files.extend(found)
        elif p.exists():
            files.append(p)
        else:
            raise UserError(f"{item}: no such file or directory")
    return files


def _cmd_verify(args: argparse.Namespace) -> int:
    failures = 0
    for path in _replay_files(args.files):
        try:
            summary = verify_replay(path)
        except ReplayError as err:
            failures += 1
            print(f"FAIL {err}", flush=True)
        else:
            if not args.quiet:
                print(summary.line(), flush=True)
    if failures:
        print(f"{failures} replay(s) failed verification")
    return 1 if failures else 0


def _cmd_show(args: argparse.Namespace) -> int:
    (path,) = _replay_files([args.file])
    try:
        replay = read_replay(path)
    except ReplayError as err:
        raise UserError(str(err)) from None
    print(format_walkthrough(replay), end="")
    return 0


def _cmd_html(args: argparse.Namespace) -> int:
    files = _replay_files(args.files)
    out = Path(args.output)
    many = len(files) > 1 or any(Path(f).is_dir() for f in args.files) or out.is_dir()
    try:
        if not many:
            if out.suffix.lower() not in (".html", ".htm"):
                raise UserError(f"{out}: the output of one replay is an .html file")
            write_html(files[0], out)
            print(f"wrote {out}")
            return 0
        if out.suffix.lower() in (".html", ".htm"):
            raise UserError(f"{out}: several replays need an output directory (it gets index.html)")
        out.mkdir(parents=True, exist_ok=True)
        entries = []
        for path in files:
            name = path.name[: -len(REPLAY_SUFFIX)] if path.name.endswith(REPLAY_SUFFIX) else path.stem
            page = f"{name}.html"
            replay = read_replay(path)
            write_html(replay, out / page, index_href="index.html")
            entries.append(index_entry(replay, page))
        write_index_html(entries, out / "index.html", title=args.title)
    except ReplayError as err:
        raise UserError(str(err)) from None
    print(f"wrote {len(entries)} game pages and {out / 'index.html'}")
    return 0


def register_cli(subparsers: Any) -> None:
    """Add ``craits replay verify|show|html``."""
    parser = subparsers.add_parser("replay", help="verify, show or view game replays")
    actions = parser.add_subparsers(dest="replay_command", metavar="ACTION", required=True)

    verify = actions.add_parser(
        "verify", help="re-simulate replays with the engine and check every event, score and hash"
    )
    verify.add_argument("files", nargs="+", metavar="FILE", help="replay files or directories of *.jsonl")
    verify.add_argument("-q", "--quiet", action="store_true", help="print only failures")
    verify.set_defaults(func=_cmd_verify)

    show = actions.add_parser("show", help="print a readable walkthrough, hand by hand, with the score sheet")
    show.add_argument("file", metavar="FILE")
    show.set_defaults(func=_cmd_show)

    page = actions.add_parser(
        "html", help="write a self-contained HTML viewer (several files: pages + index)"
    )
    page.add_argument("files", nargs="+", metavar="FILE", help="replay files or directories of *.jsonl")
    page.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="OUT.html for one replay, else a directory"
    )
    page.add_argument("--title", default="Craits games", help="title of the index page")
    page.set_defaults(func=_cmd_html)
