"""An anytime-valid confidence interval for a mean in [0, 1]: one that may be looked at after
every observation, and stopped on as soon as it says something, without the looking biasing it.

The predictable plug-in empirical-Bernstein confidence sequence of Waudby-Smith and Ramdas
("Estimating means of bounded random variables by betting", JRSS B 2023, Theorem 2), with
the running intersection (still a confidence sequence). With ``alpha = 0.05``, the chance
that the true mean ever leaves the interval, at any number of observations, is at most 5 %.

Note for the merge: the issue "Rankings you can stop on" (branch ``stopping``) brings shared
anytime-valid intervals in ``tournaments/``; this small self-contained one should then give
way to it (its callers use only :func:`mean_interval` and :class:`Interval`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

LAMBDA_CAP = 0.5
"""The largest bet (lambda) a step may make: WSR's suggested cap keeps early steps tame."""


@dataclass(frozen=True, slots=True)
class Interval:
    mean: float
    """The plain average of the observations."""
    low: float
    high: float
    count: int


class ConfidenceSequence:
    """The interval, one observation at a time (:meth:`add` returns it after each)."""

    def __init__(self, alpha: float = 0.05) -> None:
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
        self.log_term = math.log(2 / alpha)
        self.low, self.high = 0.0, 1.0
        self.total = self.weighted = self.lambdas = self.penalty = self.squares = 0.0
        self.mu_prev, self.var_prev = 0.5, 0.25
        self.count = 0

    def add(self, x: float) -> Interval:
        if not 0.0 <= x <= 1.0:
            raise ValueError(f"observations must lie in [0, 1], got {x}")
        self.count = t = self.count + 1
        lam = min(math.sqrt(2 * self.log_term / (self.var_prev * t * math.log(1 + t))), LAMBDA_CAP)
        psi = (-math.log(1 - lam) - lam) / 4
        self.weighted += lam * x
        self.lambdas += lam
        self.penalty += 4 * (x - self.mu_prev) ** 2 * psi
        centre = self.weighted / self.lambdas
        width = (self.log_term + self.penalty) / self.lambdas
        self.low, self.high = max(self.low, centre - width), min(self.high, centre + width)
        self.total += x
        mu_now = (0.5 + self.total) / (t + 1)
        self.squares += (x - mu_now) ** 2
        self.mu_prev, self.var_prev = mu_now, (0.25 + self.squares) / (t + 1)
        return self.interval()

    def interval(self) -> Interval:
        mean = self.total / self.count if self.count else 0.5
        if self.low > self.high:  # (the running intersection emptied: a <alpha chance; say "here")
            return Interval(mean, mean, mean, self.count)
        return Interval(mean, max(self.low, 0.0), min(self.high, 1.0), self.count)


def mean_interval(values: Iterable[float], alpha: float = 0.05) -> Interval:
    """The confidence sequence's interval after ``values`` (each in [0, 1]), oldest first."""
    sequence = ConfidenceSequence(alpha)
    for x in values:
        sequence.add(x)
    return sequence.interval()
