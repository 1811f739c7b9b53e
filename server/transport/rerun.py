"""``craits replay rerun``: a recorded game played again on this machine, with a bot of the
author's in one seat (docs/rerun.md).

A local referee (the real one: gRPC on 127.0.0.1, the bot launched and sandboxed as in a
tournament) deals the recorded game again from its seed. Up to decision N the game follows
the record whatever the bot answers: each answer of the bot in the seat is compared with the
recorded one, and the first difference is kept with both answers and what the bot saw. From
N on the bot's answers are played; the other seats play their recorded actions while the game
is still on the recorded path, and a chosen policy (or a bot of their own) once it leaves it.
The new game is recorded, and its replay verified, like any other.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.engine import ACTIONS, GameConfig, GameState, observe
from server.game.policies import DefaultPolicy, GreedyPolicy, Policy, RandomPolicy
from server.game.referee import GameReferee, Hub
from server.game.seats import Seat
from server.game.transcript import replay_clocks
from server.protocol import wire
from server.spec import BotSpec, Clocks, GameRecord, GameSpec
from server.storage.replay import Replay
from server.storage.replay.faults import FINE, fault_words, is_fault

OTHERS = ("default", "random", "greedy")
"""The in-process policies the other seats may play once the game leaves the recorded path."""


def describe_state(state: GameState, seat: int) -> str:
    """What the seat saw at its decision, in one line."""
    obs = observe(state, seat)
    hand = "hidden" if obs.hand is None else " ".join(str(c) for c in obs.hand)
    kind = obs.decision.name if obs.decision is not None else "-"
    legal = ", ".join(f"{a} ({a.id})" for a in state.legal_actions())
    count = f", count {obs.count}" if obs.count else ""
    return (f"hand {obs.hand_number}, {kind}: holding [{hand}], top {obs.top_card} "
            f"({obs.current_suit.name.lower()} to follow){count}; legal: {legal}")


@dataclass
class Difference:
    """The first decision before N where the bot's answer is not the recorded one."""

    n: int
    recorded: str
    answered: str
    state: str

    def line(self) -> str:
        return (f"first difference at decision {self.n}: the record has {self.recorded}, the bot answered "
                f"{self.answered}\n  the bot saw: {self.state}")


@dataclass
class RecordedPath:
    """The recorded actions, and whether the game being played is still on their path."""

    actions: list[int]
    on_path: bool = True
    left_at: int | None = None
    """The decision whose action first differed from the record (or the first past its end)."""

    def recorded(self, n: int) -> int | None:
        """The recorded action of decision ``n`` while the game is on the recorded path."""
        if self.on_path and n <= len(self.actions):
            return self.actions[n - 1]
        return None

    def applied(self, n: int, action: int) -> None:
        if self.on_path and (n > len(self.actions) or self.actions[n - 1] != action):
            self.on_path = False
            self.left_at = n


class _PathState(GameState):
    """The game's state, telling the path every action applied (``clone()``, which the judge
    uses to try an answer, makes a plain GameState: only applied actions are seen)."""

    def __init__(self, config: GameConfig, seed: int, path: RecordedPath) -> None:
        super().__init__(config, seed)
        self.path = path

    def apply(self, action: Any) -> None:
        n = self.decisions + 1
        super().apply(action)
        self.path.applied(n, action if isinstance(action, int) else action.id)


class _RecordedThen:
    """A seat's recorded actions while the game is on the recorded path, then ``after``."""

    def __init__(self, path: RecordedPath, state: GameState, after: Policy) -> None:
        self.name = f"recorded, then {after.name}"
        self._path, self._state, self._after = path, state, after

    def choose(self, legal: Sequence[int]) -> int:
        action = self._path.recorded(self._state.decisions + 1)
        return action if action is not None and action in legal else self._after.choose(legal)


class RerunReferee(GameReferee):
    """The referee of a rerun: the recorded path up to ``from_n``, live play after it."""

    def __init__(self, spec: GameSpec, seats: Sequence[Seat], hub: Hub, *, replay: Replay, seat: int,
                 from_n: int, others: str) -> None:
        super().__init__(spec, seats, hub)
        self.path = RecordedPath([int(rec["action"]) for rec in replay.decisions])
        self.state = _PathState(spec.config, spec.seed, self.path)
        self.encoder = wire.GameEncoder(self.state, self.game_id)
        self.seat_index = seat
        self.from_n = from_n
        self.difference: Difference | None = None
        self.compared = 0
        for other in self.seats:
            if other.index != seat and other.policy is not None:  # an in-process seat: recorded, then a policy
                other.policy = _RecordedThen(self.path, self.state, _policy(others, spec, other.index))

    async def _ask(self, seat: Seat, legal: list[int]) -> tuple[int, str, float | None, float | None, str]:
        n = self.state.decisions + 1
        state_before = describe_state(self.state, seat.index) if seat.index == self.seat_index else ""
        action, status, think, transport, note = await super()._ask(seat, legal)
        recorded = self.path.recorded(n)
        if recorded is None:
            return action, status, think, transport, note
        if seat.index == self.seat_index:
            if n >= self.from_n:
                return action, status, think, transport, note
            self.compared += 1
            if self.difference is None and (action != recorded or status not in FINE):
                answered = f"{ACTIONS[action]} ({action})" if status in FINE else f"nothing playable ({status}{': ' + note if note else ''})"
                self.difference = Difference(n, f"{ACTIONS[recorded]} ({recorded})", answered, state_before)
        return recorded, status, think, transport, note


def _policy(name: str, spec: GameSpec, seat: int) -> Policy:
    if name == "random":
        return RandomPolicy(spec.seed * 1_000_003 + seat)
    if name == "greedy":
        return GreedyPolicy(spec.config.crazy_eights)
    return DefaultPolicy()


@dataclass
class RerunOutcome:
    """What a rerun found, for the command's report."""

    from_n: int
    fault_n: int | None
    """The recorded fault the rerun looks at (None: the record has none from ``from_n`` on)."""
    record: GameRecord
    difference: Difference | None
    compared: int
    left_at: int | None
    faults: list[tuple[int, str]] = field(default_factory=list)
    """The seat's faults in the new game from ``from_n`` on: (decision, what)."""
    left_how: str = ""
    """What was played at ``left_at`` and what the record has there ("seat 0 (kitless) played 7S,
    the record has 9H:diamonds"): the decision the author changed, or the policy's first own move."""

    @property
    def fault_gone(self) -> bool:
        return not self.faults


def rerun_spec(replay: Replay, seat: int, command: Sequence[str], others: str | Sequence[str], folder: Path,
               *, connect_timeout_s: float = 10.0) -> GameSpec:
    """The new game: the recorded deal and clocks, ``command`` in ``seat``, the others
    in-process (or ``others`` launched when it is a command)."""
    names = replay.bots
    seats = []
    for index, name in enumerate(names):
        if index == seat:
            seats.append(BotSpec(name=name, token="", command=tuple(command)))
        elif isinstance(others, str):
            seats.append(BotSpec(name=name, token="", builtin="default"))
        else:
            seats.append(BotSpec(name=name, token="", command=tuple(others)))
    clocks = replay_clocks(replay)
    clocks = Clocks(clocks.decision_s, clocks.bank_s, clocks.max_strikes, clocks.reconnect_grace_s, connect_timeout_s)
    game_id = f"rerun-{replay.game_id or 'game'}-{secrets.token_hex(3)}"
    return GameSpec(game_id, replay.config, replay.seed, tuple(seats), clocks, folder / f"{game_id}.jsonl",
                    str(replay.header.get("tournament", "")))


class RerunGames:
    """What ``Arena.run_game`` builds the rerun's referee with; keeps the referee it built."""

    def __init__(self, replay: Replay, seat: int, from_n: int, others: str) -> None:
        self.replay, self.seat, self.from_n, self.others = replay, seat, from_n, others
        self.game: RerunReferee | None = None

    def __call__(self, spec: GameSpec, seats: Sequence[Seat], hub: Hub) -> GameReferee:
        self.game = RerunReferee(spec, seats, hub, replay=self.replay, seat=self.seat, from_n=self.from_n,
                                 others=self.others)
        return self.game


def outcome(game: RerunReferee, record: GameRecord, new: Replay, fault_n: int | None) -> RerunOutcome:
    faults = [(int(rec["n"]), fault_words(rec)) for rec in new.decisions
              if rec["seat"] == game.seat_index and rec["n"] >= game.from_n and is_fault(rec)]
    left_at, left_how = game.path.left_at, ""
    if left_at is not None and left_at <= len(new.decisions):
        rec = new.decisions[left_at - 1]
        recorded = game.path.actions
        left_how = (f"seat {rec['seat']} ({new.bots[rec['seat']]}) played {rec['text']}, "
                    + (f"the record has {ACTIONS[recorded[left_at - 1]]}" if left_at <= len(recorded)
                       else "past the record's end"))
    return RerunOutcome(game.from_n, fault_n, record, game.difference, game.compared, left_at, faults, left_how)


