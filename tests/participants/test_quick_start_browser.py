"""docs/teachers.md's quick start, walked as written, in Debian's chromium (issue 38): the CSV,
the ladder file and the final's file are the ones the page shows (read from it), the commands
are its commands; a student submits the bot of their handout from their page; the teacher
watches the board, moves the deadline to now, runs and publishes the final and downloads the
grade CSV twice while the practice ladder plays on: the same bytes."""

from __future__ import annotations

import concurrent.futures
import csv
import io
import json
import re
import socket
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from server.cli import main as craits
from tests.participants.test_participants_browser import _log_in, _shot, _until
from tests.web.conftest import ROOT, start_craits

pytestmark = pytest.mark.browser

GUIDE = ROOT / "docs" / "teachers.md"


def _quick_start() -> tuple[str, list[str]]:
    """The quick start's text and its code blocks, in order."""
    text = GUIDE.read_text(encoding="utf-8")
    part = text[text.index("## Quick start"):text.index("# Reference")]
    return part, re.findall(r"```[a-z]*\n(.*?)```", part, re.DOTALL)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _commands(block: str) -> list[list[str]]:
    """The craits commands of a shell block, their comments left out."""
    return [line.split("#")[0].split()[1:] for line in block.splitlines() if line.startswith("craits ")]


def _games(url: str) -> int:
    with urllib.request.urlopen(url + "api/standings", timeout=10) as response:
        return int(json.loads(response.read())["games_recorded"])


def test_the_quick_start_as_written_from_a_csv_to_a_grade_sheet_that_keeps_its_bytes(
    tmp_path: Path, page: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = time.monotonic()
    text, blocks = _quick_start()
    students, import_block, ladder_file, ladder_block, handout_block, final_file, final_block = blocks
    monkeypatch.chdir(tmp_path)
    # (this machine's other tests may hold the page's ports: two free ones instead, nothing else changed)
    referee, web = _free_port(), _free_port()
    (tmp_path / "students.csv").write_text(students, encoding="utf-8")
    (tmp_path / "class.toml").write_text(ladder_file.replace("50051", str(referee)), encoding="utf-8")

    # 1. the students
    [imported] = _commands(import_block)
    assert craits(imported) == 0
    tokens = dict(line.split("\t") for line in capsys.readouterr().out.splitlines())
    assert sorted(tokens) == ["alice", "bob"] and (tmp_path / "class-tokens.csv").is_file()

    # 2. the ladder, left running
    [ladder] = _commands(ladder_block)
    ladder = [a.replace("8080", str(web)) for a in ladder]
    running = start_craits(ladder, tmp_path)
    try:
        url = running.url
        assert url == f"http://127.0.0.1:{web}/"
        running.wait_for("the waiting line the guide shows", lambda: any(
            "ladder: waiting for bots: 2 of the 3 needed" in line for line in running.lines))

        # 3. the handouts (the web address is the ladder's: --web, as on a class network)
        [handout] = _commands(handout_block)
        assert craits([*handout, "--web", url]) == 0
        said = capsys.readouterr().out
        assert all(said.count(token) == 1 for token in tokens.values())
        alice = tmp_path / "handouts" / "alice"
        readme = (alice / "README.md").read_text(encoding="utf-8")
        assert f"{url}login" in readme and f"127.0.0.1:{referee}" in readme

        # 4. a student submits their handout's bot from their page; another by the README's command line
        _log_in(page, url, tokens["alice"])
        page.set_input_files("#bot-file", str(alice / "my_bot.py"))
        page.click("#upload")
        status = _until(page, lambda p: (s := p.text_content("#status", timeout=1000)) != "building" and s)
        assert status == "admitted", page.text_content("main")
        request = urllib.request.Request(f"{url}api/submit", data=(tmp_path / "handouts/bob/my_bot.py").read_bytes(),
                                         headers={"Authorization": f"Bearer {tokens['bob']}", "X-Filename": "my_bot.py"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read())["version"] == 1

        # 5. the board: one ranking, and how sure each place is
        page.goto(url)
        _until(page, lambda p: p.query_selector("#standings tr[data-bot='alice.v1']"), timeout_s=60)
        running.wait_for("bob's version on the ladder", lambda: any("bob.v1" in line for line in running.lines), 60)
        assert page.inner_text("#standings thead").count("how sure") == 1
        assert re.fullmatch(r"\d+ of \d+", page.inner_text("#standings tr[data-bot='alice.v1'] td.faults"))
        _shot(page, "quick-start-board")

        # 6. the deadline and the final
        (tmp_path / "class" / "final.toml").write_text(final_file, encoding="utf-8")
        deadline, show, run, publish = _commands(final_block)
        assert craits(deadline) == 0 and craits(show) == 0
        shown = capsys.readouterr().out
        assert re.search(r"in +alice\.v1 ", shown) and re.search(r"in +bob\.v1 ", shown), shown
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # (asyncio.run beside the browser's loop)
            assert pool.submit(craits, run).result() == 0
        assert craits(publish) == 0
        capsys.readouterr()

        # 7. the grades, downloaded twice while the ladder plays on
        assert craits(["roster", "organizer", "class"]) == 0
        organizer = capsys.readouterr().out.split("\t")[1].strip()
        page.goto(url + "login")
        page.fill("#token", organizer)
        page.click("#login")
        page.goto(url + "organizer")
        assert page.query_selector("#dashboard tr[data-name='alice']")
        assert "deadline for the class set to" in page.text_content("#deadline-log")  # (the change, logged)
        sheets = []
        for _ in range(2):
            before = _games(url)
            with page.expect_download() as download:
                page.click("#csv")
            sheets.append(Path(download.value.path()).read_bytes())
            running.wait_for("more practice games", lambda before=before: _games(url) > before, 60)
        assert sheets[0] == sheets[1]
        rows = {r["name"]: r for r in csv.DictReader(io.StringIO(sheets[0].decode("utf-8")))}
        assert sorted(rows) == ["alice", "bob"]
        for row in rows.values():
            assert row["final"] == "v1" and row["final_rank"] in ("1", "2", "3") and row["final_avg_placing"]
            assert row["in_final"].startswith("in: v1") and row["counted_to_utc"]
        _shot(page, "quick-start-dashboard")
    finally:
        assert running.stop() == 0
    print(f"the quick start's commands, as a script: {time.monotonic() - started:.1f} s")
    assert "15 minutes" in text
