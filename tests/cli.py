"""The `craits` command run in-process, as the tests of its subcommands use it."""

from __future__ import annotations

import queue
import re
import time

import pytest

from server.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``craits ARGV...``: its exit status, standard output and standard error."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def wait_for_line(lines: queue.Queue[str], pattern: re.Pattern[str] | str, timeout_s: float = 60) -> re.Match[str]:
    """The first line a command prints (fed into ``lines`` by a reader thread) that matches
    ``pattern``; AssertionError with every line seen when none does in time."""
    deadline = time.monotonic() + timeout_s
    seen = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        seen.append(line)
        if match := re.search(pattern, line):
            return match
    raise AssertionError(f"no line matching {pattern!r} in {seen}")
