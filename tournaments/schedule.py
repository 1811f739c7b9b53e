"""Fair schedules: pure and deterministic, no I/O.

Two kinds: the round robin of every combination of bots (below), and the balanced
schedule of ``games_per_bot`` games per bot for fields too large for it (see "the
balanced schedule" further down); both play each table's deal in every seat rotation.

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
* **Deals.** By default (``duplicate = "none"``) every game has a deal of its own: no
  bot can meet a deal twice, so nothing it remembers of one game tells it a card of
  another; the rotations balance the seats over the schedule. As options, duplicate
  deals: with ``duplicate = "table"`` all rotations of a table's deal share one seed
  (each bot meets the same cards from every seat), with ``duplicate = "tournament"``
  every table plays the same deals too. Then the referee's pool never gives a kept
  process a deal it has already played (``server.transport.pool``), and no bot is told
  the seed while a game of its deal remains (docs/protocol.md).
* **Order.** Deal by deal, table by table, rotation by rotation: a tournament
  stopped half-way has played whole deals of every table, and the ratings are
  fed in this order whatever order games finish in.

Deal seeds are an HMAC-SHA256 of the run's secret deal key (:func:`deal_key`: 256 random
bits kept in its store, or derived from the file's ``seed`` for a reproducible run) and the
game's labels: nobody without the key can compute a deal from the public game ids. The
seating (who sits where) is public and comes from the file's ``seed`` (0 by default).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import math
import random
import secrets
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

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


DUPLICATE_MODES = ("none", "table", "tournament")
"""How deals are shared: none (every game its own deal, the default), table (a table's
rotations share one), tournament (every table plays the same deals too)."""


def derive_seed(seed: int | bytes, *parts: object) -> int:
    """A stable 63-bit seed (fits SQLite's INTEGER) from labels and either a secret deal key
    (bytes: HMAC-SHA256, unpredictable without the key) or a public number (SHA-256: for the
    seating and for benches, never for a deal bots play against each other)."""
    if isinstance(seed, bytes):
        text = ":".join(str(p) for p in parts)
        digest = hmac.new(seed, text.encode(), hashlib.sha256).digest()
    else:
        text = ":".join(str(p) for p in ("craits-tournament", seed, *parts))
        digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def deal_key(seed: int | None = None) -> bytes:
    """A run's secret deal key: 256 random bits, or (``seed`` given: a reproducible run, whose
    deals anyone who knows that seed can compute) derived from ``seed``."""
    if seed is None:
        return secrets.token_bytes(32)
    return hashlib.sha256(f"craits-deal-key:{seed}".encode()).digest()


def game_seed(key: bytes | int, duplicate: str, deal: int, table: int, rotation: int) -> int:
    """The seed of a scheduled game: its own (``none``), its table's deal's (``table``) or its
    deal's at every table (``tournament``). An ``int`` key is a run stored before deal keys
    (its deals came from the file's seed and are played as they were)."""
    if duplicate == "tournament":
        return derive_seed(key, "deal", deal)
    if duplicate == "table":
        return derive_seed(key, "table", table, "deal", deal)
    return derive_seed(key, "table", table, "deal", deal, "rotation", rotation)


def shares_deals(duplicate: str) -> bool:
    """True when several games play one deal (their seeds are told only once all are over)."""
    return duplicate != "none"


def rotate(seating: tuple[str, ...], rotation: int) -> tuple[str, ...]:
    """Seat ``s`` gets bot ``(s + rotation) mod n`` of the base seating."""
    n = len(seating)
    return tuple(seating[(s + rotation) % n] for s in range(n))


def make_schedule(
    bots: Sequence[str],
    table_size: int,
    deals: int,
    seed: bytes | int,
    *,
    partnerships: bool = False,
    duplicate: str = "none",
) -> tuple[ScheduledGame, ...]:
    """Every table's ``deals`` in every rotation; deal seeds from ``seed``, the run's deal key
    (:func:`game_seed`; an int: a run stored before deal keys, or a bench's)."""
    if duplicate not in DUPLICATE_MODES:
        raise ValueError(f"unknown duplicate mode {duplicate!r}")
    if len(set(bots)) != len(bots):
        raise ValueError("bot names must be distinct")
    games: list[ScheduledGame] = []
    all_tables = tables(bots, table_size, partnerships)
    for deal in range(deals):
        for table in all_tables:
            for rotation in range(table_size):
                games.append(
                    ScheduledGame(
                        game_id=f"d{deal + 1:04d}-t{table.index + 1:05d}-r{rotation + 1}",
                        ordinal=len(games),
                        table=table.index,
                        deal=deal,
                        rotation=rotation,
                        seed=game_seed(seed, duplicate, deal, table.index, rotation),
                        seats=rotate(table.bots, rotation),
                    )
                )
    return tuple(games)


def schedule_digest(games: Sequence[ScheduledGame]) -> str:
    """A fingerprint of a schedule, to refuse resuming with a changed tournament file."""
    text = "\n".join(f"{g.game_id} {g.seed} {' '.join(g.seats)}" for g in games)
    return hashlib.sha256(text.encode()).hexdigest()


# ------------------------------------------------------------------ the balanced schedule
#
# A round robin of every combination grows as C(bots, table_size): 30 bots at tables of
# four are 27,405 tables. The balanced schedule plays a chosen number of tables per bot
# instead, picked so that
#
# * every bot plays ``games_per_bot`` games: ``games_per_bot / table_size`` tables, each
#   of them one deal played in every rotation (every bot in every seat exactly equally);
# * every pair of bots shares a table within one of the average ``t (k - 1) / (n - 1)``
#   (``t`` tables per bot, tables of ``k``, ``n`` bots), and at least once.
#
# Such a set of tables is a near-balanced block design. Two seeded searches look for one:
#
# 1. a *cyclic* design: a few base tables over the integers modulo ``n``, each shifted by
#    0, m, 2m, ... (m = k / gcd(k, t), so that every bot gets exactly ``t`` tables). How
#    often two bots meet then depends only on their difference (and residue modulo m), so
#    the search balances a few dozen difference counts instead of every pair;
# 2. a greedy construction (each table from the bots that still need tables, those that
#    have met least first) repaired by swapping bots between tables while that lowers
#    the number of pairs outside the target range.
#
# Both are bounded by a number of steps (not a time), so a schedule is the same on every
# machine. Close to the smallest possible ``games_per_bot`` a within-one design is a
# hard combinatorial object (a covering design), and the searches may find none: the
# schedule is then refused, naming the nearest ``games_per_bot`` that builds.


class ScheduleError(ValueError):
    """A balanced schedule that cannot be built; the message names numbers that work."""


@dataclass(frozen=True, slots=True)
class PairTarget:
    """How often each pair of bots must share a table."""

    average: float
    low: int
    high: int


def pair_target(n_bots: int, table_size: int, tables_per_bot: int) -> PairTarget:
    """Within one of the average, and at least once."""
    average = tables_per_bot * (table_size - 1) / (n_bots - 1)
    if average == int(average):
        low, high = int(average) - 1, int(average) + 1
    else:
        low, high = math.floor(average), math.ceil(average)
    return PairTarget(average, max(low, 1), high)


def balanced_arithmetic_problem(n_bots: int, table_size: int, games_per_bot: int) -> str | None:
    """Why no balanced schedule can have these numbers at all (None: it may be searched for)."""
    k = table_size
    if n_bots < k:
        return f"{n_bots} bots cannot fill a table of {k}"
    if games_per_bot % k:
        return f"each deal is played in all {k} seat rotations, so games_per_bot must be a multiple of {k}"
    t = games_per_bot // k
    if (n_bots * t) % k:
        return f"{n_bots} bots x {t} tables each is not a whole number of tables of {k}"
    if t * (k - 1) < n_bots - 1:
        return (f"{games_per_bot} games ({t} tables) per bot meet at most {t * (k - 1)} of the other "
                f"{n_bots - 1} bots, and every pair must meet")
    return None


def workable_games_per_bot(n_bots: int, table_size: int, near: int, count: int) -> list[int]:
    """The ``count`` smallest games_per_bot from ``near`` on (or the smallest at all) that pass
    the arithmetic: whole tables, every pair able to meet."""
    k = table_size
    t = max(math.ceil((n_bots - 1) / (k - 1)), 1, math.ceil(near / k) if near > 0 else 1)
    found: list[int] = []
    while len(found) < count:
        if (n_bots * t) % k == 0:
            found.append(t * k)
        t += 1
    return found


def buildable_games_per_bot(n_bots: int, table_size: int, near: int, seed: int, count: int = 3,
                            tries: int = 8) -> list[int]:
    """Up to ``count`` games_per_bot whose schedule builds, nearest to ``near`` first (of the
    ``tries`` nearest the arithmetic allows, below it as well as above: some fields build only
    at a few numbers, e.g. 35 bots at tables of 7 at 49 and 98 games), in increasing order,
    for messages that propose numbers that work."""
    above = workable_games_per_bot(n_bots, table_size, near, tries)
    below = [games for games in workable_games_per_bot(n_bots, table_size, 0, tries) if games < near]
    works: list[int] = []
    for games in sorted({*above, *below}, key=lambda g: (abs(g - near), g))[:tries]:
        if balanced_design(n_bots, table_size, games // table_size, seed) is not None:
            works.append(games)
            if len(works) == count:
                break
    return sorted(works)


def check_balanced(n_bots: int, table_size: int, games_per_bot: int, seed: int) -> None:
    """Raise ScheduleError (naming numbers that work) unless the schedule can be built."""
    problem = balanced_arithmetic_problem(n_bots, table_size, games_per_bot)
    if problem is not None and n_bots < table_size:
        raise ScheduleError(f"{problem}: add bots or lower table_size")
    if problem is None:
        t = games_per_bot // table_size
        if balanced_design(n_bots, table_size, t, seed) is not None:
            return
        target = pair_target(n_bots, table_size, t)
        problem = (f"no schedule found where each of {n_bots} bots plays {games_per_bot} games and every pair "
                   f"shares {target.low} to {target.high} tables (for some numbers such a schedule is hard to find "
                   f"or does not exist)")
    works = buildable_games_per_bot(n_bots, table_size, games_per_bot, seed)
    listed = " or ".join(", ".join(map(str, works)).rsplit(", ", 1))
    hint = (f"with {n_bots} bots at tables of {table_size}, games_per_bot = {listed} works" if works
            else "try more games per bot")
    raise ScheduleError(f"{problem}; {hint}")


_DESIGNS: dict[tuple[int, int, int, int], tuple[tuple[int, ...], ...] | None] = {}


def balanced_design(n: int, k: int, t: int, seed: int) -> tuple[tuple[int, ...], ...] | None:
    """Tables (of bot numbers 0..n-1) where every bot sits at ``t`` tables and every pair
    meets within the :func:`pair_target`; None if the bounded searches find none. Cached."""
    key = (n, k, t, seed)
    if key not in _DESIGNS:
        if len(_DESIGNS) > 64:
            _DESIGNS.clear()
        _DESIGNS[key] = _search_design(n, k, t, seed)
    return _DESIGNS[key]


def _search_design(n: int, k: int, t: int, seed: int) -> tuple[tuple[int, ...], ...] | None:
    if n < k or (n * t) % k or t < 1:
        return None
    target = pair_target(n, k, t)
    if k == n:
        return tuple(tuple(range(n)) for _ in range(t)) if target.low <= t <= target.high else None
    rng = random.Random(derive_seed(seed, "balanced-design", n, k, t))
    design = _cyclic_design(n, k, t, target, rng, steps=60_000)
    if design is None:
        design = _repaired_design(n, k, t, target, rng, moves=1_000 * n)
    return design


def _violation(count: int, target: PairTarget) -> int:
    if count < target.low:
        return target.low - count
    return count - target.high if count > target.high else 0


def _cyclic_design(
    n: int, k: int, t: int, target: PairTarget, rng: random.Random, steps: int
) -> tuple[tuple[int, ...], ...] | None:
    """Base tables shifted by multiples of m over the integers modulo n (see above)."""
    m = k // math.gcd(k, t)
    if n % m:
        return None
    n_base = t * m // k
    per_residue = n // m
    # Two bots x < y meet as often as the base tables hold pairs (u, u + d) with
    # d = y - x and u = x (mod m); (r, d) and (r + d, -d) name the same class of pairs,
    # and a class equal to its own mirror (d = n/2 with m | d) counts each such pair twice.
    cls = [[-1] * n for _ in range(m)]
    weight: list[int] = []
    for r in range(m):
        for d in range(1, n):
            if cls[r][d] < 0:
                mirror = ((r + d) % m, (-d) % n)
                cls[r][d] = cls[mirror[0]][mirror[1]] = len(weight)
                weight.append(2 if mirror == (r, d) else 1)
    counts = [0] * len(weight)
    base: list[list[int]] = []
    slot = 0
    for _ in range(n_base):
        table: list[int] = []
        for _ in range(k):  # residues dealt in turn: each residue gets exactly t places
            residue = slot % m
            slot += 1
            while (u := residue + m * rng.randrange(per_residue)) in table:
                pass
            table.append(u)
        base.append(table)
        for i, u in enumerate(table):
            for v in table[i + 1:]:
                c = cls[u % m][(v - u) % n]
                counts[c] += weight[c]
    cost = sum(_violation(c, target) for c in counts)
    budget = steps
    while cost and budget:
        budget -= 1
        table = base[rng.randrange(n_base)]
        i = rng.randrange(k)
        u = table[i]
        new = u % m + m * rng.randrange(per_residue)
        if new in table:
            continue
        delta = 0
        changes: list[tuple[int, int]] = []
        for v in table:
            if v == u:
                continue
            for w, sign in ((u, -1), (new, 1)):
                c = cls[w % m][(v - w) % n]
                step = sign * weight[c]
                old = counts[c]
                counts[c] = old + step
                delta += _violation(old + step, target) - _violation(old, target)
                changes.append((c, step))
        if delta <= 0 or rng.random() < 0.02:
            table[i] = new
            cost += delta
        else:
            for c, step in changes:
                counts[c] -= step
    if cost:
        return None
    return tuple(tuple(sorted((u + shift) % n for u in table)) for table in base for shift in range(0, n, m))


def _repaired_design(
    n: int, k: int, t: int, target: PairTarget, rng: random.Random, moves: int
) -> tuple[tuple[int, ...], ...] | None:
    """Greedy tables, then swaps of two bots between two tables that do not add violations."""
    n_tables = n * t // k
    remaining = [t] * n
    met = [[0] * n for _ in range(n)]
    order = list(range(n))
    rng.shuffle(order)
    tables_: list[list[int]] = []
    for index in range(n_tables):
        left = n_tables - index
        table = [p for p in order if remaining[p] == left]  # bots that need every table left
        while len(table) < k:
            table.append(min(
                (p for p in order if remaining[p] and p not in table),
                key=lambda p: (sum(met[p][q] for q in table), -remaining[p]),
            ))
        for p in table:
            remaining[p] -= 1
        for a, b in itertools.combinations(table, 2):
            met[a][b] += 1
            met[b][a] += 1
        tables_.append(table)
    member: list[list[int]] = [[] for _ in range(n)]
    for i, table in enumerate(tables_):
        for p in table:
            member[p].append(i)
    low, high = target.low, target.high
    cost = sum(_violation(met[a][b], target) for a in range(n) for b in range(a + 1, n))
    while cost and moves:
        moves -= 1
        x = rng.randrange(n)
        row = met[x]
        wrong = [y for y in range(n) if y != x and not low <= row[y] <= high]
        if not wrong:
            continue
        y = rng.choice(wrong)
        if row[y] < low:  # seat y at one of x's tables, in exchange for one of its bots
            into = rng.choice(member[x])
            away = rng.choice(member[y])
            out = rng.choice([p for p in tables_[into] if p != x])
            inn = y
            if y in tables_[into] or out in tables_[away]:
                continue
        else:  # move y away from a table it shares with x
            into = rng.choice([i for i in member[x] if y in tables_[i]])
            away = rng.randrange(n_tables)
            inn = rng.choice(tables_[away])
            out = y
            if inn in tables_[into] or y in tables_[away]:
                continue
        delta = 0
        changes: list[tuple[int, int, int]] = []
        for table, gone, came in ((tables_[into], out, inn), (tables_[away], inn, out)):
            for p in table:
                if p == gone:
                    continue
                for w, sign in ((gone, -1), (came, 1)):
                    old = met[w][p]
                    met[w][p] = met[p][w] = old + sign
                    delta += _violation(old + sign, target) - _violation(old, target)
                    changes.append((w, p, sign))
        if delta <= 0:
            cost += delta
            gaining, losing = tables_[into], tables_[away]
            gaining[gaining.index(out)] = inn
            losing[losing.index(inn)] = out
            member[out].remove(into)
            member[out].append(away)
            member[inn].remove(away)
            member[inn].append(into)
        else:
            for w, p, sign in reversed(changes):
                met[w][p] -= sign
                met[p][w] -= sign
    if cost:
        return None
    return tuple(tuple(sorted(table)) for table in tables_)


def balanced_rounds(tables_: Sequence[Sequence[int]]) -> list[int]:
    """A round for each table, in order: the first round where none of its bots plays yet.
    Rounds give the playing order (whole rounds first) and, for ``duplicate = "tournament"``,
    the deals: a round's tables share its deal."""
    busy: list[set[int]] = []
    rounds: list[int] = []
    for table in tables_:
        number = next((i for i, seated in enumerate(busy) if seated.isdisjoint(table)), len(busy))
        if number == len(busy):
            busy.append(set())
        busy[number].update(table)
        rounds.append(number)
    return rounds


def make_balanced_schedule(
    bots: Sequence[str],
    table_size: int,
    games_per_bot: int,
    seed: int,
    *,
    key: bytes | int | None = None,
    partnerships: bool = False,
    duplicate: str = "none",
) -> tuple[ScheduledGame, ...]:
    """Each bot plays ``games_per_bot`` games: tables of a :func:`balanced_design`, each in
    every rotation. The bots are numbered by a shuffle seeded by ``seed`` (public), the tables
    ordered by round (see :func:`balanced_rounds`); with partnerships each table takes the
    pairing whose partners have been partners least so far. Deal seeds come from ``key``
    (``seed`` itself when None: a run stored before deal keys)."""
    if key is None:
        key = seed
    if duplicate not in DUPLICATE_MODES:
        raise ValueError(f"unknown duplicate mode {duplicate!r}")
    if len(set(bots)) != len(bots):
        raise ValueError("bot names must be distinct")
    if partnerships and table_size != 4:
        raise ValueError("partnerships need tables of four")
    check_balanced(len(bots), table_size, games_per_bot, seed)
    design = balanced_design(len(bots), table_size, games_per_bot // table_size, seed)
    assert design is not None
    rng = random.Random(derive_seed(seed, "balanced-order"))
    names = list(bots)
    rng.shuffle(names)
    seated = list(design)
    rng.shuffle(seated)
    rounds = balanced_rounds(seated)
    ordered = sorted(range(len(seated)), key=lambda i: (rounds[i], i))
    partners: Counter[frozenset[str]] = Counter()
    games: list[ScheduledGame] = []
    for index, i in enumerate(ordered):
        seating = [names[p] for p in seated[i]]
        rng.shuffle(seating)
        if partnerships:
            def partnered(option: tuple[str, ...]) -> int:
                return partners[frozenset((option[0], option[2]))] + partners[frozenset((option[1], option[3]))]

            options: list[tuple[str, ...]] = [tuple(seating[j] for j in pairing) for pairing in _PAIRINGS]
            chosen = min(options, key=partnered)
            seating = list(chosen)
            partners.update((frozenset((seating[0], seating[2])), frozenset((seating[1], seating[3]))))
        deal = rounds[i]
        for rotation in range(table_size):
            games.append(
                ScheduledGame(
                    game_id=f"d{deal + 1:04d}-t{index + 1:05d}-r{rotation + 1}",
                    ordinal=len(games),
                    table=index,
                    deal=deal,
                    rotation=rotation,
                    seed=game_seed(key, duplicate, 0 if duplicate == "table" else deal, index, rotation),
                    seats=rotate(tuple(seating), rotation),
                )
            )
    return tuple(games)


def suggest_balanced(n_bots: int, table_size: int, seed: int, tries: int = 4) -> int | None:
    """The smallest games_per_bot (of the first ``tries`` the arithmetic allows) whose balanced
    schedule builds, for a message that proposes one; None if none of them does."""
    for games in workable_games_per_bot(n_bots, table_size, 0, tries):
        if balanced_design(n_bots, table_size, games // table_size, seed) is not None:
            return games
    return None


def pair_counts(games: Sequence[ScheduledGame]) -> Counter[frozenset[str]]:
    """How many tables (deals of a table, not games) each pair of bots shares."""
    met: Counter[frozenset[str]] = Counter()
    for game in games:
        if game.rotation == 0:
            met.update(frozenset(pair) for pair in itertools.combinations(game.seats, 2))
    return met
