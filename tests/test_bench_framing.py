"""The framing bench runs end to end: gRPC and length-prefixed frames on a Unix socket, each with
a real bot process, and its last line (figures not asserted: the machines are shared)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAST_LINE = re.compile(
    r"server_ratio_frames_vs_grpc=\d+\.\d\d client_ratio_frames_vs_grpc=\d+\.\d\d server_us_grpc=\d+\.\d "
    r"server_us_frames=\d+\.\d client_us_grpc=\d+\.\d client_us_frames=\d+\.\d"
)


def test_both_framings_answer_every_request_and_the_last_line_says_what_frames_buy() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "framing.py"), "--rounds", "2", "--round-trips", "300"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.strip().startswith("grpc ") for line in lines), lines
    assert any(line.strip().startswith("frames ") for line in lines), lines
    assert LAST_LINE.fullmatch(lines[-1]), lines[-1]
