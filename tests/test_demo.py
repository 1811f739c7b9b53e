"""`craits demo`, the README's first command: the demo tournament of the bundled bots, end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from server.cli.demo import DEMO_TOURNAMENT, unsandboxed_line
from server.storage.replay import verify_replay
from server.transport import sandbox
from tests.cli import run_cli
from tests.machine import fake_program, fresh_path

ROOT = Path(__file__).resolve().parents[1]


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


def test_the_demo_plays_sandboxed_where_bwrap_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if (why := sandbox.problem()) is not None:
        pytest.skip(f"the sandbox cannot run here: {why}")
    code, stdout, stderr = run_cli(capsys, "demo", "--out", str(tmp_path / "demo"))
    assert code == 0, stderr
    assert "unsandboxed" not in stderr and "without a sandbox" not in stderr
    assert "demo: 24/24 games (complete)" in stdout


@pytest.mark.parametrize("bwrap", ["absent", "broken"])
def test_where_bubblewrap_cannot_run_the_demo_plays_its_own_bots_unsandboxed_and_says_so_once(
    bwrap: str, tmp_path: Path,
) -> None:
    """What `make demo` runs in a fresh clone on a machine with Python and Node.js but no bwrap,
    or one that cannot make a sandbox there (user namespaces off)."""
    env = {**os.environ, "PATH": fresh_path(tmp_path / "bin")}
    if bwrap == "broken":
        fake_program(tmp_path / "bin", "bwrap", "echo 'bwrap: No permissions to create new namespace' >&2; exit 1")
    done = subprocess.run([sys.executable, "-m", "server.cli", "demo", "--out", str(tmp_path / "demo")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "unsandboxed" in line or "without a sandbox" in line]
    why = ("bwrap not found (Debian package bubblewrap)" if bwrap == "absent" else "bwrap cannot make a sandbox here "
           "(bwrap: No permissions to create new namespace; are user namespaces turned off?)")
    assert said == [unsandboxed_line(why)], done.stderr
    assert "demo: 24/24 games (complete)" in done.stdout
    document = json.loads((tmp_path / "demo" / "standings.json").read_text())
    assert all(sum(row["issues"].values()) == 0 for row in document["standings"]), document["standings"]


def test_without_bubblewrap_a_tournament_of_launched_bots_is_still_refused(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": fresh_path(tmp_path / "bin")}
    done = subprocess.run([sys.executable, "-m", "server.cli", "tournament", "run", str(DEMO_TOURNAMENT),
                           "--out", str(tmp_path / "out")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert "cannot sandbox launched bots: bwrap not found" in done.stderr
    assert not (tmp_path / "out" / "tournament.db").exists()
