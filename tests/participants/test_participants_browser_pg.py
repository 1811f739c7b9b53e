"""The participants' pages of a ladder kept in PostgreSQL, roster and all, in Debian's chromium:
log in, upload a bot, see it built, checked, admitted and playing (the ladder's workers fetch it
from the database), see a broken one refused and why; another participant sees none of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from participants.roster import PostgresRoster
from server.storage.postgres import migrate
from tests.participants.conftest import LADDER, Classroom
from tests.participants.test_participants_browser import _log_in, _until, _upload, uploads  # noqa: F401
from tests.postgres_server import PostgresServer
from tests.web.conftest import start_craits

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def pg_classroom(tmp_path_factory: pytest.TempPathFactory, pg_server: PostgresServer) -> Iterator[Classroom]:
    if not pg_server.is_running():
        pg_server.start()
    url = pg_server.new_database()
    migrate(url)
    folder = tmp_path_factory.mktemp("pg-classroom")
    (folder / "class.toml").write_text(LADDER, encoding="utf-8")
    roster = PostgresRoster.create_in(folder / "roster", url, "class")
    tokens = dict(roster.import_csv("name,email,team\nalice,alice@example.org,red\nbob,,blue\n"))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CRAITS_CACHE", str(folder / "cache"))  # (the versions its local workers fetch)
        running = start_craits(["ladder", "run", "class.toml", "--store", url, "--out", str(folder / "out"),
                                "--web", "127.0.0.1:0"], folder)
    try:
        yield Classroom(running, folder, roster, tokens)
    finally:
        running.stop()


def test_on_postgresql_a_participant_uploads_sees_it_admitted_and_playing_and_a_broken_one_refused(
    pg_classroom: Classroom, page: Any, uploads: Path  # noqa: F811
) -> None:
    url = pg_classroom.running.url
    _log_in(page, url, pg_classroom.tokens["alice"])
    assert page.text_content("#who") == "alice"
    assert _upload(page, uploads / "good.zip") == "admitted"
    assert "compiled fine" in page.text_content("#build-log")
    page.goto(url + "p/alice")  # the ladder seats the new version; its games appear on the page
    _until(page, lambda p: p.reload() and len(p.query_selector_all("#games tr")) > 1)
    assert "alice.v1" in page.text_content("#games")
    assert _upload(page, uploads / "broken-build.zip") == "refused"
    assert "ModuleNotFoundError: No module named 'nope'" in page.text_content("#build-log")
    page.goto(url + "p/alice")
    assert [row.get_attribute("data-version") for row in page.query_selector_all("#versions tr.version")] == ["2", "1"]
    page.goto(url + "p/alice/compare")  # (its comparisons are in the database: none yet)
    assert page.query_selector("#comparisons") is not None


def test_on_postgresql_a_second_participant_cannot_open_the_first_ones_pages(
    pg_classroom: Classroom, page: Any
) -> None:
    url = pg_classroom.running.url
    _log_in(page, url, pg_classroom.tokens["bob"])
    for path in ("p/alice", "p/alice/versions/1", "p/alice/compare", "p/nobody"):
        response = page.goto(url + path)
        assert response.status == 404, path
        assert "alice" not in page.content().split("<main", 1)[1], path
    assert page.goto(url + "p/bob").status == 200
