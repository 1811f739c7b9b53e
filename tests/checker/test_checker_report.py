"""The report's verdicts, without processes: how failures add up and how "one card" is judged."""

from __future__ import annotations

from server.checker import Check, Offer, Report, Status, judge_one_card
from server.checker.driver import judge_speed


def one_card_check() -> Check:
    return Check("one-card", "one-card announcement", "a play that leaves one card carries +one-card")


def test_always_announcing_passes() -> None:
    check = one_card_check()
    judge_one_card(check, [Offer("one-card", "5S+one-card", True, "5S+one-card")] * 3)
    assert check.status == Status.PASS
    assert check.notes == ["announced in 3 of 3 plays that left one card"]


def test_never_announcing_fails_with_the_scenario_s_own_example_first() -> None:
    check = one_card_check()
    offers = [Offer("whole-game", "4H", False, "4H+one-card"), Offer("one-card", "3H", False, "3H+one-card")]
    judge_one_card(check, offers)
    assert check.status == Status.FAIL
    assert check.problems[0].startswith('never announced "one card" in 2 chances (e.g. sent 3H, not 3H+one-card)')


def test_announcing_only_sometimes_is_a_warning_not_a_failure() -> None:
    check = one_card_check()
    judge_one_card(check, [Offer("one-card", "3H", False, "3H+one-card"), Offer("x", "4H+one-card", True, "")])
    assert check.status == Status.WARN
    assert check.warnings[0].startswith("missed the announcement 1 of 2 times")
    assert Report(["bot"], [check]).ok


def test_never_being_offered_a_one_card_play_fails_the_check() -> None:
    check = one_card_check()
    judge_one_card(check, [])
    assert check.status == Status.FAIL


def test_repeated_failures_of_one_kind_are_counted_on_one_line() -> None:
    check = Check("k", "title", "expected")
    for decision in range(4):
        check.fail(f"sent draw to decision {decision}", kind="illegal")
    check.fail("no answer in time", kind="timeout")
    assert check.problems == ["sent draw to decision 0 (and 3 more like it)", "no answer in time"]


def test_a_report_with_a_failure_is_not_ok_and_says_so_in_its_summary() -> None:
    good, bad, skipped = Check("a", "a", "x"), Check("b", "b", "x"), Check("c", "c", "x")
    bad.fail("wrong")
    skipped.skipped = "not reached"
    report = Report(["bot"], [good, bad, skipped])
    assert not report.ok
    assert report.summary() == "1 passed, 0 warnings, 1 failed, 1 not run"
    assert "SKIP  c: not run (not reached)" in report.render()


def test_answers_so_slow_that_a_game_would_strike_the_bot_out_fail_the_whole_game_check() -> None:
    # 0.5 s over the 1 s a decision has: the 10 s bank pays for 20 answers, then 3 timeouts strike it out
    check = Check("whole-game", "a whole game", "a legal answer to every request until GameEnd")
    judge_speed(check, [1.5] * 30)
    assert check.status == Status.FAIL
    assert check.problems[0].endswith("a game would strike the bot out at its answer 23 of 30")


def test_slow_answers_that_the_time_bank_pays_for_only_warn() -> None:
    check = Check("whole-game", "a whole game", "a legal answer to every request until GameEnd")
    judge_speed(check, [1.3, 1.3, *[0.01] * 50, 4.0])  # 0.3 + 0.3 + 3 s of a 10 s bank
    assert check.status == Status.WARN and check.warnings[0].startswith("3 of 53 answers took longer than 1000 ms")
