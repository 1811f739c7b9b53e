"""Reading replays: every record's fields checked (type, range, place) line by line with
limits, so whatever reads a replay never crashes on a damaged or hostile file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.engine import ACTIONS, CARDS, GameConfig
from server.engine.errors import ConfigError
from server.storage.replay.format import GENESIS, SCHEMA, ReplayError, config_from_dict, record_hash

JsonDict = dict[str, Any]

# --------------------------------------------------------------------------- reading


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
    "default_actions", "think_us", "transport_us", "stale", "bot_errors",
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
        for key in ("decision_ms", "bank_ms", "max_strikes", "reconnect_grace_ms"):
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
    if "wire" in rec:
        _check_wire(rec["wire"])


_UINT32 = 2**32 - 1


def _check_wire(value: Any) -> None:
    """A decision's ``wire`` facts: the request's id and bank, each refused answer with the
    deadline and bank of the request sent again, reconnects (docs/replay-format.md)."""
    wire = _check_object(value, "decision field wire")
    _check_int(wire.get("id"), "decision field wire.id", 1, 2**64 - 1)
    _check_int(wire.get("bank_ms"), "decision field wire.bank_ms", 0, _UINT32)
    for key in ("deadline_ms", "reconnects", "away"):
        if key in wire:
            _check_int(wire[key], f"decision field wire.{key}", 0, _UINT32)
    refused = wire.get("refused", [])
    if not isinstance(refused, list):
        raise _FieldError(f"decision field wire.refused must be a JSON array, not {_shown(refused)}")
    for i, entry in enumerate(refused):
        at = f"decision field wire.refused[{i}]"
        if not isinstance(entry, list) or len(entry) not in (1, 3):
            raise _FieldError(f"{at} must be [action id] or [action id, deadline_ms, bank_ms], not {_shown(entry)}")
        _check_int(entry[0], f"{at} action id", 0, _UINT32)
        for j, ms in enumerate(entry[1:], start=1):
            _check_int(ms, f"{at}[{j}]", 0, _UINT32)


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
            for key in ("bot", "status", "bot_error"):
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


