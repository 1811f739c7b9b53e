"""The version-comparison bench plays its versions' games and ends with its line, or prints no
figures at all: its figures are not asserted (they are the bench's to measure)."""

from __future__ import annotations

import re

import pytest

from bench import compare_versions
from server.game.policies import DefaultPolicy
from server.spec import GameRecord, GameSpec
from tournaments.local import play_local

LAST_LINE = re.compile(r"deals_eb_clear=[\d.]+ deals_betting_clear=[\d.]+ ratio_clear=[\d.]+ deals_eb_slight=[\d.]+ "
                       r"deals_betting_slight=[\d.]+ ratio_slight=[\d.]+ same_told_apart_eb=[\d.]+ "
                       r"same_told_apart_betting=[\d.]+ null_told_apart_eb=[\d.]+ null_told_apart_betting=[\d.]+ "
                       r"games=\d+")
SMALL = ["--runs", "1", "--same-runs", "1", "--null-runs", "5", "--cap", "8"]


def test_a_small_run_plays_every_case_with_both_sequences_and_ends_with_its_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_versions.main(SMALL) == 0
    lines = capsys.readouterr().out.splitlines()
    assert LAST_LINE.fullmatch(lines[-1]), lines[-1]
    assert sum(line.strip().startswith(("eb ", "betting ")) for line in lines) == 2 * len(compare_versions.CASES)


def test_no_figures_when_the_versions_did_not_play_their_games(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    def fallback(spec: GameSpec, cancel: object = None, policies: object = None) -> GameRecord:
        return play_local(spec, policies=[DefaultPolicy() for _ in spec.seats])  # (the versions are never asked)

    monkeypatch.setattr(compare_versions, "play_local", fallback)
    assert compare_versions.main(SMALL) == 1
    said = capsys.readouterr()
    assert "no figures" in said.err and "deals to a verdict" not in said.out and "ratio" not in said.out

