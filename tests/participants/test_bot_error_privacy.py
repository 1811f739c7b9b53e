"""On a participants' board a bot error's words (its own code's exception, file:line) are its
owner's: the public pages, the API and the replays served say only that it happened."""

from __future__ import annotations

import asyncio
import gzip
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from participants.roster import Roster
from server.cli.web import _names_a_roster
from server.storage.replay.compact import write_compact
from server.storage.replay.faults import hide_others_bot_errors
from server.storage.replay.reader import read_replay
from server.storage.replay.verify import verify_replay
from server.web.app import WebOptions, WebServer
from server.web.board import Board, folder_source
from server.web.live import LiveHub
from tests.cli import run_cli

SECRET = "KeyError: 'my secret plan' at bot.py:13"
FILE = """name = "cup"
table_size = 3
deals = 1
seed = 4
[flags]
short_game = true
[[bots]]
name = "alice.v1"
builtin = "random"
[[bots]]
name = "bob.v1"
builtin = "random"
[[bots]]
name = "house"
builtin = "random"
"""


def _with_a_bot_error(out: Path) -> str:
    """Give alice.v1's seat of one game a bot error, in its replay and in the store, as the
    referee records one (Answer.bot_error); the game's id."""
    db = sqlite3.connect(out / "tournament.db")
    game_id, seat = db.execute("SELECT game_id, seat FROM seats WHERE bot = 'alice.v1' ORDER BY game_id").fetchone()
    db.execute("UPDATE seats SET bot_errors = 1, bot_error = ? WHERE game_id = ? AND seat = ?", (SECRET, game_id, seat))
    db.commit()
    db.close()
    path = out / "replays" / f"{game_id}.jsonl.gz"
    records = [dict(r) for r in read_replay(path).records]
    first = next(r for r in records if r.get("type") == "decision" and r["seat"] == seat)
    first["note"] = f"bot error: {SECRET}"
    reports = records[-1]["seat_reports"]
    reports[seat] = {**reports[seat], "bot_errors": 1, "bot_error": SECRET,
                     "events": [f"bot error on decision {first['n']}: {SECRET}"]}
    write_compact(path, records)
    return str(game_id)


def test_a_bot_errors_text_is_not_on_the_public_pages_of_a_participants_board(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cup.toml").write_text(FILE, encoding="utf-8")
    out = tmp_path / "out"
    assert run_cli(capsys, "tournament", "run", str(tmp_path / "cup.toml"), "--out", str(out))[0] == 0
    game_id = _with_a_bot_error(out)
    roster = Roster.create(tmp_path / "roster")
    alice, bob = roster.add("alice"), roster.add("bob")
    own = f"/p/alice/games/{game_id}/output"

    def read(url: str) -> bytes:
        token = alice if "/p/alice" in url and "as-bob" not in url else bob if "as-bob" in url else None
        request = urllib.request.Request(url.replace("?as-bob", ""),
                                         headers={"Authorization": f"Bearer {token}"} if token else {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as err:
            return f"{err.code}".encode()

    async def pages(roster: str | None, private: bool = False) -> dict[str, bytes]:
        server = WebServer(LiveHub(), Board(folder_source(out)),
                           WebOptions(host="127.0.0.1", port=0, roster=roster, private_errors=private))
        await server.start()
        try:
            paths = ["/", "/games", "/bots/alice.v1", "/api/bots/alice.v1", "/api/games", "/api/standings",
                     f"/games/{game_id}", f"/api/games/{game_id}", f"/api/games/{game_id}/events",
                     f"/api/games/{game_id}/replay"] + ([own, own + "?as-bob"] if roster else [])
            loop = asyncio.get_running_loop()
            return {p: await loop.run_in_executor(None, read, server.url.rstrip("/") + p) for p in paths}
        finally:
            await server.stop()

    public = asyncio.run(pages(None))  # a tournament of the organizer's own bots: the text helps
    assert b"my secret plan" in public["/bots/alice.v1"] and b"my secret plan" in public["/api/games"]
    shown = asyncio.run(pages(str(tmp_path / "roster")))
    owners = shown.pop(own)  # alice's own page of the game: the words, where, and how to rerun it
    assert b"my secret plan" in owners and b"craits replay rerun " in owners and b'id="fault-replay"' in owners
    assert shown.pop(own + "?as-bob") == b"404"  # (bob: as for a page that does not exist)
    for path, body in shown.items():
        text = gzip.decompress(body) if path.endswith("/replay") else body
        assert b"my secret plan" not in text and b"bot.py:13" not in text, path
    assert b"bot errors 1" in shown["/bots/alice.v1"]  # (the fault itself is public)
    # `craits web OUT` of a participants' ladder without --roster: its file names a roster, so the same
    assert not _names_a_roster(folder_source(out))
    db = sqlite3.connect(out / "tournament.db")
    db.execute("UPDATE tournament SET source_text = 'roster = \"class\"\n' || source_text")
    db.commit()
    db.close()
    assert _names_a_roster(folder_source(out))
    assert b"my secret plan" not in asyncio.run(pages(None, private=True))["/bots/alice.v1"]
    served = tmp_path / "served.jsonl.gz"
    served.write_bytes(shown[f"/api/games/{game_id}/replay"])
    verify_replay(served)  # (sealed again: the download still verifies, and reruns)
    assert sum(r["bot_errors"] for r in read_replay(served).result["seat_reports"]) == 1


def test_a_game_against_classmates_keeps_only_the_askers_own_bot_errors() -> None:
    """A scrimmage's replay is on both participants' pages: each reads only their own words."""
    records = [{"type": "header", "seats": [{"bot": "alice.v1"}, {"bot": "bob.v2"}]},
               {"type": "decision", "seat": 0, "note": "bot error: ValueError: mine at a.py:1"},
               {"type": "decision", "seat": 1, "note": "bot error: KeyError: 'theirs' at b.py:2"},
               {"type": "result", "seat_reports": [
                   {"bot_errors": 1, "bot_error": "ValueError: mine at a.py:1", "events": []},
                   {"bot_errors": 1, "bot_error": "KeyError: 'theirs' at b.py:2",
                    "events": ["bot error on decision 2: KeyError: 'theirs' at b.py:2"]}]}]
    seen = hide_others_bot_errors(records, {0})
    assert seen[1]["note"] == "bot error: ValueError: mine at a.py:1" and seen[2]["note"] == "bot error"
    assert seen[3]["seat_reports"][0]["bot_error"] == "ValueError: mine at a.py:1"
    assert seen[3]["seat_reports"][1] == {"bot_errors": 1, "bot_error": "", "events": ["bot error on decision 2"]}


def test_the_boards_live_feed_of_a_participants_board_leaves_the_words_out() -> None:
    async def published(hide: bool) -> bytes:
        hub = LiveHub()
        hub.hide_bot_errors = hide
        hub.publish("games", [{"faults": [{"bot_errors": 1, "first_bot_error": SECRET}]}])
        return hub.latest["games"]

    assert b"my secret plan" in asyncio.run(published(False))
    assert b"my secret plan" not in asyncio.run(published(True)) and b'"bot_errors":1' in asyncio.run(published(True))
