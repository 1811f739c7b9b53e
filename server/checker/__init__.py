"""check-bot: a referee of its own that puts a bot in exact situations and reports what it got wrong.

scenarios: the dealt positions that reach every kind of decision; driver: the checker's
server, the bot process and the checks; report: the verdicts and how they print.
"""

from typing import TYPE_CHECKING

import craits.grpc_io  # noqa: F401  # first: it chooses gRPC's I/O layer before grpc is imported

from server.checker.report import Check, Report, Status

if TYPE_CHECKING:
    from server.checker.driver import CheckOptions, Offer, check_bot, judge_one_card

__all__ = ["Check", "CheckOptions", "Offer", "Report", "Status", "check_bot", "judge_one_card"]
_DRIVER = ("CheckOptions", "Offer", "check_bot", "judge_one_card")


def __getattr__(name: str) -> object:
    """The driver's names, imported (with gRPC) when first asked for: ``craits check-bot`` declares its
    options without them."""
    if name in _DRIVER:
        from server.checker import driver

        return getattr(driver, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
