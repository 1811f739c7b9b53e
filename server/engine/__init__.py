"""The pure rules engine of Craits: no I/O, no clock, randomness only from the seed.

Typical use::

    from server.engine import new_game, observe
    game = new_game("craits", players=4, seed=7)
    while game.decision is not None:
        legal = game.legal_actions()       # sorted; each has .id and str()
        game.apply(legal[0])
    print(game.result().totals)
"""

from .actions import ACTIONS, DRAW_ID, Action, ActionKind, is_announced_play
from .cards import CARDS, Card, Rank, Suit
from .config import FLAG_NAMES, PRESETS, Flags, GameConfig, make_config
from .errors import ConfigError, CraitsError, IllegalActionError
from .observation import Observation, observe
from .scoring import card_points, craits_hand_score, crazy_eights_hand_points
from .state import (
    Decision,
    DecisionKind,
    Event,
    GameResult,
    GameState,
    HandResult,
    event_view,
    new_game,
    placings,
)

__all__ = [
    "ACTIONS", "CARDS", "DRAW_ID", "FLAG_NAMES", "PRESETS", "Action", "ActionKind", "Card", "ConfigError",
    "CraitsError", "Decision", "DecisionKind", "Event", "Flags", "GameConfig", "GameResult",
    "GameState", "HandResult", "IllegalActionError", "Observation", "Rank", "Suit",
    "card_points", "craits_hand_score", "crazy_eights_hand_points", "event_view", "is_announced_play",
    "make_config", "new_game",
    "observe", "placings",
]
