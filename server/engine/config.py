"""Presets and variant flags (RULINGS section 10), validated once at game creation."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import ConfigError

PRESETS = ("craits", "crates-partners", "crazy-eights")
SEVEN_HITS = ("next_but_one", "next")
HAND_SIZES = (8, 7, 6, 5, 4, 3, 2, 1, 2, 3, 4, 5, 6, 7, 8)
CRAZY_EIGHTS_MAX_HANDS = 200
"""Referee's bound on a crazy-eights game (the sources set none): after this many
hands the game ends and the highest total wins."""


@dataclass(frozen=True, slots=True)
class Flags:
    """Variant flags; the defaults are the canonical game."""

    short_game: bool = False
    voluntary_draw: bool = False
    seven_hits: str = "next_but_one"
    face_cards: bool = False
    strip_kings_queens: bool = False
    decks: int = 0
    """1 or 2; 0 means "the preset's default for the player count"."""


FLAG_NAMES = tuple(Flags.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class GameConfig:
    """Everything that fixes a game except its seed and the decisions."""

    preset: str = "craits"
    players: int = 4
    flags: Flags = field(default_factory=Flags)

    @property
    def decks(self) -> int:
        return self.flags.decks

    @property
    def partnerships(self) -> bool:
        return self.preset == "crates-partners"

    @property
    def crazy_eights(self) -> bool:
        return self.preset == "crazy-eights"

    @property
    def hand_sizes(self) -> tuple[int, ...]:
        """Cards dealt per hand, hand by hand (crazy eights: per hand until the target)."""
        if self.crazy_eights:
            return (7 if self.players == 2 else 5,)
        return HAND_SIZES[:8] if self.flags.short_game else HAND_SIZES

    @property
    def deck_cards(self) -> list[int]:
        """The card codes of the full deck(s), in a fixed order before shuffling."""
        one = [c for c in range(52) if not (self.flags.strip_kings_queens and c // 4 + 1 in (12, 13))]
        return one * self.decks

    @property
    def crazy_eights_target(self) -> int:
        return 50 * self.players

    def to_dict(self) -> dict[str, Any]:
        return {"preset": self.preset, "players": self.players, "flags": asdict(self.flags)}

    def team_of(self, seat: int) -> int:
        """Partnerships sit opposite: seats 0 and 2 are team 0, seats 1 and 3 team 1."""
        return seat % 2 if self.partnerships else seat


def make_config(preset: str = "craits", players: int = 4, **flags: Any) -> GameConfig:
    """Build and validate a configuration; raise ConfigError saying what is allowed."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}: choose one of {', '.join(PRESETS)}")
    unknown = sorted(set(flags) - set(FLAG_NAMES))
    if unknown:
        raise ConfigError(f"unknown flag(s) {', '.join(unknown)}: known flags are {', '.join(FLAG_NAMES)}")
    if not isinstance(players, int) or isinstance(players, bool):
        raise ConfigError(f"players must be a whole number, got {players!r}")
    for name in ("short_game", "voluntary_draw", "face_cards", "strip_kings_queens"):
        if name in flags and not isinstance(flags[name], bool):
            raise ConfigError(f"flag {name} must be true or false, got {flags[name]!r}")
    if flags.get("seven_hits", "next_but_one") not in SEVEN_HITS:
        raise ConfigError(f"flag seven_hits must be one of {', '.join(SEVEN_HITS)}, got {flags['seven_hits']!r}")

    if preset == "crazy-eights":
        others = sorted(k for k in flags if k != "decks")
        if others:
            raise ConfigError(f"preset crazy-eights takes the flag decks alone, not {', '.join(others)}")
        low, high = 2, 7
    elif preset == "crates-partners":
        low, high = 4, 4
    else:
        low, high = 2, 10
    if not low <= players <= high:
        allowed = f"exactly {low}" if low == high else f"{low} to {high}"
        raise ConfigError(f"preset {preset} takes {allowed} players, not {players}")

    decks = flags.get("decks", 0) or (2 if players > 5 else 1)
    if isinstance(decks, bool) or decks not in (1, 2):
        raise ConfigError(f"flag decks must be 1 or 2, got {decks!r}")
    if players > 5 and decks != 2:
        raise ConfigError(f"{players} players need two decks (decks=2); one deck serves 2 to 5")
    config = GameConfig(preset, players, Flags(**{**flags, "decks": decks}))
    needed = players * max(config.hand_sizes) + 1
    if len(config.deck_cards) < needed:
        raise ConfigError(
            f"{players} players need {needed} cards to deal and turn one up, "
            f"but the deck has {len(config.deck_cards)}; use decks=2 or fewer players"
        )
    return config
