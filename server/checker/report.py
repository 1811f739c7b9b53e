"""check-bot's report: one check per line, PASS/WARN/FAIL/SKIP, with what the bot sent and what was expected."""

from __future__ import annotations

import enum
import shlex
from dataclasses import dataclass, field
from typing import Any

TAIL_LINES = 25
REPORT_SCHEMA = 1
EXITED_AT_ONCE = (
    "a bot that exits with code 0 before it connects never started playing: a Python bot of the kit "
    "ends with run(MyBot()), and a JavaScript strategy runs as craits-js-bot --strategy FILE (node clients/js/bot.js --strategy FILE)"
)
"""What a bot process that ended at once, without an error, most likely lacks (check-bot, craits play)."""


class Status(enum.StrEnum):
    """A check's verdict. WARN: legal but costly (the exit status stays 0)."""

    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass
class Check:
    """One line of the report. Its status follows from what was recorded on it."""

    key: str
    title: str
    expected: str
    sent: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Each one fails the check."""
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str = ""
    """Why the check was not run (empty when it ran)."""
    verdict: Status | None = None
    """A status decided by the check itself (the one-card check); otherwise derived."""
    more: int = 0
    """Answers after the ones the check is about (to the end of the scenario's hand)."""

    @property
    def status(self) -> Status:
        if self.skipped:
            return Status.SKIP
        if self.problems:
            return Status.FAIL
        if self.verdict:
            return self.verdict
        return Status.WARN if self.warnings else Status.PASS

    _kinds: dict[str, tuple[list[str], int, str, int]] = field(default_factory=dict, repr=False)

    def fail(self, message: str, kind: str = "") -> None:
        """Record a failure; further ones of the same ``kind`` only add to a count."""
        self._record(self.problems, message, kind)

    def warn(self, message: str, kind: str = "") -> None:
        self._record(self.warnings, message, kind)

    def _record(self, into: list[str], message: str, kind: str) -> None:
        if kind and kind in self._kinds:
            _, index, first, times = self._kinds[kind]
            self._kinds[kind] = (into, index, first, times + 1)
            into[index] = f"{first} (and {times} more like it)"
        elif message not in into:
            if kind:
                self._kinds[kind] = (into, len(into), message, 1)
            into.append(message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "status": self.status,
            "sent": self.sent,
            "expected": self.expected,
            "problems": self.problems,
            "warnings": self.warnings,
            "notes": self.notes,
            "skipped": self.skipped,
        }


@dataclass
class Report:
    command: list[str]
    checks: list[Check]
    exit_code: int | None = None
    output_tail: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: Status) -> int:
        return sum(1 for c in self.checks if c.status == status)

    @property
    def ok(self) -> bool:
        """Nothing failed (a check is only ever skipped after another one failed)."""
        return self.count(Status.FAIL) == 0

    def check(self, key: str) -> Check:
        return next(c for c in self.checks if c.key == key)

    def summary(self) -> str:
        passed, warned = self.count(Status.PASS), self.count(Status.WARN)
        failed, skipped = self.count(Status.FAIL), self.count(Status.SKIP)
        text = f"{passed} passed, {warned} warning{'s' if warned != 1 else ''}, {failed} failed"
        if skipped:
            text += f", {skipped} not run"
        return text

    def render(self) -> str:
        lines = [f"craits check-bot: {shlex.join(self.command)}"]
        for c in self.checks:
            if c.skipped:
                lines.append(f"{c.status}  {c.title}: not run ({c.skipped})")
                continue
            sent = "; ".join(c.sent) if c.sent else "nothing"
            notes = f" ({'; '.join(c.notes)})" if c.notes else ""
            lines.append(f"{c.status}  {c.title}: sent {sent}; expected {c.expected}{notes}")
            lines.extend(f"      - {p}" for p in c.problems)
            lines.extend(f"      ! {w}" for w in c.warnings)
        if not self.ok and self.output_tail:
            lines.append(f"last {len(self.output_tail)} lines of the bot's output (stdout and stderr):")
            lines.extend(f"  | {line}" for line in self.output_tail)
        lines.append(f"{self.summary()} ({self.seconds:.1f} s)")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": REPORT_SCHEMA,
            "command": self.command,
            "ok": self.ok,
            "passed": self.count(Status.PASS),
            "warnings": self.count(Status.WARN),
            "failed": self.count(Status.FAIL),
            "not_run": self.count(Status.SKIP),
            "checks": [c.to_dict() for c in self.checks],
            "bot_exit_code": self.exit_code,
            "bot_output_tail": self.output_tail,
            "seconds": round(self.seconds, 3),
        }


