"""The relay of tap records to another process: every record of every game arrives, in its
game's order, whichever threads play; a game past the backlog ends as aborted."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path
from typing import Any

from server.engine import new_game
from server.storage.replay import ReplayWriter
from server.storage.replay.relay import Relay, Replayer
from server.storage.replay.writer import REPLAY_TAP
from tests.recorded import play_recorded


class _Watcher:
    """A tap that keeps what it is told (as the web process's hub does)."""

    def __init__(self, writer: Any, seen: dict[str, list[Any]]) -> None:
        self.log = seen.setdefault(writer.game_id, [("start", len(writer.start_events))])
        self.writer = writer

    def decision(self, fields: tuple[Any, ...], raw_events: list[Any]) -> None:
        self.log.append(("decision", fields[0], len(self.writer.state.hand_results)))

    def finish(self, record: dict[str, Any]) -> None:
        self.log.append(("finish", record["decisions"]))

    def abort(self) -> None:
        self.log.append(("abort",))


def _play(path: Path, game_id: str, seed: int) -> tuple[int, int]:
    """A game by the random policy, recorded (so tapped); its decisions and hands."""
    game = play_recorded(path, game_id, seed=seed)
    return game.decisions, len(game.hand_results)


def test_every_record_of_games_played_in_threads_arrives_in_order(tmp_path: Path) -> None:
    relay = Relay(lambda: None)
    seen: dict[str, list[Any]] = {}
    replayer = Replayer()
    stop = threading.Event()

    def receive() -> None:  # the other side, taking batches while the games play, through pickle
        while True:
            done = stop.is_set()
            replayer.apply(pickle.loads(pickle.dumps(relay.take())), lambda w: _Watcher(w, seen))
            if done:
                return

    played: dict[str, tuple[int, int]] = {}

    def play(n: int) -> None:
        REPLAY_TAP.set(relay.tap)
        played[f"g{n}"] = _play(tmp_path / f"g{n}.jsonl", f"g{n}", seed=n)

    receiver = threading.Thread(target=receive)
    receiver.start()
    players = [threading.Thread(target=play, args=(n,)) for n in range(4)]
    for thread in players:
        thread.start()
    for thread in players:
        thread.join()
    stop.set()
    receiver.join()
    assert set(seen) == set(played)
    for game_id, (decisions, hands) in played.items():
        log = seen[game_id]
        assert log[0][0] == "start" and log[-1] == ("finish", decisions)
        assert [entry[1] for entry in log[1:-1]] == list(range(1, decisions + 1)), "every decision, in order"
        assert log[-2][2] == hands, "the hands each decision ended came with it"
    assert not replayer.live


def test_a_game_past_the_backlog_is_relayed_as_aborted_and_no_more_of_it(tmp_path: Path) -> None:
    relay = Relay(lambda: None, max_backlog=100)
    seen: dict[str, list[Any]] = {}
    token = REPLAY_TAP.set(relay.tap)
    try:
        decisions, _ = _play(tmp_path / "g.jsonl", "g", seed=1)
        late = ReplayWriter(tmp_path / "h.jsonl", new_game("craits", 4, seed=2), seats=["a", "b", "c", "d"],
                            game_id="h")
        late.abort()
    finally:
        REPLAY_TAP.reset(token)
    assert decisions > 100 and relay.cut == 1
    items = relay.take()
    assert len(items) == 101 and items[-1] == ("abort", "g", None), "a start, 99 decisions, then its end"
    Replayer().apply(items, lambda w: _Watcher(w, seen))
    assert seen["g"][-1] == ("abort",) and len(seen["g"]) == 101
    assert "h" not in seen, "a game that starts while the backlog is full is not relayed at all"
