"""The tournament database: WAL, one transaction per game, nothing half-written."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from server.engine import make_config
from server.spec import BotSpec, GameRecord, GameSpec, SeatReport, SeatStatus
from server.storage.store import SCHEMA_VERSION, GameSlot, Store, StoreError
from tests.cli import run_cli
from tournaments.local import play_local

ROOT = Path(__file__).resolve().parents[2]
CONFIG = make_config("craits", 3, short_game=True)
SLOTS = [
    GameSlot("g1", 0, 0, 0, 0, 11, ("a", "b", "c")),
    GameSlot("g2", 1, 0, 0, 1, 11, ("b", "c", "a")),
    GameSlot("g3", 2, 0, 0, 2, 11, ("c", "a", "b")),
]


def new_store(path: Path) -> Store:
    store = Store(path / "t.db")
    store.create_tournament(
        name="t", source_text="name = 't'", source_path="t.toml", schedule_digest="x", settings={"k": 1},
        bots=[("a", "builtin", "builtin"), ("b", "builtin", "builtin"), ("c", "builtin", "builtin")],
        games=SLOTS,
    )
    return store


def play(slot: GameSlot) -> GameRecord:
    seats = tuple(BotSpec(name, "builtin", builtin="random") for name in slot.seats)
    return play_local(GameSpec(slot.game_id, CONFIG, slot.seed, seats))


def test_a_new_database_is_in_wal_mode_with_a_schema_version(tmp_path: Path) -> None:
    new_store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "t.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_the_schedule_is_stored_and_pending_until_recorded(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    assert store.games() == SLOTS and store.pending_games() == SLOTS
    assert store.counts() == (0, 3)
    store.record_game(play(SLOTS[1]))
    assert [g.game_id for g in store.pending_games()] == ["g1", "g3"]
    assert store.counts() == (1, 3)
    assert store.tournament() is not None and store.tournament().settings == {"k": 1}  # type: ignore[union-attr]


def test_a_recorded_game_reads_back_whole(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    record = play(SLOTS[0])
    store.record_game(record)
    (result,) = store.results()
    assert result.bots == ("a", "b", "c") and result.totals == record.result.totals
    assert result.placings == record.result.placings and result.lower_wins
    assert result.digest == record.digest and result.aborted == ""
    assert result.seed == SLOTS[0].seed  # (games that share it are one deal for the rankings)
    hands = store.hands("g1")
    assert [h.scores for h in hands] == [h.scores for h in record.result.hands]
    assert [h.pressures for h in hands] == [h.pressures for h in record.result.hands]
    assert sum(h.scores[0] for h in hands) == result.totals[0]


def test_totals_beyond_64_bits_survive(tmp_path: Path) -> None:
    """Pressures double: a game of 'first' bots can pass 2**63 points."""
    store = new_store(tmp_path)
    record = play(SLOTS[0])
    huge = 3169126500570573503741758014029
    result = dataclasses.replace(record.result, totals=(huge, 1, 2))
    store.record_game(dataclasses.replace(record, result=result))
    assert store.results()[0].totals == (huge, 1, 2)


def test_statuses_and_counters_are_kept(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    record = play(SLOTS[0])
    seats = (
        SeatReport("a", SeatStatus.STRUCK_OUT, decisions=9, timeouts=2, strikes=3, illegal=1, default_actions=4),
        SeatReport("b", SeatStatus.DISCONNECTED, disconnects=1),
        SeatReport("c"),
    )
    store.record_game(dataclasses.replace(record, seats=seats))
    rows = store.results()[0].seats
    assert [r.status for r in rows] == ["struck_out", "disconnected", "ok"]
    assert rows[0].counters == {"decisions": 9, "timeouts": 2, "strikes": 3, "illegal": 1, "malformed": 0,
                                "disconnects": 0, "default_actions": 4, "bot_errors": 0}


def test_a_game_is_recorded_once(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    store.record_game(play(SLOTS[0]))
    with pytest.raises(StoreError, match="already recorded"):
        store.record_game(play(SLOTS[0]))
    with pytest.raises(StoreError, match="not in the schedule"):
        store.record_game(dataclasses.replace(play(SLOTS[0]), game_id="nope"))


def test_a_record_with_the_wrong_seats_is_refused(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    record = play(SLOTS[1])
    with pytest.raises(StoreError, match="not the schedule's"):
        store.record_game(dataclasses.replace(record, game_id="g1"))
    assert store.counts() == (0, 3)


class Exploding(tuple):  # type: ignore[type-arg]
    """Hand scores that fail while the transaction is half-written."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire")


def test_a_failure_half_way_through_leaves_no_trace(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    record = play(SLOTS[0])
    hands = list(record.result.hands)
    hands[-1] = dataclasses.replace(hands[-1], scores=Exploding(hands[-1].scores))
    broken = dataclasses.replace(record, result=dataclasses.replace(record.result, hands=tuple(hands)))
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.record_game(broken)
    assert store.results() == [] and store.hands("g1") == [] and store.counts() == (0, 3)
    store.record_game(record)  # and the game can still be recorded
    assert store.counts() == (1, 3)


def test_sigkill_in_the_middle_of_a_write_loses_the_whole_game_and_only_it(tmp_path: Path) -> None:
    """A process killed after writing a game's result row but before its hands."""
    new_store(tmp_path).close()
    script = textwrap.dedent(f"""
        import dataclasses, os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_tournament_store import SLOTS, play
        from server.storage.store import Store
        store = Store({str(tmp_path / "t.db")!r})
        store.record_game(play(SLOTS[0]))

        class Kill(tuple):
            def __iter__(self):
                os.kill(os.getpid(), signal.SIGKILL)

        record = play(SLOTS[1])
        hands = list(record.result.hands)
        hands[3] = dataclasses.replace(hands[3], scores=Kill(hands[3].scores))
        store.record_game(dataclasses.replace(record, result=dataclasses.replace(record.result, hands=tuple(hands))))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == -9, proc.stderr.decode()
    store = Store(tmp_path / "t.db")
    assert [r.game_id for r in store.results()] == ["g1"]
    assert store.hands("g2") == []
    assert len(store.hands("g1")) == len(play(SLOTS[0]).result.hands)
    assert [g.game_id for g in store.pending_games()] == ["g2", "g3"]
    assert sqlite3.connect(tmp_path / "t.db").execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_an_aborted_game_is_recorded_as_a_status(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    record = play(SLOTS[0])
    empty = dataclasses.replace(record.result, totals=(), placings=(), hands=())
    store.record_game(dataclasses.replace(record, result=empty, aborted="every bot left"))
    (result,) = store.results()
    assert result.aborted == "every bot left" and store.pending_games() == SLOTS[1:]


def test_other_files_are_refused_clearly(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(StoreError, match="not a usable tournament database"):
        Store(junk)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE x (y)")
    with pytest.raises(StoreError, match="not a Craits tournament database"):
        Store(other)
    new_store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "t.db")
    db.execute("UPDATE schema_version SET version = 99")
    db.commit()
    with pytest.raises(StoreError, match="layout version 99"):
        Store(tmp_path / "t.db")


def test_one_tournament_per_database(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    with pytest.raises(StoreError, match="already holds tournament 't'"):
        store.create_tournament(name="u", source_text="", source_path="", schedule_digest="", settings={},
                                bots=[], games=[])


def test_aborted_games_can_be_forgotten_to_play_them_again(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    record = play(SLOTS[0])
    store.record_game(play(SLOTS[1]))
    store.record_game(dataclasses.replace(record, aborted="internal error"))
    assert store.forget_aborted() == 1
    assert [g.game_id for g in store.pending_games()] == ["g1", "g3"] and store.hands("g1") == []
    store.record_game(record)
    assert store.counts() == (2, 3) and store.forget_aborted() == 0


def test_an_empty_file_is_said_to_be_one_not_a_readonly_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 0-byte tournament.db (a copy cut short, a file touched by hand): the reports and
    ``craits web``, which open it read-only, say what it is in one line, and leave it as it is."""
    db = tmp_path / "tournament.db"
    db.write_bytes(b"")
    with pytest.raises(StoreError, match="an empty file"):
        Store(db, readonly=True)
    for argv in (("tournament", "standings"), ("ladder", "standings"), ("web", "--log-dir", str(tmp_path / "logs"))):
        code, _, err = run_cli(capsys, *argv, str(tmp_path))
        assert code == 2 and err == f"craits: error: {db}: an empty file (0 bytes), not a tournament's database\n", err
    assert db.stat().st_size == 0
