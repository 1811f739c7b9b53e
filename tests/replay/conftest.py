"""Shared fixtures: small recorded games written into tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.engine import make_config
from server.storage.replay import record_game


@pytest.fixture
def short_replay(tmp_path: Path) -> Path:
    """A complete short game of Craits (face cards on), recorded by the random policy."""
    path = tmp_path / "short.jsonl"
    record_game(path, make_config("craits", 3, short_game=True, face_cards=True), seed=11)
    return path


@pytest.fixture
def eights_replay(tmp_path: Path) -> Path:
    path = tmp_path / "eights.jsonl"
    record_game(path, make_config("crazy-eights", 2), seed=5)
    return path
