"""A classroom ladder's board in Debian's chromium (issue 30, points 2, 3 and 4).

Students' bots connect on their own with their tokens (the kit's random bot, real processes);
a house bot fills the table. The board must say who is connected and since when, who is away
and why (never connected, left cleanly), and show a Hello refused for a wrong token by the
name the bot claimed, on the board and on the organizer's terminal, never the token. A
ladder's progress is rounds and games, with no bar (it has no end); the rating is named and
ordered as on the terminal and in the standings files.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bots.commands import PY_RANDOM, ROOT
from tests.web.conftest import Running, start_craits
from tests.web.test_web_browser import _shot, _until, browser, page  # noqa: F401  (fixtures)
from tournaments.standings import RATING_HEADERS

pytestmark = pytest.mark.browser

TOKENS = {"alice": "alice-secret-token-1", "bob": "bob-secret-token-22"}
WRONG = "mistyped-token-333"


def _classroom(folder: Path) -> Path:
    path = folder / "class.toml"
    path.write_text(
        'name = "class"\ntable_size = 2\nseed = 3\nconcurrency = 2\naddress = "127.0.0.1:0"\n'
        "[flags]\nshort_game = true\n[clocks]\nconnect_timeout_s = 60.0\nreconnect_grace_s = 60.0\n"
        + "".join(f'[[bots]]\nname = "{name}"\ntoken = "{token}"\n' for name, token in TOKENS.items())
        + '[[bots]]\nname = "house"\nbuiltin = "random"\n',
        encoding="utf-8",
    )
    return path


def _student(address: str, token: str, name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        PY_RANDOM, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "CRAITS_SERVER": address, "CRAITS_TOKEN": token, "CRAITS_BOT_NAME": name},
    )


@pytest.fixture(scope="module")
def classroom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, str]]:
    folder = tmp_path_factory.mktemp("classroom")
    running = start_craits(
        ["ladder", "run", str(_classroom(folder)), "--out", str(folder / "out"), "--web", "127.0.0.1:0"], folder)
    try:
        address = running.wait_for("the referee's address", lambda: next(
            (line.split("referee listening on ")[1].split()[0] for line in running.lines
             if "referee listening on " in line), None))
        yield running, address
    finally:
        running.stop()


def _connection(tab: Any, bot: str) -> str:
    return str(tab.evaluate(
        f"() => (document.querySelector('#standings tr[data-bot=\"{bot}\"] td.conn-cell') || {{}}).textContent || ''"))


def test_the_board_says_who_is_connected_who_is_away_and_who_was_refused(
    classroom: tuple[Running, str], page: Any  # noqa: F811
) -> None:
    running, address = classroom
    alice = _student(address, TOKENS["alice"], "alice")
    wrong = _student(address, WRONG, "bobby")
    try:
        page.goto(running.url)
        _until(page, "document.querySelectorAll('#standings tbody tr[data-bot]').length === 3")
        _until(page, "(document.querySelector('#standings tr[data-bot=\"alice\"] td.conn-cell') || {}).textContent"
                     "?.startsWith('connected since')")
        assert _connection(page, "bob") == "away: never connected"
        assert _connection(page, "house") == "\u2013"  # not a bot that connects on its own
        _until(page, "document.querySelector('#refused') && document.querySelector('#refused').textContent"
                     ".includes('refused a bot that says it is \u201cbobby\u201d: unknown token')")
        assert page.evaluate("() => !document.querySelector('.refused-box').hidden")
        wrong.wait(timeout=60)  # refused: the kit exits 3
        assert wrong.returncode == 3

        # a ladder's progress: rounds and games, no bar
        text = _until(page, "(() => { const t = document.querySelector('#progress-text').textContent;"
                            " return /^[1-9]\\d* rounds, \\d+ games played/.test(t) && t; })()")
        assert "/" not in text.split(" rounds")[0]
        assert page.evaluate("() => document.querySelector('#progress-fill').parentElement.hidden")

        # one rating naming and order: the board's as the terminal's
        headers = page.evaluate("() => [...document.querySelectorAll('#standings thead th')].map(t => t.textContent)")
        assert headers[2:4] == list(RATING_HEADERS)

        alice.send_signal(signal.SIGTERM)  # the student stops their bot to improve it
        assert alice.wait(timeout=60) == 0
        _until(page, "(document.querySelector('#standings tr[data-bot=\"alice\"] td.conn-cell') || {}).textContent"
                     "?.endsWith('(left cleanly)')")
        assert _connection(page, "alice").startswith("away since ")
        _shot(page, "classroom-board")
        html = page.content()
        for token in (*TOKENS.values(), WRONG):
            assert token not in html
    finally:
        for proc in (alice, wrong):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    terminal = "".join(running.lines)
    assert "refused a bot that says it is 'bobby': unknown token" in terminal
    assert "alice: connected" in terminal and "alice: left cleanly" in terminal
    for token in (*TOKENS.values(), WRONG):
        assert token not in terminal
        for log in running.out_dir.rglob("*"):
            if log.is_file() and log.suffix in (".json", ".jsonl", ".log"):
                assert token.encode() not in log.read_bytes(), log
