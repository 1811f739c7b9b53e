"""bench/distributed.py runs end to end (its smallest size) and ends with its figures."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.distributed import workers_run
from server.storage.postgres import migrate
from tests.machine import fresh_path

ROOT = Path(__file__).resolve().parents[2]


def test_the_distributed_bench_runs_and_prints_its_last_line(pg_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "bench/distributed.py", "--runner", "local", "--deals", "1", "--store", pg_url],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert re.fullmatch(r"workers_speedup_2_vs_1=\d+\.\d\d pg_overhead_ms_per_game=-?\d+\.\d "
                        r"queue_games_per_s=\d+ queue_games_per_s_one_process=\d+ queue_games_per_s_one_job_per_trip=\d+ "
                        r"pg_bytes_per_game=\d+ "
                        r"queue_share_pct=\d+\.\d",
                        lines[-1]), lines
    assert sum("worker(s): 4 games" in line for line in lines) == 3


def test_workers_that_refuse_every_game_stop_the_bench_with_their_reason(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench's workers run on a machine without bwrap (their PATH): they refuse the games,
    and the bench stops with their reason instead of waiting for a worker that will not come."""
    migrate(pg_url)
    monkeypatch.setenv("PATH", fresh_path(tmp_path / "bin"))  # (what the worker processes get)
    with pytest.raises(SystemExit) as stopped:
        asyncio.run(workers_run(pg_url, 1, 1, 2, "grpc", tmp_path))
    said = str(stopped.value)
    assert "bench-k1: every connected worker refuses games it cannot play" in said, said
    assert "worker bench-w0 refused" in said and "cannot sandbox launched bots: bwrap not found" in said, said
    assert said.endswith("; no figures")
