"""The golden replays re-simulate exactly, and together they cover every preset and hard case."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from server.storage.replay import read_replay, verify_replay
from tests.golden.regenerate import CASES, replay_features

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
GOLDEN_FILES = sorted(GOLDEN_DIR.glob("*.jsonl"))

REQUIRED = {
    "preset:craits",
    "preset:crates-partners",
    "preset:crazy-eights",
    "count_6_plus",
    "cooper",
    "pressure_ends_hand",
    "jack_run",
    "queen_of_spades",
    "king_sequence",
    "flag:voluntary_draw",
    "voluntary_draw_taken",
    "flag:short_game",
    "full_game",
    "two_decks_6plus",
    "flag:face_cards",
    "flag:strip_kings_queens",
    "flag:seven_hits=next",
    "missed_announcement",
    "forfeit_penalty",
    "penalty_draw",
    "dealer_names_suit",
    "reshuffle",
    "reverse",
    "blocked_hand",
    "count_after_out",
}


def test_there_is_a_golden_file_per_case() -> None:
    assert [p.name for p in GOLDEN_FILES] == sorted(c.file for c in CASES)
    manifest = json.loads((GOLDEN_DIR / "MANIFEST.json").read_text(encoding="utf-8"))
    assert sorted(manifest["cases"]) == sorted(c.name for c in CASES)


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda p: p.stem)
def test_golden_replay_verifies(path: Path) -> None:
    summary = verify_replay(path)
    assert not summary.aborted


def test_golden_replays_cover_every_preset_and_hard_case() -> None:
    covered: set[str] = set()
    for path in GOLDEN_FILES:
        covered |= replay_features(read_replay(path))
    assert covered >= REQUIRED, f"not covered: {sorted(REQUIRED - covered)}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_golden_file_shows_what_its_case_wants(case) -> None:  # type: ignore[no-untyped-def]
    found = replay_features(read_replay(GOLDEN_DIR / case.file))
    assert case.wants <= found, f"{case.file} lacks {sorted(case.wants - found)}"


def test_golden_replays_stay_light() -> None:
    assert sum(p.stat().st_size for p in GOLDEN_FILES) < 2_000_000


def test_regenerate_rebuilds_the_same_bytes() -> None:
    """The files are exactly what regenerate.py makes from the manifest's seeds."""
    out = subprocess.run(
        [sys.executable, str(GOLDEN_DIR / "regenerate.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
