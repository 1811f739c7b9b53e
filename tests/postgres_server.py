"""A real PostgreSQL server for the tests: Debian's ``initdb`` and ``pg_ctl`` in a temporary
folder owned by the ``postgres`` user (the server refuses to run as root), listening on
127.0.0.1 at a free port and on a Unix socket in that folder. ``fsync`` is off: a test
database need not survive a power cut, and the server may still be killed and restarted.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from server.doctor import find_pg_bin

__all__ = ["PostgresServer", "find_pg_bin", "free_port"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """One server for a test session; ``new_database()`` gives each test its own database."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="craits-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = free_port()
        self._names = itertools.count(1)
        self._as_postgres = os.geteuid() == 0
        self._holder: socket.socket | None = None
        """The server's port, held while it is stopped (:meth:`stop`)."""
        if self._as_postgres:
            self.root.chmod(0o755)
            shutil.chown(self.root, "postgres")

    def _run(self, *argv: object, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        cmd = [str(a) for a in argv]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=self.root, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stdout.decode(errors='replace')[-2000:]}")
        return done

    def start(self) -> None:
        self._release_port()
        if not self.data.exists():
            self._run(self.bin / "initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync",
                      "-E", "UTF8", "--locale", "C")
        options = (f"-k {self.root} -h 127.0.0.1 -p {self.port} -c fsync=off "
                   "-c full_page_writes=off -c max_connections=200")
        try:
            self._run(self.bin / "pg_ctl", "-D", self.data, "-l", self.log, "-o", options, "-w", "-t", "60", "start")
        except RuntimeError as err:
            try:
                said = self.log.read_text(errors="replace")[-1500:]
            except OSError:
                said = "(no server log)"
            raise RuntimeError(f"{err}\nthe server's log ends:\n{said}") from None

    def stop(self, mode: str = "fast") -> None:
        """``fast``: disconnect everyone and stop; ``immediate``: as if the server died. Its port
        stays held (a bound socket) until :meth:`start`: a test's outage lasts long enough for
        another process's connection to be given the free port as its own, and the server
        could not come back on it."""
        self._run(self.bin / "pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop", check=False)
        self._hold_port()

    def _hold_port(self) -> None:
        if self._holder is not None:
            return
        holder = socket.socket()
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (past the stopped server's closing connections)
        try:
            holder.bind(("127.0.0.1", self.port))
        except OSError:
            holder.close()  # (still taken by the server's last connections: nothing to hold)
            return
        self._holder = holder

    def _release_port(self) -> None:
        if self._holder is not None:
            self._holder.close()
            self._holder = None

    def is_running(self) -> bool:
        return self._run(self.bin / "pg_ctl", "-D", self.data, "status", check=False).returncode == 0

    def restart(self, mode: str = "immediate") -> None:
        self.stop(mode)
        self.start()

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def new_database(self) -> str:
        """A fresh empty database; returns its URL."""
        import psycopg

        name = f"craits_test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def cleanup(self) -> None:
        self.stop("immediate")
        self._release_port()
        shutil.rmtree(self.root, ignore_errors=True)
