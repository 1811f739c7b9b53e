"""Nothing lost: a tournament SIGKILLed at random moments and resumed ends exactly
like one that ran straight through."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from server.storage.store import Store
from tests.tournaments.configs import builtin_tournament

ROOT = Path(__file__).resolve().parents[2]
CONFIG = builtin_tournament("killed", seed=31337, deals=2, bots={"r1": "random", "r2": "random", "first": "first", "greedy": "greedy", "default": "default"})
TOTAL = 10 * 2 * 3  # C(5, 3) tables x 2 deals x 3 rotations


def craits(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "server.cli", "tournament", *args, "--runner", "local", "--no-progress"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def recorded(db: Path) -> int | None:
    """Games recorded so far, read the way any other process would (None: no schedule yet)."""
    if not db.exists():
        return None
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            if conn.execute("SELECT COUNT(*) FROM tournament").fetchone()[0] == 0:
                return None
            return int(conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.Error:
        return None


def test_sigkill_at_random_moments_then_resume_gives_identical_standings(tmp_path: Path) -> None:
    config = tmp_path / "killed.toml"
    config.write_text(CONFIG)
    straight, killed = tmp_path / "straight", tmp_path / "killed"

    proc = craits("run", str(config), "--out", str(straight))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()

    rng = random.Random(20240)
    targets = [0, *sorted(rng.sample(range(1, TOTAL - 1), 4))]  # 0: killed while starting up
    db = killed / Store.FILENAME
    kills_mid_run = 0
    for target in targets:
        started = recorded(db)
        proc = craits("run" if started is None else "resume", str(config) if started is None else str(killed),
                      *(["--out", str(killed)] if started is None else []))
        if target == 0:
            time.sleep(rng.uniform(0.0, 0.3))
        else:
            while proc.poll() is None and (recorded(db) or 0) < target:
                time.sleep(0.002)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills_mid_run += (recorded(db) or 0) < TOTAL
        proc.communicate(timeout=60)
    assert kills_mid_run >= 3, "the kills should land while games are being played"
    assert (recorded(db) or 0) < TOTAL

    while True:  # resume until done (once should be enough)
        proc = craits("resume", str(killed)) if recorded(db) is not None else craits("run", str(config), "--out", str(killed))
        _, err = proc.communicate(timeout=120)
        if proc.returncode == 0:
            break
        assert proc.returncode is not None and proc.returncode != 1, err.decode()

    assert (killed / "standings.json").read_bytes() == (straight / "standings.json").read_bytes()
    assert (killed / "standings.csv").read_bytes() == (straight / "standings.csv").read_bytes()
    with Store(straight / Store.FILENAME) as a, Store(db) as b:
        assert {r.game_id: r.digest for r in a.results()} == {r.game_id: r.digest for r in b.results()}
        for result in b.results():
            assert len(b.hands(result.game_id)) == len(a.hands(result.game_id)) > 0
        assert b.counts() == (TOTAL, TOTAL) and b.tournament().finished_at is not None  # type: ignore[union-attr]


def test_sigterm_stops_cleanly_and_says_how_to_resume(tmp_path: Path) -> None:
    config = tmp_path / "killed.toml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    db = out / Store.FILENAME
    proc = craits("run", str(config), "--out", str(out))
    while proc.poll() is None and (recorded(db) or 0) < 3:
        time.sleep(0.002)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert f"continue with: craits tournament resume {out}" in err.decode()
    assert 3 <= (recorded(db) or 0) < TOTAL
    assert '"event": "tournament_stopped"' in (out / "tournament.log").read_text()
    proc = craits("resume", str(out))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert recorded(db) == TOTAL
