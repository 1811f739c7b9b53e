"""The balanced schedule: so many games per bot, every pair meeting within one of the
average, every seat equally, duplicate deals kept; refused with numbers that work."""

from __future__ import annotations

import io
import itertools
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.storage.store import Store
from tests.cli import run_cli
from tournaments.config import TournamentFileError, key_for, parse_config, schedule_for
from tournaments.runner import Progress
from tournaments.schedule import (
    ScheduledGame,
    ScheduleError,
    balanced_arithmetic_problem,
    make_balanced_schedule,
    pair_counts,
    pair_target,
    schedule_digest,
    workable_games_per_bot,
)

ROOT = Path(__file__).resolve().parents[2]


def names(n: int) -> list[str]:
    return [f"bot{i:02d}" for i in range(n)]


def assert_balanced(games: tuple[ScheduledGame, ...], bots: list[str], table_size: int, games_per_bot: int) -> None:
    """Every bot plays games_per_bot games, sits in each seat equally, meets every other bot
    within one of the average number of tables; each table is played in every rotation, each
    game its own deal (the default, duplicate = "none")."""
    played = Counter(bot for g in games for bot in g.seats)
    assert played == {bot: games_per_bot for bot in bots}
    seats = Counter((bot, seat) for g in games for seat, bot in enumerate(g.seats))
    assert seats == {(bot, s): games_per_bot // table_size for bot in bots for s in range(table_size)}
    met = pair_counts(games)
    average = (games_per_bot // table_size) * (table_size - 1) / (len(bots) - 1)
    shared = [met[frozenset(pair)] for pair in itertools.combinations(bots, 2)]
    assert sum(shared) == len(games) // table_size * table_size * (table_size - 1) // 2
    assert min(shared) >= 1 and all(abs(count - average) <= 1 for count in shared), (min(shared), max(shared), average)
    by_table: dict[int, list[ScheduledGame]] = {}
    for g in games:
        by_table.setdefault(g.table, []).append(g)
    for rotations in by_table.values():
        assert [g.rotation for g in rotations] == list(range(table_size))
        assert {frozenset(g.seats) for g in rotations} == {frozenset(rotations[0].seats)}
    assert len({g.seed for g in games}) == len(games)  # no deal met twice
    assert [g.ordinal for g in games] == list(range(len(games)))
    assert len({g.game_id for g in games}) == len(games)


def test_thirty_bots_at_tables_of_four_meet_within_one_and_sit_everywhere_equally() -> None:
    bots = names(30)
    games = make_balanced_schedule(bots, 4, 48, seed=2024)
    assert len(games) == 30 * 48 // 4 == 360
    assert_balanced(games, bots, 4, 48)
    shared = Counter(pair_counts(games).values())
    assert set(shared) == {1, 2}  # 1.24 on average
    assert sum(shared.values()) == 30 * 29 // 2


def test_a_hundred_bots() -> None:
    bots = names(100)
    games = make_balanced_schedule(bots, 4, 160, seed=1)
    assert_balanced(games, bots, 4, 160)


def test_the_schedule_is_seeded_and_deterministic() -> None:
    bots = names(12)
    first = make_balanced_schedule(bots, 3, 18, seed=5)
    assert first == make_balanced_schedule(bots, 3, 18, seed=5)
    assert schedule_digest(first) != schedule_digest(make_balanced_schedule(bots, 3, 18, seed=6))
    probe = [sys.executable, "-c", "from tournaments.schedule import make_balanced_schedule as m, schedule_digest as d;"
             "print(d(m([f'bot{i:02d}' for i in range(12)], 3, 18, seed=5)))"]
    for hash_seed in ("1", "2"):  # nothing depends on Python's salted hash()
        out = subprocess.run(probe, cwd=ROOT, capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert out.stdout.strip() == schedule_digest(first)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(5, 40), table_size=st.integers(2, 7), pick=st.integers(0, 2), seed=st.integers(0, 3))
def test_balanced_within_one_for_many_fields(n: int, table_size: int, pick: int, seed: int) -> None:
    """Any field: the schedule builds with every property, or it is refused naming a
    games_per_bot that does build."""
    if table_size > n:
        return
    games_per_bot = workable_games_per_bot(n, table_size, 0, 3)[pick]
    bots = names(n)
    try:
        games = make_balanced_schedule(bots, table_size, games_per_bot, seed)
    except ScheduleError as err:
        proposed = re.search(r"games_per_bot = (\d+)", str(err))
        assert proposed, str(err)
        games_per_bot = int(proposed[1])
        games = make_balanced_schedule(bots, table_size, games_per_bot, seed)
    assert_balanced(games, bots, table_size, games_per_bot)


def test_a_refusal_names_a_number_that_builds_below_the_request_too() -> None:
    """35 bots at tables of 7 build at 49 games each (and 98), not at the numbers just above 56."""
    with pytest.raises(ScheduleError, match=r"games_per_bot = 49 works"):
        make_balanced_schedule(names(35), 7, 56, seed=0)
    assert_balanced(make_balanced_schedule(names(35), 7, 49, seed=0), names(35), 7, 49)


def test_partners_take_turns() -> None:
    bots = names(12)
    games = make_balanced_schedule(bots, 4, 44, seed=3, partnerships=True)
    assert_balanced(games, bots, 4, 44)
    partners = Counter(frozenset(g.seats[s] for s in pair) for g in games if g.rotation == 0 for pair in ((0, 2), (1, 3)))
    met = pair_counts(games)
    for pair, times in partners.items():
        assert times < met[pair] or met[pair] == 1  # never partners at every table they share


def test_tables_come_in_rounds_that_share_a_deal() -> None:
    bots = names(13)
    assert_balanced(make_balanced_schedule(bots, 4, 16, seed=8), bots, 4, 16)
    games = make_balanced_schedule(bots, 4, 16, seed=8, duplicate="tournament")
    rounds: dict[int, list[ScheduledGame]] = {}
    for g in games:
        if g.rotation == 0:
            rounds.setdefault(g.deal, []).append(g)
    assert sorted(rounds) == list(range(len(rounds)))
    for tables in rounds.values():
        seated = [bot for g in tables for bot in g.seats]
        assert len(seated) == len(set(seated))  # no bot twice in a round
        assert len({g.seed for g in tables}) == 1  # duplicate = "tournament": a round's tables, one deal
    assert [g.deal for g in games] == sorted(g.deal for g in games)  # whole rounds first
    own = make_balanced_schedule(bots, 4, 16, seed=8, duplicate="table")
    assert len({g.seed for g in own}) == len(own) // 4  # each table its own deal


# ------------------------------------------------------------------ refused, with numbers that work


def test_numbers_that_cannot_work_are_refused_with_numbers_that_do() -> None:
    problem = balanced_arithmetic_problem(30, 4, 42)
    assert problem == "each deal is played in all 4 seat rotations, so games_per_bot must be a multiple of 4"
    problem = balanced_arithmetic_problem(30, 4, 8)
    assert problem and "meet at most 6 of the other 29 bots, and every pair must meet" in problem
    problem = balanced_arithmetic_problem(30, 4, 36)  # 9 tables: 30 x 9 is not a multiple of 4
    assert problem == "30 bots x 9 tables each is not a whole number of tables of 4"
    assert balanced_arithmetic_problem(3, 4, 4) == "3 bots cannot fill a table of 4"
    assert balanced_arithmetic_problem(30, 4, 48) is None
    target = pair_target(30, 4, 12)
    assert (target.low, target.high) == (1, 2)


def test_a_schedule_the_search_does_not_find_is_refused_with_one_it_does() -> None:
    # 30 bots, 10 tables each: every pair once and 15 twice, a covering design not found in the bounded search
    with pytest.raises(ScheduleError, match=r"with 30 bots at tables of 4, games_per_bot = 48, 56 or 64 works$"):
        make_balanced_schedule(names(30), 4, 40, seed=0)


def balanced_file(n: int, games_per_bot: int | None, table_size: int = 4, extra: str = "", name: str = "class") -> str:
    head = f'name = "{name}"\ntable_size = {table_size}\nschedule = "balanced"\nseed = 3\n'
    if games_per_bot is not None:
        head += f"games_per_bot = {games_per_bot}\n"
    head += extra + "concurrency = 2\n\n[flags]\nshort_game = true\n"
    policies = ("random", "first", "greedy", "default")
    return head + "".join(f'\n[[bots]]\nname = "b{i:02d}"\nbuiltin = "{policies[i % 4]}"\n' for i in range(n))


def error_of(text: str) -> str:
    with pytest.raises(TournamentFileError) as caught:
        parse_config(text, source="class.toml")
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_balanced_file() -> None:
    config = parse_config(balanced_file(30, 48), source="class.toml")
    assert (config.schedule, config.games_per_bot, config.deals) == ("balanced", 48, 1)
    games = schedule_for(config, key_for(config))
    assert len(games) == 360
    assert_balanced(games, list(config.bot_names), 4, 48)
    assert parse_config(balanced_file(30, 48).replace('schedule = "balanced"', 'schedule = "round-robin"')
                        .replace("games_per_bot = 48\n", ""), source="x").schedule == "round-robin"


def test_balanced_file_mistakes_name_line_and_key() -> None:
    assert error_of(balanced_file(30, 42)).startswith("class.toml:5: games_per_bot: each deal is played in all 4")
    assert error_of(balanced_file(30, 8)).endswith("every pair must meet; with 30 bots at tables of 4, "
                                                  "games_per_bot = 48, 56 or 64 works")
    assert error_of(balanced_file(30, 40)).startswith("class.toml:5: games_per_bot: no schedule found where each of 30 bots")
    assert error_of(balanced_file(30, None)).startswith("class.toml:3: schedule: schedule = \"balanced\" needs "
                                                       "games_per_bot")
    assert error_of(balanced_file(30, 48, extra="deals = 2\n")).startswith("class.toml:6: deals: a balanced schedule")
    assert "did you mean 'balanced'" in error_of(balanced_file(30, 48).replace('"balanced"', '"balancd"'))
    round_robin = balanced_file(30, 48).replace('schedule = "balanced"\n', "")
    assert error_of(round_robin).startswith("class.toml:4: games_per_bot: applies only to schedule = \"balanced\"")
    assert "3 bot(s) cannot fill a table of 4; add bots" in error_of(balanced_file(3, 4))
    hundred = balanced_file(100, 160).replace('schedule = "balanced"\n', "").replace("games_per_bot = 160\n", "")
    assert error_of(hundred).endswith('at most 1000000 are allowed (a large field: schedule = "balanced" with '
                                      "games_per_bot plays far fewer)")


# ------------------------------------------------------------------ the command line


def test_plan_run_and_the_large_plan_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    balanced = tmp_path / "class.toml"
    balanced.write_text(balanced_file(30, 48))
    code, stdout, _ = run_cli(capsys, "tournament", "plan", str(balanced))
    assert code == 0 and "balanced schedule: 48 games per bot = 90 tables x 4 seat rotations = 360 games" in stdout
    assert "each pair of bots shares 1 to 2 tables (average 1.24)" in stdout
    assert stdout.count("seat0=12 seat1=12 seat2=12 seat3=12") == 30

    big = tmp_path / "big.toml"
    big.write_text(balanced_file(30, 48).replace('schedule = "balanced"\n', "").replace("games_per_bot = 48\n", ""))
    code, stdout, _ = run_cli(capsys, "tournament", "plan", str(big))
    assert code == 0 and "27405 tables x 1 deal x 4 seat rotations = 109620 games" in stdout
    assert "more than 20,000 games" in stdout
    code, _, stderr = run_cli(capsys, "tournament", "run", str(big), "--out", str(tmp_path / "big"))
    assert code == 2 and stderr.count("\n") == 1
    assert "109,620 games is more than 20,000" in stderr and "--yes" in stderr
    assert 'schedule = "balanced" with games_per_bot = 48 (360 games)' in stderr
    assert not (tmp_path / "big").exists()  # nothing started

    small = tmp_path / "small.toml"
    small.write_text(balanced_file(9, 12, table_size=3, name="small"))
    code, stdout, stderr = run_cli(capsys, "tournament", "run", str(small), "--out", str(tmp_path / "small"))
    assert code == 0, stderr
    assert "small: 9 bots, balanced: 12 games per bot = 12 tables of 3 x 3 seat rotations = 36 games" in stderr
    assert "small: 36/36 games (complete)" in stdout


def test_run_with_yes_passes_the_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from server.cli import build_parser
    from server.cli.tournament import _refuse_a_large_plan

    big = tmp_path / "big.toml"
    big.write_text(balanced_file(30, 48).replace('schedule = "balanced"\n', "").replace("games_per_bot = 48\n", ""))
    config = parse_config(big.read_text(), source=str(big))
    _refuse_a_large_plan(config, build_parser().parse_args(["tournament", "run", str(big), "--yes"]))
    with pytest.raises(Exception, match="--yes"):
        _refuse_a_large_plan(config, build_parser().parse_args(["tournament", "run", str(big)]))


def test_off_a_terminal_the_progress_says_the_measured_speed_once() -> None:
    log = io.StringIO()
    progress = Progress(100, 10, stream=log, estimate_after_s=0.0)
    progress.advance(5)
    progress.advance(5)
    progress.close()
    lines = log.getvalue().splitlines()
    assert len(lines) == 1 and "over the first 5 games" in lines[0] and "the 85 games left take about" in lines[0]
    silent = io.StringIO()
    Progress(100, 10, stream=silent, enabled=False, estimate_after_s=0.0).advance()
    assert silent.getvalue() == ""


def test_a_balanced_file_runs_as_a_ladder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "class.toml"
    file.write_text(balanced_file(9, 12, table_size=3))
    code, _, stderr = run_cli(capsys, "ladder", "run", str(file), "--out", str(tmp_path / "ladder"), "--rounds", "2")
    assert code == 0, stderr
    assert 'schedule = "balanced" and games_per_bot are not used' in stderr
    with Store(tmp_path / "ladder" / Store.FILENAME) as store:
        assert store.counts() == (6, 6)  # two rounds of a table of three in every rotation


# ------------------------------------------------------------------ resume


def recorded(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.Error:
        return 0


def craits(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "server.cli", "tournament", *args, "--runner", "local", "--no-progress"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def test_a_balanced_tournament_killed_and_resumed_ends_as_one_played_straight(tmp_path: Path) -> None:
    file = tmp_path / "class.toml"
    file.write_text(balanced_file(9, 12, table_size=3))  # 36 games
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    proc = craits("run", str(file), "--out", str(straight))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()

    proc = craits("run", str(file), "--out", str(killed))
    db = killed / Store.FILENAME
    while proc.poll() is None and recorded(db) < 12:
        time.sleep(0.002)
    assert proc.poll() is None, "the run should still be playing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert 12 <= recorded(db) < 36

    proc = craits("resume", str(file), "--out", str(killed))  # the file names the same schedule
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert (killed / "standings.json").read_bytes() == (straight / "standings.json").read_bytes()
    with Store(straight / Store.FILENAME) as one, Store(db) as other:
        assert [(r.game_id, r.digest) for r in one.results()] == [(r.game_id, r.digest) for r in other.results()]
