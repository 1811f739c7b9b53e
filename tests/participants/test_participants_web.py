"""The participants' pages over HTTP, against the shared classroom ladder: cookies, CSRF, slowed
and locked-out token guessing, ``craits submit``, and no token in any log or page."""

from __future__ import annotations

import asyncio
import html
import http.cookiejar
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from participants.roster import Roster
from server.web.app import WebOptions, WebServer
from server.web.live import LiveHub
from server.web.participants import is_public
from tests.participants.conftest import Classroom
from tests.participants.uploads import good_bot, zip_of

CRAITS = str(Path(sys.executable).with_name("craits"))


class Client:
    """A browser without a browser: cookies kept, redirects not followed."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.jar = http.cookiejar.CookieJar()
        self.headers = headers or {}

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: object, **kwargs: object) -> None:
                return None

        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), NoRedirect)

    def request(self, path: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None,
                data: bytes | None = None) -> tuple[int, str, dict[str, str]]:
        body = urllib.parse.urlencode(form).encode() if form is not None else data
        request = urllib.request.Request(self.url + path.lstrip("/"), data=body, headers={**self.headers, **(headers or {})})
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read().decode(), dict(response.headers)
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(), dict(err.headers)

    def csrf(self, path: str) -> str:
        status, page, _ = self.request(path)
        assert status == 200, (path, status)
        found = re.search(r'name="csrf" value="([^"]+)"', page)
        assert found is not None
        return found.group(1)

    def log_in(self, token: str) -> tuple[int, dict[str, str]]:
        status, _, headers = self.request("login", {"token": token, "csrf": self.csrf("login")})
        return status, headers


def test_the_session_cookie_is_httponly_samesite_and_secure_behind_a_tls_proxy(classroom: Classroom) -> None:
    plain = Client(classroom.running.url)
    status, headers = plain.log_in(classroom.tokens["bob"])
    assert status == 303 and headers["Location"] == "/me"
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" not in cookie
    assert classroom.tokens["bob"] not in cookie
    proxied = Client(classroom.running.url, {"X-Forwarded-Proto": "https"})
    _, headers = proxied.log_in(classroom.tokens["bob"])
    assert "Secure" in headers["Set-Cookie"]


def test_a_form_without_this_sessions_csrf_token_is_refused(classroom: Classroom) -> None:
    client = Client(classroom.running.url)
    assert client.log_in(classroom.tokens["bob"])[0] == 303
    status, page, _ = client.request("p/bob/pin", {"version": "", "csrf": "forged"})
    assert status == 403 and "did not come from this site" in page
    status, _, _ = client.request("login", {"token": classroom.tokens["bob"], "csrf": "forged"})
    assert status == 403
    status, _, headers = client.request("p/bob/pin", {"version": "", "csrf": client.csrf("p/bob")})
    assert status == 303 and headers["Location"] == "/p/bob"


def test_wrong_tokens_are_slowed_then_the_address_is_locked_out(classroom: Classroom) -> None:
    guesser = Client(classroom.running.url, {"X-Forwarded-For": "203.0.113.7"})  # (through a proxy here)
    statuses = [guesser.log_in(f"craits-aaaaaaaa-{'x' * 30}{i}")[0] for i in range(10)]
    assert statuses == [403] * 10
    assert guesser.log_in(classroom.tokens["bob"])[0] == 429  # even the right one, for a while
    assert Client(classroom.running.url, {"X-Forwarded-For": "203.0.113.8"}).log_in(classroom.tokens["bob"])[0] == 303


def test_the_api_wants_a_token_and_refuses_what_is_too_big(classroom: Classroom) -> None:
    anonymous = Client(classroom.running.url)
    status, page, _ = anonymous.request("api/submit", data=good_bot())
    assert status == 401 and "Bearer" in page
    status, page, _ = anonymous.request("api/submit", data=good_bot(), headers={"Authorization": "Bearer craits-typo"})
    assert status == 401 and "that token is not valid here: check it" in page  # (not "give your token")
    status, _, _ = anonymous.request("api/me/versions/1")
    assert status == 404
    bearer = Client(classroom.running.url, {"Authorization": f"Bearer {classroom.tokens['bob']}"})
    status, page, _ = bearer.request("api/submit", data=b"x" * (20 * 2**20 + 10), headers={"X-Filename": "big.zip"})
    assert status == 413 and "20 MB" in page
    before = classroom.roster.versions("bob")
    status, page, _ = bearer.request("api/submit", data=zip_of({"bot.py": "x", "lib.py": "x"}, folder="mybot"),
                                     headers={"X-Filename": "mybot.zip"})
    said = json.loads(page)["error"]
    assert status == 400 and said.startswith("no bot.toml") and 'command = ["python", "bot.py"]\n' in said
    assert classroom.roster.versions("bob") == before  # (refused at upload: no version to wait for)


def test_a_limit_set_while_the_pages_run_counts_from_the_next_upload(classroom: Classroom) -> None:
    bob = Client(classroom.running.url)
    bob.log_in(classroom.tokens["bob"])
    csrf = bob.csrf("p/bob")
    classroom.roster.set_limits({"packed": 2**20})
    try:
        status, page, _ = bob.request("api/submit", data=b"x" * (3 * 2**19), headers={
            "X-Filename": "b.zip", "Authorization": f"Bearer {classroom.tokens['bob']}"})
        assert status == 413 and "over 1 MB" in page
        boundary = "craitsboundary"
        form = (f'--{boundary}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{csrf}\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="bot"; filename="b.zip"\r\n'
                f"Content-Type: application/zip\r\n\r\n").encode() + b"x" * (3 * 2**19) + f"\r\n--{boundary}--\r\n".encode()
        status, page, _ = bob.request("p/bob/upload", data=form,
                                      headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        assert status == 413 and "over 1 MB" in page
        assert "at most 1 MB packed" in bob.request("p/bob")[1]
    finally:
        classroom.roster.set_limits({"packed": 20 * 2**20})


def test_craits_submit_uploads_a_folder_and_prints_the_verdict(classroom: Classroom, tmp_path: Path) -> None:
    bot = tmp_path / "mybot"
    (bot / "__pycache__").mkdir(parents=True)
    (bot / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    (bot / "bot.toml").write_text('command = ["python", "bot.py"]\nbuild = "test ! -e __pycache__"\n')
    (bot / "bot.py").write_text((Path(__file__).parents[2] / "clients/python/craits_bot/examples/random_bot.py")
                                .read_text())
    env = {**os.environ, "CRAITS_TOKEN": classroom.tokens["bob"]}
    done = subprocess.run([CRAITS, "submit", str(bot), "--server", classroom.running.url], env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"uploaded mybot.zip \(\d+ bytes\) as v1", done.stdout) and "v1: admitted" in done.stdout
    assert re.search(r"v1: \d build\(s\) before it .*; 19 upload\(s\) left this hour, 99 today", done.stdout)
    bob = Client(classroom.running.url)
    bob.log_in(classroom.tokens["bob"])

    def bobs_games() -> list[str]:
        _, page, _ = bob.request("p/bob")
        return re.findall(r'href="/p/bob/games/([^/"]+)/output"', page)

    games = classroom.running.wait_for("two games of bob.v1", lambda: len(bobs_games()) >= 2 and bobs_games(),
                                       timeout=120)
    outputs = {game: html.unescape(bob.request(f"p/bob/games/{game}/output")[1]) for game in games}
    first, later = min(games), max(games)  # (one kept process: its log split at each game's start)
    assert "connected to unix:/run/craits/referee.sock as 'bob.v1'" in outputs[first]
    assert "connected to" not in outputs[later]
    alice = Client(classroom.running.url)
    alice.log_in(classroom.tokens["alice"])
    assert alice.request(f"p/bob/games/{first}/output")[0] == 404
    env["CRAITS_TOKEN"] = "craits-zzzzzzzz-" + "q" * 32
    refused = subprocess.run([CRAITS, "submit", str(bot), "--server", classroom.running.url], env=env,
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert refused.returncode == 2 and "HTTP 401" in refused.stderr and "Traceback" not in refused.stderr


def test_no_token_is_written_to_any_log(classroom: Classroom) -> None:
    Client(classroom.running.url).log_in(classroom.tokens["alice"])
    written = "".join(classroom.running.lines)
    for path in classroom.folder.rglob("*"):
        if path.is_file() and path.suffix in (".log", ".jsonl", ".json", ".csv", ".txt"):
            written += path.read_text(errors="replace")
    for token in classroom.tokens.values():
        secret = token.split("-", 2)[2]  # (craits-ID-SECRET; the secret may hold "-" itself)
        assert token not in written and secret not in written


def test_only_loopback_addresses_count_as_private() -> None:
    """Listening anywhere else, the server says at start to put a TLS proxy in front."""
    assert [is_public(h) for h in ("127.0.0.1", "::1", "localhost", "127.0.0.2")] == [False] * 4
    assert [is_public(h) for h in ("0.0.0.0", "", "::", "192.168.1.5", "arena.example.org")] == [True] * 5


def test_pages_with_a_roster_on_a_public_address_say_at_start_to_use_tls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Roster.create(tmp_path / "roster")

    async def start_and_stop(host: str) -> None:
        server = WebServer(LiveHub(), None, WebOptions(host=host, port=0, roster=str(tmp_path / "roster")))
        await server.start()
        await server.stop()

    asyncio.run(start_and_stop("127.0.0.1"))
    assert "TLS" not in capsys.readouterr().err
    asyncio.run(start_and_stop("0.0.0.0"))
    assert "serve it behind a TLS reverse proxy (docs/teachers.md)" in capsys.readouterr().err


def test_craits_submit_of_a_refused_bot_links_to_a_page_that_opens(classroom: Classroom, tmp_path: Path) -> None:
    """The link printed with a refusal is the version's page (it was /me/versions/N: a 404)."""
    token = classroom.roster.add("erin")
    (tmp_path / "bot.py").write_text("def broken(:\n")
    done = subprocess.run([CRAITS, "submit", str(tmp_path / "bot.py"), "--server", classroom.running.url],
                          env={**os.environ, "CRAITS_TOKEN": token}, capture_output=True, text=True, timeout=180)
    assert done.returncode == 1 and "v1: refused" in done.stdout, done.stdout + done.stderr
    assert "its last line of output: SyntaxError: invalid syntax" in done.stdout  # (from the builds' process)
    link = re.search(r"report \(log in with your token\): (\S+)", done.stdout)
    assert link is not None and link.group(1) == classroom.running.url.rstrip("/") + "/p/erin/versions/1"
    erin = Client(classroom.running.url)
    erin.log_in(token)
    status, page, _ = erin.request(link.group(1).removeprefix(classroom.running.url.rstrip("/")))
    assert status == 200 and "SyntaxError" in html.unescape(page)
