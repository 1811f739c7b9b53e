"""An anytime-valid interval for a mean in [0, 1], as a version comparison and a rubric read it:
the shared predictable plug-in empirical-Bernstein confidence sequence of
:mod:`tournaments.anytime` (Waudby-Smith and Ramdas), one observation at a time, with the
plain average beside it. With ``alpha = 0.05`` the chance that the true mean ever leaves the
interval, at any number of observations, is at most 5 %: a participant may watch it after
every game and stop as soon as it says something.
"""

from __future__ import annotations

from collections.abc import Iterable
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
    """The interval, one observation at a time (:meth:`add` returns it after each)."""

    def __init__(self, alpha: float = 0.05) -> None:
        self._sequence = anytime.ConfidenceSequence(alpha)

    def add(self, x: float) -> Interval:
        self._sequence.add(x)
        return self.interval()

    def interval(self) -> Interval:
        s = self._sequence
        mean = s.mean if s.mean is not None else 0.5
        return Interval(mean, s.low, s.high, s.n)


def mean_interval(values: Iterable[float], alpha: float = 0.05) -> Interval:
    """The confidence sequence's interval after ``values`` (each in [0, 1]), oldest first."""
    sequence = ConfidenceSequence(alpha)
    for x in values:
        sequence.add(x)
    return sequence.interval()
