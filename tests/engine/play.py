"""Random legal play, shared by the property, smoke and determinism tests."""

from __future__ import annotations

import random
from collections.abc import Callable

from server.engine import GameState, new_game
from server.engine.actions import DRAW_ID

OPTIONAL_DRAW_CHANCE = 0.1
"""How often the random player takes a draw it was not forced to take (voluntary_draw,
crazy eights). Uniform choice draws so often under voluntary_draw that hands swell
and a game lasts 10 to 100 times longer (measured: up to ~260,000 decisions)."""


MAX_DECISIONS = 50_000
"""Bound on the decisions of one game under the random player of tests/engine/play.py.
Measured (2,000 random configurations per preset, bench-style script in the report):
craits at most 11,257 (7 players, voluntary_draw, face_cards, all fifteen hands),
crates-partners at most 7,940, crazy-eights at most 1,122. The bound is over four times
the worst seen. (A uniform player that draws voluntarily as often as it plays needs far
more: up to ~260,000 decisions; see OPTIONAL_DRAW_CHANCE.)"""


def random_action(g: GameState, chooser: random.Random) -> int:
    """A legal action id: uniform over the plays, drawing when forced or now and then."""
    ids = g.legal_action_ids()
    if len(ids) > 1 and ids[0] == DRAW_ID and chooser.random() >= OPTIONAL_DRAW_CHANCE:
        return ids[1 + chooser.randrange(len(ids) - 1)]
    return ids[chooser.randrange(len(ids))]


def play_out(
    g: GameState,
    choice_seed: int,
    limit: int | None = None,
    after_each: Callable[[GameState], None] | None = None,
) -> GameState:
    """Play ``g`` to the end with random legal actions (at most ``limit`` decisions)."""
    chooser = random.Random(choice_seed)
    while g.decision is not None and (limit is None or g.decisions < limit):
        g.apply(random_action(g, chooser))
        if after_each is not None:
            after_each(g)
    return g


def random_game(seed: int, preset: str = "craits", players: int = 4, **flags: object) -> GameState:
    """A whole game from ``seed``, its decisions drawn from the same seed."""
    return play_out(new_game(preset, players, seed=seed, **flags), seed)
