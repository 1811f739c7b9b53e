"""Standings from recorded games: pure arithmetic, no I/O, deterministic.

For each bot:

* **average points per game** with a 95% confidence interval from Student's t
  distribution (n - 1 degrees of freedom; games are not normal and n is often
  small, so t rather than the normal 1.96). In Craits fewer points are better;
  in crazy eights more (``lower_wins``).
* **placings**: average placing (1 is best; tied totals share a place), wins
  (games placed first, ties included) and how often each place was taken.
* **rating**: OpenSkill's Plackett-Luce model (``mu`` and its uncertainty
  ``sigma``; ``ordinal = mu - 3 sigma`` is a conservative estimate). Games are
  rated in *schedule order*, not completion order, so a resumed tournament rates
  exactly like an uninterrupted one. Partners are rated as a team.
* **statuses** summed over the bot's games: timeouts, strikes, illegal and
  malformed actions, disconnects, moves made by the default policy, and games it
  struck out of, lost the connection in or never joined; aborted games are
  counted but do not score.

* **beaten**: the fraction of tablemates the bot beat per deal (all its tables and seat
  rotations of one deal together: games that share a seed), with an interval *valid at any
  time*: it may be looked at after every game and stopped on (``tournaments.anytime``; the t
  interval above holds only at a number of games fixed in advance, such as a fixed schedule's
  final table). All these intervals, the bots' and the pairs', hold together at the stated
  confidence (``Rankings.level`` says it under the table). The order's neighbours are marked
  settled when their pair's interval says which is better, or that they are tied within
  ``tie_within``.

The table is ordered by average placing (the one number every game format
shares), then rating ordinal, then name; a ladder's by rating ordinal first.
The head-to-head table says, for every pair of bots, how often each finished
ahead of the other when they shared a table.
"""

from __future__ import annotations

import copy
import csv
import difflib
import io
import json
import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any, Protocol

from openskill.models import PlackettLuce

from tournaments.anytime import LABEL, TIE_WITHIN, Rankings, StopRule, UnitBuilder

CONFIDENCE = 0.95
HEAD_TO_HEAD_GRID_BOTS = 12
"""Up to this many bots the terminal's standings end with the whole head-to-head grid."""
RATING_MODEL = "OpenSkill Plackett-Luce (default mu=25, sigma=25/3)"
RATING_HEADERS = ("rating", "mu ± sigma")
"""The rating's two columns, in this order, on the terminal, the board and the bot pages: the
*rating* is the ordinal mu - 3 sigma (what a ladder ranks by: a skill the bot has with 99.7%
confidence), then the estimate mu and its uncertainty sigma. The standings files hold them as
``rating_ordinal``, ``rating_mu``, ``rating_sigma``, in that order."""
RATING_LEGEND = ("Rating: OpenSkill Plackett-Luce; rating = mu - 3 sigma (a cautious estimate of the bot's "
                 "skill), from mu (the estimate) and sigma (its uncertainty, which shrinks as the bot plays).")
POINTS_LEGEND = ("95% CI: avg pts' t interval, right for a number of games fixed in advance and read once, at "
                 "the end; the intervals valid at any time, together, are beaten's and the order's.")
ISSUE_COUNTERS = ("timeouts", "strikes", "illegal", "malformed", "disconnects", "default_actions", "bot_errors")
"""Per-seat fault counters the standings sum (``bot_errors``: the bot's own code failed and
its kit answered in its place, Answer.bot_error)."""
BAD_STATUSES = ("struck_out", "disconnected", "never_connected", "left")
"""Seat statuses counted as faults: ``left`` is a clean exit mid-game (the bot closed its stream),
told apart from ``disconnected`` (a crash or a network drop, waited for)."""

# Student's t, two-sided 95% (the 0.975 quantile), for 1..30 degrees of freedom.
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)


class SeatLike(Protocol):
    @property
    def bot(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def counters(self) -> dict[str, int]: ...


class ResultLike(Protocol):
    """What the standings read from a recorded game (``server.storage.store.StoredResult``)."""

    @property
    def ordinal(self) -> int: ...
    @property
    def seats(self) -> Sequence[SeatLike]: ...
    @property
    def bots(self) -> tuple[str, ...]: ...
    @property
    def totals(self) -> tuple[int, ...]: ...
    @property
    def placings(self) -> tuple[int, ...]: ...
    @property
    def lower_wins(self) -> bool: ...
    @property
    def aborted(self) -> str: ...
    # (and, if it has one, ``seed``: the deal's; games sharing it are one deal for the rankings)


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t: a table to 30 degrees of freedom, then the
    Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5), exact to 4 decimals there."""
    if df < 1:
        raise ValueError("degrees of freedom must be at least 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = NormalDist().inv_cdf(0.975)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def mean_ci(values: Sequence[int]) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high) of a 95% t interval; no interval below two values."""
    return _interval(len(values), sum(values), sum(v * v for v in values))


def _interval(n: int, total: int, squares: int) -> tuple[float | None, float | None, float | None]:
    """:func:`mean_ci` from the count, sum and sum of squares of integer values: exact
    integers up to the last division (totals can be huge), and a running tally's to keep."""
    if n == 0:
        return None, None, None
    mean = total / n
    if n == 1:
        return mean, None, None
    variance = (n * squares - total * total) / (n * (n - 1))
    half = t_quantile_975(n - 1) * math.sqrt(variance / n)
    return mean, mean - half, mean + half


@dataclass(frozen=True, slots=True)
class BotStanding:
    rank: int
    bot: str
    games: int
    avg_points: float | None
    ci_low: float | None
    ci_high: float | None
    avg_placing: float | None
    wins: int
    win_rate: float | None
    rating_mu: float
    rating_sigma: float
    rating_ordinal: float
    placing_counts: dict[str, int] = field(default_factory=dict)
    issues: dict[str, int] = field(default_factory=dict)
    aborted: int = 0
    beaten: float | None = None
    """Fraction of tablemates beaten per deal (every rotation of it recorded)."""
    beaten_low: float | None = None
    """``beaten``'s interval, valid at any time (``tournaments.anytime``)."""
    beaten_high: float | None = None
    beaten_drifted: bool = False
    """``beaten`` has left its interval: the field changed under the bot (``anytime.Interval.drifted``)."""


@dataclass(frozen=True, slots=True)
class HeadToHead:
    ahead: int = 0
    behind: int = 0
    tied: int = 0

    @property
    def games(self) -> int:
        return self.ahead + self.behind + self.tied


@dataclass(frozen=True, slots=True)
class Standings:
    name: str
    rows: tuple[BotStanding, ...]
    head_to_head: dict[str, dict[str, HeadToHead]]
    games_recorded: int
    games_scheduled: int
    games_aborted: int
    lower_wins: bool
    status: str = ""
    """How the competition stands, in words, for the terminal's title in place of "complete" or
    "INCOMPLETE" (a ladder: the rounds it played, and how and when it stopped). Not in the
    exports: they stay the same for the same games, however the runs that played them ended."""
    anytime: dict[str, Any] | None = None
    """The order read off the intervals valid at any time: neighbours and their verdicts, and
    the stopping rule's state (``tournaments.anytime.Rankings.to_dict``)."""

    @property
    def complete(self) -> bool:
        return self.games_recorded == self.games_scheduled

    # ------------------------------------------------------------- exports

    def to_dict(self, *, head_to_head: bool = True) -> dict[str, Any]:
        """A JSON-ready document; equal results give equal documents. Without ``head_to_head``
        (bots squared entries: half a megabyte at 100 bots) for the web board, which shows
        only the rows."""
        document = {
            "tournament": self.name,
            "complete": self.complete,
            "games_recorded": self.games_recorded,
            "games_scheduled": self.games_scheduled,
            "games_aborted": self.games_aborted,
            "points": "lower is better" if self.lower_wins else "higher is better",
            "confidence_interval": "95%, Student's t on points per game",
            "rating": RATING_MODEL + "; rating = rating_ordinal = mu - 3 sigma",
            "standings": [{k: _round(v) for k, v in asdict(row).items()} for row in self.rows],
        }
        if self.anytime is not None:
            document["anytime"] = self.anytime
        if head_to_head:
            document["head_to_head"] = {
                a: {b: {"ahead": h.ahead, "behind": h.behind, "tied": h.tied} for b, h in sorted(row.items())}
                for a, row in sorted(self.head_to_head.items())
            }
        return document

    def to_csv(self) -> str:
        columns = [
            "rank", "bot", "games", "avg_points", "ci_low", "ci_high", "avg_placing", "wins", "win_rate",
            "rating_ordinal", "rating_mu", "rating_sigma", *ISSUE_COUNTERS, *BAD_STATUSES, "aborted",
            "beaten", "beaten_low", "beaten_high",
        ]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in self.rows:
            values = asdict(row)
            values.update(row.issues)
            writer.writerow(["" if values[c] is None else _round(values[c]) for c in columns])
        return out.getvalue()

    def format_table(self, grid_limit: int = HEAD_TO_HEAD_GRID_BOTS) -> str:
        """The standings and the head-to-head table, for a terminal (up to ``grid_limit``
        bots: a class's 30 would make lines of 300 characters; then where to find it)."""
        header = ["#", "bot", "games", "avg pts", "95% CI", "avg place", "wins", *RATING_HEADERS, "issues",
                  "beaten (any time)"]
        lines = [header]
        for r in self.rows:
            issues = {k: v for k, v in r.issues.items() if v} | ({"aborted": r.aborted} if r.aborted else {})
            lines.append([
                str(r.rank),
                r.bot,
                str(r.games),
                _fmt(r.avg_points),
                "-" if r.ci_low is None else f"{_fmt(r.ci_low)} .. {_fmt(r.ci_high)}",
                _fmt(r.avg_placing, 2),
                str(r.wins),
                f"{r.rating_ordinal:.2f}",
                f"{r.rating_mu:.2f} ± {r.rating_sigma:.2f}",
                ", ".join(f"{k} {v}" for k, v in issues.items()) or "-",
                "-" if r.beaten is None else f"{r.beaten:.2f} [{r.beaten_low:.2f}, {r.beaten_high:.2f}]"
                + (" drifted" if r.beaten_drifted else ""),
            ])
        state = "complete" if self.complete else "INCOMPLETE"
        points = f"points: {'lower' if self.lower_wins else 'higher'} is better"
        if self.status:
            title = f"{self.name}: {self.status}; {points}"
        else:
            title = f"{self.name}: {self.games_recorded}/{self.games_scheduled} games ({state}), {points}"
        text = [title, *_columns(lines, right={0, 2, 3, 5, 6, 7}), RATING_LEGEND, POINTS_LEGEND]
        if self.anytime is not None:
            text += format_anytime(self.anytime)
        bots = [r.bot for r in self.rows]
        if len(bots) > grid_limit:
            text += ["", f"head to head: {len(bots)} bots make a grid too wide to print; one bot against each "
                     "other: the standings command with --against BOT; all of them: head_to_head in the "
                     "JSON export (standings.json)"]
        elif len(bots) > 1:
            text += ["", "head to head: row finished ahead-behind (tied) of column when at the same table"]
            grid = [["", *bots]]
            for a in bots:
                cells = [a]
                for b in bots:
                    h = self.head_to_head.get(a, {}).get(b)
                    if a == b or h is None or not h.games:
                        cells.append("-" if a == b else "")
                    else:
                        cells.append(f"{h.ahead}-{h.behind}" + (f" ({h.tied})" if h.tied else ""))
                grid.append(cells)
            text += _columns(grid, right=set(range(1, len(bots) + 1)))
        return "\n".join(text)


    def format_against(self, bot: str) -> str:
        """One bot's head to head against every bot it shared a table with, in standings order."""
        if bot not in self.head_to_head:
            names = [r.bot for r in self.rows]
            close = difflib.get_close_matches(bot, names, n=3)
            if close:
                hint = f"did you mean {' or '.join(map(repr, close))}?"
            else:  # (a hundred names are no help in one line: the first dozen, and how many)
                hint = f"its {len(names)} bots: " + ", ".join(names[:12]) + (
                    f" and {len(names) - 12} more" if len(names) > 12 else "")
            raise ValueError(f"no bot {bot!r} in the standings of {self.name}; {hint}")
        lines = [["rank", "against", "games", bot + " ahead", "behind", "tied"]]
        for row in self.rows:
            h = self.head_to_head[bot].get(row.bot)
            if row.bot != bot and h is not None and h.games:
                lines.append([str(row.rank), row.bot, str(h.games), str(h.ahead), str(h.behind), str(h.tied)])
        if len(lines) == 1:
            return f"{bot} has not shared a table with another bot yet"
        title = f"head to head of {bot}: how often it finished ahead of, behind or tied with each bot at its table"
        return "\n".join([title, *_columns(lines, right={0, 2, 3, 4, 5})])


def format_anytime(anytime: dict[str, Any]) -> list[str]:
    """The terminal's lines under the table: the order with its settled neighbours, and the stop."""
    if not anytime.get("neighbours"):
        return []
    signs = {"ahead": " > ", "tied": " = ", "open": " ? ", "behind": " < "}
    order = anytime["neighbours"][0]["upper"] + "".join(signs[n["verdict"]] + n["lower"] for n in anytime["neighbours"])
    lines = ["", *textwrap.wrap(f"order {LABEL} ({anytime['confidence']:.0%}, {anytime['units']} deals): {order}",
                                width=110, subsequent_indent="  ", break_on_hyphens=False),
             f"  > settled, = tied within {anytime['tie_within']:g} head to head, ? not settled yet; beaten: fraction of "
             f"tablemates beaten per deal,",
             f"  its interval {LABEL}"]
    if anytime.get("level"):
        lines += textwrap.wrap(anytime["level"], width=110, initial_indent="  ", subsequent_indent="  ")
    drifted = anytime.get("drifted") or {}
    if drifted.get("bots") or drifted.get("pairs"):
        names = [*drifted.get("bots", []), *(f"{a} v {b}" for a, b in drifted.get("pairs", []))]
        lines += textwrap.wrap(f"drifted: {', '.join(names)}: results that left their interval (the field changed "
                               "under them, as on a ladder); a drifted pair is never settled (docs/rankings.md)",
                               width=110, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
    if anytime.get("stop"):
        state = "met" if anytime["stop_met"] else "not met yet"
        lines.append(f"stop = {anytime['stop']!r}: {state}; {anytime['stop_state']}")
    return lines


def _round(value: Any) -> Any:
    return round(value, 6) if isinstance(value, float) else value


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1e7:
        return f"{value:.3e}"
    return f"{value:,.{digits}f}"


def _columns(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]


def compute_standings(
    results: Sequence[ResultLike],
    bots: Sequence[str],
    *,
    name: str = "",
    games_scheduled: int | None = None,
    partnerships: bool = False,
    lower_wins: bool = True,
    by_rating: bool = False,
) -> Standings:
    """Standings of ``bots`` from ``results`` (any order: they are sorted by schedule).

    ``by_rating`` orders the table by rating ordinal first (a ladder, where bots meet
    different opponents, so average placings do not compare)."""
    tally = Tally(bots, partnerships=partnerships, lower_wins=lower_wins)
    for game in sorted(results, key=lambda r: r.ordinal):
        tally.add(game)
    return tally.standings(name=name, games_scheduled=games_scheduled, by_rating=by_rating)


class Tally:
    """The standings' running sums, fed one game at a time in schedule order. A ladder that
    has run for weeks adds each round's games to its tally instead of reading and rating
    every game again: the same sums, the same ratings (rated in the same order), so the
    same standings as :func:`compute_standings` of all of them."""

    def __init__(self, bots: Sequence[str], *, partnerships: bool = False, lower_wins: bool = True,
                 confidence: float = CONFIDENCE, tie_within: float = TIE_WITHIN, stop: str = "",
                 priors: Mapping[str, float] | None = None, open_field: bool = False) -> None:
        """``confidence`` and ``tie_within``: the intervals valid at any time (``open_field``: a
        ladder's, whose field grows: ``tournaments.anytime.Rankings``); ``stop``: the
        stopping rule whose state the standings report (an adaptive tournament's); ``priors``:
        the rating mean a bot starts from (a participant's new version starts from its
        predecessor's, with the uncertainty of a new bot); others start as new."""
        self.bots = tuple(bots)
        self.stop = StopRule.parse(stop, bots) if stop else None
        focus = self.stop.pair if self.stop is not None else None
        self.anytime = Rankings(bots, confidence=confidence, tie_within=tie_within, focus=focus,
                               open_field=open_field)
        self._units = UnitBuilder(self.anytime)
        self.partnerships = partnerships
        self.model = PlackettLuce()
        self.priors = dict(priors or {})
        self.ratings = {b: self.model.rating(mu=self.priors.get(b), name=b) for b in bots}
        self.points = {b: [0, 0, 0] for b in bots}
        """Per bot: games scored, the sum of their points and of their squares (exact integers)."""
        self.places: dict[str, dict[int, int]] = {b: {} for b in bots}
        self.issues: dict[str, dict[str, int]] = {b: dict.fromkeys((*ISSUE_COUNTERS, *BAD_STATUSES), 0) for b in bots}
        self.aborted: dict[str, int] = dict.fromkeys(bots, 0)
        self.h2h: dict[str, dict[str, list[int]]] = {a: {b: [0, 0, 0] for b in bots if b != a} for a in bots}
        self.games = 0
        self.games_aborted = 0
        self.last_ordinal = -1
        """The schedule position of the last game added (the next must come after it)."""
        self._default_lower_wins = lower_wins
        self._lower_wins: bool | None = None
        """The first scored game's (its preset's) sense of the totals."""

    def add_bot(self, bot: str, prior: float | None = None) -> None:
        """A bot that joins a running ladder (a participant's new version), unrated so far."""
        if bot in self.ratings:
            return
        if prior is not None:
            self.priors[bot] = prior
        self.bots = (*self.bots, bot)
        self.anytime.add_bot(bot)
        self.ratings[bot] = self.model.rating(mu=prior, name=bot)
        self.points[bot] = [0, 0, 0]
        self.places[bot] = {}
        self.issues[bot] = dict.fromkeys((*ISSUE_COUNTERS, *BAD_STATUSES), 0)
        self.aborted[bot] = 0
        self.h2h[bot] = {b: [0, 0, 0] for b in self.h2h}
        for other, row in self.h2h.items():
            if other != bot:
                row[bot] = [0, 0, 0]

    def copy(self) -> Tally:
        """A tally of its own to add games to (a board's games beyond a gap in the schedule)."""
        return copy.deepcopy(self)

    def add(self, game: ResultLike) -> None:
        if game.ordinal < self.last_ordinal:
            raise ValueError(f"game {game.ordinal} added after game {self.last_ordinal}: games are rated in schedule order")
        self.last_ordinal = game.ordinal
        self.games += 1
        for seat in game.seats:
            issues = self.issues[seat.bot]
            for key in ISSUE_COUNTERS:
                issues[key] += seat.counters.get(key, 0)
            if seat.status in BAD_STATUSES:
                issues[seat.status] += 1
        if game.aborted:
            self.games_aborted += 1
            for b in game.bots:
                self.aborted[b] += 1
            self._units.add(getattr(game, "game_id", ""), game.bots, (0,) * len(game.bots), aborted=True,
                            seed=getattr(game, "seed", None))
            return
        if self._lower_wins is None:
            self._lower_wins = game.lower_wins
        seats, placings = game.bots, game.placings
        for b, total, place in zip(seats, game.totals, placings, strict=True):
            sums = self.points[b]
            sums[0] += 1
            sums[1] += total
            sums[2] += total * total
            self.places[b][place] = self.places[b].get(place, 0) + 1
        for i, a in enumerate(seats):
            for j, b in enumerate(seats):
                if i != j:
                    cell = self.h2h[a][b]
                    cell[0 if placings[i] < placings[j] else 1 if placings[i] > placings[j] else 2] += 1
        _rate(self.model, self.ratings, game, self.partnerships)
        self._units.add(getattr(game, "game_id", ""), seats, placings, seed=getattr(game, "seed", None))

    def anytime_document(self) -> dict[str, Any]:
        """The intervals' order and verdicts, and the stop's state if there is one."""
        document = self.anytime.to_dict()
        if self.stop is not None:
            document.update(stop=str(self.stop), stop_met=self.stop.met(self.anytime),
                            stop_state=self.stop.describe(self.anytime))
        return document

    def standings(self, *, name: str = "", games_scheduled: int | None = None, by_rating: bool = False) -> Standings:
        rows = []
        for b in self.bots:
            n, total, squares = self.points[b]
            mean, low, high = _interval(n, total, squares)
            counts = {str(p): c for p, c in sorted(self.places[b].items())}
            placed = sum(p * c for p, c in self.places[b].items())
            r = self.ratings[b]
            beaten = self.anytime.bot_interval(b)
            rows.append(
                BotStanding(
                    rank=0, bot=b, games=n, avg_points=mean, ci_low=low, ci_high=high,
                    avg_placing=placed / n if n else None,
                    wins=counts.get("1", 0),
                    win_rate=counts.get("1", 0) / n if n else None,
                    rating_mu=r.mu, rating_sigma=r.sigma, rating_ordinal=r.ordinal(),
                    placing_counts=counts, issues=dict(self.issues[b]), aborted=self.aborted[b],
                    beaten=beaten.mean, beaten_low=beaten.low if beaten.units else None,
                    beaten_high=beaten.high if beaten.units else None, beaten_drifted=beaten.drifted,
                )
            )
        if by_rating:
            rows.sort(key=lambda r: (-r.rating_ordinal, r.avg_placing is None, r.avg_placing or 0.0, r.bot))
        else:
            rows.sort(key=lambda r: (r.avg_placing is None, r.avg_placing or 0.0, -r.rating_ordinal, r.bot))
        ranked = tuple(
            BotStanding(**{**{f: getattr(row, f) for f in row.__dataclass_fields__}, "rank": i + 1})
            for i, row in enumerate(rows)
        )
        return Standings(
            name=name,
            rows=ranked,
            head_to_head={a: {b: HeadToHead(*cell) for b, cell in row.items()} for a, row in self.h2h.items()},
            games_recorded=self.games,
            games_scheduled=self.games if games_scheduled is None else games_scheduled,
            games_aborted=self.games_aborted,
            lower_wins=self._default_lower_wins if self._lower_wins is None else self._lower_wins,
            anytime=self.anytime_document(),
        )


def _rate(model: PlackettLuce, ratings: dict[str, Any], game: ResultLike, partnerships: bool) -> None:
    seats = game.bots
    if partnerships and len(seats) == 4:
        groups = [[0, 2], [1, 3]]
    else:
        groups = [[s] for s in range(len(seats))]
    teams = [[ratings[seats[s]] for s in group] for group in groups]
    ranks: list[float] = [float(game.placings[group[0]]) for group in groups]
    new = model.rate(teams, ranks=ranks)
    for group, team in zip(groups, new, strict=True):
        for s, rating in zip(group, team, strict=True):
            ratings[seats[s]] = rating


def rating_history(
    results: Sequence[ResultLike], bots: Sequence[str], *, partnerships: bool = False
) -> dict[str, list[dict[str, Any]]]:
    """Each bot's rating after each of its games, rated as :func:`compute_standings` rates
    them (schedule order, aborted games skipped): ``{"game_id", "mu", "sigma"}`` per game."""
    model = PlackettLuce()
    ratings = {b: model.rating(name=b) for b in bots}
    out: dict[str, list[dict[str, Any]]] = {b: [] for b in bots}
    for game in sorted(results, key=lambda r: r.ordinal):
        if game.aborted or not set(game.bots) <= ratings.keys():
            continue
        _rate(model, ratings, game, partnerships)
        for b in dict.fromkeys(game.bots):
            r = ratings[b]
            out[b].append({"game_id": getattr(game, "game_id", ""), "mu": round(r.mu, 4), "sigma": round(r.sigma, 4)})
    return out


PRIORS_FILE = "priors.json"
"""In a roster folder: the rating mean each participant's version started from ({bot: mu})."""


def read_priors(folder: str | os.PathLike[str] | None) -> dict[str, float]:
    """The priors kept in ``folder`` (none when there is no file, or no folder)."""
    if folder is None:
        return {}
    try:
        data = json.loads((Path(folder) / PRIORS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def write_priors(folder: str | os.PathLike[str], priors: Mapping[str, float]) -> None:
    """Replace the priors file whole (written beside, then renamed: never read half-written)."""
    path = Path(folder) / PRIORS_FILE
    temp = path.with_name(f".{PRIORS_FILE}.{os.getpid()}")
    temp.write_text(json.dumps(dict(sorted(priors.items())), indent=1), encoding="utf-8")
    os.replace(temp, path)


def seat_faults(seat: Any) -> dict[str, Any]:
    """A seat's faults in one game: its counters that are not zero, and a bad status."""
    out: dict[str, Any] = {k: seat.counters.get(k, 0) for k in ISSUE_COUNTERS if seat.counters.get(k, 0)}
    if seat.status in BAD_STATUSES:
        out["status"] = seat.status
    if getattr(seat, "bot_error", ""):  # the first failure of the bot's own code, in its words
        out["first_bot_error"] = seat.bot_error
    return out


def faulty_games(games: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Per bot, the games in which it had a fault (:func:`seat_faults` not empty): the one count
    of faults the board and the teacher's dashboard show."""
    counts: dict[str, int] = {}
    for game in games:
        for bot, faults in zip(game["bots"], game["faults"], strict=True):
            if faults:
                counts[bot] = counts.get(bot, 0) + 1
    return counts
