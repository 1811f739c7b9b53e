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


def mean_interval(values: Iterable[float], alpha: float = 0.05) -> Interval:
    """The confidence sequence's interval after ``values`` (each in [0, 1]), oldest first."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    log_term = math.log(2 / alpha)
    low, high = 0.0, 1.0
    total = weighted = lambdas = penalty = squares = 0.0
    mu_prev, var_prev = 0.5, 0.25
    t = 0
    for x in values:
        if not 0.0 <= x <= 1.0:
            raise ValueError(f"observations must lie in [0, 1], got {x}")
        t += 1
        lam = min(math.sqrt(2 * log_term / (var_prev * t * math.log(1 + t))), LAMBDA_CAP)
        psi = (-math.log(1 - lam) - lam) / 4
        weighted += lam * x
        lambdas += lam
        penalty += 4 * (x - mu_prev) ** 2 * psi
        centre = weighted / lambdas
        width = (log_term + penalty) / lambdas
        low, high = max(low, centre - width), min(high, centre + width)
        total += x
        mu_now = (0.5 + total) / (t + 1)
        squares += (x - mu_now) ** 2
        mu_prev, var_prev = mu_now, (0.25 + squares) / (t + 1)
    if low > high:  # (the running intersection emptied: possible only by a <alpha chance; say "here")
        low = high = min(max(total / t, 0.0), 1.0)
    return Interval(total / t if t else 0.5, max(low, 0.0), min(high, 1.0), t)
