"""A real PostgreSQL server for the tests of the store, the workers and the web board on
PostgreSQL (tests/distributed, tests/web), one per test session.

``pg_server`` starts Debian's PostgreSQL (``initdb`` + ``pg_ctl``, as the ``postgres``
user when the tests run as root) in a temporary folder, on 127.0.0.1 at a free port;
``pg_url`` gives each test a fresh empty database on it. Without the binaries the tests
skip with the reason, except under CI=true, where they fail (``make test`` installs
them: scripts/system-deps.sh).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import craits.grpc_io  # noqa: F401  # first: the tests run on the I/O layer the referee chooses
import pytest

from tests.postgres_server import PostgresServer, find_pg_bin

LONGEST_FIRST = (
    "tests/distributed/test_outages.py",  # (a database stopped 90 s, twice)
    "tests/distributed/test_workers.py",
    "tests/tournaments/test_fair_play.py",
    "tests/tournaments/test_tournament_kept_bots.py",
    "tests/web/test_web_postgres.py",
    "tests/distributed/test_deploy.py",
    "tests/tournaments/test_tournament_cli.py",
    "tests/web/test_web_server.py",
    "tests/kits/test_handouts.py",
    "tests/kits/test_kits.py",
    "tests/participants/test_tables_pg.py",
    "tests/bots/test_handout.py",
    "tests/referee/test_service.py",
    "tests/participants/test_hostile_site.py",
    "tests/web/test_web_browser.py",
    "tests/tournaments/test_tournament_balanced.py",
    "tests/participants/test_participants_web.py",
    "tests/test_demo.py",
    "tests/distributed/test_postgres_tournament.py",
    "tests/participants/test_course.py",
    "tests/tournaments/test_examples_anywhere.py",
    "tests/participants/test_participants_browser.py",
    "tests/web/test_web_process.py",
)
"""The files that took longest in a whole run (30 s and more under load), longest first. ``make
test`` hands whole files to its workers in collection order (--no-loadscope-reorder: pytest-xdist
otherwise starts the files with the most tests first, which put the two-minute files of three
to fifteen tests last, one worker playing them while the others had finished)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first, the rest in their usual order (only the order changes)."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    bin_dir = find_pg_bin()
    if bin_dir is None:
        reason = "PostgreSQL's initdb/pg_ctl are not installed (Debian: apt-get install postgresql)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; under CI they must be: scripts/system-deps.sh installs them")
        pytest.skip(reason)
    server = PostgresServer(bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> str:
    """A fresh, empty database of its own for one test."""
    if not pg_server.is_running():
        pg_server.start()  # (a test that stopped the server and failed before restarting it)
    return pg_server.new_database()
