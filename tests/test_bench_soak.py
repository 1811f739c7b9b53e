"""The soak bench runs end to end and keeps its promised output: its figures are not asserted
(a bench measures; tests/tournaments/test_tournament_kept_bots.py checks what a kept bot
costs), only that both halves were counted and that its last line is the machine-readable one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAST_LINE = re.compile(r"objects_per_game=-?[\d.]+ futures_growth=-?\d+ fds_growth=-?\d+ threads_growth=-?\d+"
                       r" pages_written_vs_listed=[\d.]+ games=\d+")


def test_the_quick_soak_bench_counts_both_halves_and_ends_with_its_line() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), "--rounds", "3"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "launched unsandboxed" in lines[0], lines[0]
    assert [line.split()[0] for line in lines[2:7]] == ["objects", "futures", "fds", "threads", "rss_kb"]
    assert "9 at round 3, 18 at round 6" in done.stdout
    assert LAST_LINE.fullmatch(lines[-1]), lines[-1]
    assert lines[-1].endswith(" games=18")
