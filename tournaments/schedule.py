"""A fair round-robin schedule: pure and deterministic, no I/O.

* **Tables.** Every combination of ``table_size`` bots out of the field is a
  table (``itertools.combinations`` of the bots in file order). With the
  ``crates-partners`` preset (four seats, partners opposite) each combination
  is played in its three possible pairings, so no two bots are always partners.
* **Seat rotation.** Each deal of a table is played ``table_size`` times, in the
  cyclic rotations of the table's seating: in rotation ``r`` seat ``s`` holds
  bot ``(s + r) mod n``. Cyclic rotations are the smallest set that puts every
  bot in every seat exactly once per deal (n games instead of n! permutations);
  for partners, a rotation keeps the pairs together, so each pairing keeps its
  partnership in all four rotations.
* **Duplicate deals.** All rotations of a deal share one game seed, so each bot
  meets the very same cards from every seat. With ``duplicate = "tournament"``
  (the default) the seed depends only on the deal number, so every table plays
  the same deals and every bot meets exactly the same cards over the tournament;
  with ``duplicate = "table"`` each table gets deals of its own (more variety,
  less comparability between tables).
* **Order.** Deal by deal, table by table, rotation by rotation: a tournament
  stopped half-way has played whole deals of every table, and the ratings are
  fed in this order whatever order games finish in.

Seeds come from SHA-256 of the tournament seed and the deal (and the table for
``duplicate = "table"``), never from Python's salted ``hash()``.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tournaments.config import TournamentConfig

_PAIRINGS = ((0, 1, 2, 3), (0, 2, 1, 3), (0, 1, 3, 2))
"""Seatings of a 4-combination with distinct partnerships (seats 0+2 against 1+3):
a&c/b&d, a&b/c&d, a&d/b&c."""


@dataclass(frozen=True, slots=True)
class Table:
    index: int
    bots: tuple[str, ...]
    """The seating of rotation 0."""


@dataclass(frozen=True, slots=True)
class ScheduledGame:
    game_id: str
    ordinal: int
    """Position in the schedule: results are rated in this order."""
    table: int
    deal: int
    rotation: int
    seed: int
    seats: tuple[str, ...]
    """Bot names, seat 0 first."""


def tables(bots: Sequence[str], table_size: int, partnerships: bool = False) -> tuple[Table, ...]:
    if partnerships and table_size != 4:
        raise ValueError("partnerships need tables of four")
    seatings: list[tuple[str, ...]] = []
    for combo in itertools.combinations(bots, table_size):
        if partnerships:
            seatings.extend(tuple(combo[i] for i in pairing) for pairing in _PAIRINGS)
        else:
            seatings.append(combo)
    return tuple(Table(i, seating) for i, seating in enumerate(seatings))


def games_per_deal(n_bots: int, table_size: int, partnerships: bool = False) -> int:
    """Games one deal adds to the schedule: tables x rotations."""
    return math.comb(n_bots, table_size) * (3 if partnerships else 1) * table_size


def derive_seed(seed: int, *parts: object) -> int:
    """A stable 63-bit seed from the tournament seed and labels (fits SQLite's INTEGER)."""
    text = ":".join(str(p) for p in ("craits-tournament", seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def rotate(seating: tuple[str, ...], rotation: int) -> tuple[str, ...]:
    """Seat ``s`` gets bot ``(s + rotation) mod n`` of the base seating."""
    n = len(seating)
    return tuple(seating[(s + rotation) % n] for s in range(n))


def make_schedule(
    bots: Sequence[str],
    table_size: int,
    deals: int,
    seed: int,
    *,
    partnerships: bool = False,
    duplicate: str = "tournament",
) -> tuple[ScheduledGame, ...]:
    if duplicate not in ("tournament", "table"):
        raise ValueError(f"unknown duplicate mode {duplicate!r}")
    if len(set(bots)) != len(bots):
        raise ValueError("bot names must be distinct")
    games: list[ScheduledGame] = []
    all_tables = tables(bots, table_size, partnerships)
    for deal in range(deals):
        shared = derive_seed(seed, "deal", deal)
        for table in all_tables:
            game_seed = shared if duplicate == "tournament" else derive_seed(seed, "table", table.index, "deal", deal)
            for rotation in range(table_size):
                games.append(
                    ScheduledGame(
                        game_id=f"d{deal + 1:04d}-t{table.index + 1:05d}-r{rotation + 1}",
                        ordinal=len(games),
                        table=table.index,
                        deal=deal,
                        rotation=rotation,
                        seed=game_seed,
                        seats=rotate(table.bots, rotation),
                    )
                )
    return tuple(games)


def schedule_for(config: TournamentConfig) -> tuple[ScheduledGame, ...]:
    """The schedule of a tournament file."""
    return make_schedule(
        config.bot_names,
        config.table_size,
        config.deals,
        config.seed,
        partnerships=config.game.partnerships,
        duplicate=config.duplicate,
    )


def schedule_digest(games: Sequence[ScheduledGame]) -> str:
    """A fingerprint of a schedule, to refuse resuming with a changed tournament file."""
    text = "\n".join(f"{g.game_id} {g.seed} {' '.join(g.seats)}" for g in games)
    return hashlib.sha256(text.encode()).hexdigest()
