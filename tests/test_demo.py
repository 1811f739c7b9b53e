"""`craits demo`, the README's first command: the demo tournament of the bundled bots, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.storage.replay import verify_replay
from tests.cli import run_cli


def test_the_demo_plays_every_game_with_the_bundled_bots_and_leaves_verifiable_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    code, stdout, stderr = run_cli(capsys, "demo", "--out", str(out))
    assert code == 0, stderr
    assert "demo: 24/24 games (complete)" in stdout
    document = json.loads((out / "standings.json").read_text())
    assert {row["bot"] for row in document["standings"]} == {"py-random", "py-heuristic", "js-heuristic", "house-random"}
    assert all(sum(row["issues"].values()) == 0 for row in document["standings"]), document["standings"]
    replays = sorted((out / "replays").glob("*.jsonl.gz"))
    assert len(replays) == 24
    for replay in replays:
        verify_replay(replay)
