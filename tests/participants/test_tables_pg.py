"""A roster kept in PostgreSQL keeps its side tables there too (comparisons, scrimmages, the
final's choices and publication, pauses): two folders of one roster, as two machines' web
processes have, see the same ones; another roster's are kept apart."""

from __future__ import annotations

from pathlib import Path

import psycopg

from participants.compare import Comparisons
from participants.fairness import Pauses
from participants.final import Final
from participants.roster import PostgresRoster
from participants.scrimmage import Scrimmages
from participants.tables import schema_of
from server.storage.postgres import PostgresStore
from tests.participants.test_participants_web import Client
from tests.participants.uploads import good_bot
from tests.tournaments.configs import builtin_tournament
from tests.web.conftest import start_craits
from tournaments.config import parse_config
from tournaments.ladder import open_ladder


def admitted_versions(roster: PostgresRoster, name: str, count: int) -> str:
    """``name`` added with ``count`` admitted versions (their bot, a script that does nothing); their token."""
    token = roster.add(name)
    for i in range(count):
        version = roster.submit(name, good_bot(build="true" if i else None), f"bot{i}.zip")
        roster.version_dir(version).mkdir(parents=True, exist_ok=True)
        (roster.version_dir(version) / "bot.py").write_text("pass\n")
        roster.decide(version, "admitted", command=["python", "bot.py"])
    return token


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


def test_two_craits_web_processes_on_one_postgresql_roster_show_the_comparison_asked_on_either(
    tmp_path: Path, pg_url: str
) -> None:
    """Two machines' web processes (each with its own folder of the roster) behind one address:
    a participant asks for a comparison on one and finds it on the other."""
    here = PostgresRoster.create_in(tmp_path / "here", pg_url, "class")
    PostgresRoster.create_in(tmp_path / "there", pg_url, "class")
    token = admitted_versions(here, "alice", 2)
    text = builtin_tournament("classladder", 3, 1, {"r1": "random", "r2": "random"}, table_size=2)
    config = parse_config(text, source=str(tmp_path / "ladder.toml"), base_dir=tmp_path)
    open_ladder(config, text, str(tmp_path / "ladder.toml"), tmp_path / "out",
                store=PostgresStore(pg_url, "classladder")).close()
    webs = [start_craits(["web", "classladder", "--store", pg_url, "--roster", str(tmp_path / folder), "--address",
                          "127.0.0.1:0", "--log-dir", str(tmp_path / f"logs-{folder}")], tmp_path)
            for folder in ("here", "there")]
    try:
        one, other = (Client(web.url) for web in webs)
        for client in (one, other):
            assert client.log_in(token)[0] == 303
        status, _, headers = one.request("p/alice/compare", {"a": "1", "b": "2", "games": "4",
                                                             "csrf": one.csrf("p/alice/compare")})
        assert status == 303, headers
        asked = headers["Location"]
        status, page, _ = other.request(asked.lstrip("/"))
        assert status == 200 and "v2 against v1" in page, page
        status, page, _ = other.request("p/alice/compare")
        assert status == 200 and f'href="{asked}"' in page, page
    finally:
        for web in webs:
            web.process.terminate()
            web.process.wait(30)
