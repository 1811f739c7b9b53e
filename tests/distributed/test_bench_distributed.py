"""bench/distributed.py runs end to end (its smallest size) and ends with its figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_distributed_bench_runs_and_prints_its_last_line(pg_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "bench/distributed.py", "--runner", "local", "--deals", "1", "--store", pg_url],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert re.fullmatch(r"workers_speedup_2_vs_1=\d+\.\d\d pg_overhead_ms_per_game=-?\d+\.\d "
                        r"queue_games_per_s=\d+ pg_bytes_per_game=\d+", lines[-1]), lines
    assert sum("worker(s): 4 games" in line for line in lines) == 3
