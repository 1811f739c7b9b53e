"""Random play over every preset and every flag combination (STYLE 10): nothing crashes, every game ends."""

from __future__ import annotations

import random
from itertools import product
from typing import Any

import pytest

from server.engine import Action, GameState, new_game, observe, placings
from tests.engine.play import MAX_DECISIONS, random_action
from tests.strategies import PLAYER_RANGE

BOOLEAN_FLAGS = ("short_game", "voluntary_draw", "face_cards", "strip_kings_queens")


def every_combination() -> list[tuple[str, int, dict[str, Any]]]:
    """Every preset with every value of every flag; player counts cycle through those allowed."""
    combos: list[tuple[str, int, dict[str, Any]]] = []
    for preset in PLAYER_RANGE:
        low, high = PLAYER_RANGE[preset]
        if preset == "crazy-eights":
            flag_sets: list[dict[str, Any]] = [{"decks": 1}, {"decks": 2}]
        else:
            flag_sets = [
                {**dict(zip(BOOLEAN_FLAGS, values, strict=True)), "seven_hits": seven, "decks": decks}
                for *values, seven, decks in product(*[(False, True)] * 4, ("next_but_one", "next"), (1, 2))
            ]
        for i, flags in enumerate(flag_sets):
            allowed = [p for p in range(low, high + 1) if flags["decks"] == 2 or p <= 5]
            combos.append((preset, allowed[i % len(allowed)], flags))
        if preset == "crazy-eights":  # and every player count once
            combos += [(preset, p, {}) for p in range(low, high + 1)]
    return combos


COMBINATIONS = every_combination()


def test_the_smoke_run_covers_every_flag_value_and_player_count() -> None:
    assert len(COMBINATIONS) == 64 + 64 + 2 + 6
    for preset, (low, high) in PLAYER_RANGE.items():
        assert {p for q, p, _ in COMBINATIONS if q == preset} == set(range(low, high + 1))


def play_smoke(g: GameState, chooser: random.Random) -> None:
    while g.decision is not None:
        assert g.decisions < MAX_DECISIONS
        legal = g.legal_actions()
        assert legal, "a decision always has a legal action"
        aid = random_action(g, chooser)
        chosen = Action.from_id(aid)
        assert Action.parse(str(chosen)) == chosen, "every legal action has a text form that parses back"
        g.apply(aid)


@pytest.mark.parametrize(
    ("preset", "players", "flags"), COMBINATIONS,
    ids=[f"{p}-{n}-" + "-".join(f"{k}={v}" for k, v in f.items()) for p, n, f in COMBINATIONS],
)
def test_random_play_smoke(preset: str, players: int, flags: dict[str, Any]) -> None:
    g = new_game(preset, players, seed=len(str(flags)) * 31 + players, **flags)
    play_smoke(g, random.Random(players))
    result = g.result()
    assert len(result.totals) == len(result.placings) == players
    assert result.placings == (
        tuple(result.team_placings[s % 2] for s in range(4)) if result.team_placings is not None
        else placings(result.totals, result.lower_wins)
    )
    view = observe(g, 0)
    assert view.decision is None and view.hand_number == len(result.hands)
