"""The referee bench runs end to end and keeps its promised output (issue 3, item 9).

Its figures are not asserted (the machines are shared and noisy): only that one game through
the real server, the echo and the other phases completes, and that its last line is the
machine-readable one other tools read.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAST_LINE = re.compile(r"p50_ratio_vs_echo=\d+\.\d{3} decisions_per_s=\d+")


def run_bench(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "referee.py"), "--games", "1", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_one_game_prints_every_phase_and_ends_with_the_machine_readable_line() -> None:
    lines = run_bench()
    rows = {line[:26].strip() for line in lines}
    assert {"referee, whole", "referee, less bot time", "echo", "4 bots in turn, no referee",
            "echo, client idle between"} <= rows, lines
    assert LAST_LINE.fullmatch(lines[-1]), lines[-1]


def test_the_breakdown_names_each_step_of_a_round_trip() -> None:
    lines = run_bench("--breakdown")
    step = re.compile(r"\s+(\S.*?)\s+(\d+\.\d{3})\s+(\d+\.\d{3})")
    named = [m.group(1) for line in lines if (m := step.fullmatch(line))]
    expected = ["build", "to writer", "wire and bot", "to game", "rest"]
    if sys.platform.startswith("linux"):  # the bots' stamps split the wire into legs
        expected += ["writer to bot", "in the bot", "bot to reader"]
    assert named == expected, lines
