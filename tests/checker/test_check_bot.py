"""`craits check-bot` against real bot processes: the correct bot passes, each broken bot
fails the check that names its bug, with a message that says what to fix."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from server.checker import Report, Status
from tests.checker.helpers import bot_command, run_check, statuses


def failed(report: Report) -> dict[str, list[str]]:
    return {c.key: c.problems for c in report.checks if c.status == Status.FAIL}


# ---------------------------------------------------------------- the correct bot


def test_the_correct_bot_passes_every_check(good_report: Report) -> None:
    assert statuses(good_report) == {c.key: Status.PASS for c in good_report.checks}, good_report.render()
    assert good_report.ok and good_report.exit_code == 0
    assert good_report.summary().startswith(f"{len(good_report.checks)} passed, 0 warnings, 0 failed")


def test_every_kind_of_decision_is_asked_and_reported_with_what_the_bot_sent(good_report: Report) -> None:
    sent = {c.key: c.sent for c in good_report.checks}
    assert sent["ordinary-play"] == ["3H"]
    assert sent["play-eight"] == ["8H:clubs"]
    assert sent["play-nine"] == ["9D:diamonds"]
    assert sent["name-suit-eight"] == ["clubs"] and sent["name-suit-nine"] == ["clubs"]
    assert sent["answer-count"] == ["AC"]
    assert sent["play-again"] == ["6S"]
    assert sent["one-card"] == ["3H+one-card"]
    assert sent["king-sequence"] == ["AC", "3C", "4C"]
    assert good_report.check("king-sequence").notes[-1] == "king_cards_left went 3, 2, 1"
    assert "offered 9D:diamonds, 9D:hearts" in good_report.check("play-nine").expected


def test_the_error_paths_are_exercised_and_the_bot_answers_the_right_decisions(good_report: Report) -> None:
    refused = good_report.check("refused-answer").sent
    assert refused[0].startswith("3H to decision ") and refused[1] == "3H to the repeated request"
    late = good_report.check("late-answer").sent
    assert "1 ms decision" in late[0] and late[1].endswith("to the next request")


def test_the_report_renders_one_line_per_check_and_a_summary(good_report: Report) -> None:
    lines = good_report.render().splitlines()
    status_lines = [line for line in lines if line[:4] in ("PASS", "WARN", "FAIL", "SKIP")]
    assert len(status_lines) == len(good_report.checks)
    assert lines[-1].startswith(good_report.summary())
    data = good_report.to_json()
    assert data["ok"] is True and data["failed"] == 0 and data["schema"] == 1
    assert [c["status"] for c in data["checks"]] == [Status.PASS] * len(good_report.checks)


# ---------------------------------------------------------------- broken bots


def test_a_bot_that_answers_an_id_not_in_the_legal_list_fails_with_the_rule_it_broke() -> None:
    report = run_check(bot_command("always_draw_bot.py"))
    problems = failed(report)
    assert "ordinary-play" in problems and "name-suit-eight" in problems
    first = problems["ordinary-play"][0]
    assert "sent draw (id 0)" in first and "not among the legal actions [3H, 10S]" in first
    assert "a player with a legal play must play (rule 3.2)" in first
    assert "the dealer must name a suit for the turned-up card (rule 2)" in problems["name-suit-eight"][0]
    assert report.check("ordinary-play").sent == ["draw (refused) then draw (refused again: the checker played 3H)"]
    assert not report.ok


def test_a_bot_that_never_announces_one_card_fails_that_check_alone() -> None:
    report = run_check(bot_command("first_action_bot.py"))
    assert list(failed(report)) == ["one-card"], report.render()
    message = failed(report)["one-card"][0]
    assert message.startswith('never announced "one card"')
    assert "sent 3H, not 3H+one-card" in message and "forfeits the next turn" in message and "rule 7.1" in message


def test_a_random_chooser_gets_a_warning_for_missed_announcements_and_passes() -> None:
    report = run_check(bot_command("random_bot.py"))
    assert report.ok, report.render()
    one_card = report.check("one-card")
    assert one_card.status == Status.WARN
    assert "as a bot choosing at random does" in one_card.warnings[0]
    assert [c.key for c in report.checks if c.status == Status.WARN] == ["one-card"]


def test_a_bot_that_dies_on_a_repeated_request_fails_there_and_its_traceback_is_shown() -> None:
    report = run_check(bot_command("dies_on_repeat_bot.py"))
    problems = failed(report)
    assert list(problems) == ["refused-answer"]
    assert "the repeated request" in problems["refused-answer"][0]
    assert "its process exited with code 1" in problems["refused-answer"][0]
    assert statuses(report)["whole-game"] == Status.SKIP
    assert any("RuntimeError" in line for line in report.output_tail)
    assert "RuntimeError" in report.render()


def test_a_bot_that_never_says_hello_fails_the_hello_check() -> None:
    report = run_check(bot_command("silent_bot.py"), timeout_s=1.0)
    assert failed(report) == {"hello": ["no Hello within 1 s after the stream opened"]}
    assert all(c.status == Status.SKIP for c in report.checks[1:-1])


def test_a_bot_with_the_wrong_protocol_version_is_refused_at_hello() -> None:
    report = run_check(bot_command("wrong_version_bot.py"))
    assert failed(report) == {"hello": ["Hello.protocol_version is 2; expected 1 (PROTOCOL_VERSION_CURRENT)"]}
    assert report.check("hello").sent[0].startswith("Hello(protocol_version=2,")
    assert any("FAILED_PRECONDITION" in line for line in report.output_tail), "refused like the real referee"


def test_a_bot_that_echoes_the_wrong_decision_id_fails_and_the_run_stops_when_it_never_answers() -> None:
    report = run_check(bot_command("wrong_id_bot.py"), timeout_s=1.0)
    problems = failed(report)
    assert "echo the request's decision_id and game_id" in problems["ordinary-play"][0]
    # wire ids are called ids: "decision N" is the replay's number (rerun --from N)
    assert re.match(r"answered decision id \d+ of game .*, but the open decision has id 101,", problems["ordinary-play"][0])
    assert "no answer to decision" in problems["ordinary-play"][1]
    assert statuses(report)["whole-game"] == Status.SKIP
    assert report.check("whole-game").skipped == "the bot stopped answering"


def test_a_bot_that_exits_before_connecting_fails_fast_with_its_output() -> None:
    report = run_check([sys.executable, "-c", "import sys; print('no server for me', file=sys.stderr); sys.exit(3)"])
    assert failed(report) == {"hello": ["the bot exited with code 3 before connecting to CRAITS_SERVER"]}
    assert report.output_tail == ["no server for me"]
    assert report.exit_code == 3


def test_a_bot_that_keeps_running_after_the_stream_ends_is_killed_and_fails_the_exit_check() -> None:
    report = run_check(bot_command("good_bot.py", "--linger"), exit_timeout_s=1.0)
    assert list(failed(report)) == ["exit"]
    assert "still running 1 s after the referee closed the stream" in failed(report)["exit"][0]
    assert report.exit_code is not None, "the checker always ends the bot's process group"


def test_an_answer_that_arrives_after_its_timeout_is_refused_as_stale_without_failing_the_bot() -> None:
    report = run_check(bot_command("slow_late_bot.py"))
    assert report.ok, report.render()
    late = report.check("late-answer")
    assert late.status == Status.PASS
    assert late.sent[0].startswith("no answer to the 1 ms decision") and late.sent[1].endswith("to the next request")


def test_answers_slower_than_a_games_time_per_decision_warn_though_the_checker_waits_for_them() -> None:
    """The checker allows 5 s per answer; a game allows 1 s by default, then its bank, then strikes."""
    report = run_check(bot_command("slow_bot.py"))
    assert report.ok, report.render()
    for key, slow in (("whole-game", 2), ("crazy-eights", 1)):
        check = report.check(key)
        assert check.status == Status.WARN, report.render()
        assert check.warnings[0].startswith(f"{slow} of "), check.warnings
        assert "longer than 1000 ms" in check.warnings[0] and "strike" in check.warnings[0]
    assert report.check("ordinary-play").status == Status.PASS


def test_a_bot_stuck_in_choose_is_told_that_this_is_why_it_did_not_exit() -> None:
    report = run_check(bot_command("stuck_bot.py"), timeout_s=1.0, exit_timeout_s=1.0)
    problems = failed(report)
    assert re.fullmatch(r"no answer to decision \d+ \(id 101\) within 1 s", problems["ordinary-play"][0])
    assert report.check("whole-game").skipped == "the bot stopped answering"
    assert "still running 1 s after the referee closed the stream" in problems["exit"][0]
    assert "it had stopped answering decision" in problems["exit"][0]
    assert "stuck in choose()" in problems["exit"][0]


def test_a_bot_that_exits_0_before_connecting_is_told_how_a_bot_starts_playing(tmp_path: Path) -> None:
    """The script defines a bot and never calls run(): the usual first mistake."""
    tmp_path.chmod(0o755)  # (a sandboxed bot reads only what every user may read)
    script = tmp_path / "no_run_bot.py"
    script.write_text("from craits_bot import Bot\n\n\nclass MyBot(Bot):\n    def choose(self, request):\n"
                      "        return request.legal_actions[0]\n")
    report = run_check([sys.executable, str(script)])
    [problem] = failed(report)["hello"]
    assert problem.startswith("the bot exited with code 0 before connecting to CRAITS_SERVER; ")
    assert "a Python bot of the kit ends with run(MyBot())" in problem
    assert "node clients/js/bot.js --strategy FILE" in problem
