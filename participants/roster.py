"""A roster folder: who takes part, their hashed tokens, and every version they submitted.

Kept in SQLite (:class:`Roster`) or, for a ladder on PostgreSQL, in its database
(:class:`PostgresRoster`, the same interface; ``Roster(folder)`` opens either).

The folder holds ``roster.db`` (SQLite), ``session.key`` (the web sessions' signing key), ``uploads/`` (each upload whole, named by its SHA-256,
never overwritten) and ``versions/NAME/vN/`` (a version unpacked and built: its bot's folder).
Several processes use it at once (the web pages store uploads, the admission process records
builds, a ladder reads the admitted versions), each with connections of its own; SQLite's WAL
lets them. The folder is the server's user's alone (0700, its files 0600): it holds token
hashes, the signing key and everyone's uploads; a server refuses to serve one that other users
can read (:meth:`Roster.check_private`).

Nothing half-made is ever visible: an upload is written to a temporary file and renamed to
its hash before its version's row is inserted; a version is built in a temporary folder that
is renamed into place before it is marked admitted; a version whose build was interrupted is
still ``building`` and is built again from its upload (:meth:`Roster.pending`).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import re
import secrets
import shlex
import sqlite3
import time
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from participants.tokens import TokenHash, hash_token, matches, new_token, token_id
from server.errors import UserError
from server.storage.bot_files import FileCache, FilesUnavailable, get_file, pack_folder, put_file
from server.storage.postgres import (
    NOW,
    PostgresStore,
    check_schema,
    database_clock,
    is_store_url,
    migrate,
    redact,
    server_not_there,
    without_nul,
)
from server.storage.store import StoreError, Unreachable

FILENAME = "roster.db"
KEY_FILE = "session.key"
"""The key web sessions and forms are signed with: a file of its own (0600), apart from the
database that the ladder, the builder and the queues read."""
PRIVATE_FILES = (FILENAME, f"{FILENAME}-wal", f"{FILENAME}-shm", KEY_FILE, "store.toml")
"""What :meth:`Roster.check_private` wants readable by the server's user alone (with the folder)."""
STORE_FILE = "store.toml"
"""In a roster folder kept in PostgreSQL instead (:class:`PostgresRoster`): where it is."""
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,29}$")
"""A participant's name: also their bot's name on the board (``NAME.vN`` for a version)."""
ORGANIZER = "organizer"
STATUSES = ("building", "refused", "admitted")

SCHEMA = """
CREATE TABLE IF NOT EXISTS participants (
    name TEXT PRIMARY KEY, email TEXT NOT NULL DEFAULT '', team TEXT NOT NULL DEFAULT '',
    token_id TEXT UNIQUE, salt BLOB, digest BLOB, revoked INTEGER NOT NULL DEFAULT 0,
    pinned INTEGER, created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS versions (
    id INTEGER PRIMARY KEY, participant TEXT NOT NULL REFERENCES participants(name), number INTEGER NOT NULL,
    sha256 TEXT NOT NULL, size INTEGER NOT NULL, filename TEXT NOT NULL, created REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'building', reason TEXT NOT NULL DEFAULT '', build_log TEXT NOT NULL DEFAULT '',
    report TEXT NOT NULL DEFAULT '', validation TEXT NOT NULL DEFAULT '{}', command TEXT NOT NULL DEFAULT '[]',
    UNIQUE (participant, number)
);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
WEB_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, participant TEXT NOT NULL, created REAL NOT NULL, expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS login_failures (address TEXT PRIMARY KEY, count INTEGER NOT NULL, since REAL NOT NULL);
"""
"""The web pages' sessions (by the SHA-256 of their cookie) and wrong tokens per address: in the
roster's store, so that every web process on it agrees and a logout or a revocation holds."""
BUILDING_KEY = "building"
"""The setting naming the version the admission is building now (:meth:`Roster.claim`)."""


class RosterError(UserError):
    """A roster that cannot be used as asked (the message says why and what to do)."""


class QuotaError(RosterError):
    """An upload past the participant's quota; :attr:`wait_s`: when the next one is possible."""

    def __init__(self, message: str, wait_s: float) -> None:
        super().__init__(message)
        self.wait_s = wait_s


Quota = tuple[int, float]
"""At most this many uploads (int) in any window of this many seconds (float)."""


def _per(window_s: float) -> str:
    return {3600.0: "an hour", 86400.0: "a day"}.get(float(window_s), f"per {window_s:g} s")


def _over_quota(name: str, created: Sequence[float], quota: Sequence[Quota], now: float) -> None:
    """QuotaError if ``name``'s uploads at the times ``created`` (oldest first) leave none in a window of ``quota``."""
    for most, window_s in quota:
        recent = [c for c in created if c > now - window_s]
        if len(recent) >= most:
            wait = recent[len(recent) - most] + window_s - now
            raise QuotaError(f"{name} uploaded {len(recent)} versions in the last {_per(window_s).split()[-1]}: the "
                             f"limit is {most} {_per(window_s)}; the next upload is possible in "
                             f"{_duration(wait)}", wait)


def _duration(seconds: float) -> str:
    seconds = max(1, round(seconds))
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min" if seconds < 7200 else f"{seconds // 3600} h"


def replaced_reason(number: int) -> str:
    """The reason of a waiting version a newer upload replaced (one build waits per participant)."""
    return f"replaced by v{number}, a newer upload, before it was built (one upload of yours waits for a build: the newest)"


def _session_id(secret: str) -> str:
    """A session's key in the store: its cookie's SHA-256 (the store never holds a live cookie)."""
    return hashlib.sha256(secret.encode()).hexdigest()
class RosterUnreachable(RosterError, Unreachable):
    """A roster in PostgreSQL whose database could not be reached: a running ladder waits for it."""


@dataclass(frozen=True, slots=True)
class Participant:
    name: str
    email: str
    team: str
    revoked: bool
    pinned: int | None
    """The version they chose to play (None: their newest admitted one)."""
    created: float


@dataclass(frozen=True, slots=True)
class Version:
    id: int
    participant: str
    number: int
    sha256: str
    size: int
    filename: str
    created: float
    status: str
    """building, refused or admitted."""
    reason: str
    """Why it was refused, in one line (empty otherwise)."""
    build_log: str
    report: str
    """The conformance checker's report, as printed."""
    validation: dict[str, Any]
    """The validation game: its id, result and the bot's output."""
    command: tuple[str, ...]

    @property
    def bot(self) -> str:
        """Its name on the ladder and the board."""
        return f"{self.participant}.v{self.number}"


def split_bot(bot: str) -> tuple[str, int] | None:
    """``alice.v3`` -> ("alice", 3); None for a bot that is not a participant's version."""
    name, dot, number = bot.rpartition(".v")
    if not dot or not number.isdigit() or not NAME.match(name):
        return None
    return name, int(number)


_VERSION_COLUMNS = ("id, participant, number, sha256, size, filename, created, status, reason, build_log, "
                    "report, validation, command")


def _version(row: Sequence[Any]) -> Version:
    return Version(*row[:11], json.loads(row[11]), tuple(json.loads(row[12])))


def _already(rows: Sequence[tuple[str, str, str]]) -> RosterError:
    """Adding ``rows`` met a name already on the roster (two adds at once: the store's check)."""
    if len(rows) > 1:
        return RosterError(f"already on the roster: one of {', '.join(r[0] for r in rows)} (nothing was added)")
    return RosterError(f"{rows[0][0]} is already on the roster (a new token: `craits roster renew`)")


class Roster:
    """The roster in ``folder``; :meth:`create` makes one, the constructor opens an existing one.

    Kept in SQLite (this class), or in PostgreSQL (:class:`PostgresRoster`,
    the same interface) when the folder holds a ``store.toml``: ``Roster(folder)`` opens either."""

    def __new__(cls, folder: str | Path, *args: Any, **kwargs: Any) -> Roster:
        if cls is Roster and (Path(folder) / STORE_FILE).is_file():
            return super().__new__(PostgresRoster)
        return super().__new__(cls)

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.db_path = self.folder / FILENAME
        if not self.db_path.is_file():
            raise RosterError(f"{self.folder}: no roster here (make one with `craits roster add {self.folder} NAME` "
                              "or `craits roster import`, with --store URL for a ladder kept in PostgreSQL)")

    @classmethod
    def create(cls, folder: str | Path, store: str | None = None) -> Roster:
        """The roster in ``folder``, made (empty) if there is none; ``store``: a PostgreSQL URL
        to keep it in (:class:`PostgresRoster`)."""
        folder = Path(folder)
        if store is not None or (folder / STORE_FILE).is_file():
            return PostgresRoster.create_in(folder, store or read_store_file(folder)[0])
        try:
            _private_folder(folder)
            for sub in ("uploads", "versions", "tmp"):
                (folder / sub).mkdir(mode=0o700, exist_ok=True)
            private_file(folder / FILENAME)  # (SQLite gives its -wal and -shm files the database's mode)
            with contextlib.closing(sqlite3.connect(folder / FILENAME)) as db, db:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(SCHEMA + WEB_SCHEMA)
        except (OSError, sqlite3.Error) as err:
            raise RosterError(f"{folder}: cannot make a roster there: {err}") from None
        return cls(folder)

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """A connection for one piece of work, in one transaction."""
        db = sqlite3.connect(self.db_path, timeout=30)
        try:
            db.execute("PRAGMA foreign_keys=ON")
            with db:
                yield db
        finally:
            db.close()

    def _immediate(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A connection in one transaction that holds the write lock from its start: a check and
        the write it allows, with no other writer between them (:func:`immediate`)."""
        return immediate(self.db_path, foreign_keys=True)

    @contextlib.contextmanager
    def _web(self, *, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        """:meth:`_db` (or :meth:`_immediate`) with the web tables there (a roster made before them)."""
        if not getattr(self, "_web_ready", False):
            with self._db() as db:
                db.executescript(WEB_SCHEMA)
            self._web_ready = True
        with self._immediate() if immediate else self._db() as db:
            yield db

    # ------------------------------------------------------------------ participants and tokens

    def add(self, name: str, email: str = "", team: str = "") -> str:
        """A new participant; returns their token (shown once: only its hash is kept)."""
        if not NAME.match(name):
            raise RosterError(f"participant name {name!r}: use 1 to 30 letters, digits, '_' or '-' "
                              "(it is also their bot's name on the board)")
        if name == ORGANIZER:
            raise RosterError(f"participant name {name!r} is reserved")
        return self._insert_all([(name, email.strip(), team.strip())])[0][1]

    def import_csv(self, text: str, source: str = "CSV") -> list[tuple[str, str]]:
        """Participants from CSV text (a header with ``name`` and optionally ``email``, ``team``),
        all or none; returns (name, token) for each."""
        text = text.removeprefix("\ufeff")  # (a spreadsheet's byte order mark)
        first = text.split("\n", 1)[0]
        # (a spreadsheet set to a language whose decimal mark is a comma saves ';'-separated "CSV")
        delimiter = next((d for d in (";", "\t") if "," not in first and d in first), ",")
        reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
        fields = [f.strip().lower() for f in reader.fieldnames or []]
        if "name" not in fields:
            raise RosterError(f"{source}: the first line must name the columns, with a 'name' column "
                              "(and optionally 'email' and 'team'), e.g. name,email,team")
        rows: list[tuple[str, str, str]] = []
        for line, raw in enumerate(reader, start=2):
            row = {(k or "").strip().lower(): (v or "").strip() for k, v in raw.items()}
            if not any(row.values()):
                continue
            name = row.get("name", "")
            if not NAME.match(name) or name == ORGANIZER:
                raise RosterError(f"{source}:{line}: name {name!r}: use 1 to 30 letters, digits, '_' or '-'")
            rows.append((name, row.get("email", ""), row.get("team", "")))
        names = [r[0] for r in rows]
        if dupes := sorted({n for n in names if names.count(n) > 1}):
            raise RosterError(f"{source}: {', '.join(dupes)} listed more than once")
        if known := sorted(set(names) & {p.name for p in self.participants()}):
            raise RosterError(f"{source}: already on the roster: {', '.join(known)} (nothing was added)")
        return self._insert_all(rows)

    def _insert_all(self, rows: Sequence[tuple[str, str, str]]) -> list[tuple[str, str]]:
        """(name, token) of each of ``rows`` (name, email, team), added in one transaction."""
        made = []
        try:
            with self._db() as db:
                for name, email, team in rows:
                    token = new_token()
                    stored = hash_token(token)
                    db.execute("INSERT INTO participants (name, email, team, token_id, salt, digest, created) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?)",
                               (name, email, team, stored.token_id, stored.salt, stored.digest, time.time()))
                    made.append((name, token))
        except sqlite3.IntegrityError:
            raise _already(rows) from None
        return made

    def participants(self) -> list[Participant]:
        with self._db() as db:
            rows = db.execute("SELECT name, email, team, revoked, pinned, created FROM participants ORDER BY name")
            return [Participant(r[0], r[1], r[2], bool(r[3]), r[4], r[5]) for r in rows]

    def participant(self, name: str) -> Participant | None:
        return next((p for p in self.participants() if p.name == name), None)

    def _known(self, name: str) -> None:
        if self.participant(name) is None:
            raise RosterError(f"{name} is not on the roster in {self.folder}")

    def revoke(self, name: str) -> None:
        """Their token stops working at once (web pages, submissions, their remote bot)."""
        self._known(name)
        with self._db() as db:
            db.execute("UPDATE participants SET revoked = 1 WHERE name = ?", (name,))
        self.end_sessions(name)

    def renew(self, name: str) -> str:
        """A new token for ``name`` (the old one stops working); returns it."""
        self._known(name)
        token = new_token()
        self._set_token(name, hash_token(token))
        self.end_sessions(name)
        return token

    def _set_token(self, name: str, stored: TokenHash) -> None:
        with self._db() as db:
            db.execute("UPDATE participants SET token_id = ?, salt = ?, digest = ?, revoked = 0 WHERE name = ?",
                       (stored.token_id, stored.salt, stored.digest, name))

    def organizer_token(self) -> str:
        """A new organizer token (for the organizer's pages); the previous one stops working."""
        token = new_token()
        stored = hash_token(token)
        value = json.dumps({"token_id": stored.token_id, "salt": stored.salt.hex(), "digest": stored.digest.hex()})
        self._set("organizer", value)
        self.end_sessions(ORGANIZER)
        return token

    def authenticate(self, token: str) -> str | None:
        """The participant's name (or :data:`ORGANIZER`) whose token this is, None for any other."""
        ident = token_id(token)
        if ident is None:
            return None
        row = self._token_row(ident)
        if row is not None:
            return row[0] if matches(token, TokenHash(ident, bytes(row[1]), bytes(row[2]))) else None
        return self._organizer(token)

    def _token_row(self, ident: str) -> tuple[str, bytes, bytes] | None:
        """(name, salt, digest) of the participant whose token's public id is ``ident``, unrevoked."""
        with self._db() as db:
            row = db.execute("SELECT name, salt, digest FROM participants WHERE token_id = ? AND revoked = 0",
                             (ident,)).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def _organizer(self, token: str) -> str | None:
        """:data:`ORGANIZER` if ``token`` is the organizer's."""
        organizer = self._get("organizer")
        if organizer:
            held = json.loads(organizer)
            stored = TokenHash(held["token_id"], bytes.fromhex(held["salt"]), bytes.fromhex(held["digest"]))
            if matches(token, stored):
                return ORGANIZER
        return None

    def session_key(self, name: str) -> str:
        """What a web session of ``name`` is bound to: their token's public id, so a renewed or
        revoked token ends the sessions it opened ("" when there is none)."""
        with self._db() as db:
            row = db.execute("SELECT token_id, revoked FROM participants WHERE name = ?", (name,)).fetchone()
        if name == ORGANIZER:
            return json.loads(self._get("organizer") or "{}").get("token_id", "")
        return "" if row is None or row[1] else row[0]

    def now(self) -> float:
        """Now, in seconds since the epoch, by the clock the roster's times are written with
        (uploads, sessions, deadlines' checks): this machine's; the database's for a roster kept
        in PostgreSQL, which machines whose clocks differ share."""
        return time.time()

    # ------------------------------------------------------------------ web sessions and wrong tokens

    def open_session(self, name: str, lifetime_s: float) -> str:
        """A new web session of ``name`` (or :data:`ORGANIZER`) for ``lifetime_s``; returns its
        cookie's secret (the store keeps its hash). It lasts until it expires, its owner logs
        out (:meth:`end_session`) or their token is renewed or revoked (:meth:`end_sessions`)."""
        secret = secrets.token_urlsafe(32)
        now = time.time()
        with self._web() as db:
            db.execute("DELETE FROM sessions WHERE expires < ?", (now,))
            db.execute("INSERT INTO sessions (id, participant, created, expires) VALUES (?, ?, ?, ?)",
                       (_session_id(secret), name, now, now + lifetime_s))
        return secret

    def session(self, secret: str) -> str | None:
        """Whose live session the cookie ``secret`` opens (None: none, or ended)."""
        with self._web() as db:
            row = db.execute("SELECT participant FROM sessions WHERE id = ? AND expires > ?",
                             (_session_id(secret), time.time())).fetchone()
        return None if row is None else str(row[0])

    def end_session(self, secret: str) -> None:
        with self._web() as db:
            db.execute("DELETE FROM sessions WHERE id = ?", (_session_id(secret),))

    def end_sessions(self, name: str) -> None:
        """End every web session of ``name`` (their token was renewed or revoked)."""
        with self._web() as db:
            db.execute("DELETE FROM sessions WHERE participant = ?", (name,))

    def count_attempt(self, address: str, most: int, window_s: float) -> tuple[int, float]:
        """A token about to be checked for ``address``, counted as a wrong one *before* it is
        checked (a right one is given back: :meth:`refund_attempt`), so that parallel guesses
        cannot all pass the count: (the wrong tokens counted, 0), or (``most``, seconds left)
        and nothing counted when ``address`` has had ``most`` in ``window_s`` seconds."""
        now = time.time()
        with self._web(immediate=True) as db:
            row = db.execute("SELECT count, since FROM login_failures WHERE address = ?", (address,)).fetchone()
            count, since = (int(row[0]), float(row[1])) if row else (0, 0.0)
            if now - since >= window_s:
                count = 0
            if count >= most:
                return count, window_s - (now - since)
            if row is None:  # (addresses that stopped guessing long ago are forgotten)
                db.execute("DELETE FROM login_failures WHERE since < ?", (now - window_s,))
            db.execute("INSERT INTO login_failures (address, count, since) VALUES (?, ?, ?) ON CONFLICT (address) "
                       "DO UPDATE SET count = excluded.count, since = excluded.since", (address, count + 1, now))
        return count + 1, 0.0

    def refund_attempt(self, address: str) -> None:
        """The token counted by :meth:`count_attempt` was right: it is not a wrong one."""
        with self._web() as db:
            db.execute("UPDATE login_failures SET count = MAX(count - 1, 0) WHERE address = ?", (address,))

    def secret(self) -> bytes:
        """The key web sessions and forms are signed with, from :data:`KEY_FILE` (made once,
        0600). Only a server that serves pages asks for it, so the roster must be private first
        (:meth:`check_private`). A key an older roster kept in its database (readable by any
        tool that reads the roster) is dropped: its sessions end once."""
        self.check_private()
        path = self.folder / KEY_FILE
        try:
            return bytes.fromhex(path.read_text(encoding="ascii").strip())
        except FileNotFoundError:
            pass  # (none yet: made below, once)
        except (OSError, ValueError) as err:
            raise RosterError(f"{path}: cannot read the session key: {err} (remove it: a new one is made, and "
                              "everyone logs in again)") from None
        fd, temp = tempfile_in(self.folder)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(32) + "\n")
        try:
            os.link(temp, path)  # (never replaces: two servers starting at once share the first key)
        except FileExistsError:
            pass  # (another server made it first: its key is read below)
        finally:
            os.unlink(temp)
        self._unset("secret")
        return bytes.fromhex(path.read_text(encoding="ascii").strip())

    def new_secret(self) -> bytes:
        """A new key in :data:`KEY_FILE` (``craits roster rekey``): forms shown before it are
        refused once (sessions are kept in the store and go on)."""
        self.check_private()
        fd, temp = tempfile_in(self.folder)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(32) + "\n")
        os.replace(temp, self.folder / KEY_FILE)
        return self.secret()

    def check_private(self) -> None:
        """Refuse (RosterError, with the ``chmod`` that fixes it) a roster that other users of this
        machine can read: its folder, database, signing key and store file must be this user's
        alone, or any local account could read the key and forge an organizer's session."""
        exposed = []
        for path in (self.folder, *(self.folder / name for name in PRIVATE_FILES)):
            try:
                mode = path.stat().st_mode
            except FileNotFoundError:
                continue
            except OSError as err:
                raise RosterError(f"{path}: cannot check who may read it: {err.strerror or err}") from None
            if mode & 0o077:
                exposed.append(path)
        if exposed:
            raise RosterError(f"{self.folder}: the roster is readable by other users of this machine (it holds the "
                              "token hashes, the session key and every upload); make it yours alone, then start "
                              f"again:\n    chmod go-rwx {' '.join(shlex.quote(str(p)) for p in exposed)}")

    def limits(self) -> dict[str, Any]:
        """The organizer's limits for uploads and builds (``craits roster set``); defaults for the rest."""
        return dict(json.loads(self._get("limits") or "{}"))

    def set_limits(self, values: dict[str, Any]) -> None:
        self._set("limits", json.dumps({**self.limits(), **values}, sort_keys=True))

    def note_live(self, name: str) -> None:
        """``name``'s own bot connected with their token (kept: ``craits final show`` says why a
        participant who only played live is not in the final)."""
        seen = self.live_seen()
        if name not in seen:
            self._set("live", json.dumps(sorted(seen | {name})))

    def live_seen(self) -> frozenset[str]:
        """The participants whose own bot has ever connected with their token."""
        return frozenset(json.loads(self._get("live") or "[]"))

    def _get(self, key: str) -> str | None:
        with self._db() as db:
            row = db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def _set(self, key: str, value: str) -> None:
        with self._db() as db:
            db.execute("INSERT INTO settings (key, value) VALUES (?, ?) "
                       "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def _unset(self, key: str) -> None:
        with self._db() as db:
            db.execute("DELETE FROM settings WHERE key = ?", (key,))

    # ------------------------------------------------------------------ uploads and versions

    def upload_path(self, sha256: str) -> Path:
        return self.folder / "uploads" / sha256

    def version_dir(self, version: Version) -> Path:
        return self.folder / "versions" / version.participant / f"v{version.number}"

    def bot_dir(self, version: Version) -> Path:
        """The admitted ``version``'s built folder on this machine, to play it from."""
        return self.version_dir(version)

    def temp_dir(self) -> Path:
        path = self.folder / "tmp"
        path.mkdir(exist_ok=True)
        return path

    def submit(self, name: str, data: bytes, filename: str, *, quota: Sequence[Quota] = ()) -> Version:
        """Store an upload whole (by its hash) and make it ``name``'s next version, to be built.
        The upload is on disk, renamed into place, before the version's row exists.

        Within ``quota`` (QuotaError past it), checked in the transaction that inserts the
        version, so parallel uploads cannot all pass it; an earlier version of ``name`` still
        waiting for its build (not the one being built) is refused as replaced by this one."""
        self._known(name)
        digest = hashlib.sha256(data).hexdigest()
        target = self.upload_path(digest)
        if not target.exists():
            fd, temp = tempfile_in(self.temp_dir())
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temp, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        safe_name = re.sub(r"[^A-Za-z0-9_.\-]", "_", Path(filename).name)[:80] or "upload"
        with self._immediate() as db:  # (the quota, the number and the replaced version: no other upload between)
            now = time.time()
            _over_quota(name, [r[0] for r in db.execute(
                "SELECT created FROM versions WHERE participant = ? ORDER BY created", (name,))], quota, now)
            cursor = db.execute(
                "INSERT INTO versions (participant, number, sha256, size, filename, created) VALUES (?, "
                "(SELECT COALESCE(MAX(number), 0) + 1 FROM versions WHERE participant = ?), ?, ?, ?, ?)",
                (name, name, digest, len(data), safe_name, now))
            row_id = cursor.lastrowid
            number = db.execute("SELECT number FROM versions WHERE id = ?", (row_id,)).fetchone()[0]
            building = db.execute("SELECT value FROM settings WHERE key = ?", (BUILDING_KEY,)).fetchone()
            db.execute("UPDATE versions SET status = 'refused', reason = ? WHERE participant = ? AND "
                       "status = 'building' AND id < ? AND id != ?",
                       (replaced_reason(number), name, row_id, int(building[0]) if building else -1))
        found = self.version_by_id(int(row_id or 0))
        assert found is not None
        return found

    def versions(self, name: str | None = None) -> list[Version]:
        """``name``'s versions (everyone's for None), oldest first."""
        where, args = ("WHERE participant = ?", (name,)) if name is not None else ("", ())
        with self._db() as db:
            rows = db.execute(f"SELECT {_VERSION_COLUMNS} FROM versions {where} ORDER BY participant, number", args)
            return [_version(r) for r in rows]

    def version(self, name: str, number: int) -> Version | None:
        with self._db() as db:
            row = db.execute(f"SELECT {_VERSION_COLUMNS} FROM versions WHERE participant = ? AND number = ?",
                             (name, number)).fetchone()
        return None if row is None else _version(row)

    def version_by_id(self, version_id: int) -> Version | None:
        with self._db() as db:
            row = db.execute(f"SELECT {_VERSION_COLUMNS} FROM versions WHERE id = ?", (version_id,)).fetchone()
        return None if row is None else _version(row)

    def pending(self) -> list[Version]:
        """Versions still to be built and checked, oldest first (an interrupted build's too)."""
        with self._db() as db:
            rows = db.execute(f"SELECT {_VERSION_COLUMNS} FROM versions WHERE status = 'building' ORDER BY id")
            return [_version(r) for r in rows]

    def claim(self, version: Version) -> bool:
        """Mark ``version`` as the one being built now (a newer upload then leaves it be); False
        when it is no longer waiting (a newer upload replaced it meanwhile)."""
        with self._immediate() as db:
            row = db.execute("SELECT status FROM versions WHERE id = ?", (version.id,)).fetchone()
            if row is None or row[0] != "building":
                return False
            db.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                       "value = excluded.value", (BUILDING_KEY, str(version.id)))
        return True

    def being_built(self) -> int | None:
        """The id of the version the admission claimed last (:meth:`claim`): being built, if still ``building``."""
        value = self._get(BUILDING_KEY)
        return int(value) if value else None

    def decide(self, version: Version, status: str, *, reason: str = "", build_log: str = "", report: str = "",
               validation: dict[str, Any] | None = None, command: Sequence[str] = ()) -> bool:
        """Record how a version's build and admission went; False (nothing recorded) when it was
        decided meanwhile (replaced by a newer upload)."""
        if status not in STATUSES:
            raise ValueError(status)
        with self._db() as db:
            cursor = db.execute(
                "UPDATE versions SET status = ?, reason = ?, build_log = ?, report = ?, validation = ?, "
                "command = ? WHERE id = ? AND status = 'building'",
                (status, reason, build_log, report, json.dumps(validation or {}), json.dumps(list(command)),
                 version.id))
            return cursor.rowcount > 0

    def pin(self, name: str, number: int | None) -> None:
        """Play version ``number`` of ``name`` (an admitted one), or the newest admitted (None)."""
        self._known(name)
        if number is not None:
            version = self.version(name, number)
            if version is None or version.status != "admitted":
                raise RosterError(f"{name} has no admitted version v{number}")
        self._set_pinned(name, number)

    def _set_pinned(self, name: str, number: int | None) -> None:
        with self._db() as db:
            db.execute("UPDATE participants SET pinned = ? WHERE name = ?", (number, name))

    def publish(self, tournament: str, versions: Sequence[Version]) -> None:
        """Tell the workers of ``tournament`` elsewhere how to play ``versions``: nothing to
        tell for a roster kept here (its versions play on this machine, from version_dir)."""

    def active(self) -> list[Version]:
        """The version each participant plays: the pinned one, else the newest admitted."""
        chosen = []
        everyone = self.versions()  # (one read, not one a participant: a roster in PostgreSQL is far away)
        for person in self.participants():
            if person.revoked:
                continue
            admitted = [v for v in everyone if v.participant == person.name and v.status == "admitted"]
            pinned = [v for v in admitted if v.number == person.pinned]
            if pinned or admitted:
                chosen.append((pinned or admitted)[-1])
        return chosen


def _private_folder(folder: Path) -> None:
    """``folder`` made (0700) if it is not there; a new or empty one made this user's alone."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not any(folder.iterdir()):
        os.chmod(folder, 0o700)


def private_file(path: Path) -> None:
    """``path`` made empty and 0600 if it is not there (before SQLite makes it with the umask's mode)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


KEY_FINGERPRINT = "session_key_sha256"
"""The setting that holds the SHA-256 of a PostgreSQL roster's session key (never the key)."""


def _key_fingerprint(key: bytes) -> str:
    return hashlib.sha256(b"craits session key|" + key).hexdigest()


def tempfile_in(folder: Path) -> tuple[int, str]:
    """A new file in ``folder`` that only this user may read: (fd, path)."""
    path = folder / f".part-{secrets.token_hex(8)}"
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), str(path)


# ---------------------------------------------------------------------------- in PostgreSQL


def write_store_file(folder: Path, url: str, name: str) -> None:
    """``FOLDER/store.toml``: where the roster is (it may hold the database's password: 0600)."""
    text = ("# This roster is kept in PostgreSQL (docs/teachers.md): its participants, tokens and versions.\n"
            f"store = {json.dumps(url)}\nname = {json.dumps(name)}\n")
    fd, temp = tempfile_in(folder)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temp, folder / STORE_FILE)


def read_store_file(folder: Path) -> tuple[str, str]:
    """(URL, roster name) from ``FOLDER/store.toml``."""
    path = folder / STORE_FILE
    try:
        held = tomllib.loads(path.read_text(encoding="utf-8"))
        url, name = held["store"], held["name"]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError) as err:
        raise RosterError(f"{path}: cannot read where the roster is kept: {err}") from None
    if not isinstance(url, str) or not is_store_url(url) or not isinstance(name, str) or not name:
        raise RosterError(f"{path}: expected store = \"postgresql://...\" and name = \"...\"")
    return url, name


class PostgresRoster(Roster):
    """A roster kept in PostgreSQL: what :class:`Roster` keeps in ``roster.db`` and ``uploads/``,
    in the database a ladder's ``store = "postgresql://..."`` names.

    ``craits roster add|import FOLDER ... --store URL`` makes one: the folder then holds
    ``store.toml`` (the database, and the roster's name in it: one database holds many) and
    ``Roster(FOLDER)`` opens this. In the database: the participants and their hashed tokens,
    every version (number, status, build log, checker report), the settings, and every upload
    whole by its SHA-256 (``craits_files``); the tables of the modules beside the roster and
    its shared documents are in a schema of its own (``participants.tables``). The folder keeps
    what is made on this machine: the built versions (``versions/``, or ``fetched/`` from the
    database when built elsewhere), the validation games, and the session key.

    When a version is admitted its built folder is packed and stored by its hash too; a ladder
    names it for its workers (:meth:`publish`), and a ``craits worker`` on another machine
    fetches it by that hash (``server.storage.bot_files``) and plays it sandboxed."""

    WAIT_S = 60.0

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.db_path = self.folder / FILENAME  # (the side tables of participants.tables, on this machine)
        self.url, self.name = read_store_file(self.folder)
        self._published: set[tuple[str, str, str]] = set()
        with self._db() as conn:
            try:
                check_schema(self.url, conn)
            except StoreError as err:
                raise RosterError(str(err)) from None

    @classmethod
    def create_in(cls, folder: str | Path, url: str, name: str | None = None) -> PostgresRoster:
        """The roster ``name`` (default: the folder's name) in the database at ``url``, reached
        through ``folder`` (made if need be; the roster may already be in the database)."""
        folder = Path(folder)
        name = name or folder.resolve().name
        if (folder / STORE_FILE).is_file():
            held_url = read_store_file(folder)[0]
            if held_url != url:
                raise RosterError(f"{folder}: its roster is kept in {redact(held_url)}, not in {redact(url)}")
            return cls(folder)
        if (folder / FILENAME).is_file():
            raise RosterError(f"{folder} holds a roster kept in SQLite (roster.db): use another folder for a roster "
                              "kept in PostgreSQL")
        try:
            migrate(url, only_if_empty=True)
            _private_folder(folder)
            for sub in ("versions", "tmp"):
                (folder / sub).mkdir(mode=0o700, exist_ok=True)
            write_store_file(folder, url, name)
        except StoreError as err:
            raise RosterError(str(err)) from None
        except OSError as err:
            raise RosterError(f"{folder}: cannot make a roster there: {err}") from None
        return cls(folder)

    def now(self) -> float:
        with self._db() as conn:
            return database_clock(conn)

    @contextlib.contextmanager
    def _db(self) -> Iterator[psycopg.Connection[Any]]:  # type: ignore[override]
        """A connection for one piece of work, in one transaction."""
        try:
            with self._connect() as conn, conn.transaction():
                yield conn
        except psycopg.errors.UniqueViolation:
            raise
        except psycopg.Error as err:
            raise self._error(err) from None

    def _connect(self) -> psycopg.Connection[Any]:
        """A new connection; a database that is not there (restarting, a network cut) is waited
        for with backoff for up to :data:`WAIT_S`, as the ladder's store waits."""
        deadline = time.monotonic() + self.WAIT_S
        delay = 0.2
        while True:
            try:
                return without_nul(psycopg.connect(self.url, autocommit=True, connect_timeout=10))
            except psycopg.OperationalError as err:
                if not server_not_there(err) or time.monotonic() + delay > deadline:
                    raise self._error(err) from None
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _error(self, err: psycopg.Error) -> RosterError:
        lost = isinstance(err, psycopg.OperationalError) and server_not_there(err)
        return (RosterUnreachable if lost else RosterError)(
            f"roster {self.name} in {redact(self.url)}: {' '.join(str(err).split())}")

    # ------------------------------------------------------------------ participants and tokens

    def _insert(self, conn: psycopg.Connection[Any], name: str, email: str, team: str) -> str:
        token = new_token()
        stored = hash_token(token)
        conn.execute("INSERT INTO craits_roster_participants (roster, name, email, team, token_id, salt, digest, "
                     "created) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                     (self.name, name, email.strip(), team.strip(), stored.token_id, stored.salt, stored.digest,
                      database_clock(conn)))
        return token

    def _insert_all(self, rows: Sequence[tuple[str, str, str]]) -> list[tuple[str, str]]:
        try:
            with self._db() as conn:
                return [(name, self._insert(conn, name, email, team)) for name, email, team in rows]
        except psycopg.errors.UniqueViolation:
            raise _already(rows) from None

    def participants(self) -> list[Participant]:
        with self._db() as conn:
            rows = conn.execute("SELECT name, email, team, revoked, pinned, created FROM craits_roster_participants"
                                " WHERE roster = %s ORDER BY name", (self.name,)).fetchall()
        return [Participant(r[0], r[1], r[2], bool(r[3]), r[4], r[5]) for r in rows]

    def revoke(self, name: str) -> None:
        self._known(name)
        with self._db() as conn:
            conn.execute("UPDATE craits_roster_participants SET revoked = TRUE WHERE roster = %s AND name = %s",
                         (self.name, name))
        self.end_sessions(name)

    def _set_token(self, name: str, stored: TokenHash) -> None:
        with self._db() as conn:
            conn.execute("UPDATE craits_roster_participants SET token_id = %s, salt = %s, digest = %s, "
                         "revoked = FALSE WHERE roster = %s AND name = %s",
                         (stored.token_id, stored.salt, stored.digest, self.name, name))

    def _token_row(self, ident: str) -> tuple[str, bytes, bytes] | None:
        with self._db() as conn:
            row = conn.execute("SELECT name, salt, digest FROM craits_roster_participants"
                               " WHERE roster = %s AND token_id = %s AND NOT revoked", (self.name, ident)).fetchone()
        return None if row is None else (row[0], bytes(row[1]), bytes(row[2]))

    def session_key(self, name: str) -> str:
        if name == ORGANIZER:
            return json.loads(self._get("organizer") or "{}").get("token_id", "")
        with self._db() as conn:
            row = conn.execute("SELECT token_id, revoked FROM craits_roster_participants WHERE roster = %s AND "
                               "name = %s", (self.name, name)).fetchone()
        return "" if row is None or row[1] else row[0]

    def open_session(self, name: str, lifetime_s: float) -> str:
        secret = secrets.token_urlsafe(32)
        with self._db() as conn:
            now = database_clock(conn)
            conn.execute("DELETE FROM craits_roster_sessions WHERE roster = %s AND expires < %s", (self.name, now))
            conn.execute("INSERT INTO craits_roster_sessions (roster, id, participant, created, expires) "
                         "VALUES (%s, %s, %s, %s, %s)", (self.name, _session_id(secret), name, now, now + lifetime_s))
        return secret

    def session(self, secret: str) -> str | None:
        with self._db() as conn:
            row = conn.execute("SELECT participant FROM craits_roster_sessions WHERE roster = %s AND id = %s AND "
                               f"expires > {NOW}", (self.name, _session_id(secret))).fetchone()
        return None if row is None else str(row[0])

    def end_session(self, secret: str) -> None:
        with self._db() as conn:
            conn.execute("DELETE FROM craits_roster_sessions WHERE roster = %s AND id = %s",
                         (self.name, _session_id(secret)))

    def end_sessions(self, name: str) -> None:
        with self._db() as conn:
            conn.execute("DELETE FROM craits_roster_sessions WHERE roster = %s AND participant = %s", (self.name, name))

    def count_attempt(self, address: str, most: int, window_s: float) -> tuple[int, float]:
        with self._db() as conn:  # (the address's row locked from the count to its write)
            now = database_clock(conn)
            conn.execute("INSERT INTO craits_roster_logins (roster, address, count, since) VALUES (%s, %s, 0, 0) "
                         "ON CONFLICT (roster, address) DO NOTHING", (self.name, address))
            row = conn.execute("SELECT count, since FROM craits_roster_logins WHERE roster = %s AND address = %s "
                               "FOR UPDATE", (self.name, address)).fetchone()
            assert row is not None
            count, since = int(row[0]), float(row[1])
            if now - since >= window_s:
                count = 0
            if count >= most:
                return count, window_s - (now - since)
            if since == 0:  # (a new address: those that stopped guessing long ago are forgotten)
                conn.execute("DELETE FROM craits_roster_logins WHERE roster = %s AND since < %s AND address != %s",
                             (self.name, now - window_s, address))
            conn.execute("UPDATE craits_roster_logins SET count = %s, since = %s WHERE roster = %s AND address = %s",
                         (count + 1, now, self.name, address))
        return count + 1, 0.0

    def refund_attempt(self, address: str) -> None:
        with self._db() as conn:
            conn.execute("UPDATE craits_roster_logins SET count = GREATEST(count - 1, 0) WHERE roster = %s AND "
                         "address = %s", (self.name, address))

    def secret(self) -> bytes:
        """This folder's key, which every web process of the roster must share (each refuses the
        forms another signed): the first key's fingerprint is kept in the database, and a folder
        with another key is refused when its server starts, saying what to copy, instead of its
        forms being refused one by one behind a load balancer."""
        key = super().secret()
        fingerprint = _key_fingerprint(key)
        with self._db() as conn:
            conn.execute("INSERT INTO craits_roster_settings (roster, key, value) VALUES (%s, %s, %s)"
                         " ON CONFLICT (roster, key) DO NOTHING", (self.name, KEY_FINGERPRINT, fingerprint))
            row = conn.execute("SELECT value FROM craits_roster_settings WHERE roster = %s AND key = %s",
                               (self.name, KEY_FINGERPRINT)).fetchone()
        if row is not None and row[0] != fingerprint:
            raise RosterError(
                f"{self.folder / KEY_FILE}: not the key the roster's other web processes sign their forms with "
                f"(each would refuse the other's forms): copy {KEY_FILE} from the folder of a machine that serves "
                f"the roster's pages (chmod 600), or give them all a new one: `craits roster rekey {self.folder}` "
                f"here, then copy its {KEY_FILE} to the other folders")
        return key

    def new_secret(self) -> bytes:
        self._unset(KEY_FINGERPRINT)  # (this folder's new key becomes the one the others must copy)
        return super().new_secret()

    def _get(self, key: str) -> str | None:
        with self._db() as conn:
            row = conn.execute("SELECT value FROM craits_roster_settings WHERE roster = %s AND key = %s",
                               (self.name, key)).fetchone()
        return None if row is None else row[0]

    def _set(self, key: str, value: str) -> None:
        with self._db() as conn:
            conn.execute("INSERT INTO craits_roster_settings (roster, key, value) VALUES (%s, %s, %s)"
                         " ON CONFLICT (roster, key) DO UPDATE SET value = excluded.value", (self.name, key, value))

    def _unset(self, key: str) -> None:
        with self._db() as conn:
            conn.execute("DELETE FROM craits_roster_settings WHERE roster = %s AND key = %s", (self.name, key))

    # ------------------------------------------------------------------ uploads and versions

    def upload_path(self, sha256: str) -> Path:
        """The upload as a file on this machine (fetched from the database the first time)."""
        target = self.folder / "uploads" / sha256
        if not target.exists():
            with self._db() as conn:
                data = get_file(conn, sha256)
            if data is not None:
                target.parent.mkdir(exist_ok=True)
                fd, temp = tempfile_in(self.temp_dir())
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.replace(temp, target)
        return target

    def submit(self, name: str, data: bytes, filename: str, *, quota: Sequence[Quota] = ()) -> Version:
        self._known(name)
        safe_name = re.sub(r"[^A-Za-z0-9_.\-]", "_", Path(filename).name)[:80] or "upload"
        with self._db() as conn:  # (the upload and its version in one transaction: both or neither)
            # (the participant's row locked: two uploads at once get two numbers, and meet one quota)
            conn.execute("SELECT 1 FROM craits_roster_participants WHERE roster = %s AND name = %s FOR UPDATE",
                         (self.name, name))
            now = database_clock(conn)
            _over_quota(name, [r[0] for r in conn.execute(
                "SELECT created FROM craits_roster_versions WHERE roster = %s AND participant = %s ORDER BY created",
                (self.name, name))], quota, now)
            digest = put_file(conn, data)
            row = conn.execute(
                "INSERT INTO craits_roster_versions (roster, participant, number, sha256, size, filename, created)"
                " VALUES (%s, %s, (SELECT COALESCE(MAX(number), 0) + 1 FROM craits_roster_versions"
                " WHERE roster = %s AND participant = %s), %s, %s, %s, %s) RETURNING id, number",
                (self.name, name, self.name, name, digest, len(data), safe_name, now)).fetchone()
            assert row is not None
            building = conn.execute("SELECT value FROM craits_roster_settings WHERE roster = %s AND key = %s",
                                    (self.name, BUILDING_KEY)).fetchone()
            conn.execute("UPDATE craits_roster_versions SET status = 'refused', reason = %s WHERE roster = %s AND "
                         "participant = %s AND status = 'building' AND id < %s AND id != %s",
                         (replaced_reason(row[1]), self.name, name, row[0], int(building[0]) if building else -1))
        assert row is not None
        found = self.version_by_id(int(row[0]))
        assert found is not None
        return found

    def _select(self, where: str, args: tuple[Any, ...], order: str = "") -> list[Version]:
        with self._db() as conn:
            rows = conn.execute(f"SELECT {_VERSION_COLUMNS} FROM craits_roster_versions WHERE roster = %s{where}{order}",
                                (self.name, *args)).fetchall()
        return [_version(r) for r in rows]

    def versions(self, name: str | None = None) -> list[Version]:
        where, args = (" AND participant = %s", (name,)) if name is not None else ("", ())
        return self._select(where, args, " ORDER BY participant, number")

    def version(self, name: str, number: int) -> Version | None:
        return next(iter(self._select(" AND participant = %s AND number = %s", (name, number))), None)

    def version_by_id(self, version_id: int) -> Version | None:
        return next(iter(self._select(" AND id = %s", (version_id,))), None)

    def pending(self) -> list[Version]:
        return self._select(" AND status = 'building'", (), " ORDER BY id")

    def decide(self, version: Version, status: str, *, reason: str = "", build_log: str = "", report: str = "",
               validation: dict[str, Any] | None = None, command: Sequence[str] = ()) -> bool:
        """As :meth:`Roster.decide`; an admitted version's built folder is stored (packed, by its
        hash) in the same transaction, for the workers on other machines."""
        if status not in STATUSES:
            raise ValueError(status)
        packed = pack_folder(self.version_dir(version)) if status == "admitted" else None
        with self._db() as conn:
            built = put_file(conn, packed) if packed is not None else None
            cursor = conn.execute(
                "UPDATE craits_roster_versions SET status = %s, reason = %s, build_log = %s, report = %s,"
                " validation = %s, command = %s, built = %s WHERE id = %s AND roster = %s AND status = 'building'",
                (status, reason, build_log, report, json.dumps(validation or {}), json.dumps(list(command)),
                 built, version.id, self.name))
            return cursor.rowcount > 0

    def claim(self, version: Version) -> bool:
        with self._db() as conn:  # (the participant's row locked, as an upload locks it)
            conn.execute("SELECT 1 FROM craits_roster_participants WHERE roster = %s AND name = %s FOR UPDATE",
                         (self.name, version.participant))
            row = conn.execute("SELECT status FROM craits_roster_versions WHERE id = %s AND roster = %s",
                               (version.id, self.name)).fetchone()
            if row is None or row[0] != "building":
                return False
            conn.execute("INSERT INTO craits_roster_settings (roster, key, value) VALUES (%s, %s, %s)"
                         " ON CONFLICT (roster, key) DO UPDATE SET value = excluded.value",
                         (self.name, BUILDING_KEY, str(version.id)))
        return True

    def _set_pinned(self, name: str, number: int | None) -> None:
        with self._db() as conn:
            conn.execute("UPDATE craits_roster_participants SET pinned = %s WHERE roster = %s AND name = %s",
                         (number, self.name, name))

    # ------------------------------------------------------------------ on a ladder

    def publish(self, tournament: str, versions: Sequence[Version]) -> None:
        """Name each admitted version's built folder (by its hash) for the workers of the ladder
        ``tournament`` in this database: a worker fetches it from there (server.storage.bot_files)."""
        with self._db() as conn:
            if not conn.execute("SELECT 1 FROM craits_tournaments WHERE name = %s", (tournament,)).fetchone():
                return  # (a ladder kept in SQLite elsewhere: it plays the versions from version_dir)
            rows = conn.execute("SELECT id, built FROM craits_roster_versions WHERE roster = %s AND id = ANY(%s)",
                                (self.name, [v.id for v in versions])).fetchall()
        built = {r[0]: r[1] for r in rows if r[1] is not None}
        files = [(v.bot, built[v.id], v.command) for v in versions if v.id in built]
        new = [f for f in files if (tournament, f[0], f[1]) not in self._published]
        if new:  # (each round asks: only what is new is written)
            try:
                with PostgresStore(self.url, tournament, create=False) as store:
                    store.set_bot_files(new)
            except StoreError as err:
                raise RosterError(str(err)) from None
            self._published.update((tournament, bot, digest) for bot, digest, _ in new)

    def bot_dir(self, version: Version) -> Path:
        """The version's folder where it was built, else (built on another machine) fetched from
        the database by its hash and unpacked under ``fetched/`` (as a worker's cache does)."""
        here = self.version_dir(version)
        if here.is_dir():
            return here
        digest = self.built(version)
        if digest is None:
            raise RosterError(f"{version.bot}: its built files are not in the database (not admitted?)")
        try:
            return FileCache(self.url, self.folder / "fetched").get(digest)
        except FilesUnavailable as err:
            raise RosterError(f"{version.bot}: {err}") from None

    def keep_file(self, data: bytes) -> str:
        """``data`` kept in the database by its SHA-256 (``craits_files``), for the other machines: its hash."""
        with self._db() as conn:
            return put_file(conn, data)

    def fetch_kept(self, digest: str, path: Path) -> bool:
        """The file kept by :meth:`keep_file` as ``digest``, written whole to ``path`` on this
        machine (a page served here of something made on another machine); False if there is none."""
        with self._db() as conn:
            data = get_file(conn, digest)
        if data is None:
            return False
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temp = tempfile_in(path.parent)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temp, path)
        return True

    def built(self, version: Version) -> str | None:
        """The hash of the version's built folder in ``craits_files`` (None until admitted)."""
        with self._db() as conn:
            row = conn.execute("SELECT built FROM craits_roster_versions WHERE id = %s AND roster = %s",
                               (version.id, self.name)).fetchone()
        return None if row is None else row[0]


def handout_students(roster_folder: str | Path, names: Sequence[str], tokens_file: Path | None) -> list[tuple[str, str]]:
    """(name, token) of the roster's participants asked for (all those not revoked when ``names``
    is empty) for ``craits handout``: their tokens read from the tokens file and checked."""
    roster = Roster(roster_folder)
    people = {p.name: p for p in roster.participants()}
    unknown = [name for name in names if name not in people]
    if unknown:
        raise UserError(f"{', '.join(map(repr, unknown))}: not on the roster {roster_folder}")
    wanted = list(names) or [name for name, p in people.items() if not p.revoked]
    if not wanted:
        raise UserError(f"the roster {roster_folder} has nobody on it yet: craits roster import {roster_folder} FILE.csv")
    path = tokens_file or Path(str(Path(roster_folder).resolve()) + "-tokens.csv")
    held: dict[str, list[str]] = {}
    try:
        with path.open(newline="", encoding="utf-8") as text:
            for row in csv.DictReader(text):
                held.setdefault(row.get("name") or "", []).append(row.get("token") or "")
    except OSError as err:
        raise UserError(f"{path}: cannot read the tokens ({err.strerror or err}); `craits roster import` wrote them "
                        "there (give --tokens FILE if you keep them elsewhere)") from None
    found, missing = [], []
    for name in wanted:
        token = next((t for t in reversed(held.get(name, [])) if roster.authenticate(t) == name), None)
        if token is None:
            missing.append(name)
        else:
            found.append((name, token))
    if missing:
        raise UserError(f"no working token in {path} for {', '.join(missing)} (renewed or revoked since?): "
                        f"`craits roster renew {roster_folder} NAME` makes a new one, then run craits handout again")
    return found


@contextlib.contextmanager
def immediate(path: Path, *, foreign_keys: bool = False) -> Iterator[sqlite3.Connection]:
    """A connection to the SQLite file ``path`` in one transaction holding the write lock from
    its start (``BEGIN IMMEDIATE``): a quota's check and the write it allows, with no other
    writer between them, whichever process asks."""
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        if foreign_keys:
            db.execute("PRAGMA foreign_keys=ON")
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    finally:
        db.close()
