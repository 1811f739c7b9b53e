"""The continuous ladder: who plays next, rounds that survive a stop, bots that come and go."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from server.storage.store import Store
from tests.cli import run_cli
from tests.tournaments.configs import builtin_tournament
from tournaments import pages
from tournaments.config import TournamentConfig, parse_config
from tournaments.ladder import (
    LadderRound,
    history,
    ladder_standings,
    next_round,
    next_rounds,
    open_ladder,
    pick_table,
    run_ladder,
)
from tournaments.runner import TournamentRunner, local_runner
from tournaments.standings import Standings

ROOT = Path(__file__).resolve().parents[2]
FIVE = {"r1": "random", "r2": "random", "first": "first", "greedy": "greedy", "default": "default"}


def ladder_file(tmp_path: Path, bots: dict[str, str] = FIVE, table_size: int = 3, name: str = "ladder.toml") -> Path:
    path = tmp_path / name
    path.write_text(builtin_tournament("ladder", seed=7, deals=1, bots=bots, table_size=table_size))
    return path


def ladder(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run_cli(capsys, "ladder", *args)


def schedule(out: Path) -> list[tuple[str, tuple[str, ...], int]]:
    with Store(out / Store.FILENAME) as store:
        return [(g.game_id, g.seats, g.seed) for g in store.games()]


# ------------------------------------------------------------------ who plays next


def pick(bots: list[str], rounds: dict[str, int] | None = None, ordinals: dict[str, float] | None = None,
         met: dict[frozenset[str], int] | None = None, table_size: int = 2, round_no: int = 1) -> tuple[str, ...]:
    return pick_table(bots, table_size, rounds_played=rounds or {}, ordinals=ordinals or {}, met=met or {},
                      seed=7, round_no=round_no)


def test_the_bot_that_has_played_least_sits_first_and_the_least_played_join_it() -> None:
    rounds = {"a": 5, "b": 2, "c": 4, "d": 3, "e": 5}
    assert pick(list(rounds), rounds, table_size=3) == ("b", "d", "c")


def test_among_equally_played_bots_the_closest_rating_is_preferred() -> None:
    rounds = {"a": 1, "b": 2, "c": 2, "d": 2}
    ordinals = {"a": 10.0, "b": 0.0, "c": 9.5, "d": 25.0}
    assert pick(list(rounds), rounds, ordinals) == ("a", "c")


def test_among_equally_played_and_equally_rated_bots_the_one_met_least_is_preferred() -> None:
    rounds = {"a": 1, "b": 2, "c": 2}
    ordinals = {"a": 5.0, "b": 5.2, "c": 4.9}  # less than a rating point apart: equally close
    met = {frozenset(("a", "b")): 3, frozenset(("a", "c")): 1}
    assert pick(list(rounds), rounds, ordinals, met) == ("a", "c")


def test_ties_are_broken_by_the_rounds_seeded_draw() -> None:
    bots = ["a", "b", "c", "d", "e", "f"]
    tables = {pick(bots, round_no=n, table_size=3) for n in range(1, 30)}
    assert len(tables) > 5  # the draw varies with the round...
    assert all(pick(bots, round_no=n, table_size=3) == pick(bots, round_no=n, table_size=3) for n in range(1, 30))


def test_too_few_bots_for_a_table_is_refused() -> None:
    with pytest.raises(ValueError, match="2 bots cannot fill a table of 3"):
        pick(["a", "b"], table_size=3)


def test_a_round_is_one_table_in_every_seat_rotation_each_game_its_own_deal(tmp_path: Path) -> None:
    config = parse_config(ladder_file(tmp_path).read_text())
    with open_ladder(config, "", "ladder.toml", tmp_path / "out") as store:
        first = next_round(config, store, ladder_standings(config, store))
        second = next_round(config, store, ladder_standings(config, store))
        played, met, number = history(store.games())
    assert [g.game_id for g in first.games] == ["round000001-r1", "round000001-r2", "round000001-r3"]
    assert len({g.seed for g in (*first.games, *second.games)}) == 6  # no bot meets a deal twice
    assert sorted(g.seats for g in first.games) == sorted(
        first.seats[r:] + first.seats[:r] for r in range(3)
    )
    assert [g.ordinal for g in (*first.games, *second.games)] == list(range(6))
    assert number == 3 and sum(played.values()) == 6
    assert sum(met.values()) == 6  # three pairs at each of the two tables


def test_rounds_picked_together_seat_distinct_bots_as_far_as_the_bots_go(tmp_path: Path) -> None:
    config = parse_config(ladder_file(tmp_path, FIVE, 2).read_text())
    with open_ladder(config, "", "ladder.toml", tmp_path / "out") as store:
        together = next_rounds(config, store, ladder_standings(config, store), None, 3)  # room for two
        alone = next_rounds(config, store, ladder_standings(config, store), {"r1", "r2"}, 2)
    assert [r.number for r in together] == [1, 2] and not set(together[0].seats) & set(together[1].seats)
    assert [r.number for r in alone] == [3] and set(alone[0].seats) == {"r1", "r2"}


# ------------------------------------------------------------------ running


def test_a_ladder_plays_its_rounds_balances_the_bots_and_ranks_them_by_rating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = ladder(capsys, "run", str(ladder_file(tmp_path)), "--out", str(out), "--rounds", "10")
    assert code == 0, stderr
    assert stderr.count("\nround ") + stderr.startswith("round ") == 10 and "round 10: " in stderr
    games = schedule(out)
    assert len(games) == 30 and len(list((out / "replays").glob("*.jsonl.gz"))) == 30
    rounds = Counter(bot for game_id, seats, _ in games if game_id.endswith("-r1") for bot in seats)
    assert sorted(rounds) == sorted(FIVE) and max(rounds.values()) - min(rounds.values()) <= 1
    document = json.loads((out / "standings.json").read_text())
    ordinals = [row["rating_ordinal"] for row in document["standings"]]
    assert ordinals == sorted(ordinals, reverse=True) and document["games_recorded"] == 30
    assert "head to head" in stdout
    # which neighbours are settled, live: each round's line and standings.json (the board reads it)
    assert "neighbours settled (valid at any time)" in stderr and "order valid at any time" in stdout
    assert document["anytime"]["label"] == "valid at any time" and len(document["anytime"]["neighbours"]) == 4


def test_a_ladder_plays_enough_tables_at_once_to_keep_its_concurrency_busy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Five bots in tables of two, four games at a time: two rounds at once (no bot at both)."""
    out = tmp_path / "out"
    code, _, stderr = ladder(capsys, "run", str(ladder_file(tmp_path, FIVE, 2)), "--out", str(out),
                             "--rounds", "5", "--concurrency", "4")
    assert code == 0, stderr
    assert "tables of 2, 2 at once" in stderr and "round 5: " in stderr and "round 6" not in stderr
    tables = {int(game_id[5:11]): set(seats) for game_id, seats, _ in schedule(out) if game_id.endswith("-r1")}
    assert sorted(tables) == [1, 2, 3, 4, 5]
    assert not tables[1] & tables[2] and not tables[3] & tables[4]
    events = [json.loads(line) for line in (out / "tournament.log").read_text().splitlines()]
    assert [e["pending"] for e in events if e["event"] == "tournament_started"] == [4, 4, 2]
    rounds = Counter(bot for seated in tables.values() for bot in seated)
    assert sorted(rounds.values()) == [2, 2, 2, 2, 2]


def test_a_running_ladders_standings_after_each_round_are_those_of_all_its_games(tmp_path: Path) -> None:
    """The ladder keeps a running tally (a round costs the same after weeks of rounds): after
    every round, its standings are what reading and rating every recorded game gives, also
    when it resumes a round that was cut off (an earlier game recorded after later ones)."""
    config = parse_config(ladder_file(tmp_path, FIVE, 2).read_text())
    out = tmp_path / "out"
    checked: list[int] = []
    with open_ladder(config, "", "ladder.toml", out) as store:
        cut = next_rounds(config, store, ladder_standings(config, store), None, 2)  # two tables stored...
        first = cut[1].games[0]
        asyncio.run(_record_one(config, store, out, first.game_id))  # ...of which one game is recorded

        def check(played: LadderRound, standings: Standings) -> None:
            checked.append(played.number)
            assert standings.to_dict() == ladder_standings(config, store).to_dict(), played.number

        summary = asyncio.run(run_ladder(config, store, out, local_runner, rounds=6, concurrency=4,
                                         on_round=check, handle_signals=False))
        assert summary.games == 3 + 12 and ladder_standings(config, store).games_recorded == 16
    assert checked == [3, 4, 5, 6, 7, 8]


def test_a_ladder_writes_each_rounds_viewer_pages_as_it_goes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopping a ladder that ran for weeks must not write a viewer page for every game it
    played: each round's pages are written after the round, and the listing at the end
    finds them current (it reads no replay through)."""
    config = parse_config(ladder_file(tmp_path, FIVE, 3).read_text())
    out = tmp_path / "out"
    with open_ladder(config, "", "ladder.toml", out) as store:
        asyncio.run(run_ladder(config, store, out, local_runner, rounds=3, concurrency=2, handle_signals=False))
        games = [r.game_id for r in store.results()]
        assert len(games) == 9
        assert sorted(p.stem for p in (out / "viewer").glob("*.html")) == sorted(games)

        def read_through(path: Path) -> None:
            raise AssertionError(f"{path} was read through again")

        monkeypatch.setattr(pages, "read_replay", read_through)
        index = pages.write_viewer_pages(store, out, title="ladder")
    assert all(f'href="{game}.html"' in index.read_text() for game in games)


def test_a_ladders_round_reads_no_whole_schedule(tmp_path: Path) -> None:
    """A round costs the same after weeks: finding the unrecorded games reads the whole
    schedule, so it is done once, for a round that was cut off, and never for new rounds."""
    config = parse_config(ladder_file(tmp_path, FIVE, 3).read_text())
    out = tmp_path / "out"
    with open_ladder(config, "", "ladder.toml", out) as store:
        whole = store.pending_games
        reads: list[int] = []

        def pending_games() -> list[Any]:
            reads.append(1)
            return whole()

        store.pending_games = pending_games  # type: ignore[method-assign]
        asyncio.run(run_ladder(config, store, out, local_runner, rounds=4, concurrency=1, handle_signals=False))
        assert len(store.results()) == 12 and reads == []
        next_rounds(config, store, ladder_standings(config, store), None, 1)  # a round stored, not played
        asyncio.run(run_ladder(config, store, out, local_runner, rounds=1, concurrency=1, handle_signals=False))
        assert len(store.results()) == 18 and reads == [1]


def test_a_ladders_log_moved_away_is_written_again_at_its_name(tmp_path: Path) -> None:
    """A ladder runs for weeks with its tournament.log open: rotating it (logrotate moves it
    away, no copytruncate) must not leave the ladder writing to the moved file for ever."""
    config = parse_config(ladder_file(tmp_path, FIVE, 3).read_text())
    out = tmp_path / "out"
    log, moved = out / "tournament.log", out / "tournament.log.1"

    def rotate(played: LadderRound, _standings: Standings) -> None:
        if played.number == 2:
            log.rename(moved)

    with open_ladder(config, "", "ladder.toml", out) as store:
        asyncio.run(run_ladder(config, store, out, local_runner, rounds=4, concurrency=1, on_round=rotate,
                               handle_signals=False))

    def rounds(path: Path) -> list[int]:
        return [e["round"] for e in map(json.loads, path.read_text().splitlines()) if e["event"] == "ladder_round"]

    assert rounds(moved) == [1, 2] and rounds(log) == [3, 4]


async def _record_one(config: TournamentConfig, store: Store, out: Path, game_id: str) -> None:
    """Play and record one stored game, as an interrupted run would have before it stopped."""
    slot = next(g for g in store.games() if g.game_id == game_id)
    async with local_runner(config, out) as run_game:
        runner = TournamentRunner(config, store, run_game, out, progress=False, handle_signals=False)
        store.record_game(await run_game(runner.spec_for(slot)))


def test_a_ladder_continued_in_two_runs_plays_the_same_games_as_in_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = ladder_file(tmp_path)
    straight, twice = tmp_path / "straight", tmp_path / "twice"
    assert ladder(capsys, "run", str(file), "--out", str(straight), "--rounds", "6")[0] == 0
    assert ladder(capsys, "run", str(file), "--out", str(twice), "--rounds", "2")[0] == 0
    code, _, stderr = ladder(capsys, "run", str(file), "--out", str(twice), "--rounds", "4")
    assert code == 0 and "6 games recorded so far" in stderr and "round 3: " in stderr
    assert schedule(twice) == schedule(straight)
    assert (twice / "standings.json").read_bytes() == (straight / "standings.json").read_bytes()
    code, stdout, _ = ladder(capsys, "standings", str(twice))
    assert code == 0 and "6 rounds played, 18 games; the last run stopped after 4 new rounds (--rounds 4, " in stdout


def test_a_bot_added_to_the_file_plays_next_and_a_bot_removed_keeps_its_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    three = {"r1": "random", "first": "first", "greedy": "greedy"}
    assert ladder(capsys, "run", str(ladder_file(tmp_path, three, 2)), "--out", str(out), "--rounds", "3")[0] == 0
    joined = ladder_file(tmp_path, {**three, "newcomer": "default"}, 2)
    code, _, stderr = ladder(capsys, "run", str(joined), "--out", str(out), "--rounds", "1")
    assert code == 0, stderr
    assert "round 4: newcomer, " in stderr
    left = ladder_file(tmp_path, {"first": "first", "greedy": "greedy", "newcomer": "default"}, 2)
    code, stdout, stderr = ladder(capsys, "run", str(left), "--out", str(out), "--rounds", "2")
    assert code == 0, stderr
    assert all("r1" not in seats for game_id, seats, _ in schedule(out)[8:])
    assert "r1 " in stdout  # still in the standings, with the games it played
    assert {row["bot"] for row in json.loads((out / "standings.json").read_text())["standings"]} == {
        "r1", "first", "greedy", "newcomer"}


def test_the_unplayed_games_of_a_bot_that_left_are_dropped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    config = parse_config(ladder_file(tmp_path).read_text())
    with open_ladder(config, "", "ladder.toml", out) as store:
        stored = next_round(config, store, ladder_standings(config, store))  # stored, not played
    leaving = stored.seats[0]
    rest = {bot: policy for bot, policy in FIVE.items() if bot != leaving}
    code, _, stderr = ladder(capsys, "run", str(ladder_file(tmp_path, rest)), "--out", str(out), "--rounds", "1")
    assert code == 0, stderr
    assert "3 unplayed game(s) of bots no longer in" in stderr
    games = schedule(out)  # the dropped round never happened: the next one takes its number
    assert [game_id for game_id, _, _ in games] == ["round000001-r1", "round000001-r2", "round000001-r3"]
    assert all(leaving not in seats for _, seats, _ in games)


def test_the_game_of_a_ladder_cannot_change_under_its_ratings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert ladder(capsys, "run", str(ladder_file(tmp_path)), "--out", str(out), "--rounds", "1")[0] == 0
    longer = tmp_path / "longer.toml"
    longer.write_text(ladder_file(tmp_path).read_text().replace("short_game = true", "short_game = false"))
    code, _, stderr = ladder(capsys, "run", str(longer), "--out", str(out), "--rounds", "1")
    assert code == 2
    assert "plays short_game = true; this file asks for short_game = false" in stderr and "--overwrite" in stderr
    code, _, stderr = ladder(capsys, "run", str(longer), "--out", str(out), "--rounds", "1", "--overwrite")
    assert code == 0 and [g for g, _, _ in schedule(out)] == ["round000001-r1", "round000001-r2", "round000001-r3"]


def test_a_ladder_and_a_tournament_do_not_share_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = ladder_file(tmp_path)
    ladder_out, tournament_out = tmp_path / "ladder", tmp_path / "tournament"
    assert ladder(capsys, "run", str(file), "--out", str(ladder_out), "--rounds", "1")[0] == 0
    assert run_cli(capsys, "tournament", "run", str(file), "--out", str(tournament_out))[0] == 0
    code, _, stderr = ladder(capsys, "run", str(file), "--out", str(tournament_out))
    assert code == 2 and "holds tournament 'ladder', not a ladder" in stderr
    for args in (("resume", str(ladder_out)), ("standings", str(ladder_out))):
        code, _, stderr = run_cli(capsys, "tournament", *args)
        assert code == 2 and "holds a ladder, not a tournament" in stderr
    code, _, stderr = run_cli(capsys, "tournament", "run", str(file), "--out", str(ladder_out))
    assert code == 2 and "holds ladder 'ladder'" in stderr
    code, _, stderr = ladder(capsys, "standings", str(tournament_out))
    assert code == 2 and "holds a tournament, not a ladder" in stderr


def test_bad_rounds_are_refused_by_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        ladder(capsys, "run", str(ladder_file(tmp_path)), "--rounds", "-1")
    assert exit_info.value.code == 2 and "must be at least 0" in capsys.readouterr().err


def test_through_the_referee(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    bots = {"r1": "random", "r2": "random", "first": "first"}
    code, _, stderr = ladder(capsys, "run", str(ladder_file(tmp_path, bots, 2)), "--out", str(out),
                             "--rounds", "2", "--runner", "grpc")
    assert code == 0, stderr
    assert len(schedule(out)) == 4 and (out / "referee.jsonl").is_file()


# ------------------------------------------------------------------ stopping


def recorded(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_sigterm_stops_a_ladder_cleanly_and_running_it_again_finishes_the_interrupted_round(tmp_path: Path) -> None:
    file = ladder_file(tmp_path)
    out = tmp_path / "out"
    db = out / Store.FILENAME
    command = [sys.executable, "-m", "server.cli", "ladder", "run", str(file), "--out", str(out), "--runner", "local"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while proc.poll() is None and recorded(db) < 7 and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert "stopped after" in err.decode() and f"continue with: craits ladder run {file} --out {out}" in err.decode()
    with Store(db) as store:
        done, scheduled = store.counts()
        assert all(len(result.seats) == 3 for result in store.results())  # every game whole
    assert 7 <= done <= scheduled
    assert (f"; {scheduled - done} game(s) of the round in flight are stored unplayed: the next start plays them first"
            in err.decode()) == (done < scheduled), err.decode()
    # ladder standings: how it stopped, not "INCOMPLETE" (issue 30)
    shown = subprocess.run([sys.executable, "-m", "server.cli", "ladder", "standings", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    title = shown.stdout.splitlines()[0]
    assert "INCOMPLETE" not in shown.stdout and "the last run stopped after" in title and "(SIGTERM, " in title, shown.stdout
    assert re.search(r"unplayed games? of an interrupted round (are|is) played first", title) or done == scheduled
    proc = subprocess.run([*command, "--rounds", "1"], cwd=ROOT, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "(--rounds 1;" in proc.stderr.decode()
    with Store(db) as store:
        assert store.counts() == (scheduled + 3, scheduled + 3)
        rounds = len({g.table for g in store.games()})
    shown = subprocess.run([sys.executable, "-m", "server.cli", "ladder", "standings", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    title = shown.stdout.splitlines()[0]
    assert f"ladder: {rounds} rounds played, {scheduled + 3} games; the last run stopped after 1 new round (--rounds 1, " in title
    assert "INCOMPLETE" not in shown.stdout


def test_ctrl_c_is_named_as_the_ladders_stop(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = [sys.executable, "-m", "server.cli", "ladder", "run", str(ladder_file(tmp_path)), "--out", str(out),
               "--runner", "local"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while proc.poll() is None and recorded(out / Store.FILENAME) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert "(Ctrl-C;" in err.decode()
    assert json.loads((out / "ladder.json").read_text())["why"] == "Ctrl-C"


def test_a_ladders_progress_is_rounds_games_and_rate_and_no_bar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ladder has no end: its terminal line counts rounds (out of --rounds N) and games, and
    its board's progress has the rounds (a bar only with a goal)."""
    from server.cli.tournament_shared import RoundProgress
    from server.web.board import Board, BoardPlace

    out = tmp_path / "out"
    code, _, stderr = ladder(capsys, "run", str(ladder_file(tmp_path)), "--out", str(out), "--rounds", "2")
    assert code == 0, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("round ")]
    assert len(lines) == 2 and lines[0].endswith("; round 1 of 2") and lines[1].endswith("; round 2 of 2")
    assert "3 games played" in lines[0] and "6 games played" in lines[1] and " games/s; leader " in lines[1]
    assert "|" not in stderr and "%" not in stderr  # no bar

    progress = RoundProgress(games_before=6)
    config, store = reopen(out)
    with store:
        standings = ladder_standings(config, store)
    first = LadderRound(3, ("a", "b", "c"), ())
    progress.line(first, standings, now=progress._samples[0][0])
    line = progress.line(LadderRound(4, ("a", "b", "c"), ()), standings, now=progress._samples[0][0] + 2.0)
    assert line.startswith("round 4: a, b, c; 6 games played, 0.00 games/s")

    for goal, bar in ((0, None), (5, 5)):
        board = Board(BoardPlace(out_dir=out, goal_rounds=goal).source())
        try:
            board.refresh()
            shown = board.snapshot.progress
        finally:
            board.close()
        assert (shown["kind"], shown["rounds"], shown["done"], shown["goal_rounds"]) == ("ladder", 2, 6, bar)


def reopen(out: Path) -> Any:
    from tournaments.ladder import reopen_ladder

    return reopen_ladder(out)
