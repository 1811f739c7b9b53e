"""`craits tournament ...` from the user's side: files, messages, exit codes."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from server.cli import tournament_shared
from server.cli.tournament import choose_runner
from tests.cli import run_cli
from tests.tournaments.configs import builtin_tournament, class_folder
from tournaments.config import load_config
from tournaments.grpc_runner import tournament_runner

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "tournaments" / "examples" / "local-quick.toml"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run_cli(capsys, "tournament", *args)


def test_run_prints_standings_and_leaves_everything_in_the_output_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "quick"
    code, stdout, stderr = run(capsys, "run", str(QUICK), "--out", str(out))
    assert code == 0, stderr
    assert "local-quick: 36/36 games (complete)" in stdout and "head to head" in stdout
    for name in ("tournament.db", "tournament.log", "standings.json", "standings.csv"):
        assert (out / name).is_file(), name
    assert len(list((out / "replays").glob("*.jsonl.gz"))) == 36
    assert json.loads((out / "standings.json").read_text())["games_recorded"] == 36


def test_a_run_with_many_viewer_pages_to_write_says_so_before_writing_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page per game, each holding its whole replay: a 100-bot tournament's 3,900 pages took
    15 minutes after its last game. A run writes each game's page while the next games play,
    so its end has none left to write; pages that are missing then (a folder's viewer/
    removed) are announced before they are written, not left to pass in silence."""
    monkeypatch.setattr(tournament_shared, "PAGES_ANNOUNCED", 30)
    out = tmp_path / "quick"
    code, _, stderr = run(capsys, "run", str(QUICK), "--out", str(out), "--no-progress")
    assert code == 0, stderr
    assert "viewer: writing" not in stderr and len(list((out / "viewer").glob("*.html"))) == 36 + 1, stderr
    shutil.rmtree(out / "viewer")
    code, _, stderr = run(capsys, "resume", str(out))
    said = f"viewer: writing 36 game pages in {out / 'viewer'}"
    assert code == 0 and said in stderr and stderr.index(said) < stderr.index("standings: "), stderr


def test_the_default_output_folder_is_logs_name(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, stderr = run(capsys, "run", str(QUICK))
    assert code == 0, stderr
    assert (tmp_path / "logs" / "local-quick" / "tournament.db").is_file()


def test_running_twice_points_to_resume_or_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "q"
    assert run(capsys, "run", str(QUICK), "--out", str(out))[0] == 0
    code, _, stderr = run(capsys, "run", str(QUICK), "--out", str(out))
    assert code == 2 and "already holds tournament 'local-quick', finished" in stderr and "--overwrite" in stderr
    assert run(capsys, "run", str(QUICK), "--out", str(out), "--overwrite")[0] == 0
    code, _, stderr = run(capsys, "resume", str(out), "--retry-aborted")
    assert code == 0 and "all 36 games are already recorded" in stderr and "0 aborted game(s)" in stderr


def test_standings_exports_csv_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "q"
    run(capsys, "run", str(QUICK), "--out", str(out))
    code, stdout, _ = run(capsys, "standings", str(out), "--csv", str(tmp_path / "s.csv"),
                          "--json", str(tmp_path / "s.json"))
    assert code == 0 and "avg pts" in stdout
    rows = list(csv.DictReader((tmp_path / "s.csv").open()))
    assert sorted(r["bot"] for r in rows) == ["first", "greedy", "random-a", "random-b"]
    assert (tmp_path / "s.json").read_text() == (out / "standings.json").read_text()
    code, stdout, _ = run(capsys, "standings", str(out), "--against", "greedy")
    record = stdout.split("head to head of greedy")[1]
    h2h = json.loads((out / "standings.json").read_text())["head_to_head"]["greedy"]
    for bot in ("first", "random-a", "random-b"):
        cell = h2h[bot]
        line = next(line for line in record.splitlines() if f" {bot} " in line)
        assert line.split()[2:] == [str(cell["ahead"] + cell["behind"] + cell["tied"]), str(cell["ahead"]),
                                    str(cell["behind"]), str(cell["tied"])], line
    code, _, stderr = run(capsys, "standings", str(out), "--against", "nobody")
    assert code == 2 and "no bot 'nobody' in the standings" in stderr and "greedy, " in stderr


def test_resume_refuses_a_changed_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "t.toml"
    config.write_text(QUICK.read_text())
    out = tmp_path / "q"
    run(capsys, "run", str(config), "--out", str(out))
    config.write_text(QUICK.read_text().replace("deals = 3", "deals = 4"))
    code, _, stderr = run(capsys, "resume", str(config), "--out", str(out))
    assert code == 2 and "no longer describes the tournament" in stderr


def test_resume_refuses_a_file_whose_rules_changed_and_says_when_it_plays_the_stored_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A change that moves no seat (the game's flags, the clocks) would be ignored by a resume,
    which plays the tournament as it started: refused, naming what changed; any other change
    (a comment, the concurrency) is said aloud, not silently dropped."""
    config = tmp_path / "t.toml"
    config.write_text(QUICK.read_text())
    out = tmp_path / "q"
    assert run(capsys, "run", str(config), "--out", str(out))[0] == 0
    config.write_text(QUICK.read_text().replace("short_game = true", "short_game = false"))
    code, _, stderr = run(capsys, "resume", str(config), "--out", str(out))
    assert code == 2 and stderr.strip() == (
        f"craits: error: {config} no longer describes the tournament stored in {out} (its game changed); "
        f"resume the folder ({out}) to finish it as it started, or run the file with --overwrite")
    config.write_text(QUICK.read_text().replace("concurrency = 2", "concurrency = 1  # slower"))
    code, _, stderr = run(capsys, "resume", str(config), "--out", str(out))
    assert code == 0 and f"{config}: changed since the tournament in {out} started; it is resumed as it started" in stderr


def test_a_file_whose_output_folder_is_not_here_is_explained_and_no_folder_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The output folder is relative to the current folder, not the file's: resume and standings
    of a FILE run from elsewhere say where they looked, and leave nothing behind."""
    monkeypatch.chdir(tmp_path)
    for command in ("resume", "standings"):
        code, _, stderr = run(capsys, command, str(QUICK))
        assert code == 2 and stderr.strip() == (
            f"craits: error: {QUICK}: no tournament in its output folder logs/local-quick (the default "
            f"logs/<name>, from the current folder: {tmp_path / 'logs' / 'local-quick'}); give the folder it "
            f"was played into, or start it with `craits tournament run {QUICK}`")
    assert not (tmp_path / "logs").exists()


def test_user_mistakes_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(QUICK.read_text().replace("table_size = 3", "table_size = 9"))
    code, _, stderr = run(capsys, "run", str(bad))
    assert code == 2 and stderr.strip().count("\n") == 0
    assert stderr.startswith(f"craits: error: {bad}:4: table_size: must be from 2 to 5")
    assert run(capsys, "resume", str(tmp_path / "nothing"))[0] == 2
    code, _, stderr = run(capsys, "standings", str(tmp_path))
    assert code == 2 and "no tournament.db here" in stderr


def test_the_local_runner_cannot_play_launched_bots(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = run(capsys, "run", str(ROOT / "tournaments" / "demo.toml"), "--runner", "local")
    assert code == 2 and "py-random" in stderr and "--runner grpc" in stderr


def test_a_bot_whose_command_cannot_run_is_refused_before_any_game(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    demo = (ROOT / "tournaments" / "demo.toml").read_text().replace('cwd = "..', f'cwd = "{ROOT}')
    typo = tmp_path / "typo.toml"
    typo.write_text(demo.replace('"bot.js"', '"bto.js"'))
    out = tmp_path / "out"
    code, _, stderr = run(capsys, "run", str(typo), "--out", str(out))
    assert code == 2 and stderr.strip().count("\n") == 0
    reason = f"no such file bto.js (in {ROOT / 'clients' / 'js'})" if shutil.which("node") else "command not found: node"
    assert stderr.strip() == (f"craits: error: {typo}:37: bots[3].command: cannot run 'node bto.js --strategy "
                              f"heuristic': {reason}")
    assert not out.exists()
    code, _, stderr = run(capsys, "plan", str(typo))  # the check of a file says it too
    assert code == 2 and stderr.startswith(f"craits: error: {typo}:37: bots[3].command: cannot run")


def test_every_bot_whose_command_cannot_run_is_named_in_one_line(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A file of many bots with several mistakes is put right in one go: the first in full, the
    lines of the others, not one bot per try."""
    bots = "".join(f'[[bots]]\nname = "b{i}"\ncommand = ["python", "bot{i}.py"]\n\n' for i in range(14))
    file = tmp_path / "many.toml"
    file.write_text(f'name = "many"\ntable_size = 2\nsandbox = "none"\n\n{bots}')
    for i in (0, 1, 2, 3, 4, 5):  # bots 6 to 13 (lines 31 to 59) have no script
        (tmp_path / f"bot{i}.py").write_text("")
    for command in ("plan", "run"):
        code, _, stderr = run(capsys, command, str(file), *(["--no-progress"] if command == "run" else []))
        assert code == 2 and stderr.strip().count("\n") == 0
        assert stderr.strip() == (f"craits: error: {file}:31: bots[7].command: cannot run '{sys.executable} bot6.py': "
                                  f"no such file bot6.py (in {tmp_path}) (and 7 more bots whose command cannot run, "
                                  "at lines 35, 39, 43, 47, 51, 55, 59)")


def test_every_bot_the_referee_cannot_play_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'greedy' is the local runner's alone: a file of a launched bot and many greedy ones names
    all of them (the first dozen), not the first."""
    (tmp_path / "bot.py").write_text("")
    bots = "".join(f'[[bots]]\nname = "g{i}"\nbuiltin = "greedy"\n\n' for i in range(12))
    file = tmp_path / "greedy.toml"
    file.write_text(f'name = "greedy"\ntable_size = 2\nsandbox = "none"\n\n[[bots]]\nname = "mine"\ncommand = ["python", "bot.py"]\n\n'
                    f"{bots}")
    code, _, stderr = run(capsys, "run", str(file), "--no-progress", "--out", str(tmp_path / "out"))
    assert code == 2 and stderr.strip() == (
        "craits: error: bots 'g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7', 'g8', 'g9' and 2 more: the referee has "
        "no builtin 'greedy' (it has default, first, random); use --runner local for a builtin-only tournament")


def test_the_grpc_runner_plays_tournaments_with_launched_bots() -> None:
    config = load_config(ROOT / "tournaments" / "demo.toml")
    assert choose_runner("grpc", config) is tournament_runner
    assert choose_runner("auto", config) is tournament_runner


def test_plan_shows_the_seat_balance(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run(capsys, "plan", str(QUICK))
    assert code == 0 and "4 tables x 3 deals x 3 seat rotations = 36 games" in stdout
    assert stdout.count("seat0=9 seat1=9 seat2=9") == 4


def test_the_plan_says_one_table_and_one_deal_in_the_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two bots at a table of two, one deal: "1 table", "1 deal", not "1 tables", "1 deals"."""
    duel = tmp_path / "duel.toml"
    duel.write_text(builtin_tournament("duel", 1, 1, {"a": "random", "b": "first"}, table_size=2))
    code, stdout, _ = run(capsys, "plan", str(duel))
    assert code == 0 and "\n1 table x 1 deal x 2 seat rotations = 2 games\n" in stdout, stdout
    assert "each pair of bots shares 1 table (average 1.00)" in stdout
    code, _, stderr = run(capsys, "run", str(duel), "--out", str(tmp_path / "duel"), "--no-progress")
    assert code == 0 and ("duel: 2 bots, round robin: 1 table of 2, each played 1 x 2 seat rotations = 2 games, "
                          "every game a fresh deal;") in stderr


# --------------------------------------------------------------------------- a folder in trouble


def test_a_folder_in_use_by_another_process_is_refused_and_left_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two processes in one folder would write the same replays; the second is refused, even
    with --overwrite (which would delete the first one's files under it)."""
    import os

    from tournaments.runner import folder_lock

    out = tmp_path / "q"
    assert run(capsys, "run", str(QUICK), "--out", str(out))[0] == 0
    before = sorted(p.name for p in out.rglob("*"))
    with folder_lock(out):  # as another `craits tournament run` would hold it
        for args in (("run", str(QUICK), "--out", str(out), "--overwrite"), ("resume", str(out))):
            code, _, stderr = run(capsys, *args)
            assert code == 2 and stderr.strip().count("\n") == 0
            assert f"{out} is in use by another craits process (pid {os.getpid()})" in stderr
    assert sorted(p.name for p in out.rglob("*")) == before
    assert run(capsys, "resume", str(out))[0] == 0  # the lock goes with its holder


def test_an_output_path_that_is_a_file_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    code, _, stderr = run(capsys, "run", str(QUICK), "--out", str(afile))
    assert code == 2 and stderr.strip() == f"craits: error: {afile} is a file: the output must be a folder"


def test_a_game_that_cannot_be_recorded_stops_the_run_with_one_line_and_the_way_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under the database: what was recorded stays; resume finishes the rest."""
    import sqlite3

    from server.storage.store import Store

    out = tmp_path / "q"
    original = Store._record_game
    recorded = []

    def full_after_five(self, record):  # type: ignore[no-untyped-def]
        if len(recorded) == 5:
            raise sqlite3.OperationalError("database or disk is full")
        recorded.append(record.game_id)
        original(self, record)

    monkeypatch.setattr(Store, "_record_game", full_after_five)
    code, _, stderr = run(capsys, "run", str(QUICK), "--out", str(out), "--concurrency", "1")
    assert code == 1 and "Traceback" not in stderr
    assert "could not be recorded: database or disk is full" in stderr
    assert f"5/36 games are recorded; after fixing it, continue with: craits tournament resume {out}" in stderr
    monkeypatch.setattr(Store, "_record_game", original)
    code, stdout, _ = run(capsys, "resume", str(out))
    assert code == 0 and "36/36 games (complete)" in stdout


def test_standings_that_cannot_be_written_are_reported_and_the_results_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "q"
    (out / "standings.json").mkdir(parents=True)  # in the way of the file
    code, stdout, stderr = run(capsys, "run", str(QUICK), "--out", str(out))
    assert code == 1 and "36/36 games (complete)" in stdout
    assert f"cannot write the standings files in {out}" in stderr and "the results are safe in" in stderr
    assert not list(out.glob("*.tmp"))


def test_a_damaged_database_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "q"
    assert run(capsys, "run", str(QUICK), "--out", str(out))[0] == 0
    db = out / "tournament.db"
    data = bytearray(db.read_bytes())
    data[4096 * 3 : 4096 * 7] = bytes((i * 151 + 7) % 256 for i in range(4096 * 4))  # pages 4 to 7
    db.write_bytes(bytes(data))
    for command in ("standings", "resume"):
        code, _, stderr = run(capsys, command, str(out))
        assert code == 2 and "Traceback" not in stderr, (command, stderr)
        assert stderr.strip().splitlines()[-1].startswith(f"craits: error: {db}: database disk image is malformed")


@pytest.mark.parametrize("edit, says", [
    ("DELETE FROM seats WHERE game_id = (SELECT min(game_id) FROM results)", "is recorded without its seats"),
    ("UPDATE tournament SET settings = '{'", "the tournament's settings are damaged"),
    ("UPDATE seats SET total = 'x' WHERE seat = 0", "total 'x' is not a number"),
])
def test_a_hand_edited_database_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, says: str
) -> None:
    import sqlite3

    out = tmp_path / "q"
    assert run(capsys, "run", str(QUICK), "--out", str(out))[0] == 0
    with sqlite3.connect(out / "tournament.db") as db:
        db.execute(edit)
    code, _, stderr = run(capsys, "standings", str(out))
    assert code == 2 and "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith(f"craits: error: {out / 'tournament.db'}") and says in stderr


def craits_into_a_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """``craits ARGS... | head`` when head has already gone: standard output is a pipe nobody reads."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "server.cli", *args], cwd=ROOT, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=300, check=False)
    finally:
        os.close(write)


def test_output_piped_into_a_reader_that_stops_costs_neither_a_traceback_nor_the_standings_files(
    tmp_path: Path,
) -> None:
    """`craits tournament run FILE | head`: the results and their files are all there, and
    neither run, standings nor plan shows a traceback when the reader goes away."""
    out = tmp_path / "q"
    ran = craits_into_a_closed_pipe("tournament", "run", str(QUICK), "--out", str(out), "--no-progress")
    assert "Traceback" not in ran.stderr and "Exception" not in ran.stderr, ran.stderr
    assert json.loads((out / "standings.json").read_text())["games_recorded"] == 36
    assert (out / "standings.csv").is_file() and (out / "viewer" / "index.html").is_file()
    for args in (("standings", str(out)), ("plan", str(QUICK))):
        shown = craits_into_a_closed_pipe("tournament", *args)
        assert shown.returncode == 141 and shown.stderr == "", (args, shown.stderr)


def test_a_bot_that_crashes_in_every_game_is_named_with_where_its_output_is(tmp_path: Path) -> None:
    """A student's script that dies at start shows in the standings only as never_connected:
    the run says so in words, and where the traceback is."""
    (tmp_path / "dead").mkdir()
    (tmp_path / "dead" / "bot.py").write_text("raise SystemExit('boom: no module named numpy')\n")
    config = tmp_path / "class.toml"
    config.write_text('name = "class"\ntable_size = 2\nsandbox = "none"\n\n[flags]\nshort_game = true\n\n'
                      '[[bots]]\nname = "dead"\ncommand = ["python", "bot.py"]\ncwd = "dead"\n\n'
                      '[[bots]]\nname = "house"\nbuiltin = "random"\n\n[[bots]]\nname = "first"\nbuiltin = "first"\n')
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "server.cli", "tournament", "run", str(config), "--out", str(out),
                           "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert (f"craits: warning: dead never connected in 4 of its 4 games (the default policy played for them); "
            f"what launched bots printed (a crash's traceback, say) is in {out / 'bots'}") in done.stderr
    logs = list((out / "bots").glob("dead-*.log"))
    assert len(logs) == 4 and all("boom: no module named numpy" in log.read_text() for log in logs)


def test_a_log_that_cannot_be_written_is_one_line_not_a_traceback_per_event(tmp_path: Path) -> None:
    """A full disk under the referee's log (here /dev/full, which refuses every write): the games
    are played and recorded, and the log's trouble is said in one line, not logging's traceback
    for each of its events."""
    config = tmp_path / "t.toml"
    config.write_text(builtin_tournament("full", seed=3, deals=1, bots={"r": "random", "f": "first", "d": "default"}))
    out = tmp_path / "q"
    out.mkdir()
    (out / "referee.jsonl").symlink_to("/dev/full")
    done = subprocess.run([sys.executable, "-m", "server.cli", "tournament", "run", str(config), "--out", str(out),
                           "--runner", "grpc", "--no-progress"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("craits: cannot write the log")]
    assert said and set(said) == {f"craits: cannot write the log {out / 'referee.jsonl'}: No space left on device; "
                                  "its events are lost until there is room"}
    assert json.loads((out / "standings.json").read_text())["games_recorded"] == 3


def test_a_sandboxed_bot_whose_folder_holds_the_output_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simplest class folder (the file, the bots' scripts, craits run there): a bot's cwd is
    the file's folder, which would hold logs/<name>/, whose replays show the deals still to be
    played. Refused with the way out; trusted bots (--no-sandbox) read everything anyway."""
    class_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, _, stderr = run(capsys, "run", "class.toml")
    assert code == 2 and stderr.strip() == (
        f"craits: error: bot 'alice' could read the output folder logs/class, which is inside its cwd (by default "
        f"the tournament file's folder) {tmp_path}: the replays there show the deals still to be played; give each "
        f'bot a folder of its own (cwd = "..." in the file), or put the output elsewhere (--out)')
    assert not (tmp_path / "logs").exists()
    code, stdout, _ = run(capsys, "run", "class.toml", "--no-sandbox", "--no-progress")
    assert code == 0 and "class: 2/2 games (complete)" in stdout
    with sqlite3.connect(tmp_path / "logs" / "class" / "tournament.db") as db:  # (a game left to play again)
        db.execute("UPDATE results SET aborted = 'the referee is shutting down' WHERE rowid = 1")
    db.close()
    code, _, stderr = run(capsys, "resume", "logs/class", "--retry-aborted")  # (a resume plays the file as stored)
    assert code == 2 and stderr.strip().endswith("the replays there show the deals still to be played; move the "
                                                 "folder out of it, and resume it there")


def test_the_time_line_promises_only_what_will_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Off a terminal one estimate comes after 10 s of games; with --no-progress none at all."""
    code, _, stderr = run(capsys, "run", str(QUICK), "--out", str(tmp_path / "a"), "--no-progress")
    assert code == 0 and "time:" not in stderr
    code, _, stderr = run(capsys, "run", str(QUICK), "--out", str(tmp_path / "b"))
    assert code == 0 and "time: estimated once the first 10 s of games have measured this machine's speed" in stderr


def test_standings_and_a_finished_resume_need_no_bots_and_a_resume_that_plays_says_when_they_have_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bots' folders deleted or moved after the class: the standings (of a tournament or a
    ladder) are still read, and so is a finished tournament resumed (every game is recorded:
    nothing to launch); a resume with games to play, which needs the bots, says which and where."""
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "bot.py").write_text("raise SystemExit(1)\n")
    config = tmp_path / "class.toml"
    config.write_text('name = "class"\ntable_size = 2\nsandbox = "none"\n\n[[bots]]\nname = "alice"\n'
                      'command = ["python", "bot.py"]\ncwd = "alice"\n\n[[bots]]\nname = "house"\nbuiltin = "random"\n')
    out, ladder = tmp_path / "out", tmp_path / "ladder"
    assert run(capsys, "run", str(config), "--out", str(out), "--no-progress")[0] == 0
    assert run_cli(capsys, "ladder", "run", str(config), "--out", str(ladder), "--rounds", "1")[0] == 0
    (tmp_path / "alice").rename(tmp_path / "alice-2025")
    code, stdout, _ = run(capsys, "standings", str(out))
    assert code == 0 and "class: 2/2 games (complete)" in stdout
    code, stdout, _ = run_cli(capsys, "ladder", "standings", str(ladder))
    assert code == 0 and "class: ladder: 1 round played, 2 games; the last run stopped after 1 new round" in stdout
    for target, options in ((out, ()), (config, ("--out", str(out))), (out, ("--retry-aborted",))):
        code, stdout, stderr = run(capsys, "resume", str(target), *options)
        assert code == 0, stderr
        assert stderr.startswith("class: 0 aborted game(s) will be played again\n" if options == ("--retry-aborted",)
                                 else "class: all 2 games are already recorded\n"), stderr
        assert stdout.startswith("class: 2/2 games (complete)"), stdout
    with sqlite3.connect(out / "tournament.db") as db:  # (a game the referee's shutdown cut short)
        db.execute("UPDATE results SET aborted = 'the referee is shutting down' WHERE rowid = 1")
    db.close()
    code, _, stderr = run(capsys, "resume", str(out), "--retry-aborted")
    assert code == 2 and stderr.strip() == (
        f"craits: error: {out}: the tournament plays its file as stored when it started, which no longer fits here: "
        f"{config}:8: bots[1].cwd: 'alice' is not a folder (resolved to {tmp_path / 'alice'}) (put the bots where "
        f"they were to resume it)")
    with sqlite3.connect(out / "tournament.db") as db:  # (the refusal kept it, to be played once the bots are back)
        assert db.execute("SELECT count(*) FROM results WHERE aborted != ''").fetchone()[0] == 1
    db.close()


def test_overwrite_leaves_nothing_of_the_earlier_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--overwrite: the earlier run's bots' output and referee log go with its database (the
    new run's warnings point there), as do its standings and pages."""
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / "bot.py").write_text("raise SystemExit(1)\n")
    config = tmp_path / "t.toml"
    text = ('name = "t"\ntable_size = 2\nsandbox = "none"\n\n[[bots]]\nname = "NAME"\ncommand = ["python", "bot.py"]\n'
            'cwd = "bots"\n\n[[bots]]\nname = "house"\nbuiltin = "random"\n')
    config.write_text(text.replace("NAME", "old"))
    out = tmp_path / "out"
    assert run(capsys, "run", str(config), "--out", str(out), "--no-progress")[0] == 0
    assert sorted(p.name.split("-")[0] for p in (out / "bots").iterdir()) == ["old", "old"]
    config.write_text(text.replace("NAME", "new"))
    (out / "organizer.jsonl").write_text('{"bot": "old"}\n')  # (an earlier run of the file on PostgreSQL)
    assert run(capsys, "run", str(config), "--out", str(out), "--no-progress", "--overwrite")[0] == 0
    assert not (out / "organizer.jsonl").exists()
    assert sorted(p.name.split("-")[0] for p in (out / "bots").iterdir()) == ["new", "new"]
    assert '"old"' not in (out / "referee.jsonl").read_text()
