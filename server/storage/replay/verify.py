"""Verifying replays: re-simulate the game with the engine from its seed and decisions and
fail precisely where the file and the rules disagree."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.engine import ACTIONS, GameState
from server.engine.errors import ConfigError
from server.storage.replay.format import ReplayError, canonical_json, event_json
from server.storage.replay.reader import Replay, read_replay
from server.storage.replay.writer import result_entry

JsonDict = dict[str, Any]

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
    # (format 2 was re-played by the engine as it was read: its events are the engine's)
    state = replay.final_state if replay.final_state is not None else _last_state(simulate(replay))
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


