"""``craits replay messages``: what a seat was sent, rebuilt from the replay, is what went
on the wire, byte for byte, at every seat (tests/rerun/conftest.py records it)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from craits.v1 import referee_pb2 as pb
from craits_bot.offline import split_delimited

from server.engine import DecisionKind
from server.game.transcript import Answered, transcript
from server.storage.replay import canonical_json, read_replay, verify_replay
from tests.cli import run_cli
from tests.rerun.conftest import WireGame


def test_the_rebuilt_messages_equal_the_recorded_wire_at_every_seat(wire_game: WireGame) -> None:
    verify_replay(wire_game.replay)
    replay = read_replay(wire_game.replay)
    for seat, received in wire_game.received.items():
        rebuilt = transcript(replay, seat)
        assert rebuilt.caveats == ()
        sent = [s.data for s in rebuilt.sent]
        for i, (want, got) in enumerate(zip(received, sent, strict=False)):
            assert want == got, (seat, i, pb.RefereeMessage.FromString(want), pb.RefereeMessage.FromString(got))
        assert len(sent) == len(received)
        requests = [(pb.RefereeMessage.FromString(s.data), s.n) for s in rebuilt.sent]
        assert all(m.decision.decision_number == n for m, n in requests if m.HasField("decision"))  # the replay's
        answers = [item.answer for item in rebuilt.items if isinstance(item, Answered)]
        assert [(a.decision_id, a.action_id) for a in answers] == [
            (a.decision_id, a.action_id) for a in wire_game.answers[seat]]


def test_the_replay_lines_with_wire_facts_are_canonical(wire_game: WireGame) -> None:
    data = wire_game.replay.read_bytes()
    if not data.startswith(b"{"):
        pytest.skip("not a JSON Lines replay (craits-replay/1): its records are checked by verify")
    for line in data.decode("utf-8").splitlines():
        assert line == canonical_json(json.loads(line))


def test_the_game_asked_every_kind_of_decision_and_met_every_fault(wire_game: WireGame) -> None:
    messages = [pb.RefereeMessage.FromString(m) for seat in wire_game.received.values() for m in seat]
    kinds = {m.decision.observation.decision for m in messages if m.HasField("decision")}
    assert kinds == {int(k) for k in DecisionKind if k is not DecisionKind.PENALTY}
    replay = read_replay(wire_game.replay)
    assert DecisionKind.PENALTY.name in {d["kind"] for d in replay.decisions}
    codes = {m.error.code for m in messages if m.HasField("error")}
    assert {pb.ERROR_CODE_ILLEGAL_ACTION, pb.ERROR_CODE_MALFORMED, pb.ERROR_CODE_TIMEOUT} <= codes
    assert {"bank", "timeout"} <= {d["status"] for d in replay.decisions}
    assert sum(len(d.get("wire", {}).get("refused", [])) for d in replay.decisions) == 2


def test_the_command_writes_both_forms_with_the_answers(wire_game: WireGame, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    binary, lines = tmp_path / "seat1.bin", tmp_path / "seat1.jsonl"
    code, _, err = run_cli(capsys, "replay", "messages", str(wire_game.replay), "--seat", "1", "--format", "binary",
                           "-o", str(binary))
    assert code == 0 and f"wrote {binary}: {len(wire_game.received[1])} messages to seat 1 (rec1)" in err
    assert list(split_delimited(binary.read_bytes())) == wire_game.received[1]
    assert run_cli(capsys, "replay", "messages", str(wire_game.replay), "--seat", "1", "-o", str(lines))[0] == 0
    items = [json.loads(line) for line in lines.read_text().splitlines()]
    assert items[0] == {"from": "replay", "game_id": "wire-game", "seat": 1, "bot": "rec1", "caveats": []}
    sent = [base64.b64decode(item["bytes"]) for item in items if item["from"] == "referee"]
    assert sent == wire_game.received[1]
    answers = [item for item in items if item["from"] == "bot"]
    assert [int(a["answer"]["action_id"]) for a in answers] == [a.action_id for a in wire_game.answers[1]]
    assert [a["refused"] for a in answers].count(True) == 1  # its malformed answer
    first = next(item for item in items if item["from"] == "referee" and "decision" in item["message"])
    assert first["n"] >= 1 and first["message"]["decision"]["legal_actions"]


def test_a_seat_the_game_does_not_have_is_a_clear_error(wire_game: WireGame, capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    code, _, err = run_cli(capsys, "replay", "messages", str(wire_game.replay), "--seat", "3")
    assert code == 2 and "--seat 3: this game's seats are 0 rec0, 1 rec1, 2 rec2" in err
