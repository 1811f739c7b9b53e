"""The replay format: one JSON Lines file per game, each record hash-chained to the one
before it (docs/replay-format.md). Canonical JSON, the chain, and atomic writes live here,
shared by the writer, the reader and the viewer."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from server.engine import Flags, GameConfig, make_config

JsonDict = dict[str, Any]

SCHEMA = "craits-replay/1"
SCHEMA_V2 = "craits-replay/2"
"""The compact format new games are written in: gzip, no hash per record, nothing the engine
re-derives (docs/replay-format.md). Readers take both; ``craits replay convert`` turns one
into the other."""
GENESIS = "0" * 64
"""The ``prev`` of the header: there is no record before it."""
V1_SUFFIX = ".jsonl"
V2_SUFFIX = ".jsonl.gz"
REPLAY_SUFFIX = V2_SUFFIX
"""The name new replays are given (``<game_id>.jsonl.gz``); :data:`REPLAY_SUFFIXES` are
every name a replay may have (readers tell the format from the bytes, not the name)."""
REPLAY_SUFFIXES = (V2_SUFFIX, V1_SUFFIX)
STATUSES = ("ok", "auto", "bank", "timeout", "illegal", "malformed", "default", "disconnected")
"""Decision statuses the project uses (documented in docs/replay-format.md); others are
accepted so a newer referee can add one without breaking older readers."""


# --------------------------------------------------------------------------- errors


class ReplayError(Exception):
    """A replay that cannot be read or does not verify; says which file, which record, what."""

    def __init__(self, path: str | os.PathLike[str], record: int | None, message: str) -> None:
        self.path = str(path)
        self.record = record
        self.message = message
        where = f"{self.path}: record {record}" if record is not None else self.path
        super().__init__(f"{where}: {message}")


class ReplayUsageError(RuntimeError):
    """The writer was driven out of order (a bug in the caller, not in the game)."""


# --------------------------------------------------------------------------- canonical form


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """The one text a record is hashed as: sorted keys, no spaces, UTF-8 kept as is."""
    return _CANONICAL.encode(value)


def record_hash(record: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``record`` without its ``hash`` field."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def hashed_line(record: Mapping[str, Any]) -> tuple[str, str]:
    """``(canonical_json(record + hash), hash)`` for a record without its ``hash``, encoding
    the record once: the hash is taken over the canonical JSON of the keys before and
    after where ``hash`` sorts, joined, and the line is the same two parts around it.
    (Canonical JSON of a dict is its sorted ``"key":value`` pairs joined by commas, so
    the parts concatenate exactly.)"""
    head = _CANONICAL.encode({k: v for k, v in record.items() if k < "hash"})[1:-1]
    tail = _CANONICAL.encode({k: v for k, v in record.items() if k > "hash"})[1:-1]
    digest = hashlib.sha256(f"{{{head}{',' if head and tail else ''}{tail}}}".encode()).hexdigest()
    parts = [part for part in (head, f'"hash":"{digest}"', tail) if part]
    return "{" + ",".join(parts) + "}", digest


def chain_records(records: Iterable[Mapping[str, Any]]) -> list[JsonDict]:
    """Set ``prev`` and ``hash`` on each record in order (for writers and tools that edit replays)."""
    out: list[JsonDict] = []
    prev = GENESIS
    for rec in records:
        body = {k: v for k, v in rec.items() if k not in ("hash", "prev")}
        body["prev"] = prev
        body["hash"] = prev = record_hash(body)
        out.append(body)
    return out


def write_records(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``records`` as a replay file, re-chaining the hashes (tests and repair tools)."""
    target = Path(path)
    with target.open("w", encoding="utf-8", newline="\n") as out:
        for rec in chain_records(records):
            out.write(canonical_json(rec) + "\n")
    return target


def event_json(raw: Sequence[Any]) -> list[Any]:
    """An engine raw event as JSON: [kind, seat, [card codes], suit or -1, value]."""
    kind, seat, cards, suit, value = raw
    return [kind, seat, list(cards), suit, value]

def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # not every platform can open a directory
        return
    try:
        with contextlib.suppress(OSError):  # not every file system syncs a directory
            os.fsync(fd)
    finally:
        os.close(fd)


def commit_file(handle: Any, tmp_path: Path, path: Path) -> Path:
    """Flush, fsync and close ``handle`` (open on ``tmp_path``), then rename it to ``path``
    and fsync the folder: after this the file is complete at its name, or (a crash) not there."""
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()
    os.replace(tmp_path, path)
    _fsync_dir(path.parent)
    return path


def config_from_dict(data: Mapping[str, Any]) -> GameConfig:
    """Rebuild (and re-validate) a configuration from ``GameConfig.to_dict()``.

    Flags at their default value are left out, since a preset may refuse a flag it does
    not take even at its default (crazy-eights takes ``decks`` alone)."""
    defaults = Flags()
    flags = {k: v for k, v in dict(data.get("flags", {})).items() if getattr(defaults, k, None) != v}
    return make_config(data["preset"], data["players"], **flags)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path.tmp`` then rename it into place: a full disk or a kill leaves
    the old file or none, never a cut-off page."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out



def replay_name(path: str | os.PathLike[str]) -> str:
    """A replay file's name without its suffix (``g-1.jsonl.gz`` and ``g-1.jsonl`` give ``g-1``)."""
    name = Path(path).name
    for suffix in REPLAY_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return Path(name).stem


def replay_files_in(directory: str | os.PathLike[str]) -> list[Path]:
    """The replay files of a folder (both formats), sorted by name."""
    folder = Path(directory)
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(REPLAY_SUFFIXES))


# --------------------------------------------------------------------------- format 2's container

GZIP_MAGIC = b"\x1f\x8b"
V2_HEADER_SIZE = 48
"""A format 2 file starts with this fixed gzip header: ``1f 8b 08`` (deflate), flags 04 (an
extra field), mtime 0, xfl 0, os 255, then the extra field: length 36, subfield ``CR`` of 32
bytes, the SHA-256 of every byte after the header (the deflate stream and gzip's trailer)."""
_V2_HEADER_START = b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff\x24\x00CR\x20\x00"
V2_DIGEST_OFFSET = len(_V2_HEADER_START)


def v2_header(digest: bytes = bytes(32)) -> bytes:
    """The 48-byte gzip header of a format 2 file carrying ``digest``."""
    return _V2_HEADER_START + digest


def v2_header_digest(head: bytes) -> bytes | None:
    """The digest a format 2 header carries, or None if ``head`` is not exactly such a header."""
    if len(head) != V2_HEADER_SIZE or not head.startswith(_V2_HEADER_START):
        return None
    return head[V2_DIGEST_OFFSET:]
