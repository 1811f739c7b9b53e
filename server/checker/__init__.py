"""check-bot: a referee of its own that puts a bot in exact situations and reports what it got wrong.

scenarios: the dealt positions that reach every kind of decision; driver: the checker's
server, the bot process and the checks; report: the verdicts and how they print.
"""

import craits.grpc_io  # noqa: F401  # first: it chooses gRPC's I/O layer before grpc is imported

from server.checker.driver import CheckOptions, Offer, check_bot, judge_one_card
from server.checker.report import Check, Report, Status

__all__ = ["Check", "CheckOptions", "Offer", "Report", "Status", "check_bot", "judge_one_card"]
