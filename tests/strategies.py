"""Hypothesis strategies shared by the test suites: valid game configurations and seeds."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

PLAYER_RANGE = {"craits": (2, 10), "crates-partners": (4, 4), "crazy-eights": (2, 7)}
"""Players each preset takes (RULINGS 1.1 and 10)."""

Config = tuple[str, int, dict[str, Any]]
"""(preset, players, flags): the arguments of ``new_game`` besides the seed."""


def _maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A flag value, or the marker None for "flag not given" (the default applies)."""
    return st.none() | value


@st.composite
def configs(draw: st.DrawFn, presets: tuple[str, ...] = tuple(PLAYER_RANGE)) -> Config:
    """Any valid (preset, players, flags): every flag may be given, left out, or set either way."""
    preset = draw(st.sampled_from(presets))
    low, high = PLAYER_RANGE[preset]
    players = draw(st.integers(low, high))
    decks_allowed = [2] if players > 5 else [1, 2]
    chosen: dict[str, Any] = {"decks": draw(_maybe(st.sampled_from(decks_allowed)))}
    if preset != "crazy-eights":  # crazy eights takes the flag decks alone
        for name in ("short_game", "voluntary_draw", "face_cards", "strip_kings_queens"):
            chosen[name] = draw(_maybe(st.booleans()))
        chosen["seven_hits"] = draw(_maybe(st.sampled_from(["next_but_one", "next"])))
    flags = {name: value for name, value in chosen.items() if value is not None}
    return preset, players, flags


seeds = st.integers(min_value=0, max_value=2**64 - 1)
"""Game seeds: the engine's generator takes 64 bits."""
