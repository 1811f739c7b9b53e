"""A roster folder: who takes part, their hashed tokens, and every version they submitted.

The folder holds ``roster.db`` (SQLite), ``uploads/`` (each upload whole, named by its SHA-256,
never overwritten) and ``versions/NAME/vN/`` (a version unpacked and built: its bot's folder).
Several processes use it at once (the web pages store uploads, the admission process records
builds, a ladder reads the admitted versions), each with connections of its own; SQLite's WAL
lets them.

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
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from participants.tokens import TokenHash, hash_token, matches, new_token, token_id
from server.errors import UserError

FILENAME = "roster.db"
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


class RosterError(UserError):
    """A roster that cannot be used as asked (the message says why and what to do)."""


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


class Roster:
    """The roster in ``folder``; :meth:`create` makes one, the constructor opens an existing one."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.db_path = self.folder / FILENAME
        if not self.db_path.is_file():
            raise RosterError(f"{self.folder}: no roster here (make one with `craits roster add {self.folder} NAME` "
                              "or `craits roster import`)")

    @classmethod
    def create(cls, folder: str | Path) -> Roster:
        """The roster in ``folder``, made (empty) if there is none."""
        folder = Path(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for sub in ("uploads", "versions", "tmp"):
                (folder / sub).mkdir(exist_ok=True)
            with contextlib.closing(sqlite3.connect(folder / FILENAME)) as db, db:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(SCHEMA)
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

    # ------------------------------------------------------------------ participants and tokens

    def add(self, name: str, email: str = "", team: str = "") -> str:
        """A new participant; returns their token (shown once: only its hash is kept)."""
        if not NAME.match(name):
            raise RosterError(f"participant name {name!r}: use 1 to 30 letters, digits, '_' or '-' "
                              "(it is also their bot's name on the board)")
        if name == ORGANIZER:
            raise RosterError(f"participant name {name!r} is reserved")
        token = new_token()
        stored = hash_token(token)
        try:
            with self._db() as db:
                db.execute("INSERT INTO participants (name, email, team, token_id, salt, digest, created) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (name, email.strip(), team.strip(), stored.token_id, stored.salt, stored.digest, time.time()))
        except sqlite3.IntegrityError:
            raise RosterError(f"{name} is already on the roster (a new token: `craits roster renew`)") from None
        return token

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
        made = []
        with self._db() as db:
            for name, email, team in rows:
                token = new_token()
                stored = hash_token(token)
                db.execute("INSERT INTO participants (name, email, team, token_id, salt, digest, created) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (name, email, team, stored.token_id, stored.salt, stored.digest, time.time()))
                made.append((name, token))
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

    def renew(self, name: str) -> str:
        """A new token for ``name`` (the old one stops working); returns it."""
        self._known(name)
        token = new_token()
        stored = hash_token(token)
        with self._db() as db:
            db.execute("UPDATE participants SET token_id = ?, salt = ?, digest = ?, revoked = 0 WHERE name = ?",
                       (stored.token_id, stored.salt, stored.digest, name))
        return token

    def organizer_token(self) -> str:
        """A new organizer token (for the organizer's pages); the previous one stops working."""
        token = new_token()
        stored = hash_token(token)
        value = json.dumps({"token_id": stored.token_id, "salt": stored.salt.hex(), "digest": stored.digest.hex()})
        self._set("organizer", value)
        return token

    def authenticate(self, token: str) -> str | None:
        """The participant's name (or :data:`ORGANIZER`) whose token this is, None for any other."""
        ident = token_id(token)
        if ident is None:
            return None
        with self._db() as db:
            row = db.execute("SELECT name, salt, digest FROM participants WHERE token_id = ? AND revoked = 0",
                             (ident,)).fetchone()
        if row is not None:
            return row[0] if matches(token, TokenHash(ident, row[1], row[2])) else None
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

    def secret(self) -> bytes:
        """The key web sessions and forms are signed with (made once)."""
        value = self._get("secret")
        if value is None:
            value = secrets.token_hex(32)
            with self._db() as db:
                db.execute("INSERT OR IGNORE INTO settings (key, value) VALUES ('secret', ?)", (value,))
            value = self._get("secret") or value
        return bytes.fromhex(value)

    def limits(self) -> dict[str, int | float]:
        """The organizer's limits for uploads and builds (``craits roster set``); defaults for the rest."""
        return dict(json.loads(self._get("limits") or "{}"))

    def set_limits(self, values: dict[str, int | float]) -> None:
        self._set("limits", json.dumps({**self.limits(), **values}, sort_keys=True))

    def _get(self, key: str) -> str | None:
        with self._db() as db:
            row = db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def _set(self, key: str, value: str) -> None:
        with self._db() as db:
            db.execute("INSERT INTO settings (key, value) VALUES (?, ?) "
                       "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    # ------------------------------------------------------------------ uploads and versions

    def upload_path(self, sha256: str) -> Path:
        return self.folder / "uploads" / sha256

    def version_dir(self, version: Version) -> Path:
        return self.folder / "versions" / version.participant / f"v{version.number}"

    def temp_dir(self) -> Path:
        path = self.folder / "tmp"
        path.mkdir(exist_ok=True)
        return path

    def submit(self, name: str, data: bytes, filename: str) -> Version:
        """Store an upload whole (by its hash) and make it ``name``'s next version, to be built.
        The upload is on disk, renamed into place, before the version's row exists."""
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
        with self._db() as db:  # (the number in the same statement: two uploads at once get two numbers)
            cursor = db.execute(
                "INSERT INTO versions (participant, number, sha256, size, filename, created) VALUES (?, "
                "(SELECT COALESCE(MAX(number), 0) + 1 FROM versions WHERE participant = ?), ?, ?, ?, ?)",
                (name, name, digest, len(data), safe_name, time.time()))
            row_id = cursor.lastrowid
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

    def decide(self, version: Version, status: str, *, reason: str = "", build_log: str = "", report: str = "",
               validation: dict[str, Any] | None = None, command: Sequence[str] = ()) -> None:
        """Record how a version's build and admission went."""
        if status not in STATUSES:
            raise ValueError(status)
        with self._db() as db:
            db.execute("UPDATE versions SET status = ?, reason = ?, build_log = ?, report = ?, validation = ?, "
                       "command = ? WHERE id = ?",
                       (status, reason, build_log, report, json.dumps(validation or {}), json.dumps(list(command)),
                        version.id))

    def pin(self, name: str, number: int | None) -> None:
        """Play version ``number`` of ``name`` (an admitted one), or the newest admitted (None)."""
        self._known(name)
        if number is not None:
            version = self.version(name, number)
            if version is None or version.status != "admitted":
                raise RosterError(f"{name} has no admitted version v{number}")
        with self._db() as db:
            db.execute("UPDATE participants SET pinned = ? WHERE name = ?", (number, name))

    def active(self) -> list[Version]:
        """The version each participant plays: the pinned one, else the newest admitted."""
        chosen = []
        for person in self.participants():
            if person.revoked:
                continue
            admitted = [v for v in self.versions(person.name) if v.status == "admitted"]
            pinned = [v for v in admitted if v.number == person.pinned]
            if pinned or admitted:
                chosen.append((pinned or admitted)[-1])
        return chosen


def tempfile_in(folder: Path) -> tuple[int, str]:
    """A new file in ``folder`` that only this user may read: (fd, path)."""
    path = folder / f".part-{secrets.token_hex(8)}"
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), str(path)
