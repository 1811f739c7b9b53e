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
