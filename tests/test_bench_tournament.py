"""The tournament bench runs end to end and keeps its promised output (issue 13, item 4).

Its figures are not asserted (the machines are shared and noisy): only that one deal (four
games) at each concurrency through the real referee, workers and launched bots completes,
with the CPU per game, the referee's CPU per decision beside the echo's, the machine's own
ceiling for the speed-up, and the last line other tools read.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from bench.tournament import CpuMeter, timed_run, tournament_text
from tests.machine import fresh_path
from tournaments.config import parse_config
from tournaments.grpc_runner import tournament_runner

ROOT = Path(__file__).resolve().parents[1]
LAST_LINE = re.compile(r"speedup_2_vs_1=\d+\.\d\d games_per_s=\d+\.\d\d cpu_s_per_game=\d+\.\d{3} machine_2_vs_1=\d+\.\d\d cores_busy_1=\d+\.\d\d"
    r" cpu_ms_per_decision=\d+\.\d{3} referee_ms_per_decision=\d+\.\d{3} referee_vs_echo=\d+\.\d\d referee_vs_echo_same_loop=\d+\.\d\d")


def test_one_deal_at_each_concurrency_prints_every_figure_and_the_machine_readable_line() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "tournament.py"), "--runner", "grpc", "--deals", "1", "--quick"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("concurrency 1: 4 games in ") and "CPU s per game" in line for line in lines), lines
    assert any(line.startswith("concurrency 2: 4 games in ") for line in lines), lines
    assert any(line.startswith("referee CPU per decision put to a bot: ") and "echo server" in line
               for line in lines), lines
    assert LAST_LINE.fullmatch(lines[-1]), lines[-1]
    ceiling = next(line for line in lines if line.startswith("this machine: two CPU-bound Python processes do "))
    assert float(lines[-1].split("machine_2_vs_1=")[1].split()[0]) > 0, ceiling
    counted = next(line for line in lines if line.startswith("CPU counted by "))
    if os.geteuid() == 0 and Path("/sys/fs/cgroup/cpuacct/cgroup.procs").is_file():
        # getrusage misses sandboxed bots (nobody waits for them): here the kernel's count must be used
        assert counted == "CPU counted by the kernel's cpuacct count for this process and all it started", counted
    assert "bots launched sandboxed (bwrap)" in lines[0], lines[0]


def test_where_the_bots_cannot_be_sandboxed_the_bench_stops_with_the_reason_and_prints_no_figures(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PATH": fresh_path(tmp_path / "bin")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "tournament.py"), "--runner", "grpc", "--deals", "1", "--quick"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )
    assert done.returncode == 1
    assert "cannot sandbox them: bwrap not found (Debian package bubblewrap)" in done.stderr
    assert "speedup" not in done.stdout and "games/s" not in done.stdout


def test_games_whose_bots_never_played_give_no_figures(tmp_path: Path) -> None:
    """Bots that exit at start: the default policy plays every seat, so the bench stops, with
    what the bots said."""
    quitter = json.dumps([sys.executable, "-c", "import sys; sys.exit('no bot kit here')"])
    bots = "".join(f'[[bots]]\nname = "quitter-{n}"\ncommand = {quitter}\n' for n in "abcd")
    text = tournament_text(1, bots, 'sandbox = "none"')
    config = parse_config(text, source="bench", base_dir=ROOT)
    meter = cast(CpuMeter, SimpleNamespace(seconds=time.process_time))  # (this test moves into no cgroup)
    with pytest.raises(SystemExit) as stopped:
        asyncio.run(timed_run(config, text, tmp_path, tournament_runner, 2, meter))
    said = str(stopped.value)
    assert "the games were not played by their bots (quitter-a never connected in 4 of 4 games;" in said
    assert "no figures" in said and "no bot kit here" in said


def test_the_breakdown_names_each_process_and_step() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "tournament.py"), "--runner", "grpc", "--deals", "1", "--breakdown"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for row in ("referee (this process): ", "  event loop thread ", "build the request (wire)", "replay record and hash",
                "engine", "the stream (frames), event loop, glue", "log events",
                "the kit's dispatch and choose()", "the stream (frames) and event loop"):
        assert row in out, out
    assert "loop turns per decision" in out or "(uvloop's turns are not counted)" in out, out
    if Path("/sys/fs/cgroup/cpuacct/cgroup.procs").is_file() and os.geteuid() == 0:  # bots found in the cgroup
        assert re.search(r"bots \(\d+ processes", out) and "bots (0 processes" not in out, out
