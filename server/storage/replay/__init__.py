"""Replays: one hash-chained JSON Lines file per game (docs/replay-format.md).

format: canonical JSON, the chain, atomic writes; writer: the referee's ReplayWriter and
record_game; reader: read_replay with every field checked; verify: re-simulation.
"""
from server.storage.replay.format import (
    GENESIS,
    REPLAY_SUFFIX,
    SCHEMA,
    STATUSES,
    ReplayError,
    ReplayUsageError,
    canonical_json,
    chain_records,
    config_from_dict,
    event_json,
    hashed_line,
    record_hash,
    write_records,
    write_text_atomic,
)
from server.storage.replay.reader import (
    MAX_LINE_BYTES,
    MAX_RECORDS,
    Replay,
    load_records,
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
    "SCHEMA",
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
    "event_json",
    "hashed_line",
    "load_records",
    "random_policy",
    "read_replay",
    "record_game",
    "record_hash",
    "replay_state",
    "result_entry",
    "simulate",
    "verify_replay",
    "write_records",
    "write_text_atomic",
]
