"""``craits roster``: tokens printed once and kept for the teacher in a file only they can read;
mistakes are one line, never a traceback."""

from __future__ import annotations

import csv
import stat
from pathlib import Path

import pytest

from participants.admission import INTERRUPTED
from participants.roster import Roster
from server.cli import main
from server.cli import roster as roster_cli


def test_import_prints_each_token_once_and_keeps_them_in_a_private_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "students.csv").write_text("name,email,team\nalice,a@example.org,red\nbob,,blue\n")
    assert main(["roster", "import", str(tmp_path / "class"), str(tmp_path / "students.csv")]) == 0
    said = capsys.readouterr()
    printed = dict(line.split("\t") for line in said.out.splitlines())
    assert "(hand each to its participant;" in said.err
    kept = tmp_path / "class-tokens.csv"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    rows = list(csv.DictReader(kept.open()))
    assert {r["name"]: r["token"] for r in rows} == printed
    roster = Roster(tmp_path / "class")
    assert roster.authenticate(printed["alice"]) == "alice"
    assert main(["roster", "organizer", str(tmp_path / "class")]) == 0
    assert "(keep it: it opens every participant's pages and the dashboard;" in capsys.readouterr().err
    assert main(["roster", "renew", str(tmp_path / "class"), "bob"]) == 0
    renewed = capsys.readouterr().out.split("\t")[1].strip()
    assert len(list(csv.DictReader(kept.open()))) == 4 and roster.authenticate(renewed) == "bob"
    assert main(["roster", "revoke", str(tmp_path / "class"), "alice"]) == 0
    assert main(["roster", "list", str(tmp_path / "class")]) == 0
    listing = capsys.readouterr().out
    assert "alice" in listing and "revoked" in listing and printed["alice"] not in listing


@pytest.mark.parametrize(("args", "said"), [
    (["roster", "list", "{d}/none"], "no roster here (make one with `craits roster add {d}/none NAME` or `craits roster "
                                     "import`, with --store URL for a ladder kept in PostgreSQL)"),
    (["roster", "import", "{d}/class", "{d}/missing.csv"], "missing.csv: cannot read it"),
    (["roster", "add", "{d}/class", "bad name"], "use 1 to 30 letters"),
    (["roster", "revoke", "{d}/class", "carol"], "carol is not on the roster"),
    (["roster", "set", "{d}/class", "memory=1"], "expected KEY=VALUE with KEY one of build_time_s"),
    (["submit", "{d}/nothing", "--server", "http://127.0.0.1:9"], "no token"),
])
def test_mistakes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                               args: list[str], said: str) -> None:
    monkeypatch.delenv("CRAITS_TOKEN", raising=False)
    Roster.create(tmp_path / "class")
    assert main([a.format(d=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err
    assert said.format(d=tmp_path) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["submit", "{d}"], ["compare", "1", "2"], ["scrimmage", "bob"]])
def test_a_server_address_without_its_scheme_is_said_before_the_token_is_sent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    monkeypatch.setenv("CRAITS_TOKEN", "craits-aaaaaaaa-" + "b" * 32)
    (tmp_path / "bot.py").write_text("pass\n")
    assert main([*(a.format(d=tmp_path / "bot.py") for a in command), "--server", "127.0.0.1:8080"]) == 2
    err = capsys.readouterr().err
    assert "give the ladder's web address with its scheme, e.g. https://127.0.0.1:8080" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_craits_submit_waits_through_a_restart_and_stops_at_the_servers_word(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRAITS_TOKEN", "craits-aaaaaaaa-" + "b" * 32)
    (tmp_path / "bot.py").write_text("pass\n")
    answers: list[object] = [
        {"version": 4, "status": "building", "page": "/p/bob/versions/4"},
        roster_cli.Unreachable("http://x/api/me/versions/4: cannot reach the server: [Errno 111] Connection refused"),
        {"version": 4, "status": "building", "reason": ""},
        {"version": 4, "status": "refused", "reason": INTERRUPTED},
    ]

    def request(*_: object, **__: object) -> object:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(roster_cli, "_request", request)
    monkeypatch.setattr(roster_cli.time, "sleep", lambda _: None)
    assert main(["submit", str(tmp_path / "bot.py"), "--server", "http://127.0.0.1:9"]) == 1
    out = capsys.readouterr().out
    assert "the server does not answer (restarting?)" in out
    assert f"v4: refused: {INTERRUPTED}" in out and answers == []


def test_a_renewed_or_revoked_token_no_longer_looks_alive_in_the_tokens_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "s.csv").write_text("name\nalice\nbob\n", encoding="utf-8")
    roster = str(tmp_path / "class")
    assert main(["roster", "import", roster, str(tmp_path / "s.csv")]) == 0
    first = dict(line.split("\t") for line in capsys.readouterr().out.splitlines())
    assert main(["roster", "renew", roster, "bob"]) == 0
    assert main(["roster", "revoke", roster, "alice"]) == 0
    path = tmp_path / "class-tokens.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    assert [r["name"] for r in rows] == ["alice", "bob", "bob"]
    assert rows[0]["token"].startswith("(revoked ") and rows[1]["token"].startswith("(replaced ")
    assert rows[2]["token"].startswith("craits-") and rows[2]["token"] != first["bob"]
    assert first["alice"] not in path.read_text() and first["bob"] not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Roster(roster).authenticate(rows[2]["token"]) == "bob"
