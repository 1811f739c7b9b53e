"""Version against version on the shared classroom ladder, in Debian's chromium: a participant
whose new version is the heuristic example bot and whose old one is the random bot asks to
compare them and is told "better"; ``craits compare`` says the same from a terminal; nobody
else sees the comparison."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.participants.conftest import Classroom
from tests.participants.test_participants_browser import _log_in, _shot, _until
from tests.participants.test_participants_web import Client
from tests.participants.uploads import MANIFEST, ROOT, good_bot, zip_of

HEURISTIC_BOT = (ROOT / "clients/python/craits_bot/examples/heuristic_bot.py").read_text(encoding="utf-8")
CRAITS = str(Path(sys.executable).with_name("craits"))


def _api(url: str, token: str, path: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    request = urllib.request.Request(url + path, data=data, headers={"Authorization": f"Bearer {token}", **(headers or {})})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def carol(classroom: Classroom) -> str:
    """A participant with two admitted versions: v1 the random bot, v2 the heuristic bot."""
    token = classroom.roster.add("carol")
    url = classroom.running.url
    for upload in (good_bot(), zip_of({"bot.toml": MANIFEST, "bot.py": HEURISTIC_BOT})):
        number = _api(url, token, "api/submit", upload, {"X-Filename": "bot.zip"})["version"]
        for _ in range(480):
            status = _api(url, token, f"api/me/versions/{number}")["status"]
            if status != "building":
                break
            time.sleep(0.25)
        assert status == "admitted"
    return token


@pytest.mark.browser
def test_a_clearly_stronger_new_version_is_told_better(classroom: Classroom, carol: str, page: Any) -> None:
    url = classroom.running.url
    _log_in(page, url, carol)
    page.click("#compare-link")
    assert page.input_value("#cmp-a") == "1" and page.input_value("#cmp-b") == "2"
    page.uncheck("input[name=against][value=default]")
    page.fill("#cmp-games", "400")
    page.click("#compare")
    verdict = _until(page, lambda p: (p.text_content("#cmp-status", timeout=1000) == "done"
                                      and p.text_content("#verdict", timeout=1000)), timeout_s=300)
    assert verdict == "v2 places better than v1 (sure, at 95 %)"
    assert page.get_attribute("#verdict", "data-verdict") == "better"
    assert float(page.text_content("#placing td:nth-child(2)")) < 0
    games = int(page.text_content("#cmp-games"))
    assert 0 < games < 400  # stopped once told apart
    _shot(page, "compare-better")
    bob = Client(url)
    bob.log_in(classroom.tokens["bob"])
    assert bob.request(page.url.removeprefix(url))[0] == 404
    assert bob.request("p/carol/compare")[0] == 404


def test_craits_compare_prints_the_differences_and_the_verdict(classroom: Classroom, carol: str) -> None:
    done = subprocess.run([CRAITS, "compare", "1", "2", "--server", classroom.running.url, "--games", "8", "--all",
                           "--against", "random"], env={**os.environ, "CRAITS_TOKEN": carol}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert ("v2 places " in done.stdout or "v2 and v1: not yet separated on placing" in done.stdout)
    assert " after 8 games" in done.stdout
    assert "placing v2 - v1:" in done.stdout and "95% anytime interval" in done.stdout
    wrong = subprocess.run([CRAITS, "compare", "1", "9", "--server", classroom.running.url],
                           env={**os.environ, "CRAITS_TOKEN": carol}, capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "carol has no admitted version v9" in wrong.stderr
    assert "Traceback" not in wrong.stderr
