"""Format 2 (``craits-replay/2``): the game's seed and decisions, gzip-compressed, sealed by
one SHA-256 over the compressed bytes (docs/replay-format.md).

A decision is one short JSON array, ``[action, status, think_us, transport_us]`` (plus an
object with ``sent``/``note`` when there are any); events, legal counts, texts and the
engine's result are re-derived by the reader from the seed, so a full four-seat game is a few
kilobytes instead of half a megabyte. Lines are gathered per hand and compressed as the hand
ends (one ``compress`` and one flush per hand, not per decision), so a ``.tmp`` left by a
crash still holds every finished hand."""

from __future__ import annotations

import functools
import hashlib
import os
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from server.storage.replay.format import (
    SCHEMA_V2,
    V2_DIGEST_OFFSET,
    canonical_json,
    commit_file,
    v2_header,
)

JsonDict = dict[str, Any]

LEVEL = 9
"""zlib's level: a game's lines are a few tens of KB, so the best level costs a millisecond."""


def _int_text(value: int | None) -> str:
    return "null" if value is None else str(int(value))


@functools.lru_cache(maxsize=64)
def _status_text(status: str) -> str:
    return canonical_json(status)


def decision_line(action: int, status: str, think_us: int | None, transport_us: int | None,
                  sent: int | None = None, note: str = "", wire: Mapping[str, Any] | None = None) -> str:
    """A decision's line (without its end of line), in canonical JSON. ``wire`` is what the
    request carried that the engine cannot re-derive (its id, the bank; ``replay messages``)."""
    extra = ""
    if wire and sent is None and not note and len(wire) == 2 and "id" in wire and "bank_ms" in wire:
        # the usual decision asked of a bot, put together directly (a third of the encoder's cost;
        # tests/replay check every line is canonical_json of what it parses to)
        extra = f',{{"wire":{{"bank_ms":{int(wire["bank_ms"]):d},"id":{int(wire["id"]):d}}}}}'
    elif sent is not None or note or wire:
        fields: JsonDict = {}
        if note:
            fields["note"] = note
        if sent is not None:
            fields["sent"] = int(sent)
        if wire:
            fields["wire"] = dict(wire)
        extra = "," + canonical_json(fields)
    return f"[{action:d},{_status_text(status)},{_int_text(think_us)},{_int_text(transport_us)}{extra}]"


def result_line(result: Mapping[str, Any]) -> str:
    """The result's line: the engine's totals and placings (so a listing needs no engine; the
    reader checks them) and what only the referee knows (seat reports, why it was aborted)."""
    record: JsonDict = {"type": "result", "totals": list(result["totals"]), "placings": list(result["placings"])}
    for key in ("seat_reports", "aborted"):
        if result.get(key):
            record[key] = result[key]
    return canonical_json(record)


class CompactWriter:
    """Writes a format 2 file to ``tmp_path`` and, on :meth:`close`, seals it and moves it to
    ``path``. Feed it lines with :meth:`line`; :meth:`flush` compresses what was gathered
    (the referee calls it at the end of every hand)."""

    def __init__(self, path: Path, tmp_path: Path) -> None:
        self.path, self.tmp_path = path, tmp_path
        self._out: BinaryIO | None = tmp_path.open("w+b")
        self._out.write(v2_header())
        self._zip = zlib.compressobj(LEVEL, zlib.DEFLATED, -15, 9)
        self._sha = hashlib.sha256()
        self._crc = 0
        self._size = 0
        self._lines: list[str] = []

    def header(self, header: Mapping[str, Any]) -> None:
        fields = {k: v for k, v in header.items() if k not in ("prev", "hash")}
        self.line(canonical_json({**fields, "schema": SCHEMA_V2}))

    def line(self, text: str) -> None:
        self._lines.append(text)

    def flush(self) -> None:
        """Compress the lines gathered so far and write them through (readable after a crash)."""
        if not self._lines or self._out is None:
            return
        data = ("\n".join(self._lines) + "\n").encode("utf-8")
        self._lines = []
        self._crc = zlib.crc32(data, self._crc)
        self._size += len(data)
        self._emit(self._zip.compress(data) + self._zip.flush(zlib.Z_SYNC_FLUSH))
        self._out.flush()

    def _emit(self, chunk: bytes) -> None:
        assert self._out is not None
        self._sha.update(chunk)
        self._out.write(chunk)

    def close(self) -> Path:
        """End the stream, write the seal into the header, fsync and rename into place."""
        self.flush()
        out = self._out
        assert out is not None
        self._emit(self._zip.flush(zlib.Z_FINISH) + self._crc.to_bytes(4, "little")
                   + (self._size & 0xFFFFFFFF).to_bytes(4, "little"))
        out.seek(V2_DIGEST_OFFSET)
        out.write(self._sha.digest())
        self._out = None
        return commit_file(out, self.tmp_path, self.path)

    def abort(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
        self.tmp_path.unlink(missing_ok=True)

    @property
    def closed(self) -> bool:
        return self._out is None


def write_compact(path: str | os.PathLike[str], records: list[JsonDict]) -> Path:
    """Write a replay's records (as :func:`read_replay` gives them, either format) as a format
    2 file, atomically, flushing at the same places the referee does (each hand's end)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    out = CompactWriter(target, target.with_name(target.name + ".tmp"))
    try:
        decisions = [r for r in records if r.get("type") == "decision"]
        out.header(records[0])
        out.flush()
        for i, rec in enumerate(decisions):
            out.line(decision_line(rec["action"], rec["status"], rec.get("think_us"), rec.get("transport_us"),
                                   rec.get("sent"), rec.get("note", ""), rec.get("wire")))
            if i + 1 == len(decisions) or decisions[i + 1].get("hand") != rec.get("hand"):
                out.flush()
        out.line(result_line(records[-1]))
        return out.close()
    except BaseException:
        out.abort()
        raise
