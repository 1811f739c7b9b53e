"""The ladder bench runs end to end and keeps its promised output: its figures are not
asserted (the machines are shared and noisy), only that both ways of keeping a ladder's
books were timed at every size and that its last line is the machine-readable one. It runs
at small sizes (``--sizes``): the same code as ``--quick``'s 500 to 4,000 games, a tenth of
the games to fill and read."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAST_LINE = re.compile(r"afresh_vs_kept_at_largest=[\d.]+ afresh_growth=[\d.]+ kept_growth=[\d.]+ games_largest=\d+"
                       r" board_afresh_vs_kept_at_largest=[\d.]+")


def test_the_quick_ladder_bench_times_every_size_both_ways_and_ends_with_its_line() -> None:
    asked = [50, 100, 200, 400]
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "ladder.py"), "--sizes", ",".join(map(str, asked)),
                           "--repeat", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    rows = [line.split() for line in lines[1:-1]]
    sizes = [int(row[0]) for row in rows]
    assert len(sizes) == 4 and sizes == sorted(sizes)
    assert all(got >= size for got, size in zip(sizes, asked, strict=True)), sizes
    assert all(len(row) == 7 and all(float(figure) > 0 for figure in row[1:]) for row in rows), lines
    assert LAST_LINE.fullmatch(lines[-1]), lines[-1]
    assert f"games_largest={sizes[-1]} " in lines[-1]
