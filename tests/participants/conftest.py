"""A classroom ladder for each file of the participants' web tests: a roster of two, a house bot, and
``craits ladder run --web`` playing whatever the participants get admitted."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from participants.roster import Roster
from tests.web.conftest import Running, start_craits
from tests.web.test_web_browser import browser, page  # noqa: F401 - the same chromium and pages as the web tests

LADDER = """name = "class"
table_size = 2
seed = 3
roster = "roster"
[flags]
short_game = true
[[bots]]
name = "house"
builtin = "random"
"""


@dataclass
class Classroom:
    running: Running
    folder: Path
    roster: Roster
    tokens: dict[str, str]


@pytest.fixture(scope="module")  # (not the session's: the ladder would keep playing through other files' tests)
def classroom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Classroom]:
    folder = tmp_path_factory.mktemp("classroom")
    (folder / "class.toml").write_text(LADDER, encoding="utf-8")
    roster = Roster.create(folder / "roster")
    tokens = dict(roster.import_csv("name,email,team\nalice,alice@example.org,red\nbob,,blue\n"))
    running = start_craits(["ladder", "run", "class.toml", "--out", str(folder / "out"), "--web", "127.0.0.1:0",
                            "--trusted-proxy", "127.0.0.1"],  # (the tests pose as a proxy for other addresses)
                           folder)
    try:
        yield Classroom(running, folder, roster, tokens)
    finally:
        running.stop()
