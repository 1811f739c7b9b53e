"""``craits replay messages``: what a seat was sent, rebuilt from the replay, is what went
on the wire, byte for byte, at every seat (tests/rerun/conftest.py records it)."""

from __future__ import annotations

from craits.v1 import referee_pb2 as pb

from server.engine import DecisionKind
from server.game.transcript import Answered, transcript
from server.storage.replay import read_replay, verify_replay
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
        answers = [item.answer for item in rebuilt.items if isinstance(item, Answered)]
        assert [(a.decision_id, a.action_id) for a in answers] == [
            (a.decision_id, a.action_id) for a in wire_game.answers[seat]]


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
