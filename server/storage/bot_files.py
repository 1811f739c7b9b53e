"""A bot's files kept in PostgreSQL by their SHA-256, and the cache a worker unpacks them into.

A participant's version is built once, where it is admitted; its folder is then packed
(:func:`pack_folder`, a tar.gz the same bytes for the same files) and stored in
``craits_files`` by its hash (:func:`put_file`). A worker on any machine that is handed a
game seating that version fetches the archive by its hash, checks the hash, and unpacks it
into ``CACHE/HASH/`` (:class:`FileCache`), where later games find it. An entry is unpacked
into a temporary folder and renamed into place, so a half-written one is never used; a
folder named by a hash holds exactly the files of that hash, so it never goes stale.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import re
import secrets
import shutil
import tarfile
import time
from pathlib import Path
from typing import Any

import psycopg

CACHE_ENV = "CRAITS_CACHE"
"""The folder a worker keeps the bots it fetched in, when ``--cache`` does not name one."""
_HASH = re.compile(r"^[0-9a-f]{64}$")


class FilesUnavailable(Exception):
    """A bot's files cannot be had here (missing from the store, or not the bytes their hash names)."""


def default_cache_dir() -> Path:
    """``$CRAITS_CACHE``, else ``$XDG_CACHE_HOME/craits/bots``, else ``~/.cache/craits/bots``."""
    if held := os.environ.get(CACHE_ENV):
        return Path(held).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "craits" / "bots"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pack_folder(folder: Path) -> bytes:
    """The files under ``folder`` as a tar.gz: sorted, owned by no one, dated 0, so the same
    files pack to the same bytes (and the same hash) wherever and whenever they are packed."""

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped, \
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(dirs + files):
                path = Path(root) / name
                archive.add(path, arcname=str(path.relative_to(folder)), recursive=False, filter=clean)
    return buffer.getvalue()


def put_file(conn: psycopg.Connection[Any], data: bytes) -> str:
    """Store ``data`` by its hash (once: the same bytes are the same row); returns the hash."""
    digest = sha256(data)
    conn.execute("INSERT INTO craits_files (sha256, size, body, created_at) VALUES (%s, %s, %s, %s)"
                 " ON CONFLICT (sha256) DO NOTHING", (digest, len(data), data, time.time()))
    return digest


def get_file(conn: psycopg.Connection[Any], digest: str) -> bytes | None:
    row = conn.execute("SELECT body FROM craits_files WHERE sha256 = %s", (digest,)).fetchone()
    return None if row is None else bytes(row[0])


class FileCache:
    """Bots' folders fetched from the store at ``url``, unpacked under ``folder`` by their hash."""

    def __init__(self, url: str, folder: Path | None = None) -> None:
        self.url = url
        self.folder = folder or default_cache_dir()
        self.fetched = 0
        """Archives fetched from the database by this cache (a reused entry is not one)."""

    def path(self, digest: str) -> Path:
        return self.folder / digest

    def get(self, digest: str) -> Path:
        """The folder of the files whose packed hash is ``digest``: from the cache, else fetched,
        checked and unpacked. Raises :class:`FilesUnavailable` with the reason."""
        if not _HASH.match(digest):
            raise FilesUnavailable(f"{digest!r} is not a SHA-256")
        target = self.path(digest)
        if target.is_dir():
            return target
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                data = get_file(conn, digest)
        except psycopg.Error as err:
            raise FilesUnavailable(f"files {digest[:12]}: cannot read them from the store: "
                                   f"{' '.join(str(err).split())}") from None
        if data is None:
            raise FilesUnavailable(f"files {digest[:12]} are not in the store")
        if sha256(data) != digest:
            raise FilesUnavailable(f"files {digest[:12]}: the stored bytes do not match their hash "
                                   f"(they hash to {sha256(data)[:12]}): damaged in the store")
        self.fetched += 1
        return self._unpack(data, target)

    def _unpack(self, data: bytes, target: Path) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        work = self.folder / f".part-{secrets.token_hex(8)}"
        try:
            work.mkdir(mode=0o755)
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
                archive.extractall(work, filter="data")  # (no absolute paths, '..', devices or links out)
            _readable_by_all(work)
            with contextlib.suppress(FileExistsError, OSError):  # (another worker's game got it first)
                os.rename(work, target)
        except (tarfile.TarError, OSError, EOFError, ValueError) as err:
            raise FilesUnavailable(f"files {target.name[:12]}: cannot unpack them here: {err}") from None
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
        if not target.is_dir():
            raise FilesUnavailable(f"files {target.name[:12]}: cannot put them in {self.folder}")
        return target


def _readable_by_all(folder: Path) -> None:
    """The sandbox runs a bot as a user of its own: its files must be readable (and its folders
    searchable) by anyone, its programs executable, none writable but by this user."""
    os.chmod(folder, 0o755)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(Path(root) / name, 0o755)
        for name in files:
            path = Path(root) / name
            if not path.is_symlink():
                os.chmod(path, 0o755 if os.stat(path).st_mode & 0o100 else 0o644)
