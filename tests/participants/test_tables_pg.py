"""A roster kept in PostgreSQL keeps its side tables there too (comparisons, scrimmages, the
final's plan, deadlines, snapshot, results and publication, pauses): two folders of one
roster, as two machines' web processes have, see the same ones; another roster's are kept
apart. A comparison waiting is played by one process, and taken over when it dies."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
import structlog
from structlog.testing import capture_logs

from participants import tables
from participants.compare import Comparisons
from participants.dashboard import read_rubrics
from participants.fairness import Pauses
from participants.final import Final, FinalError
from participants.roster import PostgresRoster, Roster
from participants.scrimmage import Scrimmages
from participants.tables import LEASE_S, LeaseLost, leased, schema_of
from server.cli import main as craits
from server.storage.postgres import STORE_ENV, PostgresStore
from server.storage.replay.reader import read_replay
from server.storage.store import Store
from tests.participants.test_participants_web import Client
from tests.participants.uploads import RANDOM_BOT, good_bot
from tests.tournaments.configs import builtin_tournament
from tests.web.conftest import start_craits
from tournaments.config import parse_config
from tournaments.ladder import open_ladder


def admitted_versions(roster: Roster, name: str, count: int, bot: str = RANDOM_BOT) -> str:
    """``name`` added with ``count`` admitted versions (``bot``: the example random bot, built in
    this roster folder only: another machine's fetches it from the database); their token."""
    token = roster.add(name)
    for i in range(count):
        version = roster.submit(name, good_bot(build="true" if i else None), f"bot{i}.zip")
        roster.version_dir(version).mkdir(parents=True, exist_ok=True)
        (roster.version_dir(version) / "bot.py").write_text(bot)
        roster.decide(version, "admitted", command=["python", "bot.py"])
    return token


def standing_rows(final: Final) -> list[dict[str, object]]:
    """The final's standings table (its rows, without when it was made)."""
    standings = final.standings()
    assert standings is not None
    return list(standings["standings"])


def replays(folder: Path, job: int) -> list[str]:
    """The games of comparison ``job`` played from this roster folder (one replay each)."""
    return sorted(p.name for p in (folder / "compare" / str(job)).glob("*.jsonl"))


def wait_for(what: object, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not what():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.1)


def test_two_folders_of_one_roster_in_postgresql_share_its_comparisons_and_final(tmp_path: Path, pg_url: str) -> None:
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "class")  # (another machine's folder)
    admitted_versions(here, "alice", 2)
    asked = Comparisons(here).ask("alice", 1, 2, games=4)
    assert Comparisons(there).of("alice") == [asked] and Comparisons(there).pending() == [asked]
    Comparisons(there).record(asked.id, "done", [], "played elsewhere")
    done = Comparisons(here).get(asked.id)
    assert done is not None and (done.status, done.message) == ("done", "played elsewhere")
    assert Comparisons(here).ask("alice", 2, 1).id == asked.id + 1  # (the database numbers them)
    assert not Final(there).published
    Final(here).publish()
    assert Final(there).published
    assert Scrimmages(there).involving("alice") == Scrimmages(here).involving("alice") == []
    assert Scrimmages(there).used("alice") == 0
    assert Pauses(there).paused_ids() == set()
    assert not (tmp_path / "here" / "roster.db").exists() and not (tmp_path / "there" / "roster.db").exists()
    other = PostgresRoster.create_in(tmp_path / "other", pg_url, "other-class")
    assert Comparisons(other).of("alice") == [] and not Final(other).published  # (kept apart)
    with psycopg.connect(pg_url) as conn:
        schemas = {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'craits_roster_%'")}
    assert schemas == {schema_of("class"), schema_of("other-class")}


@pytest.fixture(params=["sqlite", "postgresql"])
def two_machines(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Roster, Roster]:
    """The roster as two players see it: on SQLite one folder (one machine), on PostgreSQL two."""
    if request.param == "sqlite":
        roster = Roster.create(tmp_path / "class")
        return roster, Roster(tmp_path / "class")
    url = request.getfixturevalue("pg_url")
    return (PostgresRoster.create_in(tmp_path / "here", url, "class"),
            PostgresRoster.create_in(tmp_path / "there", url, "class"))


def test_a_waiting_comparison_or_scrimmage_is_claimed_by_one_player_until_its_lease_runs_out(
    two_machines: tuple[Roster, Roster]
) -> None:
    here, there = two_machines
    admitted_versions(here, "alice", 2)
    for queue, other in ((Comparisons(here), Comparisons(there)), (Scrimmages(here), Scrimmages(there))):
        asked = (queue.ask("alice", 1, 2, games=4) if isinstance(queue, Comparisons)
                 else queue.ask("alice", ["random"], 2))
        now = time.time()
        assert queue.claim("one", now) == asked.id
        assert other.claim("two", now) is None  # (held: the other player waits)
        assert other.free_in(now) == pytest.approx(LEASE_S)
        queue.record(asked.id, "running", [], holder="one")
        later = now + LEASE_S + 1  # (player one stopped renewing: it died, or its machine did)
        assert other.claim("two", later) == asked.id
        with pytest.raises(LeaseLost):  # (one, woken up, writes nothing over two's progress)
            queue.record(asked.id, "running", [], holder="one")
        assert not queue.renew(asked.id, "one") and other.renew(asked.id, "two")
        other.record(asked.id, "done", [], holder="two")
        assert queue.claim("one", later) is None and other.free_in() is None  # (done: nothing left to play)


def test_a_machine_whose_clock_runs_ahead_takes_over_no_live_lease_nor_a_final_being_played(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leases and the final's claim are read by the database's clock, not a machine's: a machine
    two minutes ahead took over every job another was playing, and the final too."""
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "class")
    admitted_versions(here, "alice", 2)
    asked = Comparisons(here).ask("alice", 1, 2, games=4)
    assert Comparisons(here).claim("one") == asked.id
    keeper = Final(here).keeper()
    keeper.hold()
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 120)  # (there: its clock two minutes ahead)
    assert Comparisons(there).claim("two") is None
    assert 0 < (Comparisons(there).free_in() or 0) <= LEASE_S
    playing = Final(there).playing_elsewhere()
    assert playing is not None and playing[0].endswith(str(Final(here).out_dir.resolve())), playing
    assert 0 <= playing[1] < 5 and LEASE_S - 5 < playing[2] <= LEASE_S, playing


def test_a_web_process_whose_clock_runs_late_takes_no_upload_after_the_deadline_nor_lends_token_guesses(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every time a PostgreSQL roster keeps or compares is the database's: a web process an hour
    late took an upload made after the deadline as made before it (it entered the final), let a
    version be chosen after the deadline, and, behind a load balancer, gave a token guesser
    locked out on it fresh tries on the other machine (its wrong tries looked an hour old)."""
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "class")
    admitted_versions(here, "alice", 1)
    (here.folder / "final.toml").write_text(FIRST_PLAN, encoding="utf-8")
    assert craits(["final", "plan", str(here.folder)]) == 0
    real = time.time
    Final(here).set_deadline(here.versions("alice")[0].created + 0.001)  # (v1 made by it, and nothing since)
    monkeypatch.setattr(time, "time", lambda: real() - 3600)  # (there: its clock an hour late)
    late = there.submit("alice", good_bot(), "late.zip")
    assert abs(late.created - real()) < 30 and abs(there.now() - real()) < 30
    assert Final(there).past_deadline() and Final(there).practice_only(late)
    with pytest.raises(FinalError, match="has passed"):
        Final(there).choose("alice", 1)
    session = there.open_session("alice", 600)
    for _ in range(3):
        assert there.count_attempt("203.0.113.9", 3, 600)[1] == 0
    monkeypatch.setattr(time, "time", real)  # (here: the right time)
    assert here.session(session) == "alice"  # (its ten minutes on every machine)
    count, wait_s = here.count_attempt("203.0.113.9", 3, 600)
    assert count == 3 and 500 < wait_s <= 600  # (locked out here too)
    assert [e.number for e in Final(here).entrants_now()] == [1]


def test_a_player_whose_job_another_took_over_stops_playing_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Player one stalled past its lease (a machine suspended, say) and player two took the
    comparison over: one's next renewal finds it gone and stops it, rather than play on."""
    monkeypatch.setattr(tables, "LEASE_S", 0.3)
    roster = Roster.create(tmp_path / "class")
    admitted_versions(roster, "alice", 2)
    queue = Comparisons(roster)
    asked = queue.ask("alice", 1, 2)
    assert queue.claim("one") == asked.id

    async def play() -> None:
        async with leased(queue, asked.id, "one"):
            assert queue.claim("two", time.time() + 1) == asked.id  # (one's lease ran out meanwhile)
            await asyncio.sleep(30)  # (one plays on, unaware)

    started = time.monotonic()
    with pytest.raises(LeaseLost):
        asyncio.run(play())
    assert time.monotonic() - started < 5


def test_a_comparison_whose_player_is_killed_mid_play_is_finished_by_a_player_on_another_machine(
    tmp_path: Path, pg_url: str
) -> None:
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "class")
    admitted_versions(here, "alice", 2)
    job = Comparisons(here).ask("alice", 1, 2, games=12, until_told=False, panel=("random",))  # (3 deals of 4 games)
    env = {**os.environ, "CRAITS_LEASE_S": "2"}
    player = [sys.executable, "-m", "participants.compare"]
    first = subprocess.Popen([*player, str(here.folder)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(Comparisons(there).get(job.id).deals) >= 1, 120)  # type: ignore[union-attr]
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    kept = len(Comparisons(there).get(job.id).deals)  # type: ignore[union-attr]
    assert kept < 3, "the first player finished before it was killed: nothing was taken over"
    second = subprocess.run([*player, str(there.folder)], env=env, capture_output=True, text=True, timeout=180)
    assert second.returncode == 0, second.stdout + second.stderr
    done = Comparisons(here).get(job.id)
    assert done is not None and done.status == "done" and len(done.deals) == 3, done
    # the second player went on from the last whole deal, with the versions fetched from the database
    assert replays(there.folder, job.id) == sorted(f"cmp{job.id}-d{d}-{side}-r{r}.jsonl" for d in range(kept + 1, 4)
                                                  for side in "ab" for r in (1, 2))
    assert {f"cmp{job.id}-d1-a-r1.jsonl"} <= set(replays(here.folder, job.id))
    assert not (there.folder / "versions" / "alice").exists() and any((there.folder / "fetched").iterdir())


def test_replays_of_a_scrimmage_and_a_validation_game_played_on_one_machine_are_kept_for_the_other(
    tmp_path: Path, pg_url: str
) -> None:
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "class")
    admitted_versions(here, "alice", 1)
    here.add("bob")
    here.submit("bob", good_bot(), "bot.zip")
    job = Scrimmages(here).ask("alice", ["random"], 2)
    for module in ("participants.scrimmage", "participants.admission"):
        played = subprocess.run([sys.executable, "-m", module, str(here.folder)], capture_output=True, text=True,
                                timeout=120)
        assert played.returncode == 0, played.stdout + played.stderr
    bob = there.version("bob", 1)
    assert bob is not None and bob.status == "admitted", bob
    validation = there.folder / "validation" / bob.validation["replay"]
    assert there.fetch_kept(bob.validation["replay_sha256"], validation)
    assert validation.read_bytes() == (here.folder / "validation" / bob.validation["replay"]).read_bytes()
    done = Scrimmages(there).get(job.id)
    assert done is not None and done.status == "done" and len(done.results) == 2
    for game in done.results:
        path = Scrimmages(there).replay_file(done, game["game_id"])
        assert path.is_relative_to(there.folder)
        assert path.read_bytes() == Scrimmages(here).replay_path(done, game["game_id"]).read_bytes()
        assert read_replay(path).result is not None


def test_the_finals_plan_deadline_snapshot_and_results_are_the_same_on_two_machines(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The organizer works on one machine ("here": final.toml, rubric.toml, craits final ...);
    another machine's folder of the roster reads the same final, and may move its deadline too."""
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "class")
    for name in ("alice", "bob"):
        admitted_versions(here, name, 1)
    plan = here.folder / "final.toml"
    plan.write_text('deadline = 2031-01-01T00:00:00Z\ngames_per_bot = 2\ntable_size = 2\n', encoding="utf-8")
    (here.folder / "rubric.toml").write_text('[[rubric]]\nopponent = "house-random"\ngames = 5\n', encoding="utf-8")
    assert read_rubrics(here.folder) == read_rubrics(there.folder) != []
    assert craits(["final", "deadline", str(here.folder), "now"]) == 0
    assert Final(there).past_deadline() and Final(there).plan() == Final(here).plan()
    entries = Final(there).snapshot()  # (the first look, on the other machine, fixes the entrants)
    assert entries is not None and [e.bot for e in entries] == ["alice.v1", "bob.v1"]
    assert Final(here).snapshot() == entries
    assert craits(["final", "run", str(here.folder)]) == 0
    standings = Final(here).standings()
    assert standings is not None and Final(there).standings() == standings
    assert len(Final(there).games()) == 2 and Final(there).games() == Final(here)._games_played_here()
    assert Final(there).results_for("alice") is None  # (not published)
    assert craits(["final", "publish", str(here.folder)]) == 0
    assert Final(there).results_for("alice") == standings
    capsys.readouterr()
    assert craits(["final", "show", str(there.folder)]) == 0
    shown = capsys.readouterr().out
    assert "in   alice.v1" in shown and "results: published" in shown
    assert "the plan: final.toml (as stored in the roster's database on " in shown
    # a final.toml stored from the other machine is the plan everywhere
    (there.folder / "final.toml").write_text('deadline = 2030-01-01T00:00:00Z\ngames_per_bot = 4\ntable_size = 2\n',
                                            encoding="utf-8")
    assert craits(["final", "plan", str(there.folder)]) == 0
    assert Final(there).plan().games_per_bot == 4 and Final(here).plan().games_per_bot == 4  # type: ignore[union-attr]
    # reopened from the other machine: the entrants are set aside and the results hidden for both
    assert craits(["final", "deadline", str(there.folder), "+1h", "--reopen"]) == 0
    assert Final(here).snapshot() is None and not Final(here).published


def test_two_craits_web_processes_on_one_postgresql_roster_show_the_comparison_asked_on_either(
    tmp_path: Path, pg_url: str
) -> None:
    """Two machines' web processes (each with its own folder of the roster) behind one address:
    a comparison waiting when they start is played once, by one of them; a participant asks
    for a comparison on one and finds it on the other; the deadline the organizer moves on
    one machine is the one the other shows."""
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "class")
    token = admitted_versions(here, "alice", 2)
    for version in here.versions("alice"):  # (built on both machines: either may play it)
        shutil.copytree(here.version_dir(version), there.version_dir(version))
    here.secret()  # (the forms' key, made here and copied as docs/operators.md says: each signs what the other checks)
    shutil.copy2(here.folder / "session.key", there.folder / "session.key")
    waiting = Comparisons(here).ask("alice", 1, 2, games=8, until_told=False, panel=("random",))  # (2 deals of 4 games)
    text = builtin_tournament("classladder", 3, 1, {"r1": "random", "r2": "random"}, table_size=2)
    config = parse_config(text, source=str(tmp_path / "ladder.toml"), base_dir=tmp_path)
    open_ladder(config, text, str(tmp_path / "ladder.toml"), tmp_path / "out",
                store=PostgresStore(pg_url, "classladder")).close()
    with concurrent.futures.ThreadPoolExecutor(2) as starting:  # (at once: both find the comparison waiting)
        webs = list(starting.map(lambda folder: start_craits(
            ["web", "classladder", "--store", pg_url, "--roster", str(tmp_path / folder), "--address", "127.0.0.1:0",
             "--log-dir", str(tmp_path / f"logs-{folder}")], tmp_path), ("here", "there")))
    comparisons = Comparisons(here)
    try:
        wait_for(lambda: comparisons.get(waiting.id).status == "done", 120)  # type: ignore[union-attr]
        played = [replays(tmp_path / folder, waiting.id) for folder in ("here", "there")]
        assert sorted(map(len, played)) == [0, 8], played  # (each game once, all by one web process's player)
        one, other = (Client(web.url) for web in webs)
        for client in (one, other):
            assert client.log_in(token)[0] == 303
        status, _, headers = one.request("p/alice/compare", {"a": "1", "b": "2", "games": "4", "against": "random",
                                                             "csrf": one.csrf("p/alice/compare")})
        assert status == 303, headers
        asked = headers["Location"]
        status, page, _ = other.request(asked.lstrip("/"))
        assert status == 200 and "v2 against v1" in page, page
        status, page, _ = other.request("p/alice/compare")
        assert status == 200 and f'href="{asked}"' in page, page
        (here.folder / "final.toml").write_text('deadline = 2031-01-01T00:00:00Z\n', encoding="utf-8")
        assert craits(["final", "deadline", str(here.folder), "2031-02-03T04:05:06Z"]) == 0  # (the organizer, here)
        status, page, _ = other.request("p/alice/final")
        assert status == 200 and '<b id="deadline">2031-02-03 04:05:06 UTC</b>' in page, page
        wait_for(lambda: not comparisons.pending(), 120)  # (no player outlives the test)
    finally:
        for web in webs:
            web.process.terminate()
            web.process.wait(30)


FIRST_PLAN = 'deadline = 2031-01-01T00:00:00Z\ngames_per_bot = 2\ntable_size = 2\n'
EDITED_PLAN = 'deadline = 2031-01-01T00:00:00Z\ngames_per_bot = 4\ntable_size = 2\n'


def test_the_finals_plan_is_the_one_the_organizer_stored_whatever_the_machines_clocks_say(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No file's time decides which final.toml is the plan: the organizer stores it (`craits final
    plan`) from any machine, a laptop whose clock runs late included; a copy left in another
    folder, however new its time, changes nothing, and is reported (logged once, and by `craits
    final show` every time) rather than used."""
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "class")
    plan = here.folder / "final.toml"
    plan.write_text(FIRST_PLAN, encoding="utf-8")
    assert craits(["final", "plan", str(here.folder)]) == 0
    assert Final(there).plan().games_per_bot == 2  # type: ignore[union-attr]
    # a stale copy on another machine whose clock runs ahead: newer by its time, and not the plan
    stale = there.folder / "final.toml"
    stale.write_text(FIRST_PLAN.replace("2031", "2030"), encoding="utf-8")
    os.utime(stale, (time.time() + 3600,) * 2)
    with capture_logs() as logs:
        # (a logger made here: the module's may be bound already, to the processors of a CLI run in this process)
        monkeypatch.setattr(tables, "log", structlog.get_logger(component="roster_tables"))
        for _ in range(3):
            seen = Final(there).plan()
            assert seen is not None and seen.deadline_text == "2031-01-01 00:00:00 UTC"
    assert [e["event"] for e in logs if e["event"].startswith("organizer_file")] == ["organizer_file_differs"]
    assert "differs from the final.toml stored in the roster's database" in seen.note
    assert Final(here).plan().deadline_text == "2031-01-01 00:00:00 UTC"  # type: ignore[union-attr]
    capsys.readouterr()
    assert craits(["final", "show", str(there.folder)]) == 0
    shown = capsys.readouterr().out
    assert f"note: {stale} differs from the final.toml stored" in shown and f"craits final plan {there.folder}" in shown
    # the organizer edits the plan on a laptop whose clock is an hour late, and stores it: it is the plan everywhere
    plan.write_text(EDITED_PLAN, encoding="utf-8")
    os.utime(plan, (time.time() - 3600,) * 2)
    assert Final(there).plan().games_per_bot == 2  # type: ignore[union-attr]  # (not stored yet: not the plan)
    assert craits(["final", "plan", str(here.folder)]) == 0
    assert "stored in the roster's database" in capsys.readouterr().out
    assert Final(there).plan().games_per_bot == 4 and Final(here).plan().games_per_bot == 4  # type: ignore[union-attr]
    assert Final(here).plan().note == ""  # type: ignore[union-attr]
    # a mistaken plan is refused whole, and the stored one stays
    (tmp_path / "typo.toml").write_text(EDITED_PLAN.replace("games_per_bot", "games_per_bots"), encoding="utf-8")
    assert craits(["final", "plan", str(here.folder), str(tmp_path / "typo.toml")]) == 2
    assert "unknown key(s) games_per_bots" in capsys.readouterr().err
    assert Final(there).plan().games_per_bot == 4  # type: ignore[union-attr]
    # one machine (SQLite): the folder's file is the plan, as it always was
    solo = Roster.create(tmp_path / "solo")
    (solo.folder / "final.toml").write_text(FIRST_PLAN, encoding="utf-8")
    assert Final(solo).plan().games_per_bot == 2  # type: ignore[union-attr]
    assert craits(["final", "plan", str(solo.folder), str(here.folder / "final.toml")]) == 0
    assert (solo.folder / "final.toml").read_text(encoding="utf-8") == EDITED_PLAN
    assert Final(solo).plan().games_per_bot == 4  # type: ignore[union-attr]


SEEDED_BOT = RANDOM_BOT.replace("    def choose(self, request):", "    def on_game_start(self, game):\n"
                                "        self.rng = random.Random(1)\n\n    def choose(self, request):")
"""The example random bot, drawing afresh each game (its process plays many): the same moves
in the same deal, so a final plays the same games however its runs were cut."""
assert SEEDED_BOT != RANDOM_BOT
FINAL_PLAN = 'deadline = 2031-01-01T00:00:00Z\ngames_per_bot = 6\ntable_size = 2\nconcurrency = 1\nseed = 7\n'


def final_to_play(here: Roster) -> str:
    """Alice and bob with a version each (bob's thinks 2 ms a move: time to stop a run halfway),
    the final planned (:data:`FINAL_PLAN`) and its deadline passed; alice's token."""
    alice = admitted_versions(here, "alice", 1, SEEDED_BOT)
    admitted_versions(here, "bob", 1, SEEDED_BOT)
    (here.version_dir(here.versions("bob")[0]) / "bot.py").write_text(
        "import time\n" + SEEDED_BOT.replace("        return self.rng", "        time.sleep(0.002)\n        return self.rng"))
    (here.folder / "final.toml").write_text(FINAL_PLAN, encoding="utf-8")
    assert craits(["final", "plan", str(here.folder)]) == 0
    assert craits(["final", "deadline", str(here.folder), "now"]) == 0
    return alice


def test_a_final_in_progress_is_seen_from_another_machine_and_a_killed_run_goes_on_there_without_replaying(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`craits final run` keeps its games and standings in the roster's database as they are
    recorded: another machine's web process shows the organizer the final in progress, shows a
    participant nothing of it until it is published, and a run killed halfway with its machine
    and folder is run again from another machine's folder: it plays only the games not recorded,
    and ends with the standings of the same final played in one go. $CRAITS_STORE, set for a
    ladder in the organizer's shell, changes nothing: a final plays in its roster folder."""
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "class")
    alice = final_to_play(here)
    text = builtin_tournament("classladder", 3, 1, {"r1": "random", "r2": "random"}, table_size=2)
    config = parse_config(text, source=str(tmp_path / "ladder.toml"), base_dir=tmp_path)
    open_ladder(config, text, str(tmp_path / "ladder.toml"), tmp_path / "out",
                store=PostgresStore(pg_url, "classladder")).close()
    web = start_craits(["web", "classladder", "--store", pg_url, "--roster", str(there.folder), "--address",
                        "127.0.0.1:0", "--log-dir", str(tmp_path / "logs-there")], tmp_path)
    run = subprocess.Popen([sys.executable, "-m", "server.cli", "final", "run", str(here.folder)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                           env={**os.environ, "CRAITS_LEASE_S": "3"})  # (its claim on the final: 3 s unrenewed)
    final = Final(there)
    try:
        wait_for(lambda: (final.progress() or (0, 0, False))[0] >= 1, 120)
    finally:
        os.killpg(run.pid, signal.SIGKILL)  # (the command and the bots it launched, halfway)
        run.wait(30)
    try:
        capsys.readouterr()
        assert craits(["final", "run", str(there.folder)]) == 2  # (its claim not run out: it may be playing still)
        assert f"the final is being played in {socket.gethostname()}:{here.folder.resolve() / 'final' / 'out'}" in (
            capsys.readouterr().err)
        kept = final.games()
        assert 1 <= len(kept) < 6, "the run finished before it was killed: nothing to go on with"
        organizer, participant = Client(web.url), Client(web.url)
        assert organizer.log_in(here.organizer_token())[0] == 303 and participant.log_in(alice)[0] == 303
        status, page, _ = organizer.request("organizer")
        assert status == 200 and f"hidden from the participants: {len(kept)} of 6 games recorded, still playing" in page
        status, page, _ = participant.request("p/alice/final")  # (the participant, hostile: nothing of the results)
        assert status == 200 and "The results are not published yet." in page and "bob.v1" not in page, page
        for path in ("organizer", "organizer.csv", "p/bob/final"):
            status, page, _ = participant.request(path)
            assert status in (403, 404) and "bob.v1" not in page and "avg_placing" not in page, (path, status)
        capsys.readouterr()
        assert craits(["final", "show", str(there.folder)]) == 0
        assert f"results: hidden from the participants; {len(kept)} of 6 games recorded (still playing" in capsys.readouterr().out
        assert craits(["final", "publish", str(here.folder)]) == 0  # (published halfway: what is kept shows)
        status, page, _ = participant.request("p/alice/final")
        assert status == 200 and '<table id="final-results">' in page and "bob.v1" in page, page
        assert f"So far: {len(kept)} of 6 games recorded" in page, page
        shutil.copytree(here.folder / "final", tmp_path / "stale")  # (kept for the end: the machine comes back)
        shutil.rmtree(here.folder / "final")  # (its machine gone, and the folder with it)
        wait_for(lambda: final.playing_elsewhere() is None, 10)  # (its claim ran out)
        monkeypatch.setenv(STORE_ENV, pg_url)
        capsys.readouterr()
        assert craits(["final", "run", str(there.folder)]) == 0  # (another machine's folder: it goes on there)
        told = capsys.readouterr().err
        assert (f"resuming {6 - len(kept)} of 6 games here; the {len(kept)} recorded so far were played in "
                f"{socket.gethostname()}:{here.folder.resolve() / 'final' / 'out'}") in told, told
        games = final.games()
        assert len(games) == 6 and len({g["game_id"] for g in games}) == 6
        assert [g for g in games if g["game_id"] in {k["game_id"] for k in kept}] == kept  # (none played again)
        assert final.progress() == (6, 6, True)
        played = Store(there.folder / "final" / "out" / Store.FILENAME, readonly=True)
        with played:
            assert all(read_replay(there.folder / "final" / "out" / "replays" / Path(r.replay_path).name)
                       for r in played.results() if r.replay_path)  # (the first machine's replays came along)
        # the same final played in one go (on one machine: a SQLite roster) has the same standings
        solo = Roster.create(tmp_path / "solo")
        for name in ("alice", "bob"):
            admitted_versions(solo, name, 1, SEEDED_BOT)
        (solo.folder / "final.toml").write_text(FINAL_PLAN, encoding="utf-8")
        assert craits(["final", "deadline", str(solo.folder), "now"]) == 0
        capsys.readouterr()
        assert craits(["final", "run", str(solo.folder)]) == 0
        assert f"the final: plays in {solo.folder / 'final' / 'out'} on this machine, not in ${STORE_ENV}\n" in (
            capsys.readouterr().err)
        assert os.environ[STORE_ENV] == pg_url
        with psycopg.connect(pg_url) as db:  # (nothing of it in the database the shell named)
            assert db.execute("SELECT count(*) FROM craits_tournaments WHERE name = 'final'").fetchone() == (0,)
        assert standing_rows(Final(solo)) == standing_rows(final)
        assert [(g["game_id"], g["placings"]) for g in Final(solo).games()] == [(g["game_id"], g["placings"]) for g in games]
        # the first machine back, its folder as it was killed: a run there goes on from the final as played since
        shutil.copytree(tmp_path / "stale", here.folder / "final")
        capsys.readouterr()
        assert craits(["final", "run", str(here.folder)]) == 0
        assert (f"its 6 games were played in {socket.gethostname()}:{there.folder.resolve() / 'final' / 'out'}"
                in capsys.readouterr().err)
        assert final.games() == games and final.progress() == (6, 6, True)
        status, page, _ = participant.request("p/alice/final")
        assert status == 200 and "So far" not in page and page.count("<tr><td>") == 2, page
    finally:
        web.process.terminate()
        web.process.wait(30)


def claimed_together(finals: list[Final]) -> list[tables.Held | None]:
    """Each final's claim, asked at the same moment from threads of their own."""
    ready = threading.Barrier(len(finals))

    def claim(final: Final) -> tables.Held | None:
        ready.wait()
        return final.claim()

    with concurrent.futures.ThreadPoolExecutor(len(finals)) as pool:
        return list(pool.map(claim, finals))


def test_of_two_runs_of_the_final_started_together_one_plays_and_a_run_stalled_past_its_claim_stops(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The claim on playing the final is taken in one locked step: two `craits final run` started
    at once on two machines both passed the check and both played. A run that stalled past its
    claim (its machine suspended) while another machine took the final over and finished it
    stops when it wakes, keeping nothing: it went on playing and wrote its results over the others'."""
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "class")
    for _ in range(10):
        finals = [Final(here), Final(there)]
        held = claimed_together(finals)
        assert sorted(h is None for h in held) == [False, True], held
        [winner] = [f for f, h in zip(finals, held, strict=True) if h is None]
        winner.let_go()
        assert finals[0].playing_elsewhere() is None and finals[1].playing_elsewhere() is None
    final_to_play(here)
    run = subprocess.Popen([sys.executable, "-m", "server.cli", "final", "run", str(here.folder)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                           env={**os.environ, "CRAITS_LEASE_S": "2"})
    final = Final(there)
    try:
        wait_for(lambda: (final.progress() or (0, 0, False))[0] >= 1, 120)
        os.killpg(run.pid, signal.SIGSTOP)  # (its machine suspended, the run and its bots with it)
        wait_for(lambda: final.playing_elsewhere() is None, 10)  # (its claim ran out)
        capsys.readouterr()
        assert craits(["final", "run", str(there.folder)]) == 0  # (another machine takes the final over and ends it)
        assert "the final: resuming" in capsys.readouterr().err
        games = final.games()
        assert final.progress() == (6, 6, True) and len({g["game_id"] for g in games}) == 6
        os.killpg(run.pid, signal.SIGCONT)  # (the first machine wakes up)
        _, said = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(30)
    assert run.returncode == 2, said
    assert (f"the final was taken over while this run stalled past its claim (2 s unrenewed), by the run in "
            f"{socket.gethostname()}:{there.folder.resolve() / 'final' / 'out'}: this run stops") in said, said
    assert final.games() == games and final.progress() == (6, 6, True)
