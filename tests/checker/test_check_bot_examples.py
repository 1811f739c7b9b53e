"""`craits check-bot` against the bot kits' own examples (written alongside the checker):
the heuristic bots pass everything; the random bots pass, warned only about "one card"."""

from __future__ import annotations

import sys

import pytest

from server.checker import Status
from tests.bots.commands import need_node
from tests.checker.helpers import ROOT, run_check, statuses


def _kit_example(name: str) -> list[str]:
    path = ROOT / "clients" / "python" / "craits_bot" / "examples" / f"{name}.py"
    assert path.exists(), f"the kit's example {path} is missing"
    return [sys.executable, "-m", f"craits_bot.examples.{name}"]


def _js_bot(strategy: str) -> list[str]:
    bot = ROOT / "clients" / "js" / "bot.js"
    assert bot.exists(), f"the JavaScript bot {bot} is missing"
    need_node()  # skips without node on a developer's machine, fails in CI
    return ["node", str(bot), "--strategy", strategy]


@pytest.mark.parametrize("command", [lambda: _kit_example("heuristic_bot"), lambda: _js_bot("heuristic")],
                         ids=["python-heuristic", "js-heuristic"])
def test_the_example_heuristic_bots_pass_every_check(command) -> None:  # type: ignore[no-untyped-def]
    report = run_check(command())
    assert report.ok and statuses(report) == {c.key: Status.PASS for c in report.checks}, report.render()


@pytest.mark.parametrize("command", [lambda: _kit_example("random_bot"), lambda: _js_bot("random")],
                         ids=["python-random", "js-random"])
def test_the_example_random_bots_pass_with_at_most_the_one_card_warning(command) -> None:  # type: ignore[no-untyped-def]
    report = run_check(command())
    assert report.ok, report.render()
    assert {c.key for c in report.checks if c.status != Status.PASS} <= {"one-card"}
