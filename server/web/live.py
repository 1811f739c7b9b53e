"""Live games for spectators: the referee publishes each record once, readers follow at their pace.

The hook is the replay writer (it sees every decision of every game, whichever runner plays
it): while a :class:`LiveHub` is installed (:meth:`LiveHub.installed`, a context variable, so
only the games started inside it are seen) each new :class:`ReplayWriter` gets a
:class:`LiveGame` as its tap. The tap only appends a tuple to a list (from the game's thread
or task) and nothing more: the web server's one tick (``tick_s``) looks for what is new in every
watched game, encodes each record once for all of its readers and writes everything new to each
reader in one piece (one fan-out per event and per tick, not per spectator per decision).
In the web process of ``--web`` the writers are in the referee's process: their records are
relayed (``server.storage.replay.relay``) and handed to :meth:`LiveHub.tap` as if played here.

Two views of a record:

* **public** (live): what a spectator who owns no seat may see, decided by the engine's
  ``event_view`` (a deal or a draw keeps its number of cards, each shown as -1), without the
  seed, the hash chain, the number of legal actions, the "auto" status (both tell what a
  hand holds) or the referee's notes (they may quote a bot's cards);
* **full**: the replay record as written (less the seed and the hashes), only once it is
  ``reveal_after`` seconds old.

Readers share the stream's bytes, never a copy each: one that leaves more than ``max_buffer``
unread is disconnected (see ``server.web.fanout``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from server.engine import event_view
from server.storage.replay.faults import hide_bot_errors
from server.storage.replay.writer import REPLAY_TAP
from server.web.fanout import MAX_BUFFER, Fanout, Reader, SharedDeflate

JsonDict = dict[str, Any]

FINISHED_KEPT = 500
LINGER_KEPT = 32
"""Ended games whose records stay after the end (``linger_s``) at most: a field of fast bots
ends several games a second, each game's records about a megabyte in memory (100 builtin bots
at 5 games/s: 150 games in 30 s); the oldest go first, to their replays."""
_NO_SEAT = -2
"""A viewer who owns no seat (as in ``server.engine.observation``)."""

_HIDDEN: dict[str, bool] = {}


def hides_cards(kind: str) -> bool:
    """True if a spectator must not see the cards of an event of this kind (the engine says)."""
    hidden = _HIDDEN.get(kind)
    if hidden is None:
        hidden = _HIDDEN[kind] = not event_view((kind, 0, (0,), -1, 0), _NO_SEAT).cards
    return hidden


def public_event(raw: Sequence[Any]) -> list[Any]:
    """A raw engine event ``[kind, seat, cards, suit, value]`` as a spectator sees it: hidden
    cards become -1, one per card (the number of cards is public)."""
    kind, seat, cards, suit, value = raw
    shown = [-1] * len(cards) if cards and hides_cards(kind) else list(cards)
    return [kind, seat, shown, suit, value]


def full_event(raw: Sequence[Any]) -> list[Any]:
    kind, seat, cards, suit, value = raw
    return [kind, seat, list(cards), suit, value]


_HEADER_KEYS = ("type", "schema", "game_id", "tournament", "config", "seats", "clocks", "started_at")
_PUBLIC_STATUS = {"auto": "ok"}
"""An "auto" decision had one legal action: the hand held nothing else playable."""
_HAND_KEYS = ("number", "dealer", "reason", "scores", "pressures")
_RESULT_KEYS = (
    "totals", "placings", "team_totals", "team_placings", "lower_wins", "pressure_totals", "decisions", "aborted",
)


def public_header(header: JsonDict) -> JsonDict:
    """The header without the seed (it would give every card away) or any extra."""
    return {k: header[k] for k in _HEADER_KEYS if k in header}


def public_decision(record: JsonDict) -> JsonDict:
    """A decision record as a spectator may see it (see the module docstring)."""
    out: JsonDict = {
        "type": "decision",
        "n": record["n"],
        "hand": record["hand"],
        "seat": record["seat"],
        "kind": record["kind"],
        "action": record["action"],
        "text": record["text"],
        "status": _PUBLIC_STATUS.get(record["status"], record["status"]),
        "think_us": record.get("think_us"),
        "transport_us": record.get("transport_us"),
        "events": [public_event(e) for e in record["events"]],
    }
    if record.get("hand_results"):
        out["hand_results"] = record["hand_results"]
    return out


def public_result(record: JsonDict) -> JsonDict:
    """The result without the cards left in hands (a duplicate deal is played again at other
    tables) or the digest; the seat reports without their event notes."""
    out: JsonDict = {"type": "result"}
    for key in _RESULT_KEYS:
        if key in record:
            out[key] = record[key]
    out["hands"] = [{k: h[k] for k in _HAND_KEYS if k in h} for h in record.get("hands", ())]
    if "seat_reports" in record:
        out["seat_reports"] = [{k: v for k, v in r.items() if k != "events"} for r in record["seat_reports"]]
    return out


def public_records(records: Sequence[JsonDict]) -> list[JsonDict]:
    """A whole replay's records in the public view (a finished game whose deal is still to be
    played elsewhere); each hand's scores go with the decision that ended it, as live."""
    result = records[-1] if records and records[-1].get("type") == "result" else None
    hands = {h["number"]: h for h in (result or {}).get("hands", ())}
    out: list[JsonDict] = []
    for rec in records:
        kind = rec.get("type")
        if kind == "header":
            out.append(public_header(rec))
        elif kind == "start":
            out.append({"type": "start", "events": [public_event(e) for e in rec["events"]]})
        elif kind == "decision":
            ended = [e[4] for e in rec["events"] if e[0] == "hand_end"]
            rec = {**rec, "hand_results": [{k: hands[n][k] for k in _HAND_KEYS} for n in ended if n in hands]}
            out.append(public_decision(rec))
        elif kind == "result":
            out.append(public_result(rec))
    return out


def strip_full(record: JsonDict) -> JsonDict:
    """A record in the full view: as in the replay, without the seed or the hash chain."""
    out = {k: v for k, v in record.items() if k not in ("hash", "prev", "seed")}
    return out


# --------------------------------------------------------------------------- one live game


def _sse(index: int, event: str, data: JsonDict) -> bytes:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"id: {index}\nevent: {event}\ndata: {text}\n\n".encode()


@dataclass(slots=True)
class _Item:
    at: float
    """time.monotonic() when the game produced it."""
    kind: str
    payload: Any
    cache: list[bytes | None] | None = None
    """Encoded once per view, when first read: public, full, public compact, full compact."""


class LiveGame:
    """One game as it is played: the replay writer's tap and the spectators' source.

    The writer calls :meth:`decision`, :meth:`finish` or :meth:`abort` from whatever thread
    plays the game; everything else runs on the hub's event loop."""

    def __init__(self, hub: LiveHub, writer: Any) -> None:
        self.hub = hub
        self.game_id = str(writer.game_id or writer.path.stem)
        self.header: JsonDict = writer.header
        self.bots = [str(s.get("bot", f"seat {i}")) for i, s in enumerate(self.header["seats"])]
        self.started = time.time()
        self.decisions = 0
        self.hand = 0
        self.over = False
        self.aborted = ""
        self.replay_path = str(writer.path)
        self.result: JsonDict | None = None
        self.items: list[_Item] = []
        self.streams: dict[tuple[bool, bool], GameStream] = {}
        """The readers of each view (full or not, compact or not), made by the web server."""
        self._state = writer.state
        self._hands_seen = 0
        now = time.monotonic()
        self.items.append(_Item(now, "header", dict(writer.header)))
        self.items.append(_Item(now, "start", list(writer.start_events)))

    # ---- from the game (any thread)

    def decision(self, fields: tuple[Any, ...], raw_events: list[Any]) -> None:
        """``fields``: (n, hand, seat, kind name, action id, text, status, think_us, transport_us)."""
        results = self._state.hand_results
        ended: tuple[Any, ...] = ()
        if len(results) != self._hands_seen:
            ended = tuple(results[self._hands_seen :])
            self._hands_seen = len(results)
        self.decisions = fields[0]
        self.hand = fields[1]
        self.items.append(_Item(time.monotonic(), "decision", (fields, raw_events, ended)))

    def finish(self, result: JsonDict) -> None:
        self.items.append(_Item(time.monotonic(), "result", result))
        self.result = result
        self.over = True
        self.aborted = str(result.get("aborted", ""))
        self.hub._call(self.hub._ended, self)

    def abort(self) -> None:
        if not self.over:
            self.over = True
            self.aborted = "the game was stopped before its end"
            self.items.append(_Item(time.monotonic(), "abort", {"type": "abort", "aborted": self.aborted}))
            self.hub._call(self.hub._ended, self)

    # ---- for readers (the loop)

    def encoded(self, index: int, full: bool, compact: bool = False) -> bytes:
        """Item ``index`` as one SSE message, encoded once per view however many read it
        (``compact``: a decision as an array, event ``d``, see docs/web.md)."""
        item = self.items[index]
        slot = int(full) + 2 * int(compact)
        cache = item.cache
        if cache is None:
            cache = item.cache = [None, None, None, None]
        cached = cache[slot]
        if cached is not None:
            return cached
        if item.kind == "decision":
            out = _decision_sse(index, item.payload, full, compact)
        else:
            out = self._encode(index, item, full)
        cache[slot] = out
        return out

    def _encode(self, index: int, item: _Item, full: bool) -> bytes:
        record = self._record(item)
        if item.kind == "abort":
            data, event = record, "abort"
        elif full:
            data, event = strip_full(record), "record"
        else:
            data, event = _public(record), "record"
        return _sse(index, event, data)

    def _record(self, item: _Item) -> JsonDict:
        record = self._raw_record(item)
        return hide_bot_errors(record) if self.hub.hide_bot_errors else record

    def _raw_record(self, item: _Item) -> JsonDict:
        if item.kind == "header":
            return dict(item.payload)
        if item.kind == "start":
            return {"type": "start", "events": [full_event(e) for e in item.payload]}
        if item.kind == "decision":
            fields, raw, ended = item.payload
            n, hand, seat, kind, action, text, status, think_us, transport_us = fields
            return {
                "type": "decision", "n": n, "hand": hand, "seat": seat, "kind": kind, "action": action,
                "text": text, "status": status, "think_us": think_us, "transport_us": transport_us,
                "events": [full_event(e) for e in raw],
                "hand_results": [
                    {"number": h.number, "dealer": h.dealer, "reason": h.reason,
                     "scores": list(h.scores), "pressures": list(h.pressures)}
                    for h in ended
                ],
            }
        return dict(item.payload)

    def visible(self, delay: float | None) -> int:
        """How many items a reader may have now: all, or those at least ``delay`` seconds old."""
        items = self.items
        end = len(items)
        if delay is None:
            return end
        cutoff = time.monotonic() - delay
        lo, hi = 0, end
        while lo < hi:
            mid = (lo + hi) // 2
            if items[mid].at <= cutoff:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def records(self, count: int, full: bool) -> list[JsonDict]:
        """The first ``count`` records in one view (for a page opened mid-game)."""
        out = []
        for item in self.items[:count]:
            if item.kind != "abort":
                record = self._record(item)
                out.append(strip_full(record) if full else _public(record))
        return out

    def summary(self) -> JsonDict:
        return {
            "game_id": self.game_id,
            "bots": self.bots,
            "preset": self.header["config"].get("preset"),
            "players": self.header["config"].get("players"),
            "decisions": self.decisions,
            "hand": self.hand,
            "started_at": self.started,
            "over": self.over,
            "aborted": self.aborted,
        }


@functools.lru_cache(maxsize=8192)
def _event_text(raw: tuple[Any, ...], full: bool) -> str:
    """An engine event as JSON text in one view; cached, as most events recur in every game."""
    return json.dumps(full_event(raw) if full else public_event(raw), separators=(",", ":"))


def _decision_sse(index: int, payload: tuple[Any, ...], full: bool, compact: bool = False) -> bytes:
    """A decision's SSE message, put together from cached pieces (a decision is the record a
    live game sends most): the same JSON as ``public_decision`` (or the full record) makes."""
    fields, raw, ended = payload
    n, hand, seat, kind, action, text, status, think_us, transport_us = fields
    if not full:
        status = _PUBLIC_STATUS.get(status, status)
    events = ",".join([_event_text(e, full) for e in raw])
    results = ""
    if ended:
        results = ',"hand_results":' + json.dumps(
            [{"number": h.number, "dealer": h.dealer, "reason": h.reason, "scores": list(h.scores),
              "pressures": list(h.pressures)} for h in ended],
            separators=(",", ":"),
        )
    if compact:  # the same fields in this order, a third of the bytes
        ended_text = results.replace('"hand_results":', "")
        data = (
            f'[{n},{hand},{seat},"{kind}",{action},{json.dumps(text)},{json.dumps(status)},{_number(think_us)},'
            f"{_number(transport_us)},[{events}]{ended_text}]"
        )
        return f"data: {data}\n\n".encode()  # no id: the stream sends one after each batch
    data = (
        f'{{"type":"decision","n":{n},"hand":{hand},"seat":{seat},"kind":"{kind}","action":{action},'
        f'"text":{json.dumps(text)},"status":{json.dumps(status)},"think_us":{_number(think_us)},'
        f'"transport_us":{_number(transport_us)},"events":[{events}]{results}}}'
    )
    return f"id: {index}\nevent: record\ndata: {data}\n\n".encode()


def _number(value: int | None) -> str:
    return "null" if value is None else str(int(value))


def _public(record: JsonDict) -> JsonDict:
    kind = record.get("type")
    if kind == "header":
        return public_header(record)
    if kind == "start":
        return {"type": "start", "events": [public_event(e) for e in record["events"]]}
    if kind == "decision":
        return public_decision(record)
    return public_result(record)


# --------------------------------------------------------------------------- the hub


class LiveHub:
    """Every live game of this process, and the board's feed, for the web server."""

    def __init__(self, *, linger_s: float = 30.0) -> None:
        self.loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self.linger_s = linger_s
        self.games: dict[str, LiveGame] = {}
        self.finished: deque[JsonDict] = deque(maxlen=FINISHED_KEPT)
        """The games this process finished last (a server without a store lists these)."""
        self.feed = Fanout()
        """The board's readers: what changed goes to all of them once per tick (:meth:`flush_feed`)."""
        self.latest: dict[str, bytes] = {}
        """The last message of each kind, for a reader who joins."""
        self.serial = 0
        self._unsent: dict[str, None] = {}
        """Kinds published since the last flush (only the latest of each goes out)."""
        self.on_change: list[Callable[[bool], None]] = []
        """Called (on the loop) when a game starts (True) or ends (False)."""
        self.hide_bot_errors = False
        """Leave the bots' own error texts out of what is published (a participants' ladder:
        :func:`server.storage.replay.faults.hide_bot_errors`)."""

    @contextlib.contextmanager
    def installed(self) -> Iterator[LiveHub]:
        """Games whose replay writer is made inside this block (this task, the tasks it
        starts and the threads ``asyncio.to_thread`` runs for it) are published here."""
        token = REPLAY_TAP.set(self.tap)
        try:
            yield self
        finally:
            REPLAY_TAP.reset(token)

    def _in_loop(self) -> bool:
        return threading.get_ident() == self._thread

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        if self._in_loop():
            fn(*args)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is watching
                self.loop.call_soon_threadsafe(fn, *args)

    # ---- the writer's side

    def tap(self, writer: Any) -> LiveGame:
        game = LiveGame(self, writer)
        self._call(self._started, game)
        return game

    def _started(self, game: LiveGame) -> None:
        old = self.games.get(game.game_id)
        if old is not None and not old.over:
            old.abort()
        self.games[game.game_id] = game
        self._changed(True)

    def _ended(self, game: LiveGame) -> None:
        result = game.result or {}
        self.finished.append({
            "game_id": game.game_id, "bots": game.bots, "totals": result.get("totals", []),
            "placings": result.get("placings", []), "aborted": game.aborted,
            "replay": game.replay_path if game.result is not None else None, "seed": None,
        })
        self._changed(False)

        def forget() -> None:
            if self.games.get(game.game_id) is game:
                del self.games[game.game_id]
                self._changed(False)

        self.loop.call_later(self.linger_s, forget)
        ended = [g for g in self.games.values() if g.over]
        for old in ended[:max(0, len(ended) - LINGER_KEPT)]:  # (started first, ended long ago)
            del self.games[old.game_id]

    def _changed(self, started: bool) -> None:
        for callback in list(self.on_change):
            callback(started)

    def live(self) -> list[LiveGame]:
        return [g for g in self.games.values() if not g.over]

    # ---- the board's feed

    def publish(self, event: str, data: Any) -> None:
        """Make ``data`` the board's latest ``event`` (on the loop): encoded once, it goes to
        every reader at the next :meth:`flush_feed`, unless a newer one replaces it first (each
        kind is a state: the standings, the live list; a reader needs only the latest)."""
        self.serial += 1
        if self.hide_bot_errors:
            data = hide_bot_errors(data)
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        self.latest[event] = f"id: {self.serial}\nevent: {event}\ndata: {text}\n\n".encode()
        self._unsent[event] = None

    def flush_feed(self) -> None:
        """Everything published since the last flush, in one write to each reader."""
        if self._unsent:
            data = b"".join([self.latest[event] for event in self._unsent])
            self._unsent.clear()
            self.feed.send(data)

    def feed_so_far(self) -> bytes:
        """What a reader who joins the board's feed starts with: the latest of each kind."""
        return b"".join(self.latest.values()) or b": hello\n\n"


# --------------------------------------------------------------------------- one game's stream


END = b"event: end\ndata: {}\n\n"
KEEP_ALIVE = b": keep-alive\n\n"


class GameStream:
    """One game's records in one view, for all of its readers: the server's tick calls
    :meth:`pump`, which writes everything that became visible since the last tick to every
    reader at once, framed once and, for the readers who take it deflated (browsers do),
    compressed once (see ``server.web.fanout``)."""

    def __init__(self, game: LiveGame, full: bool, delay: float | None, *, heartbeat_s: float,
                 max_buffer: int = MAX_BUFFER, on_drop: Callable[[], None] | None = None,
                 compact: bool = False) -> None:
        self.game = game
        self.full = full
        self.compact = compact
        self.delay = delay
        self.heartbeat_s = heartbeat_s
        self.plain = Fanout(max_buffer, on_drop=on_drop)
        self.deflated = Fanout(max_buffer, on_drop=on_drop)
        self.deflate = SharedDeflate()
        self.cursor = 0
        """Items already sent to the readers."""
        self.ended = False
        """The last record and ``END`` are sent: a reader who joins now gets the whole game at once."""
        self._sent_at = time.monotonic()
        self._history: tuple[int, bytes, bytes, int] = (0, b"", b"", 1)
        """Everything sent so far (up to the cursor it was made at), for readers who join: as
        is, deflated, and its checksum."""

    @property
    def readers(self) -> int:
        return len(self.plain) + len(self.deflated)

    async def join(self, response: Any, reader: Reader, start: int, deflated: bool = False) -> None:
        """Send ``reader`` the items from ``start`` that the others have had (with the response's
        headers, in one write), then add it to the readers (``deflated``: it takes its stream
        compressed, and the response says so)."""
        sent = max(0, min(start, self.cursor))
        head = SharedDeflate.HEADER if deflated else b""
        while True:
            end = self.cursor
            if sent == 0 and end:  # most readers start at the beginning, many at once: one catch-up for all
                if self._history[0] != end:
                    first = self._catch_up(0, end)
                    self._history = (end, first, self.deflate.pack(first), zlib.adler32(first))
                _, first, packed, adler = self._history
            else:
                first = self._catch_up(sent, end)
                packed, adler = (self.deflate.pack(first), zlib.adler32(first, reader.adler)) if deflated else (b"", 1)
            if self.ended:
                reader.last = zlib.compress(first + END, 1) if deflated else first + END
                reader.done.set_result("end")
                return
            if deflated:
                reader.adler = adler
                await response.write(head + packed)  # (waits only when the reader's buffer is full)
            else:
                await response.write(first)
            head = b""
            sent = end
            if self.cursor == sent:  # (nothing was pumped meanwhile)
                (self.deflated if deflated else self.plain).add(reader)
                return

    def _catch_up(self, start: int, end: int) -> bytes:
        data = b"".join([self.game.encoded(i, self.full, self.compact) for i in range(start, end)])
        if data and self.compact:  # the id of the last record (the browser resumes after it)
            data += b"id: %d\n\n" % (end - 1)
        return data

    def pump(self, now: float, *, final: bool = False) -> bool:
        """Send the readers what became visible since the last time, and ``END`` after the last
        record; False once the stream is over (its readers have gone or got everything).
        ``final``: the server stops, so everything goes out now, a delayed view's last moves too
        (a game the server stops with is over: it has ended, or it was aborted)."""
        game = self.game
        end = len(game.items) if final else game.visible(self.delay)
        data = b""
        if end > self.cursor:
            data = self._catch_up(self.cursor, end)
            self.cursor = end
        if game.over and self.cursor >= len(game.items):
            self.ended = True
            self.plain.close(data + END)
            if self.deflated.readers:
                packed = self.deflate.pack(data + END)
                SharedDeflate.follow(self.deflated.readers, data + END)
                self.deflated.close(packed, SharedDeflate.ending)
            return False
        if data:
            self._send(data)
            self._sent_at = now
        elif now - self._sent_at >= self.heartbeat_s:
            self._send(KEEP_ALIVE)
            self._sent_at = now
        return bool(self.readers)

    def _send(self, data: bytes) -> None:
        self.plain.send(data)
        if self.deflated.readers:
            self.deflated.send(self.deflate.pack(data))
            SharedDeflate.follow(self.deflated.readers, data)

    def close(self) -> None:
        """End every reader's response now (the server stops)."""
        self.plain.close()
        if self.deflated.readers:
            self.deflated.close(self.deflate.pack(b""), SharedDeflate.ending)
