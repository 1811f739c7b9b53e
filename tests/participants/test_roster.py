"""The roster: tokens shown once and kept only as salted hashes, revoked and renewed; a CSV
imported all or nothing; versions numbered and stored whole, never overwritten."""

from __future__ import annotations

import concurrent.futures
import sqlite3
from pathlib import Path

import pytest

from participants.roster import ORGANIZER, Roster, RosterError, replaced_reason
from participants.tokens import token_id
from tests.participants.uploads import good_bot


@pytest.fixture
def roster(tmp_path: Path) -> Roster:
    return Roster.create(tmp_path / "roster")


def test_a_token_is_stored_only_as_a_salted_hash(roster: Roster) -> None:
    alice, bob = roster.add("alice"), roster.add("bob")
    raw = (roster.folder / "roster.db").read_bytes()
    for token in (alice, bob):
        secret = token.split("-", 2)[2]  # (craits-ID-SECRET; the secret may hold "-" itself)
        assert token.encode() not in raw and secret.encode() not in raw
    with sqlite3.connect(roster.db_path) as db:
        rows = db.execute("SELECT token_id, salt, digest FROM participants ORDER BY name").fetchall()
    assert [r[0] for r in rows] == [token_id(alice), token_id(bob)]
    assert rows[0][1] != rows[1][1] and len(rows[0][2]) == 32
    assert roster.authenticate(alice) == "alice" and roster.authenticate(bob) == "bob"


def test_a_wrong_revoked_or_replaced_token_lets_nobody_in(roster: Roster) -> None:
    token = roster.add("alice")
    assert roster.authenticate(token[:-1] + ("x" if token[-1] != "x" else "y")) is None
    assert roster.authenticate("not a token") is None
    roster.revoke("alice")
    assert roster.authenticate(token) is None
    renewed = roster.renew("alice")
    assert roster.authenticate(token) is None and roster.authenticate(renewed) == "alice"


def test_the_organizer_has_a_token_of_their_own(roster: Roster) -> None:
    first = roster.organizer_token()
    assert roster.authenticate(first) == ORGANIZER
    second = roster.organizer_token()
    assert roster.authenticate(first) is None and roster.authenticate(second) == ORGANIZER


def test_a_csv_is_imported_whole_or_not_at_all(roster: Roster) -> None:
    made = roster.import_csv("name,email,team\nalice,a@example.org,red\n\nbob,,blue\n")
    assert [name for name, _ in made] == ["alice", "bob"]
    assert [(p.name, p.email, p.team) for p in roster.participants()] == [
        ("alice", "a@example.org", "red"), ("bob", "", "blue")]
    with pytest.raises(RosterError, match="already on the roster: alice"):
        roster.import_csv("name\ncarol\nalice\n")
    with pytest.raises(RosterError, match="carol listed more than once"):
        roster.import_csv("name\ncarol\ncarol\n")
    with pytest.raises(RosterError, match="a 'name' column"):
        roster.import_csv("student,mail\ncarol,c@x\n")
    with pytest.raises(RosterError, match=r"students.csv:3: name 'bad name'"):
        roster.import_csv("name\ncarol\nbad name\n", "students.csv")
    assert [p.name for p in roster.participants()] == ["alice", "bob"]


def test_a_spreadsheets_semicolon_or_tab_separated_csv_is_read_too(roster: Roster) -> None:
    """A spreadsheet in a language whose decimal mark is a comma saves "CSV" with ';'."""
    roster.import_csv("\ufeffName;Email;Team\r\neve;eve@example.org;red\r\n")
    roster.import_csv("name\tteam\nfrank\tblue\n")
    assert [(p.name, p.email, p.team) for p in roster.participants()] == [
        ("eve", "eve@example.org", "red"), ("frank", "", "blue")]


def test_versions_are_numbered_and_every_upload_is_kept_whole_by_its_hash(roster: Roster) -> None:
    roster.add("alice")
    upload = good_bot()  # (once: a zip holds the time it was made)
    first = roster.submit("alice", upload, "a.zip")
    second = roster.submit("alice", good_bot(build="true"), "b.zip")
    again = roster.submit("alice", upload, "../../etc/c.zip")
    assert [v.number for v in roster.versions("alice")] == [1, 2, 3]
    assert first.sha256 == again.sha256 != second.sha256
    assert roster.upload_path(first.sha256).read_bytes() == upload
    assert again.filename == "c.zip"
    assert [v.number for v in roster.pending()] == [3]  # (one upload waits: the newest replaced the others)
    assert [roster.version("alice", n).reason for n in (1, 2)] == [replaced_reason(2), replaced_reason(3)]
    assert list((roster.folder / "tmp").iterdir()) == []
    with pytest.raises(RosterError, match="carol is not on the roster"):
        roster.submit("carol", good_bot(), "a.zip")


def test_the_active_version_is_the_pinned_one_else_the_newest_admitted(roster: Roster) -> None:
    roster.add("alice")
    for status in ("admitted", "admitted", "refused"):  # (each built before the next upload)
        roster.decide(roster.submit("alice", good_bot(), "a.zip"), status, command=("python", "bot.py"))
    assert [v.number for v in roster.active()] == [2]
    roster.pin("alice", 1)
    assert [v.number for v in roster.active()] == [1]
    with pytest.raises(RosterError, match="no admitted version v3"):
        roster.pin("alice", 3)
    roster.revoke("alice")
    assert roster.active() == []


def test_names_that_cannot_be_bot_names_are_refused(roster: Roster) -> None:
    for bad in ("", "a b", "x" * 31, "al.ice", ORGANIZER):
        with pytest.raises(RosterError):
            roster.add(bad)
    roster.add("alice")
    with pytest.raises(RosterError, match="already on the roster"):
        roster.add("alice")


def test_uploads_at_the_same_time_get_distinct_versions(roster: Roster) -> None:
    roster.add("alice")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda i: roster.submit("alice", good_bot() + bytes([i]), f"{i}.zip"), range(16)))
    assert sorted(v.number for v in made) == list(range(1, 17))
