"""In-process policies: built-in bots, and the stand-in for a seat that lost its bot.

A policy sees only the legal action ids (sorted, as the engine gives them), so it
cannot peek at hidden information. ``default`` is the referee's fallback (issue 2):
draw when drawing is legal, else the first legal action. Because the draw's id is
0 and the legal list is sorted, that is always ``legal[0]``; the two names are kept
apart because they mean different things.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Protocol

from server.engine import ACTIONS, DRAW_ID, ActionKind, card_points, is_announced_play


class Policy(Protocol):
    name: str

    def choose(self, legal: Sequence[int]) -> int:
        """Pick one of ``legal`` (never empty)."""
        ...


def default_action(legal: Sequence[int]) -> int:
    """The referee's default action: draw when legal, else the first legal action."""
    return DRAW_ID if DRAW_ID in legal else legal[0]


class DefaultPolicy:
    name = "default"

    def choose(self, legal: Sequence[int]) -> int:
        return default_action(legal)


class FirstPolicy:
    name = "first"

    def choose(self, legal: Sequence[int]) -> int:
        return legal[0]


class RandomPolicy:
    """Uniform over the legal ids, from its own seeded generator (a game stays reproducible)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)

    def choose(self, legal: Sequence[int]) -> int:
        return legal[self._rng.randrange(len(legal))]


class GreedyPolicy:
    """Announces "one card" when it can, else plays the card worth the most points;
    draws or names a suit only when nothing else is legal."""

    name = "greedy"

    def __init__(self, crazy_eights: bool) -> None:
        self._crazy_eights = crazy_eights

    def choose(self, legal: Sequence[int]) -> int:
        announced = [a for a in legal if is_announced_play(a)]
        return max(announced or legal, key=lambda a: (self._worth(a), -a))

    def _worth(self, action_id: int) -> int:
        action = ACTIONS[action_id]
        assert action is not None
        if action.kind is ActionKind.PLAY and action.card is not None:
            return card_points(int(action.card.rank), self._crazy_eights)
        return -1


_FACTORIES: dict[str, Callable[[int], Policy]] = {
    "default": lambda seed: DefaultPolicy(),
    "first": lambda seed: FirstPolicy(),
    "random": RandomPolicy,
}
POLICY_NAMES = tuple(_FACTORIES)
"""The referee's built-in bots; ``greedy`` needs the game's preset and is played only by the
in-process runner (tournaments.local)."""


def make_policy(name: str, seed: int = 0) -> Policy:
    """A fresh policy by name; ValueError names the choices for an unknown one."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise ValueError(f"unknown built-in bot {name!r}: choose one of {', '.join(POLICY_NAMES)}") from None
    return factory(seed)
