"""A roster kept in PostgreSQL (the ladder's database): the same roster as in SQLite, its
uploads and built versions stored whole by their hash, fetched by the workers that play them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from participants.admission import admit_pending
from participants.entrants import RosterEntrants
from participants.roster import PostgresRoster, Roster, RosterError, replaced_reason
from server.cli.tournament_pg import _no_runner, runner_for
from server.storage.bot_files import FileCache, FilesUnavailable, pack_folder, put_file, sha256
from server.storage.postgres import PostgresStore
from server.storage.store import GameSlot
from tests.cli import run_cli
from tests.participants.conftest import LADDER
from tests.participants.uploads import good_bot
from tournaments.config import parse_config
from tournaments.distributed import GameRefused, GameWorker, WorkerSettings, play_queued
from tournaments.ladder import LadderRound, open_ladder, run_ladder
from tournaments.runner import RunSummary
from tournaments.standings import Standings

ROOT = Path(__file__).resolve().parents[2]


def test_a_roster_in_postgresql_adds_checks_revokes_and_numbers_versions_never_overwriting(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "roster", "add", str(tmp_path / "class"), "alice", "--store", pg_url)
    assert code == 0, err
    token = out.split()[1]
    roster = Roster(tmp_path / "class")  # (the folder says where: store.toml)
    assert isinstance(roster, PostgresRoster) and not (tmp_path / "class" / "roster.db").exists()
    assert roster.authenticate(token) == "alice"
    assert roster.authenticate(token[:-2] + "zz") is None
    with pytest.raises(RosterError, match="already on the roster"):
        roster.add("alice")
    assert [name for name, _ in roster.import_csv("name,team\nbob,blue\n")] == ["bob"]
    upload = good_bot()  # (once: a zip holds the time it was made)
    first = roster.submit("alice", upload, "mybot.zip")
    second = roster.submit("alice", good_bot(build="true"), "mybot.zip")
    again = roster.submit("alice", upload, "mybot.zip")
    assert [(v.number, v.sha256) for v in roster.versions("alice")] == [
        (1, first.sha256), (2, second.sha256), (3, first.sha256)]
    assert roster.version("alice", 3) == again and again.status == "building"
    assert roster.version("alice", 1).reason == replaced_reason(2)  # type: ignore[union-attr]  # (one upload waits)
    roster.publish("a-ladder-in-sqlite", roster.versions())  # (not in this database: nothing to tell its workers)
    with psycopg.connect(pg_url) as conn:
        files = conn.execute("SELECT sha256, body FROM craits_files ORDER BY sha256").fetchall()
        dump = repr(conn.execute("SELECT * FROM craits_roster_participants").fetchall())
    assert {(d, sha256(bytes(b))) for d, b in files} == {(first.sha256, first.sha256), (second.sha256, second.sha256)}
    assert token not in dump and token.split("-")[1] in dump  # (only its hash, and its public id)
    elsewhere = PostgresRoster.create_in(tmp_path / "elsewhere", pg_url, "class")  # (another machine's folder)
    assert [p.name for p in elsewhere.participants()] == ["alice", "bob"]
    assert elsewhere.upload_path(first.sha256).read_bytes() == upload
    roster.revoke("alice")
    assert roster.authenticate(token) is None
    renewed = roster.renew("alice")
    assert roster.authenticate(renewed) == "alice" and roster.authenticate(token) is None


def test_two_machines_folders_of_one_roster_must_share_the_forms_key_and_rekey_says_what_to_copy(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Behind a load balancer each web process refuses the forms another signed: a folder with a
    key of its own is refused at start, not form by form; `roster rekey` makes the one to copy."""
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "keyed")
    there = PostgresRoster.create_in(tmp_path / "there", pg_url, "keyed")
    key = here.secret()
    with pytest.raises(RosterError, match=r"there/session.key: not the key the roster's other web processes sign"):
        there.secret()
    (tmp_path / "there" / "session.key").write_bytes((tmp_path / "here" / "session.key").read_bytes())
    assert there.secret() == key
    code, out, err = run_cli(capsys, "roster", "rekey", str(tmp_path / "there"))
    assert code == 0 and "a new key" in out and "copy it (chmod 600)" in out, err
    assert there.secret() != key and oct((tmp_path / "there" / "session.key").stat().st_mode & 0o777) == "0o600"
    with pytest.raises(RosterError, match="craits roster rekey"):
        here.secret()
    with psycopg.connect(pg_url) as conn:
        assert there.secret().hex() not in repr(conn.execute("SELECT * FROM craits_roster_settings").fetchall())


def test_a_ladder_on_postgresql_refuses_a_roster_kept_in_sqlite_and_says_how(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    Roster.create(tmp_path / "roster").add("alice")
    (tmp_path / "class.toml").write_text(LADDER, encoding="utf-8")
    code, _, err = run_cli(capsys, "ladder", "run", str(tmp_path / "class.toml"), "--store", pg_url, "--rounds", "1")
    assert code == 2 and "kept in SQLite" in err and "--store URL" in err, err
    with pytest.raises(RosterError, match="kept in SQLite"):
        Roster.create(tmp_path / "roster", pg_url)


def test_a_version_admitted_while_a_ladder_runs_on_postgresql_is_played_by_a_worker_from_its_cache(
    tmp_path: Path, pg_url: str
) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CRAITS_STORE", None)
    worker = subprocess.Popen(  # (`craits worker` as on another machine: only the database is shared)
        [sys.executable, "-m", "server.cli", "worker", "--store", pg_url, "--concurrency", "1", "--cache", str(cache),
         "--cache-max", "1", "--log-dir", str(tmp_path / "worker-logs")], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        played_by_the_worker(tmp_path, pg_url, out, cache)
    finally:
        worker.terminate()
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def test_a_build_printing_a_nul_is_refused_with_its_log_and_the_next_participant_is_built_on_postgresql(
    tmp_path: Path, pg_url: str
) -> None:
    """PostgreSQL's text cannot hold a NUL: a hostile build printing one failed its version's
    decision, which stopped the builder, for everyone's uploads."""
    roster = Roster.create(tmp_path / "roster", pg_url)
    roster.add("mallory")
    roster.add("alice")
    roster.submit("mallory", good_bot(build="printf 'x\\000y\\n'; exit 1"), "evil\x00.zip")
    roster.submit("alice", good_bot(), "mybot.zip")
    assert {v.participant: o.status for v, o in admit_pending(roster)} == {"mallory": "refused", "alice": "admitted"}
    [evil] = roster.versions("mallory")
    assert evil.status == "refused" and "x\ufffdy" in evil.build_log, evil.build_log


def played_by_the_worker(tmp_path: Path, pg_url: str, out: Path, cache: Path) -> None:
    roster = Roster.create(tmp_path / "roster", pg_url)
    roster.add("alice")
    roster.submit("alice", good_bot(), "mybot.zip")
    assert [o.status for _, o in admit_pending(roster)] == ["admitted"]
    config = parse_config(LADDER, source="class.toml", base_dir=tmp_path)
    entrants = RosterEntrants(config)
    settings = WorkerSettings(concurrency=1, work_dir=tmp_path / "organizer")
    store = open_ladder(config, LADDER, str(tmp_path / "class.toml"), out, store=PostgresStore(pg_url, "class"))
    seated: list[tuple[str, ...]] = []

    def on_round(played: LadderRound, standings: Standings) -> None:
        seated.append(played.seats)
        if len(seated) == 1:  # alice submits again; it is admitted before the next round is picked
            roster.submit("alice", good_bot(build="true"), "mybot-v2.zip")
            admitting = threading.Thread(target=admit_pending, args=(roster,))  # (its own event loop)
            admitting.start()
            admitting.join()

    async def play_pending(stop: asyncio.Event, run_game: object) -> RunSummary:  # (as `craits ladder run --store`)
        before, _ = store.counts()
        followed = await play_queued(pg_url, store, local_workers=0, settings=settings, runner_for=runner_for("auto"),
                                     stop=stop, wait_for_workers=False)
        assert not followed.refused and not followed.failed
        return RunSummary(followed.recorded - before, followed.recorded, followed.scheduled, followed.stopped, 0.0)

    with store:
        asyncio.run(asyncio.wait_for(run_ladder(
            entrants.config(), store, out, _no_runner, rounds=3, on_round=on_round, handle_signals=False,
            play_pending=play_pending, entrants=entrants), 180))
        results = store.results()
        files = store.bot_files()
    assert sorted(seated[0]) == ["alice.v1", "house"]
    assert all(sorted(seats) == ["alice.v2", "house"] for seats in seated[1:])
    assert len(results) == 2 * 3 and not any(r.aborted for r in results)  # (a round: both seatings)
    assert all(seat.status == "ok" for r in results for seat in r.seats), [r.seats for r in results]
    v1, v2 = (roster.version("alice", n) for n in (1, 2))
    assert v1 is not None and v2 is not None
    assert files["alice.v2"] == (roster.built(v2), v2.command)
    # A cache of 1 byte (--cache-max 1) keeps only the version in play: v1 went once v2 was unpacked, saying why.
    assert [p.name for p in cache.glob("[!.]*")] == [files["alice.v2"][0]]
    log = [json.loads(line) for line in (tmp_path / "worker-logs" / "worker.jsonl").read_text().splitlines()]
    evicted = [e for e in log if e["event"] == "bot_cache_evicted"]
    assert [e["files"] for e in evicted] == [files["alice.v1"][0][:12]], evicted
    assert "the least recently used version not in a game" in evicted[0]["why"]
    assert (cache / files["alice.v2"][0] / "bot.py").is_file()  # (unpacked once, played from there twice)

    # A worker whose cache lacks v2 and whose store holds damaged bytes for it refuses its game, saying why.
    damaged = files["alice.v2"][0]
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE craits_files SET body = %s WHERE sha256 = %s", (b"not the bot", damaged))
    with PostgresStore(pg_url, "class") as again:
        again.add_games([GameSlot("extra", 99, 0, 0, 0, 5, ("house", "alice.v2"))])
    refusing = GameWorker(pg_url, WorkerSettings(concurrency=1, work_dir=tmp_path / "w2", cache_dir=tmp_path / "c2"),
                          runner_for("auto"))

    async def play_extra() -> str:
        try:
            return await refusing.play("class", "extra")
        finally:
            await refusing.aclose()

    with pytest.raises(GameRefused, match=r"bot 'alice.v2': files .* do not match their hash"):
        asyncio.run(play_extra())
    assert not (tmp_path / "c2" / damaged).exists() and not any((tmp_path / "c2").glob(".part-*"))


def test_the_cache_unpacks_once_and_refuses_missing_or_damaged_files(tmp_path: Path, pg_url: str) -> None:
    Roster.create(tmp_path / "roster", pg_url)  # (the tables)
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "bot.py").write_text("print('hi')\n")
    packed = pack_folder(tmp_path / "bot")
    assert pack_folder(tmp_path / "bot") == packed  # (the same files, the same bytes and hash)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        digest = put_file(conn, packed)
        damaged = put_file(conn, b"something else")
        conn.execute("UPDATE craits_files SET body = %s WHERE sha256 = %s", (b"tampered", damaged))
    cache = FileCache(pg_url, tmp_path / "cache")
    folder = cache.get(digest)
    assert cache.get(digest) == folder and cache.fetched == 1  # (the second time from the cache)
    assert (folder / "bot.py").read_text() == "print('hi')\n"
    with pytest.raises(FilesUnavailable, match="are not in the store"):
        cache.get("0" * 64)
    with pytest.raises(FilesUnavailable, match="do not match their hash"):
        cache.get(damaged)
    assert sorted(p.name for p in (tmp_path / "cache").glob("[!.]*")) == [digest]  # (.lock: trim's)
