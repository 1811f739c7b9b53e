"""Rankings you can stop on: intervals valid at any time, and when an order is settled.

Pure arithmetic, no I/O, deterministic (docs/rankings.md says it in plain words).

A 95% Student's t interval is right 95% of the time *at one fixed number of games*. Looked
at after every game, and believed the first time it excludes a rival, it is wrong far more
often (about half the time over 2,000 looks). A **confidence sequence** is an interval that
holds at every number of games at once, with the stated confidence: it may be watched
continuously and stopped on. This module keeps one per bot and one per pair of bots.

* **The unit** is one deal: every game played with its cards (games that share a seed: with
  shared deals, every table of it and every seat rotation; with fresh deals, each game). Games
  on the same cards are not independent (bots that play alike place alike on them: counted
  as separate samples, a pair's interval among copies of one bot missed 14 times its stated
  rate), so a deal gives each bot and each pair one value, its figure averaged over its tables
  of that deal. A table's games are dropped if one of them was aborted (its seats would no
  longer be balanced).
* **A bot's figure** per unit: the fraction of its tablemates it beat, averaged over the
  rotations (a tie counts half); in [0, 1], higher is better. The average placing is a
  function of it (placing = 1 + (table size - 1) x (1 - figure) without ties).
* **A pair's figure** per table they share: (1 + the first's figure - the second's) / 2,
  averaged over the deal's tables they shared. Above 1/2 for certain means the first did
  better on the very same cards and tables, so it is the one the ahead/behind verdicts read.
  It reads how each did against the other *and* against their tablemates there, so its size
  (not its side, where one bot does at least as well as the other against everyone) depends
  on who the schedule seated with them: docs/rankings.md. (Its head-to-head alone,
  ``pair_statistic = "above"``, uses one of the table's comparisons where this uses all those
  of the two: ``bench/stopping.py`` needed 4-8% more games with it.)
* **A pair's head-to-head** per deal: the fraction of the games they shared in which the first
  placed above the second (a tie counts half). The **tie** verdict reads its own interval of
  it: how often each places above the other is a property of the two (in a Plackett-Luce
  world exactly; in any game, whoever else sits there only through how they change the two's
  play against each other), so "tied" does not depend on who the schedule seated with them.
* **The interval** is the hedged-capital betting confidence sequence of Waudby-Smith & Ramdas
  ("Estimating means of bounded random variables by betting", JRSS B 2023, Theorem 3): one
  bettor for and one against each candidate mean, a candidate excluded for good once a bettor
  has multiplied its stake by 2/alpha. A pair's bettors split their capital between a bet
  aimed at 1/2 (fast verdicts) and the plain plug-in bet (an interval that keeps narrowing).
  It narrows only, adapts to the figure's variance, and settles ``bench/stopping.py``'s order
  in about 1.8 times fewer deals than the predictable plug-in empirical-Bernstein sequence of
  the same paper (Theorem 2, :class:`ConfidenceSequence`). The version comparison and the
  rubrics of ``participants`` read it too, betting against 0.
* **Many at once**: one budget, 1 - confidence, shared (Bonferroni) by every interval: the
  bots' together take ``BOT_SHARE`` of it, the pairs' head-to-head intervals ``TIE_SHARE``,
  the pairs' figures the rest (at 95% with 8 bots, each bot's interval at 1 - 0.0025/8, each
  pair's at 1 - 0.045/28 and its head-to-head at 1 - 0.0025/28; a ``pair:A,B`` stop gives that
  pair ``FOCUS_SHARE`` of the pairs' shares). So *all* the intervals hold together, at every moment,
  with probability at least 95%, and any order read off them (any stopping rule) is wrong
  with probability at most 5%. A ladder's field grows: each new field (a bot's first deal
  starts one) restarts the sequences and spends the next term of a series that sums to the
  budget (:class:`Rankings`).

A pair's **verdict**: ``ahead``/``behind`` when its figure's interval excludes 1/2; ``tied``
when its head-to-head interval lies within 1/2 +- ``tie_within`` (each places above the other
between 45% and 55% of the time, for certain, at the default 0.05); ``open`` otherwise.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CONFIDENCE = 0.95
TIE_WITHIN = 0.05
"""Default margin of the tie verdict, on the head-to-head scale: each placed above the other in
45% to 55% of the games they shared (the neighbours of ``bench/stopping.py`` are 56% to 62%)."""
LABEL = "valid at any time"
_LAMBDA_CAP = 0.5
"""The bet's cap (the paper's c = 1/2, a usual choice)."""

AHEAD, BEHIND, TIED, OPEN = "ahead", "behind", "tied", "open"


class ConfidenceSequence:
    """The predictable plug-in empirical-Bernstein confidence sequence (PrPl-EB) for the mean
    of values in [0, 1], fed one at a time; ``low``/``high`` hold after every ``add`` at once
    with probability ``1 - alpha``."""

    __slots__ = ("_lam_sum", "_lam_x", "_log", "_mu", "_penalty", "_sq", "alpha", "high", "low", "n", "total")

    def __init__(self, alpha: float) -> None:
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
        self.alpha = alpha
        self._log = math.log(2 / alpha)
        self.n = 0
        self.total = 0.0
        self._mu = 0.5  # (1/2 + sum x) / (t + 1): the predictable mean
        self._sq = 0.25  # 1/4 + sum (x_i - mu_i)^2: the predictable variance's numerator
        self._lam_sum = self._lam_x = self._penalty = 0.0
        self.low, self.high = 0.0, 1.0

    def add(self, x: float) -> None:
        if not 0.0 <= x <= 1.0:
            raise ValueError(f"a confidence sequence on [0, 1] got {x}")
        t = self.n + 1
        variance = self._sq / t  # sigma^2_{t-1}
        lam = min(math.sqrt(2 * self._log / (variance * t * math.log(1 + t))), _LAMBDA_CAP)
        # v_t psi_E(lambda_t), with v_t = 4 (x - mu_{t-1})^2 and psi_E(l) = (-log(1 - l) - l) / 4
        self._penalty += (x - self._mu) ** 2 * (-math.log1p(-lam) - lam)
        self._lam_sum += lam
        self._lam_x += lam * x
        self.n = t
        self.total += x
        self._mu = (0.5 + self.total) / (t + 1)
        self._sq += (x - self._mu) ** 2
        centre = self._lam_x / self._lam_sum
        half = (self._log + self._penalty) / self._lam_sum
        low, high = max(self.low, centre - half), min(self.high, centre + half)
        if low <= high:  # (empty only when the sequence has failed, at most alpha of the time)
            self.low, self.high = low, high

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None


_GRID = 100
"""The betting sequence's candidate means: k/100 (its interval is exact to 1/100 on each side,
rounded outwards), and the points a verdict reads."""
_TIE_GRID = 20
"""A head-to-head interval's candidates: k/20 and the tie's 1/2 +- tie_within (the tie reads only
those; a fifth of the work of the pairs' grid, and the interval it shows exact to 0.05)."""
_BET_CAP = 0.75
"""The betting sequence's cap: a bet against mean m risks at most 3/4 of the capital (the paper's c)."""


class BettingSequence:
    """The hedged-capital betting confidence sequence (Waudby-Smith & Ramdas 2023, Theorem 3,
    with its predictable plug-in bets) for the mean of values in [0, 1]: for each candidate mean
    m, two bettors stake on "above m" and "below m" with the capital they have; a candidate at
    which one of them ever multiplies its stake by 2/alpha is excluded for good (Ville's
    inequality: at the true mean that happens with probability at most alpha, at any time).
    It reads the same data as :class:`ConfidenceSequence` but wastes less of it (no quadratic
    bound on the log): ``bench/stopping.py`` settles the order in about 1.8 times fewer deals.

    ``low``/``high`` are the largest excluded candidate below and the smallest above (the true
    mean lies strictly between them, with probability ``1 - alpha`` at every moment at once);
    ``points``: candidates to track exactly besides the grid of k/``grid`` (a verdict's 1/2 +-
    tie_within);
    ``centre``: the value a verdict compares the mean with (1/2). Each bettor then splits its
    capital in a **mixture of two bets** (a mixture of martingales is one): ``_FAST`` of it on a
    bet at least Kelly's against the centre, estimated from the earlier values (the bench
    settles in about 1.15 times fewer deals), the rest on the plain plug-in bet, which shrinks
    as values come in. The first alone makes the verdict fast but its interval levels off (a
    bet sized for the distance to 1/2 is too bold near the mean: Bernoulli 0.3 gave widths 0.21
    / 0.16 / 0.15 at 500 / 5,000 / 20,000 values); the second keeps it narrowing like
    ``1/sqrt(n)`` up to a log. Any bet that reads earlier values only, the same for every m but
    for its cap, keeps the guarantee.
    A bet does not depend on m but for its cap, so the bettor on "above m" holds less the higher
    m is: the excluded candidates are a run from each end, and only those between are tracked."""

    __slots__ = ("_down", "_log", "_mu", "_points", "_sq", "_up", "alpha", "centre", "high", "low", "n", "total")

    def __init__(self, alpha: float, points: Sequence[float] = (), centre: float | None = None,
                 grid: int = _GRID) -> None:
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
        self.alpha = alpha
        self.centre = centre
        self._log = math.log(2 / alpha)  # each bettor holds half the capital
        self.n = 0
        self.total = 0.0
        self._mu = 0.5
        self._sq = 0.25
        self._points = sorted({k / grid for k in range(1, grid)} | {p for p in points if 0 < p < 1})
        # log capital of the bettor on "above m" and on "below m": one list per bet of the mixture
        bets = 1 if centre is None else 2
        self._up = [[0.0] * len(self._points) for _ in range(bets)]
        self._down = [[0.0] * len(self._points) for _ in range(bets)]
        self.low, self.high = 0.0, 1.0

    def copy(self) -> BettingSequence:
        """An independent copy (a reading that counts a deal still being played)."""
        other = BettingSequence.__new__(BettingSequence)
        for name in self.__slots__:
            setattr(other, name, getattr(self, name))
        other._points = list(self._points)
        other._up = [list(u) for u in self._up]
        other._down = [list(d) for d in self._down]
        return other

    def add(self, x: float) -> None:
        if not 0.0 <= x <= 1.0:
            raise ValueError(f"a confidence sequence on [0, 1] got {x}")
        t = self.n + 1
        plain = math.sqrt(2 * self._log / (self._sq * math.log(1 + t)))  # PrPl: sigma^2_{t-1} t = _sq
        bets = [plain]
        if self.centre is not None:  # at least Kelly's bet against the centre, from earlier values too
            gap = self._mu - self.centre
            bets.insert(0, max(plain, abs(gap) / (self._sq / t + gap * gap)))
        points = self._points
        ups = [_grow(u, points, bet, x, 1.0) for u, bet in zip(self._up, bets, strict=True)]
        downs = [_grow(d, points, bet, x, -1.0) for d, bet in zip(self._down, bets, strict=True)]
        first, last, log = 0, len(points), self._log
        while first < last - 1 and _mixed(ups, first) >= log:
            first += 1
        while last - 1 > first and _mixed(downs, last - 1) >= log:
            last -= 1
        # (if one candidate is left and would go too, the sequence has failed: at most alpha of the time)
        if first:
            self.low = points[first - 1]
        if last < len(points):
            self.high = points[last]
        self._points = points[first:last]
        self._up = [u[first:last] for u in ups]
        self._down = [d[first:last] for d in downs]
        self.n = t
        self.total += x
        self._mu = (0.5 + self.total) / (t + 1)
        self._sq += (x - self._mu) ** 2

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None


_FAST = 0.95
"""The share of a bettor's capital on the bet aimed at the centre (the rest on the plain bet):
the verdict pays log(1/0.95), under 1% more deals at a pair's level; the interval, log(20)
in its width's log term, and keeps narrowing."""


def _grow(log_capital: list[float], points: list[float], bet: float, x: float, side: float) -> list[float]:
    """One bettor's log capital at each candidate m after betting ``bet`` (capped so that at most
    ``_BET_CAP`` of the capital is at risk) on x above m (``side`` 1) or below it (-1)."""
    log1p, cap = math.log1p, _BET_CAP
    if side > 0:
        if bet <= cap:  # (no candidate's cap binds: the usual case after the first deals)
            return [c + log1p(bet * (x - m)) for c, m in zip(log_capital, points, strict=True)]
        return [c + log1p(min(bet, cap / m) * (x - m)) for c, m in zip(log_capital, points, strict=True)]
    if bet <= cap:
        return [c + log1p(bet * (m - x)) for c, m in zip(log_capital, points, strict=True)]
    return [c + log1p(min(bet, cap / (1 - m)) * (m - x)) for c, m in zip(log_capital, points, strict=True)]


_LOG_FAST, _LOG_SLOW = math.log(_FAST), math.log(1 - _FAST)


def _mixed(logs: list[list[float]], i: int) -> float:
    """The log of the capital at candidate ``i``: the one bettor's, or the mixture's (``_FAST``
    of the first bet's, the rest the second's). Only the candidates next to those excluded are
    read, so only they are mixed."""
    if len(logs) == 1:
        return logs[0][i]
    a, b = logs[0][i] + _LOG_FAST, logs[1][i] + _LOG_SLOW
    return a + math.log1p(math.exp(b - a)) if a >= b else b + math.log1p(math.exp(a - b))


@dataclass(frozen=True, slots=True)
class Interval:
    mean: float | None
    low: float
    high: float
    units: int

    @property
    def drifted(self) -> bool:
        """The plain average has left the interval. A sequence holds for a mean that stays the
        same; a ladder's field that changes (new versions in, old ones out, other tablemates)
        moves a bot's figure, and its interval, excluding for good, keeps what the old field
        said. Such an interval tells nothing settled (:meth:`Rankings.verdict`): a guard that
        catches a drift once it shows, not a guarantee under one (docs/rankings.md)."""
        return self.mean is not None and self.units > 0 and not self.low <= self.mean <= self.high


@dataclass(frozen=True, slots=True)
class Neighbour:
    """Two bots next to each other in the order: how sure it is that ``upper`` beats ``lower``."""

    upper: str
    lower: str
    verdict: str
    """ahead (settled: upper is better), tied (within tie_within), open; behind cannot be
    (the order puts a decided pair the right way round)."""
    interval: Interval
    """Of their pair figure: above 1/2, upper did better on the tables the two shared (it also
    reads how each did against the tablemates there: docs/rankings.md). A tie reads their
    head-to-head instead (:meth:`Rankings.tie_interval`)."""

    @property
    def settled(self) -> bool:
        return self.verdict in (AHEAD, TIED)


PAIR_STATISTICS = ("beaten", "above")
INTERVALS: dict[str, Any] = {"betting": BettingSequence,
                             "eb": lambda alpha, points=(), centre=None, grid=0: ConfidenceSequence(alpha)}
"""The rankings' intervals: the betting sequence (used), or the empirical-Bernstein one it
replaced (``bench/stopping.py --interval eb`` measures both)."""


def unit_figures(rotations: Sequence[Mapping[str, int]], pair_statistic: str = "beaten",
                 ) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """The figures of one unit (each rotation: bot -> placing, 1 best): per bot the fraction
    of tablemates beaten; per pair (in the order the first rotation lists them), with
    ``pair_statistic`` "beaten", (1 + the first's fraction beaten - the second's) / 2, or
    with "above" the fraction of rotations the first placed above the second; ties count half."""
    bots = list(rotations[0])
    beaten = dict.fromkeys(bots, 0.0)
    above = {pair: 0.0 for pair in itertools.combinations(bots, 2)}
    others = len(bots) - 1
    for placings in rotations:
        for a, b in above:
            pa, pb = placings[a], placings[b]
            score = 1.0 if pa < pb else 0.0 if pa > pb else 0.5
            above[a, b] += score
            beaten[a] += score
            beaten[b] += 1.0 - score
    n = len(rotations)
    figures = {b: v / (n * others) for b, v in beaten.items()}
    if pair_statistic == "above":
        return figures, {p: v / n for p, v in above.items()}
    return figures, {(a, b): (1 + figures[a] - figures[b]) / 2 for a, b in above}


BOT_SHARE = 0.05
"""The share of the error budget (1 - confidence) the bots' own intervals take together (no
verdict reads them: they are shown)."""
TIE_SHARE = 0.05
"""The share the pairs' head-to-head intervals take together (the tie verdict reads them, when
``tie_within`` is not 0 and the pair's figure is "beaten"; else the bots' share is theirs). The
pairs' figure intervals, which the ahead/behind verdicts and so the stopping rules read, take
the rest, 90% as before the tie read the head-to-head: taken from them instead, a tenth of a
pair's share cost 4.8% more games in ``bench/stopping.py`` (a fifth of the budget for the bots
had cost 2.5%)."""
FOCUS_SHARE = 0.75
"""With ``stop = "pair:A,B"``: the share of the pairs' budget (figure and head-to-head alike)
that pair takes (the others share the rest)."""


def _series(k: int) -> float:
    """The k-th term (k = 1, 2, ...) of 6 / (pi^2 k^2), which sums to 1: the share of the budget
    the k-th field of an open ladder spends (:class:`Rankings`)."""
    return 6 / (math.pi**2 * k * k)


def _oriented(sequences: Mapping[tuple[str, str], BettingSequence | ConfidenceSequence],
              key: tuple[tuple[str, str], bool], shown: bool) -> Interval:
    """A pair's interval as (a, b) asks for it: its stored pair is kept one way round, and
    reversed reads 1 minus the figure; an interval not shown yet (a new field) is [0, 1]."""
    (stored, flipped) = key
    s = sequences.get(stored)
    if s is None:
        return Interval(None, 0.0, 1.0, 0)
    low, high = (s.low, s.high) if shown else (0.0, 1.0)
    if flipped:
        return Interval(None if s.mean is None else 1 - s.mean, 1 - high, 1 - low, s.n)
    return Interval(s.mean, low, high, s.n)


class Rankings:
    """Confidence sequences for every bot and every pair, fed deal by deal (see the module
    docstring), and the order and verdicts read off them.

    ``confidence`` is the one declared level of *all* the intervals together: the bots share
    ``BOT_SHARE`` of the error 1 - confidence equally, the pairs' head-to-head intervals
    ``TIE_SHARE``, the pairs' figures the rest (``focus``, the pair of ``stop = "pair:A,B"``,
    takes ``FOCUS_SHARE`` of the pairs'). So every interval shown holds at every moment
    together with probability at least ``confidence``.

    ``open_field`` (a ladder: bots come in as the ladder runs) restarts every sequence when a
    bot plays its first deal: the field changed, and with it every bot's figure against it
    (a participant's new version in, usually its old one out). The ``e``-th field that shows
    intervals spends ``6 / (pi^2 e^2)`` of the budget (a series summing to 1, however many
    versions come), shared as above by the bots seen so far and their pairs. A field shows
    nothing until it has lasted as many deals as it has bots (the ladder's first rounds, where
    the bots come in one table at a time, spend nothing). Without ``open_field`` (a tournament)
    the field is the bots given, and :meth:`add_bot` refuses."""

    def __init__(self, bots: Sequence[str], *, confidence: float = CONFIDENCE, tie_within: float = TIE_WITHIN,
                 focus: tuple[str, str] | None = None, pair_statistic: str = "beaten",
                 interval: str = "betting", open_field: bool = False) -> None:
        self.bots = tuple(bots)
        self.confidence = confidence
        self.tie_within = tie_within
        self.focus = frozenset(focus) if focus is not None else None
        self.pair_statistic = pair_statistic
        self.open_field = open_field
        if interval not in INTERVALS:
            raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
        self._sequence = INTERVALS[interval]
        self._index = {b: i for i, b in enumerate(self.bots)}
        self._verdict_points = (0.5 - tie_within, 0.5, 0.5 + tie_within)
        self._head_to_head = tie_within > 0 and pair_statistic == "beaten"
        """Ties read each pair's head-to-head interval, its own sequence (see :meth:`verdict`)."""
        self._units = 0
        self.fields_shown = 0
        """Open field: the fields that have shown intervals (this one included once it shows)."""
        self._seen: set[str] = set()
        self._closed: set[tuple[str, object]] = set()
        self.skipped = 0
        """Games of a deal that came back after another deal had started (not counted)."""
        self._open_deal: tuple[str, object] | None = None
        self._open_tables: dict[str, list[dict[str, int] | None]] = {}
        self._view: Rankings | None = None
        self._spent_before = 0.0
        self.shown = False
        self._start_field(len(self.bots))

    def _start_field(self, bots: int) -> None:
        """Fresh sequences, and the budget they spend (see the class docstring)."""
        alpha = 1 - self.confidence
        if self.open_field:
            if self.shown:
                self._spent_before += self.field_alpha
            alpha *= _series(self.fields_shown + 1)
        n = max(bots, 1)
        pairs = max(n * (n - 1) // 2, 1)
        self.field_alpha = alpha
        tie = TIE_SHARE if self._head_to_head else 0.0
        self.bot_alpha = alpha * (BOT_SHARE + TIE_SHARE - tie) / n
        figure = 1 - BOT_SHARE - TIE_SHARE
        if self.focus is not None:
            self.focus_alpha, self.focus_tie_alpha = alpha * figure * FOCUS_SHARE, alpha * tie * FOCUS_SHARE
            rest = (1 - FOCUS_SHARE) / max(pairs - 1, 1)
            self.pair_alpha, self.tie_alpha = alpha * figure * rest, alpha * tie * rest
        else:
            self.focus_alpha = self.pair_alpha = alpha * figure / pairs
            self.focus_tie_alpha = self.tie_alpha = alpha * tie / pairs
        self._units = 0
        self.shown = not self.open_field
        self._bot = {b: self._sequence(self.bot_alpha) for b in self.bots}
        self._pair: dict[tuple[str, str], BettingSequence | ConfidenceSequence] = {}
        self._tie: dict[tuple[str, str], BettingSequence | ConfidenceSequence] = {}

    @property
    def units(self) -> int:
        """Deals counted (in the current field, for an open one), the one still open included."""
        return self._read()._units

    def spent(self) -> float:
        """The error budget spent so far: the fields that have shown intervals, each its share
        (never more than 1 - confidence, however many bots come in)."""
        r = self._read()
        return r._spent_before + (r.field_alpha if r.shown else 0.0)

    def add_bot(self, bot: str) -> None:
        """A bot that joins a running ladder (a participant's new version): it is ranked from
        its first deal, which starts a new field (see the class docstring)."""
        if bot in self._index:
            return
        if not self.open_field:
            raise ValueError(f"cannot add {bot!r}: a tournament's field is fixed (its budget is split over "
                             f"{len(self.bots)} bots)")
        self.bots = (*self.bots, bot)
        self._index[bot] = len(self.bots) - 1
        self._bot[bot] = self._sequence(self.bot_alpha)
        self._view = None

    def _key(self, a: str, b: str) -> tuple[tuple[str, str], bool]:
        """The stored pair's key (file order) and whether (a, b) is it reversed."""
        return ((a, b), False) if self._index[a] < self._index[b] else ((b, a), True)

    # ------------------------------------------------------------------ feeding

    def add_game(self, game_id: str, bots: Sequence[str], placings: Sequence[int], *, aborted: bool = False,
                 seed: int | None = None) -> None:
        """One recorded game, in schedule order. Games that share ``seed`` are one deal (with
        shared deals: every table and every seat rotation of it), and a deal is one sample:
        its values enter the sequences once, when a game of another deal comes (the schedules
        play a deal's games together). Without a seed, the games whose ids differ only by the
        rotation's ``-rN`` are the deal. Within a deal, a table's games (ids but for ``-rN``)
        are dropped if one of them was aborted (its seats would no longer be balanced)."""
        table = _ROTATION.sub("", game_id)
        deal: tuple[str, object] = ("seed", seed) if seed is not None else ("table", table)
        if deal in self._closed:  # (a deal met again after another: counting it twice would be the
            self.skipped += 1     # error this grouping is for; no schedule plays deals so)
            return
        if self._open_deal is not None and deal != self._open_deal:
            self._close_deal()
        self._open_deal = deal
        self._open_tables.setdefault(table, []).append(None if aborted else dict(zip(bots, placings, strict=True)))
        self._view = None

    def add_unit(self, rotations: Sequence[Mapping[str, int]]) -> None:
        """One whole deal at one table: each rotation's placings by bot (bots not ranked here are skipped)."""
        self._close_deal()
        self._add_deal([rotations])

    def _close_deal(self) -> None:
        tables = [games for games in self._open_tables.values() if all(g is not None for g in games)]
        if self._open_deal is not None:
            self._closed.add(self._open_deal)
        self._open_deal, self._open_tables = None, {}
        self._view = None
        if tables:
            self._add_deal(tables)  # type: ignore[arg-type]

    def _add_deal(self, tables: Sequence[Sequence[Mapping[str, int]]]) -> None:
        """One deal: each of its tables' rotations. A bot's value is its figure averaged over its
        tables of the deal, a pair's over the tables the two shared."""
        bots: dict[str, list[float]] = {}
        pairs: dict[tuple[str, str], list[float]] = {}
        heads: dict[tuple[str, str], list[float]] = {}
        for rotations in tables:
            kept = [{b: p for b, p in r.items() if b in self._index} for r in rotations]
            if not kept or len(kept[0]) < 2:
                continue
            beaten, figures = unit_figures(kept, self.pair_statistic)
            for bot, x in beaten.items():
                bots.setdefault(bot, []).append(x)
            for (a, b), x in figures.items():
                key, flipped = self._key(a, b)
                pairs.setdefault(key, []).append(1.0 - x if flipped else x)
            if self._head_to_head:
                for (a, b), x in unit_figures(kept, "above")[1].items():
                    key, flipped = self._key(a, b)
                    heads.setdefault(key, []).append(1.0 - x if flipped else x)
        if not bots:
            return
        if self.open_field and not bots.keys() <= self._seen:
            self._seen |= bots.keys()
            self._start_field(len(self._seen))
        self._units += 1
        for bot, xs in bots.items():
            self._bot[bot].add(sum(xs) / len(xs))
        for key, xs in pairs.items():
            sequence = self._pair.get(key)
            if sequence is None:
                alpha = self.focus_alpha if self.focus is not None and frozenset(key) == self.focus else self.pair_alpha
                sequence = self._pair[key] = self._sequence(alpha, self._verdict_points, 0.5)
            sequence.add(sum(xs) / len(xs))
        for key, xs in heads.items():
            sequence = self._tie.get(key)
            if sequence is None:
                alpha = (self.focus_tie_alpha if self.focus is not None and frozenset(key) == self.focus
                         else self.tie_alpha)
                sequence = self._tie[key] = self._sequence(alpha, self._verdict_points, grid=_TIE_GRID)
            sequence.add(sum(xs) / len(xs))
        if not self.shown and self._units >= len(self._seen):
            self.shown = True
            self.fields_shown += 1

    def _read(self) -> Rankings:
        """What the readings read: these rankings, with the deal still open counted as it stands
        (on a copy: it enters for good, whole, once its last game is in)."""
        if self._open_deal is None:
            return self
        if self._view is None:
            view = copy.copy(self)
            view._bot = {b: s.copy() for b, s in self._bot.items()}
            view._pair = {k: s.copy() for k, s in self._pair.items()}
            view._tie = {k: s.copy() for k, s in self._tie.items()}
            view._seen = set(self._seen)
            view._closed = set(self._closed)
            view._open_tables = dict(self._open_tables)
            view._close_deal()
            self._view = view
        return self._view

    # ------------------------------------------------------------------ reading

    def bot_interval(self, bot: str) -> Interval:
        r = self._read()
        s = r._bot[bot]
        if not r.shown:
            return Interval(s.mean, 0.0, 1.0, s.n)
        return Interval(s.mean, s.low, s.high, s.n)

    def pair_interval(self, a: str, b: str) -> Interval:
        """Of the pair's figure (above 1/2: ``a`` does better than ``b`` at the tables they share)."""
        r = self._read()
        return _oriented(r._pair, self._key(a, b), r.shown)

    def tie_interval(self, a: str, b: str) -> Interval:
        """The interval the tie verdict reads: of the fraction of the games they shared in which
        ``a`` placed above ``b`` (a tie counts half), a property of the two bots whoever sat with
        them; the pair's own interval where its figure is that already."""
        if not self._head_to_head:
            return self.pair_interval(a, b)
        r = self._read()
        return _oriented(r._tie, self._key(a, b), r.shown)

    def verdict(self, a: str, b: str) -> str:
        """``ahead``/``behind`` from the pair's interval; ``tied`` from the head-to-head one
        (:meth:`tie_interval`), so a tie does not depend on who the schedule seated with them."""
        i = self.pair_interval(a, b)  # (its ends are excluded: see BettingSequence)
        if i.drifted:
            return OPEN
        if i.low >= 0.5 and i.units:
            return AHEAD
        if i.high <= 0.5 and i.units:
            return BEHIND
        h = self.tie_interval(a, b)
        if h.units and not h.drifted and h.low >= 0.5 - self.tie_within and h.high <= 0.5 + self.tie_within:
            return TIED
        return OPEN

    def order(self) -> list[str]:
        """Best first: by each bot's figure, then (a few passes) neighbours swapped where their
        pair's interval says the other way round (they met on other opponents' tables)."""
        means = {b: self.bot_interval(b).mean for b in self.bots}
        order = sorted(self.bots, key=lambda b: (means[b] is None, -(means[b] or 0.0), self._index[b]))
        for _ in range(len(order)):
            swapped = False
            for i in range(len(order) - 1):
                if self.verdict(order[i], order[i + 1]) == BEHIND:
                    order[i], order[i + 1] = order[i + 1], order[i]
                    swapped = True
            if not swapped:
                break
        return order

    def neighbours(self, order: Sequence[str] | None = None) -> list[Neighbour]:
        order = self.order() if order is None else order
        return [Neighbour(a, b, self.verdict(a, b), self.pair_interval(a, b)) for a, b in itertools.pairwise(order)]

    def level(self) -> str:
        """What holds, in words (the standings, the board and the terminal say it)."""
        budget = f"(one {1 - self.confidence:.0%} budget for bots and pairs)"
        if not self.open_field:
            return f"all intervals here hold together, at every moment, with {self.confidence:.0%} confidence {budget}"
        r = self._read()
        text = (f"all intervals here hold together, at every moment of the ladder, with {self.confidence:.0%} "
                f"confidence {budget}; they start again when a new bot comes in")
        if not r.shown:
            text += f" (this field: {r._units} of the {len(r._seen)} deals it plays before they show)"
        return text

    def to_dict(self) -> dict[str, Any]:
        """For the standings document (JSON): the label, the level, the order's neighbours and verdicts."""
        r = self._read()
        focus = (f"; the pair {' and '.join(sorted(self.focus))} at {1 - r.focus_alpha:.6g}"
                 if self.focus is not None else "")
        return {
            "label": LABEL,
            "confidence": self.confidence,
            "level": self.level(),
            "tie_within": self.tie_within,
            "units": r._units,
            "statistic": "per bot: fraction of tablemates beaten per deal (all its tables and seat rotations of "
                         "one deal combined); per pair: " + ("fraction of shared rotations placed above the other"
                                                             if self.pair_statistic == "above" else
                                                             "(1 + the difference of their fractions beaten) / 2, "
                                                             "per deal they shared"
                                                             + ("; ties read the fraction of shared games placed "
                                                                "above the other" if self._head_to_head else "")),
            "correction": (f"one budget of {1 - self.confidence:.3g} split (Bonferroni): "
                           + (f"this field's share {r.field_alpha:.3g} (6/(pi^2 e^2) of it, e = "
                              f"{r.fields_shown if r.shown else r.fields_shown + 1}); " if self.open_field else "")
                           + f"each bot's interval at {1 - r.bot_alpha:.6g}, each pair's at "
                           f"{1 - r.pair_alpha:.6g}{focus}"
                           + (f" (and its head-to-head interval, for ties, at {1 - r.tie_alpha:.6g})"
                              if self._head_to_head else "")),
            "neighbours": [
                {"upper": n.upper, "lower": n.lower, "verdict": n.verdict, "settled": n.settled,
                 "low": round(n.interval.low, 6), "high": round(n.interval.high, 6), "units": n.interval.units}
                | ({"tie_interval": [round(h.low, 6), round(h.high, 6)]}  # (the head-to-head share a tie reads)
                   if self._head_to_head and (h := self.tie_interval(n.upper, n.lower)).units else {})
                | ({"drifted": True} if n.interval.drifted else {})
                for n in self.neighbours()
            ],
            "drifted": self.drifted(),
        } | ({"field_shown": r.shown} if self.open_field else {})

    def drifted(self) -> dict[str, list[Any]]:
        """The bots and the pairs whose results have left their interval (:attr:`Interval.drifted`)."""
        r = self._read()
        return {"bots": [b for b in self.bots if self.bot_interval(b).drifted],
                "pairs": [[a, b] for (a, b) in r._pair if self.pair_interval(a, b).drifted]}


# ------------------------------------------------------------------ stopping rules


@dataclass(frozen=True, slots=True)
class StopRule:
    """``settled`` (every two neighbours in the order settled), ``top`` (the first ``k``
    separated from the rest) or ``pair`` (one pair decided); ties within ``tie_within``
    count as settled (they will not separate by more than that)."""

    kind: str
    k: int = 0
    pair: tuple[str, str] | None = None

    @classmethod
    def parse(cls, text: str, bots: Sequence[str]) -> StopRule:
        """``"settled"``, ``"top:K"`` or ``"pair:A,B"``; ValueError says what is wrong."""
        kind, _, arg = text.partition(":")
        kind = kind.strip()
        if kind == "settled" and not arg:
            return cls("settled")
        if kind == "top":
            if not arg.strip().isdigit():
                raise ValueError(f'"top:K" needs a whole number K, e.g. "top:3", got {text!r}')
            k = int(arg)
            if not 1 <= k < len(bots):
                raise ValueError(f"top:{k}: K must be from 1 to {len(bots) - 1} (the bots less one), got {k}")
            return cls("top", k=k)
        if kind == "pair":
            names = [n.strip() for n in arg.split(",")]
            if len(names) != 2 or not all(names):
                raise ValueError(f'"pair:A,B" needs two bot names, e.g. "pair:alice,bob", got {text!r}')
            unknown = [n for n in names if n not in bots]
            if unknown:
                raise ValueError(f"pair: no bot named {unknown[0]!r} in the file (its bots: {', '.join(bots)})")
            if names[0] == names[1]:
                raise ValueError(f"pair: two different bots, got {names[0]!r} twice")
            return cls("pair", pair=(names[0], names[1]))
        raise ValueError(f'must be "settled", "top:K" or "pair:A,B", got {text!r}')

    def __str__(self) -> str:
        if self.kind == "top":
            return f"top:{self.k}"
        if self.kind == "pair" and self.pair is not None:
            return f"pair:{self.pair[0]},{self.pair[1]}"
        return self.kind

    def pairs(self, rankings: Rankings) -> list[tuple[str, str]]:
        """The pairs this rule reads, better-placed first."""
        if self.kind == "pair" and self.pair is not None:
            return [self.pair]
        order = rankings.order()
        if self.kind == "top":
            return [(a, b) for a in order[: self.k] for b in order[self.k:]]
        return list(itertools.pairwise(order))

    def open_pairs(self, rankings: Rankings) -> list[tuple[str, str]]:
        """The pairs still to settle (the adaptive schedule seats them together)."""
        return [(a, b) for a, b in self.pairs(rankings) if rankings.verdict(a, b) in (OPEN, BEHIND)
                and not (self.kind == "pair" and rankings.verdict(a, b) == BEHIND)]

    def met(self, rankings: Rankings) -> bool:
        return not self.open_pairs(rankings)

    def needs(self, rankings: Rankings) -> dict[tuple[str, str], float]:
        """Each open pair, and how far its interval still has to move to decide it: the nearer
        end to 1/2 past 1/2, or both ends within 1/2 +- tie_within, whichever is less. The
        adaptive schedule seats the pairs in most need first (as LUCB samples the most ambiguous
        arms): pairs far apart settle on a few tables, the close ones get the rest."""
        out = {}
        tie = rankings.tie_within
        for a, b in self.open_pairs(rankings):
            i = rankings.pair_interval(a, b)
            need = min(max(0.5 - i.low, 0.0), max(i.high - 0.5, 0.0))
            if tie > 0:
                h = rankings.tie_interval(a, b)
                need = min(need, max(0.5 - tie - h.low, h.high - 0.5 - tie, 0.0))
            out[a, b] = need
        return out

    def describe(self, rankings: Rankings) -> str:
        """One line: what is settled, what is tied, what is open."""
        pairs = self.pairs(rankings)
        verdicts = [(a, b, rankings.verdict(a, b)) for a, b in pairs]
        if self.kind == "pair":
            a, b, v = verdicts[0]
            said = {AHEAD: f"{a} is better than {b}", BEHIND: f"{b} is better than {a}",
                    TIED: f"{a} and {b} are tied within {rankings.tie_within:g}", OPEN: f"{a} and {b}: not decided yet"}
            return said[v]
        done = sum(v != OPEN for *_, v in verdicts)
        tied = [f"{a} = {b}" for a, b, v in verdicts if v == TIED]
        what = "neighbours" if self.kind == "settled" else f"pairs across the top {self.k}"
        text = f"{done}/{len(verdicts)} {what} settled"
        return text + (f" ({', '.join(tied)} tied within {rankings.tie_within:g})" if tied else "")


# ------------------------------------------------------------------ units from recorded games

_ROTATION = re.compile(r"-r\d+$")


class UnitBuilder:
    """Feeds recorded games to ``rankings`` (:meth:`Rankings.add_game`: games that share a seed
    are one deal; without a seed, the ids but for the rotation's ``-rN``)."""

    def __init__(self, rankings: Rankings) -> None:
        self.rankings = rankings

    def add(self, game_id: str, bots: Sequence[str], placings: Sequence[int], aborted: bool = False,
            seed: int | None = None) -> None:
        self.rankings.add_game(game_id, bots, placings, aborted=aborted, seed=seed)
