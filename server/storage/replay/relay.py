"""Relaying what replay writers tell their tap to another process, in batches.

A process that plays games and a process that shows them can be different: a referee worker
process plays some of a tournament's games (``server.transport.workers``), and the web pages
are served by a process of their own (``server.web.process``). :class:`Relay` is a replay tap
(``REPLAY_TAP``) that turns each record into a small picklable tuple and gathers them;
whoever sends them takes a batch with :meth:`Relay.take` every :data:`RELAY_S` or so (one
message per interval, not one per decision). On the other side, :class:`Replayer` hands the
tuples, in order, to that process's own tap as if the games were played there.

A record is ``(kind, game_id, payload)``: ``start`` (the writer's path, header and start
events), ``decision`` (the fields and raw events the writer passed, and the hands it ended),
``finish`` (the result record) or ``abort``.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from server.logging import get_logger

log = get_logger()

RELAY_S = 0.05
"""How long a relay gathers records before they leave in one message."""

Record = tuple[str, str, Any]


class Relay:
    """A replay tap whose records leave for another process in batches.

    ``on_first`` is called when a record arrives and none is waiting (so the sender can
    schedule a :meth:`take` without looking every interval). ``max_backlog``: once this many
    records wait, a game that adds one more is cut off (it is relayed as aborted and nothing
    more of it is gathered), so a receiver that does not keep up costs bounded memory and the
    games never wait for it. Taps may be called from any thread (the local runner plays in
    threads): the records go through a deque, whose appends and pops are atomic."""

    def __init__(self, on_first: Callable[[], object], *, max_backlog: int | None = None) -> None:
        self.on_first = on_first
        self.max_backlog = max_backlog
        self.items: collections.deque[Record] = collections.deque()
        self.cut = 0
        """Games cut off because the backlog was full."""
        self.closed = False
        """Set when nobody receives any more: taps add nothing, new games get no tap."""
        self._waiting = False

    def tap(self, writer: Any) -> RelayTap | None:
        """A replay writer's tap (``REPLAY_TAP``): says the game started, returns its relay."""
        if self.closed or not self.has_room():
            return None
        relayed = RelayTap(self, writer)
        self.add(("start", relayed.game_id, {"path": str(writer.path), "header": writer.header,
                                             "start_events": list(writer.start_events)}))
        return relayed

    def has_room(self) -> bool:
        return self.max_backlog is None or len(self.items) < self.max_backlog

    def add(self, item: Record) -> None:
        self.items.append(item)
        if not self._waiting:
            self._waiting = True
            self.on_first()

    def take(self) -> list[Record]:
        """Every record gathered so far, oldest first."""
        self._waiting = False  # (before the pops: a record added meanwhile calls on_first again)
        items = self.items
        return [items.popleft() for _ in range(len(items))]


class RelayTap:
    """One game's tap in the playing process: what the other side's tap needs, in picklable pieces."""

    def __init__(self, relay: Relay, writer: Any) -> None:
        self.relay = relay
        self.game_id = str(writer.game_id or writer.path.stem)
        self.state = writer.state
        self.hands_seen = 0
        self.dropped = False

    def decision(self, fields: tuple[Any, ...], raw_events: list[Any]) -> None:
        if self.dropped or not self._room():
            return
        results = self.state.hand_results
        ended = tuple(results[self.hands_seen:])
        self.hands_seen = len(results)
        self.relay.add(("decision", self.game_id, (fields, list(raw_events), ended)))

    def finish(self, record: Any) -> None:
        if not self.dropped and not self.relay.closed:
            self.relay.add(("finish", self.game_id, record))

    def abort(self) -> None:
        if not self.dropped and not self.relay.closed:
            self.relay.add(("abort", self.game_id, None))

    def _room(self) -> bool:
        relay = self.relay
        if relay.closed:
            self.dropped = True
            return False
        if relay.has_room():
            return True
        self.dropped = True
        relay.cut += 1
        relay.add(("abort", self.game_id, None))  # (past the bound by one record: its watchers see it end)
        log.warning("live_relay_behind", game=self.game_id, waiting=len(relay.items))
        return False


class RelayedWriter:
    """What a tap reads of a replay writer, for a game played in another process: the tap is
    handed this, then that game's records in order."""

    def __init__(self, game_id: str, path: str, header: dict[str, Any], start_events: list[Any]) -> None:
        self.game_id = game_id
        self.path = Path(path)
        self.header = header
        self.start_events = start_events
        self.state = SimpleNamespace(hand_results=[])
        """Grows by the hands a relayed decision ended, before the tap is told of it."""


class Replayer:
    """The receiving side: relayed records handed to a tap, as its own games' writers do.

    ``context`` is bound to what is logged when a tap fails (the game is then not shown
    further; a watcher's failure never stops anything)."""

    def __init__(self, **context: Any) -> None:
        self.context = context
        self.live: dict[str, tuple[RelayedWriter, Any]] = {}
        """The relayed games in progress: their stand-in writer and the tap's object for them."""

    def apply(self, items: Iterable[Record], tap: Callable[[Any], Any] | None) -> None:
        """Hand ``items`` to ``tap`` in order (None: nobody watches; the records are dropped)."""
        for kind, game_id, payload in items:
            try:
                if kind == "start":
                    if tap is not None:
                        writer = RelayedWriter(game_id, **payload)
                        watcher = tap(writer)
                        if watcher is not None:
                            self.live[game_id] = (writer, watcher)
                    continue
                entry = self.live.get(game_id)
                if entry is None:
                    continue
                writer, watcher = entry
                if kind == "decision":
                    fields, raw_events, ended = payload
                    writer.state.hand_results.extend(ended)
                    watcher.decision(fields, raw_events)
                else:
                    del self.live[game_id]
                    if kind == "finish":
                        watcher.finish(payload)
                    else:
                        watcher.abort()
            except Exception:
                log.exception("live_relay_failed", game=game_id, **self.context)
                self.live.pop(game_id, None)

    def abort_all(self) -> None:
        """The games relayed so far end here as aborted (their player is gone)."""
        self.apply([("abort", game_id, None) for game_id in list(self.live)], None)
