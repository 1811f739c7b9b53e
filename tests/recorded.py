"""A whole game of four-player Craits by the random policy, recorded: the tests of replay taps
(the web hub, the relay) watch it being written."""

from __future__ import annotations

import random
import time
from pathlib import Path

from server.engine import new_game
from server.engine.state import GameState
from server.storage.replay import ReplayWriter


def play_recorded(path: Path, game_id: str, *, seed: int = 3, pause_every: int = 0, pause_s: float = 0.0) -> GameState:
    """Play and record one game (tapped when a tap is installed); with a pause every
    ``pause_every`` decisions, to last a while. Returns the finished game."""
    game = new_game("craits", 4, seed=seed)
    rng = random.Random(seed)
    with ReplayWriter(path, game, seats=["ann", "ben", "cat", "dan"], game_id=game_id) as writer:
        while (decision := game.decision) is not None:
            legal = game.legal_action_ids()
            action = rng.choice(legal)
            game.apply(action)
            writer.decision(decision.seat, decision.kind, action, "auto" if len(legal) == 1 else "ok")
            if pause_every and game.decisions % pause_every == 0:
                time.sleep(pause_s)
    return game
