"""Replays: one file per game (docs/replay-format.md), in format 2 (compact, gzip, sealed)
or format 1 (hash-chained JSON Lines); readers take both.

format: canonical JSON, the chain, atomic writes; compact: format 2's encoder; writer: the
referee's ReplayWriter and record_game; reader: read_replay with every field checked (format
2 re-played into format 1's records); verify: re-simulation; convert: one format to the other.
"""
from server.storage.replay.convert import convert_replay
from server.storage.replay.format import (
    GENESIS,
    REPLAY_SUFFIX,
    REPLAY_SUFFIXES,
    SCHEMA,
    SCHEMA_V2,
    STATUSES,
    ReplayError,
    ReplayUsageError,
    canonical_json,
    chain_records,
    config_from_dict,
    event_json,
    hashed_line,
    record_hash,
    replay_files_in,
    replay_name,
    write_records,
    write_text_atomic,
)
from server.storage.replay.reader import (
    MAX_LINE_BYTES,
    MAX_RECORDS,
    Replay,
    is_compact,
    load_records,
    read_ends,
    read_replay,
)
from server.storage.replay.verify import (
    VerifySummary,
    replay_state,
    simulate,
    verify_replay,
)
from server.storage.replay.writer import (
    Policy,
    ReplayWriter,
    random_policy,
    record_game,
    result_entry,
)

__all__ = [
    "GENESIS",
    "MAX_LINE_BYTES",
    "MAX_RECORDS",
    "REPLAY_SUFFIX",
    "REPLAY_SUFFIXES",
    "SCHEMA",
    "SCHEMA_V2",
    "STATUSES",
    "Policy",
    "Replay",
    "ReplayError",
    "ReplayUsageError",
    "ReplayWriter",
    "VerifySummary",
    "canonical_json",
    "chain_records",
    "config_from_dict",
    "convert_replay",
    "event_json",
    "hashed_line",
    "is_compact",
    "load_records",
    "random_policy",
    "read_ends",
    "read_replay",
    "record_game",
    "record_hash",
    "replay_files_in",
    "replay_name",
    "replay_state",
    "result_entry",
    "simulate",
    "verify_replay",
    "write_records",
    "write_text_atomic",
]
