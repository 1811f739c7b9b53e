"""`craits serve --bot A --bot B --games N` rotates the seats as `craits play` does: each bot
sits in each seat (the first bot sat in seat 0 in every game)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_serve_games_rotate_the_bots_seats(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    done = subprocess.run([sys.executable, "-m", "server.cli", "serve", "--address", "127.0.0.1:0", "--bot", "random",
                           "--bot", "first", "--games", "2", "--flag", "short_game=true", "--results", str(results),
                           "--log-dir", str(tmp_path / "logs")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    seats = [json.loads(line)["bots"] for line in results.read_text().splitlines()]
    assert seats == [["random", "first"], ["first", "random"]]
