"""A bot's files kept in PostgreSQL by their SHA-256, and the cache a worker unpacks them into.

A participant's version is built once, where it is admitted; its folder is then packed
(:func:`pack_folder`, a tar.gz the same bytes for the same files) and stored in
``craits_files`` by its hash (:func:`put_file`). A worker on any machine that is handed a
game seating that version fetches the archive by its hash, checks the hash, and unpacks it
into ``CACHE/HASH/`` (:class:`FileCache`), where later games find it. An entry is unpacked
into a temporary folder and renamed into place, so a half-written one is never used; a
folder named by a hash holds exactly the files of that hash, so it never goes stale. The
cache keeps to a size (``--cache-max``): after each version it unpacks, the versions used
least recently are deleted, except those a game in progress holds (a ``flock`` on the
folder, so several workers on one machine may share the cache).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gzip
import hashlib
import io
import os
import re
import secrets
import shutil
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg

from server.logging import get_logger
from server.storage.settings import CACHE_ENV, CACHE_MAX

_HASH = re.compile(r"^[0-9a-f]{64}$")


log = get_logger(component="bot_cache")


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
    """Bots' folders fetched from the store at ``url``, unpacked under ``folder`` by their hash,
    kept to about ``max_bytes``: the versions used least recently go first, never one that a
    game in progress holds (:meth:`hold`), on this worker or on another sharing the folder.

    Every entry is a folder whose games each hold a shared ``flock`` on it; removing one takes
    its exclusive lock without waiting (a held one is skipped) and renames it out of the way
    first, so a game never sees a version half removed, and one that opened it a moment before
    finds it gone and fetches it again. Eviction itself is one process at a time (``.lock``)."""

    def __init__(self, url: str, folder: Path | None = None, max_bytes: int = CACHE_MAX,
                 fetch: Callable[[str], bytes | None] | None = None) -> None:
        self.url = url
        self.folder = folder or default_cache_dir()
        self.max_bytes = max_bytes
        self._fetch = fetch or self._from_store
        self.fetched = 0
        """Archives fetched from the database by this cache (a reused entry is not one)."""
        self._sizes: dict[str, int] = {}
        """Bytes of each entry measured so far (an entry named by its hash never changes)."""

    def path(self, digest: str) -> Path:
        return self.folder / digest

    def get(self, digest: str) -> Path:
        """The folder of the files whose packed hash is ``digest`` (see :meth:`hold`), not held:
        it may be evicted once another version needs the room."""
        with self.hold(digest) as folder:
            return folder

    @contextlib.contextmanager
    def hold(self, digest: str) -> Iterator[Path]:
        """The folder of the files whose packed hash is ``digest``, kept from eviction until the
        block ends: from the cache (marked as just used), else fetched, checked and unpacked.
        Raises :class:`FilesUnavailable` with the reason."""
        if not _HASH.match(digest):
            raise FilesUnavailable(f"{digest!r} is not a SHA-256")
        target = self.path(digest)
        unpacked = False
        for _ in range(5):  # (evicted between its unpacking and its lock: a busy, too small cache)
            if not target.is_dir():
                self._unpack(self._checked(digest), target)
                unpacked = True
            try:
                fd = _locked(target, fcntl.LOCK_SH)
            except OSError as err:
                raise FilesUnavailable(f"files {digest[:12]}: cannot use them in {self.folder}: {err}") from None
            if fd is not None:
                break
        else:  # (never in a cache bigger than one game's versions)
            raise FilesUnavailable(f"files {digest[:12]}: evicted from {self.folder} as soon as unpacked, "
                                   "again and again: the cache is too small for the games in progress")
        try:
            with contextlib.suppress(OSError):  # used now: the last to be evicted (to the ns: the
                now = time.time_ns()                # file system's own clock ticks every few ms)
                os.utime(target, ns=(now, now))
            if unpacked:
                try:
                    self.trim()
                except OSError as err:  # (the game can still be played: the cache is only too big)
                    log.warning("bot_cache_not_trimmed", cache=str(self.folder), error=str(err))
            yield target
        finally:
            os.close(fd)

    def _from_store(self, digest: str) -> bytes | None:
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                return get_file(conn, digest)
        except psycopg.Error as err:
            raise FilesUnavailable(f"files {digest[:12]}: cannot read them from the store: "
                                   f"{' '.join(str(err).split())}") from None

    def _checked(self, digest: str) -> bytes:
        data = self._fetch(digest)
        if data is None:
            raise FilesUnavailable(f"files {digest[:12]} are not in the store")
        if sha256(data) != digest:
            raise FilesUnavailable(f"files {digest[:12]}: the stored bytes do not match their hash "
                                   f"(they hash to {sha256(data)[:12]}): damaged in the store")
        self.fetched += 1
        return data

    def _unpack(self, data: bytes, target: Path) -> Path:
        work = self.folder / f"{_PART}{secrets.token_hex(8)}"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            work.mkdir(mode=0o755)
            fd = _locked(work, fcntl.LOCK_EX)  # (a part no one holds is a dead worker's: trim removes it)
            if fd is None:
                raise FilesUnavailable(f"files {target.name[:12]}: {work} was removed while they were unpacked")
            try:
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
                    archive.extractall(work, filter="data")  # (no absolute paths, '..', devices or links out)
                _readable_by_all(work)
                with contextlib.suppress(FileExistsError, OSError):  # (another worker's game got it first)
                    os.rename(work, target)
            finally:
                os.close(fd)
        except OSError as err:
            if err.errno in (errno.ENOSPC, errno.EDQUOT):
                raise FilesUnavailable(f"files {target.name[:12]}: no room to unpack them in {self.folder}: "
                                       f"{_free_text(self.folder)} (a smaller --cache-max, or a disk with more "
                                       "room, leaves room for the bots)") from None
            raise FilesUnavailable(f"files {target.name[:12]}: cannot unpack them here: {err}") from None
        except (tarfile.TarError, EOFError, ValueError) as err:
            raise FilesUnavailable(f"files {target.name[:12]}: cannot unpack them here: {err}") from None
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
        if not target.is_dir():
            raise FilesUnavailable(f"files {target.name[:12]}: cannot put them in {self.folder}")
        return target

    def trim(self) -> list[str]:
        """Evict the versions used least recently until the cache holds at most ``max_bytes``,
        skipping those a game holds (here or in another worker); also clear what dead workers
        left half unpacked or half removed. Returns the evicted hashes, each logged with why."""
        if not self.folder.is_dir():
            return []
        with _locked_file(self.folder / ".lock"):
            entries: list[tuple[float, str, int]] = []
            for path in self.folder.iterdir():
                name = path.name
                if name.startswith(_GONE):
                    shutil.rmtree(path, ignore_errors=True)
                elif name.startswith(_PART) and _age_s(path) > _PART_STALE_S:  # (not one being made now)
                    self._evict(path, "left half unpacked by a worker that stopped")
                elif _HASH.match(name):
                    try:
                        used = path.stat().st_mtime
                    except OSError:
                        continue
                    entries.append((used, name, self._size(name)))
            total = sum(size for _, _, size in entries)
            evicted = []
            for used, name, size in sorted(entries):
                if total <= self.max_bytes:
                    break
                why = (f"the cache held {_mib(total)} MiB, over its {_mib(self.max_bytes)} MiB (--cache-max); "
                       f"the least recently used version not in a game (last used {time.time() - used:.0f} s ago)")
                if self._evict(self.path(name), why, size=size):
                    total -= size
                    evicted.append(name)
            if total > self.max_bytes:
                log.warning("bot_cache_over_limit", cache=str(self.folder), held_mib=_mib(total),
                            max_mib=_mib(self.max_bytes), why="the versions left are held by games in progress")
            return evicted

    def _evict(self, path: Path, why: str, size: int | None = None) -> bool:
        """Remove ``path`` unless a game holds it (False): renamed out of the way under its
        exclusive lock, so no game takes it meanwhile, then deleted."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            gone = self.folder / f"{_GONE}{secrets.token_hex(8)}"
            try:
                os.rename(path, gone)
            except OSError:
                return False
        finally:
            os.close(fd)
        shutil.rmtree(gone, ignore_errors=True)
        self._sizes.pop(path.name, None)
        log.info("bot_cache_evicted", cache=str(self.folder), files=path.name[:12] if size is not None else path.name,
                 **({"size_mib": round(size / 2**20, 1)} if size is not None else {}), why=why)
        return True

    def _size(self, name: str) -> int:
        if name not in self._sizes:
            total = 0
            for root, _, files in os.walk(self.path(name)):
                for file in files:
                    with contextlib.suppress(OSError):
                        total += os.lstat(os.path.join(root, file)).st_size
            self._sizes[name] = total
        return self._sizes[name]


_PART = ".part-"
"""An entry being unpacked (renamed to its hash when whole)."""
_PART_STALE_S = 60.0
"""A part this old that no one holds (locked) is a dead worker's (one is locked as soon as made)."""
_GONE = ".gone-"
"""An evicted entry being deleted."""


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def _locked(folder: Path, how: int) -> int | None:
    """An open descriptor of ``folder`` holding a ``flock`` of kind ``how`` (waited for: an
    eviction holds one a moment), or None when ``folder`` was evicted or replaced meanwhile."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, how)
        if os.fstat(fd).st_ino == os.stat(folder).st_ino:
            return fd
    except FileNotFoundError:  # (evicted while this waited for its lock: None, as when replaced)
        pass
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return None


@contextlib.contextmanager
def _locked_file(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f}"


def _free_text(folder: Path) -> str:
    try:
        return f"{shutil.disk_usage(folder).free / 2**20:.1f} MiB free on its disk"
    except OSError as err:
        return f"its disk cannot be read ({err.strerror or err})"


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
