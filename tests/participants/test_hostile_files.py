"""A hostile student against the server's files (issue 36): the roster is the server's user's
alone, a build cannot make the server touch anything outside its folder, what a build and a
bot leave on disk is bounded and said, and a refusal tells nothing about the server's files.
Real rosters, real uploads, real builds in the real sandbox."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from participants.admission import BuildLimits, admit, admit_pending, roster_limits
from participants.roster import KEY_FILE, Roster, RosterError
from server.cli import main
from server.engine import make_config
from server.spec import BotSpec, Clocks, GameRecord, GameSpec, SeatStatus
from server.transport import sandbox
from server.transport.sandbox import Limits
from server.transport.service import Arena, ArenaOptions
from server.web.participants import game_output
from tests.participants.conftest import LADDER
from tests.participants.uploads import RANDOM_BOT, good_bot, zip_of

QUICK = BuildLimits(time_s=20.0, memory=256 * 2**20, processes=32, output=8192)


@pytest.fixture(autouse=True)
def _bwrap_works() -> None:
    if (why := sandbox.problem()) is not None:
        pytest.skip(f"the sandbox cannot run here: {why}")


@pytest.fixture
def roster(tmp_path: Path) -> Roster:
    made = Roster.create(tmp_path / "roster")
    made.add("alice")
    made.add("bob")
    return made


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# ---------------------------------------------------------------------------- 1: the roster is private


def test_a_roster_is_the_servers_alone_and_its_signing_key_is_not_in_its_database(roster: Roster) -> None:
    key = roster.secret()
    assert _mode(roster.folder) == 0o700
    assert _mode(roster.db_path) == 0o600
    assert _mode(roster.folder / KEY_FILE) == 0o600
    for sub in ("uploads", "versions", "tmp"):
        assert _mode(roster.folder / sub) == 0o700, sub
    with sqlite3.connect(roster.db_path) as db:
        held = [row[0] for row in db.execute("SELECT value FROM settings")]
    assert key.hex() not in held and roster.secret() == key


def test_a_roster_others_can_read_is_refused_with_the_chmod_that_fixes_it(roster: Roster) -> None:
    with sqlite3.connect(roster.db_path) as db:  # (an older roster: its key in its database, all of it 0644)
        db.execute("INSERT INTO settings (key, value) VALUES ('secret', ?)", ("ab" * 32,))
    os.chmod(roster.folder, 0o755)
    os.chmod(roster.db_path, 0o644)
    with pytest.raises(RosterError) as refused:
        roster.secret()
    said = str(refused.value)
    assert f"chmod go-rwx {roster.folder} {roster.db_path}" in said
    ladder = roster.folder.parent / "class.toml"
    ladder.write_text(LADDER, encoding="utf-8")
    done = subprocess.run([str(Path(sys.executable).parent / "craits"), "ladder", "run", str(ladder), "--out",
                           str(roster.folder.parent / "out"), "--web", "127.0.0.1:0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"chmod go-rwx {roster.folder} {roster.db_path}" in done.stderr
    subprocess.run(["sh", "-c", said.rsplit("\n", 1)[-1].strip()], check=True)  # (the fix, as said)
    assert roster.secret() != bytes.fromhex("ab" * 32)  # (the key others could read is dropped)
    with sqlite3.connect(roster.db_path) as db:
        assert db.execute("SELECT value FROM settings WHERE key = 'secret'").fetchone() is None


def test_a_roster_kept_in_postgresql_is_private_too_and_its_database_holds_no_signing_key(
        tmp_path: Path, pg_url: str) -> None:
    roster = Roster.create(tmp_path / "class", pg_url)
    roster.add("alice")
    key = roster.secret()
    assert _mode(roster.folder) == 0o700 and _mode(roster.folder / KEY_FILE) == 0o600
    assert _mode(roster.folder / "store.toml") == 0o600
    with psycopg.connect(pg_url) as conn:
        held = [row[0] for row in conn.execute("SELECT value FROM craits_roster_settings")]
    assert key.hex() not in held
    os.chmod(roster.folder, 0o711)
    with pytest.raises(RosterError, match=f"chmod go-rwx {roster.folder}$"):
        roster.secret()


# ---------------------------------------------------------------------------- 2: links are never followed


def test_a_link_a_build_leaves_cannot_make_the_server_chmod_what_it_points_to(roster: Roster, tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "note").write_text("mine")
    os.chmod(private / "note", 0o600)
    version = roster.submit("alice", good_bot(build=f"ln -s {private} pwn; ln -s {private}/note n; exit 1"), "a.zip")
    outcome = admit(roster, version, limits=QUICK)
    assert outcome.status == "refused" and "exit status 1" in outcome.reason
    assert _mode(private) == 0o700 and _mode(private / "note") == 0o600


# ---------------------------------------------------------------------------- 3: a build's disk


def test_what_a_build_leaves_is_bounded_and_the_limit_named(roster: Roster) -> None:
    roster.set_limits({"build_disk": 2 * 2**20, "build_files": 100, "build_time_s": 60})
    roster.add("carol")
    roster.add("dave")
    endless = roster.submit("dave", good_bot(build="i=0; while :; do head -c 500000 /dev/zero > f$i; i=$((i+1)); done"),
                            "d.zip")
    one = roster.submit("alice", good_bot(build="head -c 3000000 /dev/zero > blob"), "a.zip")
    three = roster.submit("bob", good_bot(build="for i in 1 2 3; do head -c 1000000 /dev/zero > blob$i; done"), "b.zip")
    many = roster.submit("carol", good_bot(build="mkdir d; for i in $(seq 150); do : > d/$i; done"), "c.zip")
    done = {v.id: o for v, o in admit_pending(roster)}
    assert done[one.id].status == "refused" and "a file past the limit of 2 MiB (build_disk" in done[one.id].reason
    assert done[three.id].status == "refused"
    assert "the build left 2.9 MiB in its folder: the limit is 2 MiB (build_disk" in done[three.id].reason
    assert done[many.id].status == "refused" and "the limit is 100 (build_files" in done[many.id].reason
    assert done[endless.id].status == "refused" and "the limit is 2 MiB (build_disk" in done[endless.id].reason
    assert not any(roster.temp_dir().glob("build-*"))
    assert not (roster.folder / "versions").exists() or not any((roster.folder / "versions").rglob("blob*"))


def test_the_organizer_sets_the_build_disk_and_output_budget_and_a_slip_of_the_unit_is_refused(
        roster: Roster, capsys: pytest.CaptureFixture[str]) -> None:
    folder = str(roster.folder)
    assert main(["roster", "set", folder, "build_disk=100MiB", "build_files=2000", "output_budget=32MiB"]) == 0
    assert "100 MiB and 2000 files left in the folder" in capsys.readouterr().out
    assert roster_limits(roster)[0] == BuildLimits(disk=100 * 2**20, files=2000)
    assert main(["roster", "set", folder, "output_budget=64KiB"]) == 2
    assert "output_budget: 64 KiB is too small: at least 1 MiB" in capsys.readouterr().err
    assert main(["roster", "set", folder, "build_files=0"]) == 2
    assert roster.limits()["output_budget"] == 32 * 2**20


# ---------------------------------------------------------------------------- 9: refusals say nothing of the server


def test_a_command_cannot_ask_about_another_participants_version(roster: Roster) -> None:
    bobs = roster.folder / "versions" / "bob" / "v1"
    bobs.mkdir(parents=True)
    (bobs / "bot").write_text("#!/bin/sh\n")  # (bob's v1 is there, not executable; his v9 is not there)
    said = []
    for number in (1, 9):
        command = f'command = ["../../versions/bob/v{number}/bot"]\n'
        version = roster.submit("alice", zip_of({"bot.toml": command, "bot.py": RANDOM_BOT}), "a.zip")
        said.append(admit(roster, version, limits=QUICK).reason)
    assert said[0] == said[1].replace("v9", "v1")
    assert "outside the bot's folder" in said[0]
    missing = roster.submit("alice", zip_of({"bot.toml": 'command = ["python", "nothere.py"]\n'}), "c.zip")
    reason = admit(roster, missing, limits=QUICK).reason
    assert "nothere.py" in reason and str(roster.folder) not in reason and "/tmp" not in reason, reason


# ---------------------------------------------------------------------------- 10: a build knows where it is


def test_a_build_can_open_its_own_folder_by_its_absolute_path(roster: Roster) -> None:
    version = roster.submit("alice", good_bot(build='cd "$(pwd)" && ls "$(pwd)/bot.py"'), "a.zip")
    outcome = admit(roster, version, limits=QUICK)
    assert "bot.py" in outcome.build_log and "Permission denied" not in outcome.build_log, outcome.build_log
    assert outcome.status == "admitted", outcome.reason



# ---------------------------------------------------------------------------- 4: a bot's output across launches


CHATTY = """import os, sys
from craits_bot import Bot, run


class Chatty(Bot):
    def choose(self, request):
        return request.legal_actions[0]

    def on_game_end(self, game):
        os._exit(0)  # (one game per process)


sys.stdout.write("x" * (3 * 2**20 // 2) + "\\n")
sys.stdout.flush()
run(Chatty())
"""


def test_a_bot_that_prints_much_and_exits_after_every_game_keeps_within_its_output_budget(tmp_path: Path) -> None:
    folder = tmp_path / "chatty"
    folder.mkdir(mode=0o755)
    (folder / "bot.py").write_text(CHATTY)
    logs = tmp_path / "bots"
    budget = 2 * 2**20
    options = ArenaOptions(bot_log_dir=logs, sandbox="bwrap", bot_output_limit_bytes=2**20,
                           limits=Limits(output=2**20, output_budget=budget))
    seats = (BotSpec("chatty.v1", "", command=("python", "bot.py"), cwd=str(folder)),
             BotSpec("house", "", builtin="random"))

    async def play() -> list[GameRecord]:
        arena = await Arena.start("127.0.0.1:0", options)
        arena.keep_bots()
        try:
            return [await arena.run_game(GameSpec(f"g{n}", make_config("craits", 2, short_game=True), n, seats,
                                                  Clocks(connect_timeout_s=30.0))) for n in range(4)]
        finally:
            await arena.shutdown(grace_s=1)

    records = asyncio.run(play())
    assert all(r.seats[0].status is SeatStatus.OK for r in records), [r.seats[0] for r in records]
    kept = sorted(logs.glob("chatty.v1-*.log"))
    assert sum(p.stat().st_size for p in kept) <= budget + 4096, [(p.name, p.stat().st_size) for p in kept]
    last = game_output(logs, "chatty.v1", "g3", 0)
    assert last is not None and "older log(s) of this bot removed" in last
    assert "ended after its game (it exited or closed its stream) 3 time(s) in 3 launch(es)" in last
