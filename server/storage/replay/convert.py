"""Turning a replay of one format into the other (``craits replay convert``): the file is
verified first, so a converted replay says exactly what the original did."""

from __future__ import annotations

import os

from server.storage.replay.compact import write_compact
from server.storage.replay.format import SCHEMA, canonical_json, chain_records, write_text_atomic
from server.storage.replay.reader import read_replay
from server.storage.replay.verify import verify_replay


def convert_replay(source: str | os.PathLike[str], target: str | os.PathLike[str], version: int | None = None) -> int:
    """Verify ``source`` and write it to ``target`` in format ``version`` (default: the other
    one); return the format written. Format 1 written from format 2 is byte for byte the file
    the referee would have written (the golden files round-trip)."""
    verify_replay(source)
    replay = read_replay(source)
    version = version or (1 if replay.version == 2 else 2)
    if version == 2:
        write_compact(target, list(replay.records))
    elif version == 1:
        records = [{**replay.header, "schema": SCHEMA}, *replay.records[1:]]
        write_text_atomic(target, "".join(canonical_json(rec) + "\n" for rec in chain_records(records)))
    else:
        raise ValueError(f"replay format {version!r}: there are formats 1 and 2")
    return version
