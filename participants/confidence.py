"""An anytime-valid interval for a mean in [0, 1], as a version comparison and a rubric read it:
the hedged-capital betting confidence sequence of :mod:`tournaments.anytime` (Waudby-Smith and
Ramdas 2023, Theorem 3; the rankings' own), one observation at a time, with the plain average
beside it. With ``alpha = 0.05`` the chance that the true mean ever leaves the interval, at any
number of observations, is at most 5 %: a participant may watch it after every game and stop
as soon as it says something.

Why watching does not bias it: for each candidate mean, two bettors stake on "above" and
"below" it, and the bet on the t-th observation is computed from the first t - 1 only (their
running mean and spread) and from ``centre``, a point fixed before any game (the one the
verdict compares the mean with). At the true mean each bettor's capital is then a
nonnegative martingale, and by Ville's inequality it ever reaches 2/alpha with probability at
most alpha/2, whenever anyone looks. The centre only makes the bets bolder where the verdict
is read (at least Kelly's bet against it), so a verdict comes sooner: ``bench/compare_versions.py``
measures how much sooner than the empirical-Bernstein sequence this module used before.

The interval's ends are candidates already ruled out (the mean lies strictly between them):
a verdict that the mean is below ``centre`` is ``high <= centre``. Its ends are exact to 1/100,
and exact at ``centre`` and at ``points``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tournaments import anytime


@dataclass(frozen=True, slots=True)
class Interval:
    mean: float
    """The plain average of the observations (0.5 before any)."""
    low: float
    high: float
    count: int


class ConfidenceSequence:
    """The interval, one observation at a time (:meth:`add` returns it after each); ``centre``:
    the point the verdict compares the mean with (None: no verdict, a plain interval);
    ``points``: other values to track exactly; ``interval``: "betting", or "eb" (the
    empirical-Bernstein sequence it replaced, for ``bench/compare_versions.py``)."""

    def __init__(self, alpha: float = 0.05, *, centre: float | None = None, points: Sequence[float] = (),
                 interval: str = "betting") -> None:
        if interval not in anytime.INTERVALS:
            raise ValueError(f"interval must be one of {', '.join(anytime.INTERVALS)}, got {interval!r}")
        exact = (*points, *(() if centre is None else (centre,)))
        self._sequence = anytime.INTERVALS[interval](alpha, exact, centre)

    def add(self, x: float) -> Interval:
        self._sequence.add(x)
        return self.interval()

    def interval(self) -> Interval:
        s = self._sequence
        mean = s.mean if s.mean is not None else 0.5
        return Interval(mean, s.low, s.high, s.n)


def mean_interval(values: Iterable[float], alpha: float = 0.05, *, centre: float | None = None) -> Interval:
    """The confidence sequence's interval after ``values`` (each in [0, 1]), oldest first."""
    sequence = ConfidenceSequence(alpha, centre=centre)
    for x in values:
        sequence.add(x)
    return sequence.interval()
