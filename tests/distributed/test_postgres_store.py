"""The PostgreSQL store against a real server: the SQLite store's contract, plus
migrations, one-transaction games with their replays, and exactly-once recording."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from server.engine import make_config
from server.spec import BotSpec, GameRecord, GameSpec
from server.storage.postgres import SCHEMA_VERSION, PostgresStore, migrate, migrations, schema_version
from server.storage.replay import verify_replay
from server.storage.store import GameSlot, StoreError
from tests.cli import run_cli
from tests.postgres_server import PostgresServer
from tournaments.local import play_local


def test_server_answers(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_new_database_is_set_up_at_first_use(pg_url: str) -> None:
    with PostgresStore(pg_url, "t1") as store:
        assert store.tournament() is None
        assert store.counts() == (0, 0)
    with psycopg.connect(pg_url) as conn:
        assert schema_version(conn) == SCHEMA_VERSION
        assert conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone() == (True,)


CONFIG = make_config("craits", 3, short_game=True)
SLOTS = [
    GameSlot("g1", 0, 0, 0, 0, 11, ("a", "b", "c")),
    GameSlot("g2", 1, 0, 0, 1, 11, ("b", "c", "a")),
    GameSlot("g3", 2, 0, 0, 2, 11, ("c", "a", "b")),
]


def new_store(url: str, name: str = "t") -> PostgresStore:
    store = PostgresStore(url, name)
    store.create_tournament(
        name=name, source_text="name = 't'", source_path="t.toml", schedule_digest="x", settings={"k": 1},
        bots=[("a", "builtin", "builtin"), ("b", "builtin", "builtin"), ("c", "builtin", "builtin")],
        games=SLOTS,
    )
    return store


def play(slot: GameSlot, replay_dir: Path | None = None) -> GameRecord:
    seats = tuple(BotSpec(name, "builtin", builtin="random") for name in slot.seats)
    path = None if replay_dir is None else replay_dir / f"{slot.game_id}.jsonl"
    return play_local(GameSpec(slot.game_id, CONFIG, slot.seed, seats, replay_path=path))


def test_a_recorded_game_reads_back_whole_with_its_replay(pg_url: str, tmp_path: Path) -> None:
    with new_store(pg_url) as store:
        assert store.games() == SLOTS and store.pending_games() == SLOTS and store.counts() == (0, 3)
        record = play(SLOTS[0], tmp_path)
        huge = 3169126500570573503741758014029  # pressures double: totals pass 64 bits
        record = dataclasses.replace(record, result=dataclasses.replace(record.result, totals=(huge, 1, 2)))
        store.record_game(record)
        (result,) = store.results()
        assert result.bots == ("a", "b", "c") and result.totals == (huge, 1, 2)
        assert result.placings == record.result.placings and result.digest == record.digest
        assert result.replay_path == "replays/g1.jsonl" and result.seed == SLOTS[0].seed  # (one deal: the rankings)
        assert [h.scores for h in store.hands("g1")] == [h.scores for h in record.result.hands]
        assert store.replay("g1") == (tmp_path / "g1.jsonl").read_bytes()
        assert [g.game_id for g in store.pending_games()] == ["g2", "g3"] and store.counts() == (1, 3)
        out = tmp_path / "export"
        assert store.export_replays(out) == 1 and store.export_replays(out) == 0  # (an equal file is kept)
        assert verify_replay(out / "g1.jsonl").digest == record.digest


def test_a_game_is_recorded_once_a_late_duplicate_is_dropped(pg_url: str) -> None:
    with new_store(pg_url) as store:
        first = play(SLOTS[0])
        assert store.record_game_once(first, worker="w1")
        late = dataclasses.replace(first, digest="another")
        assert not store.record_game_once(late, worker="w2")
        with pytest.raises(StoreError, match="already recorded"):
            store.record_game(late)
        assert [r.digest for r in store.results()] == [first.digest]
        with pytest.raises(StoreError, match="not in the schedule"):
            store.record_game(dataclasses.replace(first, game_id="nope"))
        with pytest.raises(StoreError, match="not the schedule's"):
            store.record_game(dataclasses.replace(play(SLOTS[1]), game_id="g3"))


def recorded_whole(store: PostgresStore, record: GameRecord) -> bool:
    """The game's result is stored with this digest, every seat, every hand and its replay."""
    [result] = [r for r in store.results() if r.game_id == record.game_id]
    return (result.digest == record.digest and result.bots == tuple(r.bot for r in record.seats)
            and [h.scores for h in store.hands(record.game_id)] == [h.scores for h in record.result.hands]
            and store.replay(record.game_id) == Path(record.replay_path or "").read_bytes())


def test_games_ending_together_are_recorded_in_one_call_each_once_and_whole(pg_url: str, tmp_path: Path) -> None:
    with new_store(pg_url) as store:
        g1, g2, g3 = (play(slot, tmp_path) for slot in SLOTS)
        store.record_game(g2)
        other_seats = dataclasses.replace(g3, seats=g1.seats)
        outcomes = store.record_games_once(
            [g1, dataclasses.replace(g2, digest="late"), dataclasses.replace(g1, game_id="nope"), other_seats, g1],
            worker="w1")
        assert outcomes[:2] == [True, False] and outcomes[4] is False  # (g1's second copy: found recorded)
        assert isinstance(outcomes[2], StoreError) and "not in the schedule" in str(outcomes[2])
        assert isinstance(outcomes[3], StoreError) and "not the schedule's" in str(outcomes[3])
        assert store.counts() == (2, 3) and recorded_whole(store, g1) and recorded_whole(store, g2)
        assert store.record_games_once([g3, g1]) == [True, False] and recorded_whole(store, g3)


def test_a_games_queue_job_is_finished_by_the_statement_that_records_it_and_only_then(
    pg_url: str, tmp_path: Path
) -> None:
    """A worker's job ends with its game's recording, one statement for both: the jobs of games
    recorded now or before are gone, those of games the store refused stay for their worker to fail."""
    with new_store(pg_url) as store:
        g1, g2, g3 = (play(slot, tmp_path) for slot in SLOTS)
        store.record_game(g2)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            jobs = [conn.execute("INSERT INTO procrastinate_jobs (queue_name, task_name, args, status) VALUES"
                                 " ('craits', 'craits.play_game', '{}', 'doing') RETURNING id").fetchone()[0]
                    for _ in range(5)]
            outcomes = store.record_games_once(
                [g1, dataclasses.replace(g2, digest="late"), dataclasses.replace(g3, game_id="nope"),
                 dataclasses.replace(g3, seats=g1.seats), g1], worker="w1", jobs=jobs)
            left = {row[0] for row in conn.execute("SELECT id FROM procrastinate_jobs").fetchall()}
        assert outcomes[0] is True and outcomes[1] is False and outcomes[4] is False
        assert all(isinstance(o, StoreError) for o in outcomes[2:4]), outcomes
        assert left == {jobs[2], jobs[3]}, (jobs, left)


def test_the_times_a_store_keeps_are_the_databases_whatever_a_workers_clock_says(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker an hour late wrote its games as recorded an hour early (after a deadline, its
    games entered the grades as played before it), and its refusals looked an hour old to the
    organizer, who then waited for good instead of saying why every game was refused."""
    real = time.time
    with new_store(pg_url) as store:
        monkeypatch.setattr(time, "time", lambda: real() - 3600)  # (the worker's clock)
        assert store.record_game_once(play(SLOTS[0]), worker="late")
        store.note_refusal("late", "cannot sandbox launched bots", "g2")
        monkeypatch.setattr(time, "time", real)  # (the organizer's)
        (result,) = store.results()
        assert abs(result.recorded_at - real()) < 30 and abs(store.now() - real()) < 30
        assert [r.worker for r in store.refusals(since=store.now() - 60)] == ["late"]


def test_a_game_the_database_refuses_does_not_refuse_the_others_of_its_call(pg_url: str, tmp_path: Path) -> None:
    with new_store(pg_url) as store:
        g1, g2, g3 = (play(slot, tmp_path) for slot in SLOTS)
        hands = g2.result.hands
        twice = dataclasses.replace(g2, result=dataclasses.replace(g2.result, hands=(*hands, hands[-1])))
        [first, refused, third] = store.record_games_once([g1, twice, g3])
        assert first is True and third is True and isinstance(refused, StoreError), refused
        assert store.counts() == (2, 3) and store.hands("g2") == [] and store.replay("g2") is None


def test_a_connection_lost_while_recording_many_games_leaves_none_half_written(
    pg_url: str, tmp_path: Path
) -> None:
    """The recording statement is held (a row it must lock is locked elsewhere), its connection
    is cut mid-statement, the lock freed: nothing of the games was written, and the retry on a
    new connection records each of them once and whole."""
    with new_store(pg_url) as store, psycopg.connect(pg_url) as blocker, psycopg.connect(pg_url, autocommit=True) as admin:
        records = [play(slot, tmp_path) for slot in SLOTS]
        blocker.execute("SELECT 1 FROM craits_games WHERE game_id = 'g3' FOR UPDATE")  # (the results' key check waits)
        outcome: list[object] = []
        recording = threading.Thread(target=lambda: outcome.append(store.record_games_once(records)))
        recording.start()
        try:
            waiting = None
            for _ in range(200):
                waiting = admin.execute("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                        " AND query LIKE '%%craits_results%%'").fetchone()
                if waiting:
                    break
                threading.Event().wait(0.05)
            assert waiting, "the recording statement did not wait on the lock"
            assert admin.execute("SELECT pg_terminate_backend(%s)", waiting).fetchone() == (True,)
            assert admin.execute("SELECT count(*) FROM craits_seats").fetchone() == (0,)
        finally:
            blocker.rollback()
            recording.join(30)
        assert outcome == [[True, True, True]]
        assert store.counts() == (3, 3) and all(recorded_whole(store, r) for r in records)


class Exploding(tuple):  # type: ignore[type-arg]
    """Hand scores that fail while the transaction is half-written."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire")


def test_a_failure_half_way_through_leaves_no_trace(pg_url: str, tmp_path: Path) -> None:
    with new_store(pg_url) as store:
        record = play(SLOTS[0], tmp_path)
        hands = list(record.result.hands)
        hands[-1] = dataclasses.replace(hands[-1], scores=Exploding(hands[-1].scores))
        broken = dataclasses.replace(record, result=dataclasses.replace(record.result, hands=tuple(hands)))
        with pytest.raises(RuntimeError, match="disk on fire"):
            store.record_game(broken)
        assert store.results() == [] and store.hands("g1") == [] and store.replay("g1") is None
        store.record_game(record)
        assert store.counts() == (1, 3)


def test_one_database_holds_many_tournaments_apart(pg_url: str) -> None:
    with new_store(pg_url, "one") as one, new_store(pg_url, "two") as two:
        one.record_game(play(SLOTS[0]))
        assert one.counts() == (1, 3) and two.counts() == (0, 3)
        assert two.results() == []
        with pytest.raises(StoreError, match="already holds"):
            two.create_tournament(name="two", source_text="", source_path="", schedule_digest="", settings={},
                                  bots=[], games=[])
        assert two.forget_aborted() == 0
        aborted = dataclasses.replace(play(SLOTS[1]), aborted="every bot gone")
        two.record_game(aborted)
        assert two.forget_aborted() == 1 and two.counts() == (0, 3)


def test_an_older_layout_is_refused_with_the_command_that_migrates_it(pg_url: str) -> None:
    PostgresStore(pg_url, "t").close()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as if a later migration were missing
        conn.execute("INSERT INTO craits_schema (version, name) VALUES (%s, 'future')", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match=r"newer than this craits knows.*upgrade craits"):
        PostgresStore(pg_url, "t")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM craits_schema")
        conn.execute("INSERT INTO craits_schema (version, name) VALUES (0, 'before 0001')")
    with pytest.raises(StoreError, match=r"version 0, this craits uses version \d+; migrate it .* craits store migrate"):
        PostgresStore(pg_url, "t")


def test_migrations_are_numbered_and_applied_in_order(pg_url: str) -> None:
    names = [name for _, name, _ in migrations()]
    assert names == sorted(names) and names[0].startswith("0001_")
    assert migrate(pg_url) == (0, SCHEMA_VERSION)
    assert migrate(pg_url) == (SCHEMA_VERSION, SCHEMA_VERSION)  # (idempotent)
    with psycopg.connect(pg_url) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM craits_schema ORDER BY version")] == names


def test_an_unreachable_database_is_one_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot connect"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", "t")


def test_a_lost_connection_is_retried_and_the_game_recorded_once(
    pg_url: str, pg_server: PostgresServer, tmp_path: Path
) -> None:
    with new_store(pg_url) as store:
        store.counts()
        pg_server.stop("immediate")
        restarted = threading.Timer(1.5, pg_server.start)
        restarted.start()
        try:
            store.record_game(play(SLOTS[0], tmp_path))  # waits for the server, then records
        finally:
            restarted.join()
        assert store.counts() == (1, 3) and store.replay("g1") is not None


def test_the_command_that_creates_the_tables_is_printed_to_paste_as_it_is(
    pg_url: str, pg_server: PostgresServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database without the craits tables names the command that creates them, and that very
    command works: with the URL as given when it holds no password; with "$CRAITS_STORE" when
    it does (its password is never printed, masked or not)."""
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    monkeypatch.delenv("CRAITS_STORE", raising=False)

    def hint(url: str) -> str:
        code, _, err = run_cli(capsys, "store", "list", url)
        assert code == 2 and len(err.splitlines()) == 1, err
        return err.rstrip("\n").split("create them with: ", 1)[1]

    plain = hint(pg_url)
    assert plain == f"craits store migrate {pg_url}"
    secret = pg_server.new_database().replace("postgres@", "postgres:s3cret@")
    assert hint(secret) == 'craits store migrate "$CRAITS_STORE" (with CRAITS_STORE set to the URL)'
    monkeypatch.setenv("CRAITS_STORE", secret)
    pasted = hint(secret)
    assert pasted == 'craits store migrate "$CRAITS_STORE"'
    for command, url in ((plain, pg_url), (pasted, secret)):
        done = subprocess.run(["bash", "-c", command], env={**env, "CRAITS_STORE": secret}, capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert run_cli(capsys, "store", "list", url)[0] == 0
