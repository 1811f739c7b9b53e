"""The correct bot's report, run once and shared by the tests that read it."""

from __future__ import annotations

import pytest

from server.checker import Report
from tests.checker.helpers import bot_command, run_check


@pytest.fixture(scope="session")
def good_report() -> Report:
    return run_check(bot_command("good_bot.py"))
