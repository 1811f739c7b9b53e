"""The ladder bench runs end to end and keeps its promised output: its figures are not
asserted (the machines are shared and noisy), only that both ways of keeping a ladder's
books were timed at every size and that its last line is the machine-readable one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAST_LINE = re.compile(r"afresh_vs_kept_at_largest=[\d.]+ afresh_growth=[\d.]+ kept_growth=[\d.]+ games_largest=\d+"
                       r" board_afresh_vs_kept_at_largest=[\d.]+")


def test_the_quick_ladder_bench_times_every_size_both_ways_and_ends_with_its_line() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "ladder.py"), "--quick", "--repeat", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    sizes = [int(line.split()[0]) for line in lines[1:-1]]
    assert len(sizes) == 4 and sizes == sorted(sizes) and sizes[0] >= 500 and sizes[-1] >= 4000
    assert LAST_LINE.fullmatch(lines[-1]), lines[-1]
