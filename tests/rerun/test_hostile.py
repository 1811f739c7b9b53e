"""A replay file that was edited, cut short or carries numbers out of range is refused by
``replay messages`` and ``replay rerun`` with one line that says where and why: no
traceback, no output file, no game."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from server.storage.replay import load_records, write_records
from tests.cli import run_cli
from tests.rerun.conftest import WireGame


def _refused(capsys: pytest.CaptureFixture[str], path: Path, tmp_path: Path, *why: str) -> None:
    out = tmp_path / "out.jsonl"
    for argv in (("messages", str(path), "--seat", "0", "-o", str(out)),
                 ("rerun", str(path), "--seat", "0", "-o", str(tmp_path / "rerun"), "--", sys.executable, "-c", "0")):
        code, stdout, err = run_cli(capsys, "replay", *argv)
        assert code == 2, (argv, stdout, err)
        assert err.startswith("craits: error: refused: ") and "Traceback" not in err
        assert all(words in err for words in why), err
        assert not out.exists() and not (tmp_path / "rerun").exists()


def _rewritten(wire_game: WireGame, tmp_path: Path, change) -> Path:
    records = load_records(wire_game.replay)
    change(records)
    return write_records(tmp_path / "forged.jsonl", records)


@pytest.mark.parametrize("where", [0.3, 0.5, 0.9])
def test_a_changed_byte_is_refused(wire_game: WireGame, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   where: float) -> None:
    data = bytearray(wire_game.replay.read_bytes())
    at = int(len(data) * where)
    data[at] = ord("7") if data[at] != ord("7") else ord("8")
    edited = tmp_path / wire_game.replay.name
    edited.write_bytes(bytes(data))
    _refused(capsys, edited, tmp_path)


def test_a_file_cut_short_is_refused(wire_game: WireGame, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = wire_game.replay.read_bytes()
    cut = tmp_path / wire_game.replay.name
    cut.write_bytes(data[: len(data) // 2])
    _refused(capsys, cut, tmp_path)


def test_a_forged_action_that_rechains_the_hashes_is_refused_by_the_engine(
        wire_game: WireGame, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def forge(records):
        rec = next(r for r in records if r["type"] == "decision" and r["legal"] > 1)
        rec["action"] = 0 if rec["action"] else 1
    _refused(capsys, _rewritten(wire_game, tmp_path, forge), tmp_path, "decision")


@pytest.mark.parametrize(("field", "value", "why"), [
    ("id", 2**70, "must fit in 64 bits"),
    ("bank_ms", 2**40, "wire.bank_ms must be from 0 to 4294967295"),
    ("refused", [[1, 2]], "wire.refused[0] must be"),
    ("refused", "all", "must be a JSON array"),
])
def test_a_huge_or_malformed_wire_fact_is_refused(wire_game: WireGame, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str], field: str, value: object,
                                                  why: str) -> None:
    def forge(records):
        rec = next(r for r in records if "wire" in r)
        rec["wire"][field] = value
    _refused(capsys, _rewritten(wire_game, tmp_path, forge), tmp_path, why)


def test_a_seed_of_a_hundred_digits_is_refused(wire_game: WireGame, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    def forge(records):
        records[0]["seed"] = 10**100
    _refused(capsys, _rewritten(wire_game, tmp_path, forge), tmp_path, "record 1", "seed must fit in 64 bits")


def test_a_missing_file_names_the_replay_under_its_other_suffix(wire_game: WireGame, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # new replays end in .jsonl.gz: a student who types .jsonl (or the other way round) is told the real name
    gz = tmp_path / "g.jsonl.gz"
    gz.write_bytes(wire_game.replay.read_bytes())
    for typed, meant in ((tmp_path / "g.jsonl", gz), (wire_game.replay.with_name("wire.jsonl.gz"), wire_game.replay)):
        for argv in (("messages", str(typed), "--seat", "0"),
                     ("rerun", str(typed), "--seat", "0", "--", sys.executable, "-c", "0")):
            code, _, err = run_cli(capsys, "replay", *argv)
            assert code == 2 and "Traceback" not in err
            assert err.strip() == f"craits: error: {typed}: no such file; did you mean {meant}?", err
    code, _, err = run_cli(capsys, "replay", "show", str(tmp_path / "g.jsonl"))
    assert code == 2 and err.strip() == f"craits: error: {tmp_path / 'g.jsonl'}: no such file or directory; did you mean {gz}?"
    code, _, err = run_cli(capsys, "replay", "messages", str(tmp_path / "nothing.jsonl"), "--seat", "0")
    assert code == 2 and err.strip().endswith("nothing.jsonl: no such file")
