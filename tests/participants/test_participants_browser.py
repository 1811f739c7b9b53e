"""A participant's way in, in Debian's chromium, against a real classroom ladder: log in with
the token, upload a bot, see it admitted and playing; upload broken ones and see the build
error and the checker's report; a second participant cannot open the first one's pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.participants.conftest import Classroom
from tests.participants.uploads import MANIFEST, good_bot, zip_of
from tests.web.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

QUITTER = "import sys\nsys.exit(3)\n"
"""A bot that exits at once: it builds, and the checker refuses it."""


@pytest.fixture(scope="module")
def uploads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("uploads")
    (folder / "good.zip").write_bytes(good_bot(build="python -c 'print(\"compiled fine\")'"))
    (folder / "broken-build.zip").write_bytes(zip_of({"bot.toml": MANIFEST + 'build = "python -c \'import nope\'"\n',
                                                       "bot.py": "print('never run')\n"}))
    (folder / "quitter.zip").write_bytes(zip_of({"bot.toml": MANIFEST, "bot.py": QUITTER}))
    return folder


def _log_in(page: Any, url: str, token: str) -> None:
    page.goto(url + "login")
    page.fill("#token", token)
    page.click("#login")
    page.wait_for_selector("#who")


def _until(page: Any, read: Any, timeout_s: float = 120.0) -> Any:
    """Poll ``read(page)`` until it is true (the version page reloads itself while building)."""
    for _ in range(int(timeout_s / 0.25)):
        try:
            value = read(page)
        except Exception:  # (a reload in between)
            value = None
        if value:
            return value
        page.wait_for_timeout(250)
    raise AssertionError("never happened")


def _upload(page: Any, path: Path) -> str:
    """Upload from the participant's page; the version's status once built and checked."""
    if "/versions/" in page.url:
        page.click("#participant")
    page.set_input_files("#bot-file", str(path))
    page.click("#upload")
    return _until(page, lambda p: (s := p.text_content("#status", timeout=1000)) != "building" and s)


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"participant-{name}.png"), full_page=True)


def test_a_participant_uploads_sees_it_admitted_and_playing_and_sees_why_broken_ones_are_refused(
    classroom: Classroom, page: Any, uploads: Path
) -> None:
    url = classroom.running.url
    _log_in(page, url, classroom.tokens["alice"])
    assert page.text_content("#who") == "alice"
    assert _upload(page, uploads / "good.zip") == "admitted"
    assert "compiled fine" in page.text_content("#build-log")
    assert "0 failed" in page.text_content("#report")
    _shot(page, "admitted")
    page.click("#validation-replay")  # the validation game, in the replay viewer
    _until(page, lambda p: "alice.v1" in p.content() and "house-random" in p.content())
    page.go_back()
    page.goto(url + "p/alice")  # the ladder seats the new version; its games appear on the page
    _until(page, lambda p: p.reload() and len(p.query_selector_all("#games tr")) > 1)
    assert "alice.v1" in page.text_content("#games")
    game = page.get_attribute("#games a", "href")  # a fault's link opens the replay at its decision
    page.goto(url + game.lstrip("/") + "#decision=5")
    assert _until(page, lambda p: p.get_attribute("#frame-label", "data-decision", timeout=1000) == "5")
    page.go_back()
    page.reload()
    assert "(playing)" in page.text_content("#versions")

    assert _upload(page, uploads / "broken-build.zip") == "refused"
    assert "ModuleNotFoundError: No module named 'nope'" in page.text_content("#build-log")
    assert "the build failed" in page.text_content("#reason")
    _shot(page, "build-error")
    assert _upload(page, uploads / "quitter.zip") == "refused"
    assert "conformance checker" in page.text_content("#reason")
    assert "FAIL" in page.text_content("#report")
    _shot(page, "checker-report")
    page.goto(url + "p/alice")
    assert [row.get_attribute("data-version") for row in page.query_selector_all("#versions tr.version")] == \
        ["3", "2", "1"]
    assert "alice" not in page.context.cookies()[0]["value"] or page.context.cookies()[0]["httpOnly"]


def test_a_second_participant_cannot_open_the_first_ones_pages(classroom: Classroom, page: Any) -> None:
    url = classroom.running.url
    _log_in(page, url, classroom.tokens["bob"])
    assert page.text_content("#who") == "bob"
    for path in ("p/alice", "p/alice/versions/1", "p/nobody", "p/alice/games/round000001-r1/output"):
        response = page.goto(url + path)
        assert response.status == 404, path
        assert "alice" not in page.content().split("<main", 1)[1], path
    bob_page = page.goto(url + "p/bob")
    assert bob_page.status == 200
