"""Run the real checker against a real bot process (the bots live in bots/)."""

from __future__ import annotations

import sys
from pathlib import Path

from server.checker import CheckOptions, Report, check_bot

BOTS = Path(__file__).resolve().parent / "bots"
ROOT = Path(__file__).resolve().parents[2]


def bot_command(name: str, *args: str) -> list[str]:
    return [sys.executable, str(BOTS / name), *args]


def run_check(command: list[str], **options: float) -> Report:
    return check_bot(command, CheckOptions(**options))  # type: ignore[arg-type]


def statuses(report: Report) -> dict[str, str]:
    return {c.key: c.status for c in report.checks}
