"""A hostile student against the participants' site (issue 36): what did not hold, and what did.

One roster's pages per store, shared by the module: a real web server on loopback (the app
``craits web --roster`` serves, with ``--trusted-proxy 127.0.0.2``), real uploads built and
checked by the real admission in the sandbox, and parallel requests from threads where a
finding is a race. A request "through the proxy" comes from 127.0.0.2 with X-Forwarded-For
naming the student's address, so that each test guesses from an address of its own.

The held attacks tested elsewhere, and not again here: the session cookie's HttpOnly and
SameSite=Strict (test_participants_web.py::test_the_session_cookie_is_httponly_samesite_and_secure_behind_a_tls_proxy),
tokens stored only as salted scrypt hashes (test_roster.py::test_a_token_is_stored_only_as_a_salted_hash)
and never logged (test_participants_web.py::test_no_token_is_written_to_any_log), a revoked
token cutting a playing bot off (test_ladder_versions.py::test_a_revoked_token_ends_its_bots_stream_at_once_and_the_board_says_why),
hostile archives (test_unpack.py) and another participant's pages in a browser
(test_participants_browser.py::test_a_second_participant_cannot_open_the_first_ones_pages).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gzip
import http.client
import json
import re
import sqlite3
import tarfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from participants.admission import upload_quota
from participants.roster import PostgresRoster, Roster, replaced_reason
from participants.unpack import Bounds, UploadError, _tar_entries
from server.web.app import WebOptions, WebServer
from server.web.live import LiveHub
from server.web.participants import SESSION_COOKIE
from tests.cli import run_cli
from tests.participants.uploads import good_bot, zip_of
from tests.postgres_server import PostgresServer

PROXY = "127.0.0.2"
"""The reverse proxy the organizer trusts (a loopback address of its own: the tests' other
requests come from 127.0.0.1 and 127.0.0.3, which it is not)."""
STRANGER = "127.0.0.3"
FAILING = 'command = ["python", "bot.py"]\nbuild = "{build}"\n'


# ---------------------------------------------------------------------------- a site and its clients


class Site:
    """The participants' pages of ``roster`` served by a web server of their own, in a thread."""

    def __init__(self, roster: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def start() -> WebServer:
            server = WebServer(LiveHub(), None, WebOptions(host="127.0.0.1", port=0, roster=str(roster),
                                                           trusted_proxies=(PROXY,)))
            await server.start()
            return server

        self.server = asyncio.run_coroutine_threadsafe(start(), self.loop).result(30)
        self.port = int(self.server.url.rstrip("/").rsplit(":", 1)[1])

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@dataclass
class Answer:
    status: int
    text: str
    headers: dict[str, str]
    set_cookies: tuple[str, ...] = ()

    def json(self) -> Any:
        return json.loads(self.text)


@dataclass
class Student:
    """A browser without a browser, on ``site``: its cookies, the address it speaks from, and
    (through the proxy) the address it says it is."""

    site: Site
    source: str = "127.0.0.1"
    forwarded: str | None = None
    cookies: dict[str, str] = field(default_factory=dict)

    def request(self, path: str, *, form: dict[str, str] | None = None, data: bytes | None = None,
                headers: dict[str, str] | None = None) -> Answer:
        body = urllib.parse.urlencode(form).encode() if form is not None else data
        sent = dict(headers or {})
        if form is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if self.forwarded is not None:
            sent["X-Forwarded-For"] = self.forwarded
        connection = http.client.HTTPConnection("127.0.0.1", self.site.port, timeout=60,
                                                source_address=(self.source, 0))
        try:
            connection.request("GET" if body is None else "POST", "/" + path.lstrip("/"), body=body, headers=sent)
            response = connection.getresponse()
            answer = Answer(response.status, response.read().decode(errors="replace"), dict(response.getheaders()),
                            tuple(v for h, v in response.getheaders() if h.lower() == "set-cookie"))
            for header, value in response.getheaders():
                if header.lower() == "set-cookie":
                    name, _, rest = value.partition("=")
                    cookie = rest.split(";")[0].strip('"')
                    if cookie and "Max-Age=0" not in value and "expires=Thu, 01 Jan 1970" not in value:
                        self.cookies[name] = cookie
                    else:
                        self.cookies.pop(name, None)
            return answer
        finally:
            connection.close()

    def csrf(self, path: str) -> str:
        answer = self.request(path)
        found = re.search(r'name="csrf" value="([^"]+)"', answer.text)
        assert answer.status == 200 and found is not None, (path, answer.status)
        return found.group(1)

    def log_in(self, token: str) -> Answer:
        return self.request("login", form={"token": token, "csrf": self.csrf("login")})

    def api(self, path: str, token: str, data: bytes | dict[str, Any], filename: str = "bot.zip") -> Answer:
        body = json.dumps(data).encode() if isinstance(data, dict) else data
        return self.request(path, data=body, headers={"Authorization": f"Bearer {token}", "X-Filename": filename})


def at_once(count: int, ask: Callable[[int], Answer]) -> list[Answer]:
    """``ask(i)`` for i in 0..count-1, all in parallel threads, released together."""
    start = threading.Barrier(count)

    def one(i: int) -> Answer:
        start.wait()
        return ask(i)

    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def wait_until(what: str, condition: Callable[[], Any], timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


@dataclass
class Class:
    roster: Roster
    site: Site
    tokens: dict[str, str]
    addresses: Iterator[str]

    def through_proxy(self) -> Student:
        """A student at an address of their own, through the trusted proxy."""
        return Student(self.site, PROXY, next(self.addresses))

    def verdict(self, name: str, number: int) -> Any:
        return wait_until(f"{name}.v{number}'s verdict", lambda: (
            v if (v := self.roster.version(name, number)) is not None and v.status != "building" else None))


NAMES = ("alice", "bob", "mallory", "quinn", "rita")


def _class(folder: Path, store: str | None) -> Iterator[Class]:
    roster = Roster.create(folder, store)
    tokens = dict(roster.import_csv("name\n" + "\n".join(NAMES) + "\n"))
    tokens["organizer"] = roster.organizer_token()
    site = Site(folder)
    try:
        yield Class(roster, site, tokens, (f"198.51.100.{i}" for i in range(1, 255)))
    finally:
        site.close()


@pytest.fixture(scope="module")
def sqlite_class(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Class]:
    yield from _class(tmp_path_factory.mktemp("hostile") / "roster", None)


@pytest.fixture(scope="module")
def pg_class(tmp_path_factory: pytest.TempPathFactory, pg_server: PostgresServer) -> Iterator[Class]:
    if not pg_server.is_running():
        pg_server.start()
    yield from _class(tmp_path_factory.mktemp("hostile-pg") / "roster", pg_server.new_database())


@pytest.fixture(params=["sqlite", "postgresql"])
def any_class(request: pytest.FixtureRequest) -> Class:
    """The finding's test on each store (where the code differs: sessions, wrong tokens, uploads)."""
    return request.getfixturevalue(f"{'pg' if request.param == 'postgresql' else 'sqlite'}_class")


# ---------------------------------------------------------------------------- 5: one participant stalls everyone's builds


def test_one_upload_waits_per_participant_and_builds_take_participants_in_turn(sqlite_class: Class) -> None:
    """Mallory's flood of uploads costs alice one build of Mallory's, not all of them: each newer
    upload replaces the one still waiting, and the builder takes the participants in turn."""
    room, mallory = sqlite_class, Student(sqlite_class.site)
    slow = zip_of({"bot.toml": FAILING.format(build="sleep 2; echo '<script>alert(1)</script>'; exit 1"),
                   "bot.py": "x = 1\n"})
    assert mallory.api("api/submit", room.tokens["mallory"], slow).status == 200
    first = room.roster.version("mallory", 1)
    assert first is not None
    wait_until("mallory.v1 being built", lambda: room.roster.being_built() == first.id)
    answers = [mallory.api("api/submit", room.tokens["mallory"], slow) for _ in range(3)]
    alice = Student(room.site).api("api/submit", room.tokens["alice"], good_bot())
    for number in (2, 3):
        replaced = room.roster.version("mallory", number)
        assert replaced is not None and (replaced.status, replaced.reason) == ("refused", replaced_reason(number + 1))
    assert room.verdict("alice", 1).status == "admitted"
    last = room.roster.version("mallory", 4)
    assert last is not None and last.status == "building"  # (built after alice's, not before)
    assert room.verdict("mallory", 4).status == "refused"
    said = [a.json()["queue"] for a in answers]  # (what `craits submit` prints)
    assert [q["replaced"] for q in said] == [[], [2], [3]]
    assert said[-1]["said"].startswith("1 build(s) before it (builds are taken in turn, one participant after "
                                       "another; your v1 is being built); it replaces v3, which was waiting")
    assert alice.json()["queue"]["ahead"] == 1  # (Mallory's v1, being built; her v4 waited for its turn)


def test_uploads_are_held_to_a_quota_even_when_sent_all_at_once(any_class: Class) -> None:
    """Ten uploads at once against a quota of 4 an hour: 4 stored, 6 refused saying when the next
    one is possible; the participant page says the quota."""
    room = any_class
    room.roster.set_limits({"uploads_per_hour": 4})
    try:
        quinn = Student(room.site)
        answers = at_once(10, lambda i: quinn.api("api/submit", room.tokens["quinn"], f"x = {i}\n".encode(), "bot.py"))
        assert sorted(a.status for a in answers) == [200] * 4 + [429] * 6
        refused = next(a for a in answers if a.status == 429)
        assert "the limit is 4 an hour; the next upload is possible in" in refused.json()["error"]
        assert len(room.roster.versions("quinn")) == 4
        assert quinn.log_in(room.tokens["quinn"]).status == 303
        assert "4 uploads an hour, 100 a day" in quinn.request("p/quinn").text
    finally:
        room.roster.set_limits({"uploads_per_hour": 20})


# ---------------------------------------------------------------------------- 6: quotas race


def test_parallel_wrong_tokens_are_counted_before_any_is_checked(any_class: Class) -> None:
    """30 wrong tokens at once from one address: 10 are checked (and refused), the other 20 are
    turned away before any hashing, and so is the right token after them."""
    room = any_class
    guesser = room.through_proxy()
    answers = at_once(30, lambda i: guesser.api("api/submit", f"craits-aaaaaaaa-{'x' * 30}{i:02d}", b"x"))
    assert sorted(a.status for a in answers) == [401] * 10 + [429] * 20
    assert guesser.api("api/submit", room.tokens["bob"], b"x = 1\n", "bot.py").status == 429
    assert room.through_proxy().log_in(room.tokens["bob"]).status == 303  # (another address is not locked out)


def test_a_right_token_does_not_wipe_an_addresss_wrong_ones(sqlite_class: Class) -> None:
    """A participant guessing others' tokens cannot reset the count by logging in as themselves."""
    room = sqlite_class
    guesser = room.through_proxy()
    def guess(i: int) -> Answer:  # (a browser each, from the same address: one's login form is not another's)
        return Student(room.site, guesser.source, guesser.forwarded).log_in(f"craits-bbbbbbbb-{'y' * 30}{i}")

    assert [a.status for a in at_once(9, guess)] == [403] * 9
    assert guesser.log_in(room.tokens["rita"]).status == 303
    assert guesser.log_in(f"craits-bbbbbbbb-{'y' * 31}").status == 403
    assert guesser.log_in(f"craits-bbbbbbbb-{'y' * 32}").status == 429


@pytest.fixture(scope="module")
def two_admitted(sqlite_class: Class) -> Class:
    """Alice with two admitted versions (real builds), for her scrimmages and comparisons."""
    room = sqlite_class
    while len([v for v in room.roster.versions("alice") if v.status == "admitted"]) < 2:
        number = Student(room.site).api("api/submit", room.tokens["alice"], good_bot()).json()["version"]
        assert room.verdict("alice", number).status == "admitted"
    return room


def test_parallel_scrimmage_requests_get_only_the_games_left(two_admitted: Class) -> None:
    room = two_admitted
    room.roster.set_limits({"scrimmage_games_per_hour": 3})
    alice = Student(room.site)
    answers = at_once(10, lambda _: alice.api("api/scrimmage", room.tokens["alice"], {"against": ["random"], "games": 1}))
    assert sorted(a.status for a in answers) == [200] * 3 + [400] * 7
    assert "quota of 3 scrimmage games an hour: 0 left" in next(a for a in answers if a.status == 400).text


def test_parallel_comparisons_are_one_at_a_time(two_admitted: Class) -> None:
    room = two_admitted
    numbers = [v.number for v in room.roster.versions("alice") if v.status == "admitted"][:2]
    alice = Student(room.site)
    answers = at_once(8, lambda _: alice.api("api/compare", room.tokens["alice"],
                                             {"a": numbers[0], "b": numbers[1], "games": 2}))
    assert sorted(a.status for a in answers) == [200] + [400] * 7
    assert "is still playing: one at a time" in next(a for a in answers if a.status == 400).text


# ---------------------------------------------------------------------------- 7: logging out ends the session


def test_a_copied_cookie_opens_nothing_after_logout_renewal_or_revocation(any_class: Class) -> None:
    room = any_class
    bob = Student(room.site)
    assert bob.log_in(room.tokens["bob"]).status == 303
    copied = Student(room.site, cookies=dict(bob.cookies))
    assert copied.request("p/bob").status == 200
    assert bob.request("logout", form={"csrf": bob.csrf("p/bob")}).status == 303
    assert copied.request("p/bob").status == 404
    assert copied.request("me").headers["Location"] == "/login"
    for end in (room.roster.renew, room.roster.revoke):
        token = room.roster.renew("bob")
        again = Student(room.site)
        assert again.log_in(token).status == 303 and again.request("p/bob").status == 200
        end("bob")
        assert again.request("p/bob").status == 404, end.__name__
    room.tokens["bob"] = room.roster.renew("bob")


def test_a_logout_in_one_web_process_ends_the_session_in_another_on_the_same_database(pg_class: Class) -> None:
    room = pg_class
    other = Site(room.roster.folder)
    try:
        rita = Student(room.site)
        assert rita.log_in(room.tokens["rita"]).status == 303
        elsewhere = Student(other, cookies=dict(rita.cookies))
        assert elsewhere.request("p/rita").status == 200
        assert rita.request("logout", form={"csrf": rita.csrf("p/rita")}).status == 303
        assert elsewhere.request("p/rita").status == 404
    finally:
        other.close()


# ---------------------------------------------------------------------------- 8: .tar.gz uploads cost the web process


def repeated(block: bytes, times: int, *, head: bytes = b"", tail: bytes = b"") -> bytes:
    """A .tar.gz of ``head``, ``block`` ``times`` over and ``tail``, made cheaply: gzip members one
    after another are one stream to its readers, and one member of ``block`` is compressed once."""
    return gzip.compress(head) + gzip.compress(block) * times + gzip.compress(tail + bytes(1024))


def gigabyte_of_zeros() -> bytes:
    """1 MB packed: a bot.toml, then a bot.py of 1 GiB of zeros."""
    toml, bot = tarfile.TarInfo("bot.toml"), tarfile.TarInfo("bot.py")
    bot.size = 2**30
    return repeated(bytes(2**20), 1024, head=toml.tobuf() + bot.tobuf())


def folders(count: int) -> bytes:
    """0.1 MB packed: ``count`` folder entries (the same one: tar allows it)."""
    folder = tarfile.TarInfo("d")
    folder.type = tarfile.DIRTYPE
    return repeated(folder.tobuf() * 1000, count // 1000)


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    return {"gigabyte": gigabyte_of_zeros(), "folders": folders(120_000)}


def test_a_small_tar_gz_of_a_gigabyte_or_of_many_folders_is_refused_at_upload_naming_the_limit(
    sqlite_class: Class, bombs: dict[str, bytes]
) -> None:
    room = sqlite_class
    before = room.roster.versions("rita")
    rita = Student(room.site)
    big = rita.api("api/submit", room.tokens["rita"], bombs["gigabyte"], "bot.tar.gz")
    assert big.status == 400 and big.json()["error"] == "more than 200 MB unpacked: the limit is 200 MB"
    many = rita.api("api/submit", room.tokens["rita"], bombs["folders"], "bot.tar.gz")
    assert many.status == 400 and many.json()["error"] == "more than 5000 files and folders: the limit is 5000 files"
    assert room.roster.versions("rita") == before  # (nothing stored, nothing to build)


def test_reading_a_tar_keeps_no_list_of_its_entries(bombs: dict[str, bytes]) -> None:
    """Within a files limit of 20,000, each of the folders is read and let go (tarfile alone
    keeps every entry it read: all 120,000 of them in the web process)."""
    held: list[int] = []
    with pytest.raises(UploadError, match="more than 20000 files and folders"):
        held.extend(len(archive.members) for archive, _ in _tar_entries(bombs["folders"], Bounds(files=20_000)))
    assert len(held) == 20_000 and max(held) == 0


# ---------------------------------------------------------------------------- 11: X-Forwarded-For only from the named proxy


def test_x_forwarded_for_from_a_peer_that_is_not_the_trusted_proxy_is_ignored(sqlite_class: Class) -> None:
    """A student on this machine (127.0.0.3) sends a new X-Forwarded-For with each guess: the
    guesses are still counted against their own address, which is locked out after 10."""
    room = sqlite_class
    guesses = at_once(10, lambda i: Student(room.site, STRANGER, f"203.0.113.{i}").log_in(
        f"craits-cccccccc-{'z' * 30}{i}"))
    assert [g.status for g in guesses] == [403] * 10
    assert Student(room.site, STRANGER, "203.0.113.99").log_in(room.tokens["alice"]).status == 429
    behind_proxy = Student(room.site, PROXY, "203.0.113.3, 192.0.2.1")  # (the proxy's own hop: the last)
    assert behind_proxy.log_in(room.tokens["alice"]).status == 303


def session_cookie(answer: Answer) -> str:
    """The Set-Cookie header that starts a session (a login also ends its login-form cookie)."""
    [cookie] = [c for c in answer.set_cookies if c.startswith(f"{SESSION_COOKIE}=")]
    return cookie


def test_x_forwarded_proto_marks_the_cookie_secure_only_from_the_trusted_proxy(sqlite_class: Class) -> None:
    """A session cookie marked Secure over plain HTTP would never come back: believed only from
    the proxy that really ends TLS, not from a student on this machine who says so."""
    room = sqlite_class
    https = {"X-Forwarded-Proto": "https"}
    stranger = Student(room.site, "127.0.0.4")  # (not STRANGER: its guesses above locked it out)
    stranger_login = stranger.request("login", form={"token": room.tokens["rita"], "csrf": stranger.csrf("login")},
                                      headers=https)
    assert stranger_login.status == 303 and "Secure" not in session_cookie(stranger_login)
    proxied = room.through_proxy()
    proxied_login = proxied.request("login", form={"token": room.tokens["rita"], "csrf": proxied.csrf("login")},
                                    headers=https)
    assert proxied_login.status == 303 and "Secure" in session_cookie(proxied_login)


# ---------------------------------------------------------------------------- what held: it must stay so


def test_another_participants_pages_versions_logs_and_replays_are_the_same_404(two_admitted: Class) -> None:
    room = two_admitted
    bob = Student(room.site)
    assert bob.log_in(room.tokens["bob"]).status == 303
    number = room.roster.versions("alice")[-1].number
    nobody = bob.request("p/nobody")
    assert nobody.status == 404
    for path in ("p/alice", f"p/alice/versions/{number}", f"p/alice/versions/{number}/replay",
                 "p/alice/games/validate-x/output", "p/alice/compare", "p/alice/scrimmage", "p/alice/final",
                 "p/organizer", "p/nobody/versions/1"):
        answer = bob.request(path)
        assert (answer.status, answer.text) == (nobody.status, nobody.text), path
    assert bob.request(f"api/me/versions/{number}", headers={"Authorization": f"Bearer {room.tokens['bob']}"}
                       ).status == 404  # (alice's number: bob has no such version)


def test_every_form_on_a_participants_pages_refuses_a_post_without_its_csrf_token(two_admitted: Class) -> None:
    room = two_admitted
    alice = Student(room.site)
    assert alice.log_in(room.tokens["alice"]).status == 303
    actions = set()
    for page in ("p/alice", "p/alice/compare", "p/alice/scrimmage", "p/alice/final"):
        actions |= set(re.findall(r'<form method="post" action="([^"]+)"', alice.request(page).text))
    assert {"/logout", "/p/alice/upload", "/p/alice/pin", "/p/alice/compare", "/p/alice/scrimmage"} <= actions
    for action in sorted(actions):
        answer = alice.request(action, form={"csrf": "forged", "version": "", "a": "1", "b": "2", "games": "1"})
        assert answer.status == 403, action
    assert alice.request("p/alice").status == 200  # (logout's forged post did not log her out)


def test_markup_a_student_writes_is_shown_as_text(sqlite_class: Class) -> None:
    """(An upload of its own: a module's tests may run apart, as pytest-xdist spreads them.)"""
    room = sqlite_class
    rita = Student(room.site)
    markup = zip_of({"bot.toml": FAILING.format(build="echo '<script>alert(1)</script>'; exit 1"), "bot.py": "x = 1\n"})
    assert rita.api("api/submit", room.tokens["rita"], markup).status == 200
    number = max(v.number for v in room.roster.versions("rita"))
    assert room.verdict("rita", number).status == "refused"
    assert rita.log_in(room.tokens["rita"]).status == 303
    page = rita.request(f"p/rita/versions/{number}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page


def test_the_store_holds_no_token_and_no_live_session_cookie(any_class: Class) -> None:
    room = any_class
    student = Student(room.site)
    assert student.log_in(room.tokens["quinn"]).status == 303
    cookie = student.cookies["craits_session"]
    if isinstance(room.roster, PostgresRoster):
        with psycopg.connect(room.roster.url) as conn:
            dump = repr([conn.execute(f"SELECT * FROM {t}").fetchall() for t in (
                "craits_roster_participants", "craits_roster_settings", "craits_roster_sessions")])
    else:
        with sqlite3.connect(room.roster.db_path) as db:
            dump = "\n".join(db.iterdump())
    assert cookie not in dump
    for token in room.tokens.values():
        assert token not in dump and token.split("-", 2)[2] not in dump


# ---------------------------------------------------------------------------- the organizer sets the quotas


def test_craits_roster_set_sets_the_upload_quota_and_refuses_one_that_cannot_be_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = str(tmp_path / "class")
    roster = Roster.create(folder)
    code, out, err = run_cli(capsys, "roster", "set", folder, "uploads_per_hour=5", "uploads_per_day=40")
    assert code == 0 and "5 an hour and 40 a day per participant" in out, err
    assert upload_quota(roster) == ((5, 3600.0), (40, 86400.0))
    for value, said in (("uploads_per_day=3", "uploads_per_day=3 is less than uploads_per_hour=5"),
                        ("uploads_per_hour=0", "uploads_per_hour: must be more than 0"),
                        ("uploads_per_hour=many", "uploads_per_hour: 'many' is not a number")):
        code, _, err = run_cli(capsys, "roster", "set", folder, value)
        assert code == 2 and said in err and "Traceback" not in err, (value, err)
    assert upload_quota(roster) == ((5, 3600.0), (40, 86400.0))  # (nothing changed)
