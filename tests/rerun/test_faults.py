"""What counts as a bot's fault in a replay, whatever its kind (server.storage.replay.faults)."""

from __future__ import annotations

from server.storage.replay.faults import fault_words, is_fault


def test_fine_statuses_are_no_fault_and_any_other_status_is_one() -> None:
    assert not any(is_fault({"status": s}) for s in ("ok", "auto", "bank", "default"))
    assert all(is_fault({"status": s}) for s in ("timeout", "illegal", "malformed", "disconnected", "a-new-kind"))


def test_an_answer_played_after_a_refusal_or_a_bot_error_is_a_fault() -> None:
    refused = {"status": "ok", "wire": {"id": 3, "bank_ms": 0, "refused": [[999]]}, "note": "malformed answer: 999"}
    assert is_fault(refused) and fault_words(refused) == "malformed answer: 999"
    kit = {"status": "ok", "note": "bot error: ZeroDivisionError at my_bot.py:12"}
    assert is_fault(kit) and fault_words(kit) == "bot error: ZeroDivisionError at my_bot.py:12"
    assert not is_fault({"status": "ok", "note": "unoffered announcement 5S+one-card: taken as 5S"})


def test_a_faults_words_do_not_repeat_its_status() -> None:
    gone = {"status": "disconnected", "note": "disconnected (its process exited): default action"}
    assert fault_words(gone) == "disconnected (its process exited): default action"
    assert fault_words({"status": "timeout", "note": "timeout: default action"}) == "timeout: default action"
    assert fault_words({"status": "illegal"}) == "illegal"
