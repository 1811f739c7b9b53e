"""Format 2 (``craits-replay/2``): a game in kilobytes that reads back as the very records
format 1 stores, refuses any changed byte, and converts to format 1 and back exactly."""

from __future__ import annotations

import gzip
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from server.engine import ACTIONS, GameState, make_config
from server.storage.replay import (
    SCHEMA_V2,
    ReplayError,
    convert_replay,
    is_compact,
    read_ends,
    read_replay,
    record_game,
    verify_replay,
)
from server.storage.replay.compact import decision_line
from server.storage.replay.format import V2_HEADER_SIZE, canonical_json, v2_header

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
GOLDENS = sorted(GOLDEN_DIR.glob("*.jsonl"))


def _without_chain(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("prev", "hash")}


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """The same seeded game recorded in format 1 and in format 2."""
    config = make_config("craits", 4, short_game=True)
    v1, v2 = tmp_path / "g.jsonl", tmp_path / "g.jsonl.gz"
    record_game(v1, config, 21)
    record_game(v2, config, 21)
    return v1, v2


def test_a_new_game_is_written_in_format_2_and_verifies(pair: tuple[Path, Path]) -> None:
    v1, v2 = pair
    assert is_compact(v2) and not is_compact(v1)
    assert gzip.decompress(v2.read_bytes()).startswith(b'{"config":'), "zcat reads it"
    assert verify_replay(v2).line().replace(".jsonl.gz", ".jsonl") == verify_replay(v1).line()


def test_format_2_reads_back_as_the_records_format_1_stores(pair: tuple[Path, Path]) -> None:
    """Readers cannot tell: the engine re-derives every event, count and text on reading."""
    one, two = read_replay(pair[0]), read_replay(pair[1])
    assert (one.version, two.version) == (1, 2)
    assert two.header == {**_without_chain(one.header), "schema": SCHEMA_V2}
    assert two.start == _without_chain(one.start)
    assert list(two.decisions) == [_without_chain(d) for d in one.decisions]
    assert two.result == _without_chain(one.result)
    assert len(two.records) == len(one.records)
    header, result, fingerprint = read_ends(pair[1])
    assert header["game_id"] == "g" and result["totals"] == one.result["totals"] and fingerprint == two.seal


def test_a_full_game_is_kilobytes_not_hundreds(tmp_path: Path) -> None:
    config = make_config("craits", 4)
    record_game(tmp_path / "full.jsonl", config, 7)
    record_game(tmp_path / "full.jsonl.gz", config, 7)
    v1, v2 = (tmp_path / "full.jsonl").stat().st_size, (tmp_path / "full.jsonl.gz").stat().st_size
    assert v1 > 500_000 and v2 < 10_000, (v1, v2)


def test_every_changed_byte_of_the_file_is_refused(pair: tuple[Path, Path], tmp_path: Path) -> None:
    """Change each byte of the compressed file in turn (one bit, and the whole byte): refused."""
    data = pair[1].read_bytes()
    bad = tmp_path / "bad.jsonl.gz"
    for i in range(len(data)):
        for flip in (0x01, 0x80, 0xFF):
            bad.write_bytes(data[:i] + bytes([data[i] ^ flip]) + data[i + 1 :])
            with pytest.raises(ReplayError):
                read_replay(bad)


def test_every_changed_byte_of_its_content_is_refused(pair: tuple[Path, Path], tmp_path: Path) -> None:
    """Unzip, change one byte, compress again (with gzip, or in craits' own header keeping the
    seal): refused, wherever the byte is."""
    data = pair[1].read_bytes()
    text = gzip.decompress(data)
    bad = tmp_path / "bad.jsonl.gz"
    for i in range(0, len(text), max(1, len(text) // 400)):
        changed = text[:i] + bytes([text[i] ^ 0x01]) + text[i + 1 :]
        deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
        body = deflate.compress(changed) + deflate.flush()
        trailer = zlib.crc32(changed).to_bytes(4, "little") + len(changed).to_bytes(4, "little")
        for attempt in (gzip.compress(changed), data[:V2_HEADER_SIZE] + body + trailer):
            bad.write_bytes(attempt)
            with pytest.raises(ReplayError):
                read_replay(bad)


def test_a_resealed_changed_action_is_still_refused_by_the_engine(pair: tuple[Path, Path], tmp_path: Path) -> None:
    """The seal shows a change; re-made with a new seal (anyone can, as anyone can re-hash format
    1's chain), a decision the rules do not allow is still refused."""
    import hashlib

    replay = read_replay(pair[1])
    legal = GameState(replay.config, replay.seed).legal_action_ids()
    illegal = next(a for a in range(len(ACTIONS)) if ACTIONS[a] is not None and a not in legal)
    lines = gzip.decompress(pair[1].read_bytes()).split(b"\n")
    first = lines[1]  # the first decision: [action, status, think_us, transport_us]
    lines[1] = b"[%d" % illegal + first[first.index(b","):]
    changed = b"\n".join(lines)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = deflate.compress(changed) + deflate.flush()
    body += zlib.crc32(changed).to_bytes(4, "little") + len(changed).to_bytes(4, "little")
    bad = tmp_path / "resealed.jsonl.gz"
    bad.write_bytes(v2_header(hashlib.sha256(body).digest()) + body)
    with pytest.raises(ReplayError, match="record 2: decision 1: action"):
        read_replay(bad)


def test_a_cut_off_or_unsealed_file_is_refused(pair: tuple[Path, Path], tmp_path: Path) -> None:
    data = pair[1].read_bytes()
    bad = tmp_path / "bad.jsonl.gz"
    for cut, says in ((len(data) - 1, "damaged gzip stream"), (len(data) // 2, "record [0-9]+: truncated"),
                      (20, "gzip file without the sealed header")):
        bad.write_bytes(data[:cut])
        with pytest.raises(ReplayError, match=says):
            read_replay(bad)
    bad.write_bytes(v2_header() + data[V2_HEADER_SIZE:])
    with pytest.raises(ReplayError, match="not sealed"):
        read_replay(bad)
    bad.write_bytes(gzip.decompress(data)[:-1] + b"x")  # (no longer gzip: read as format 1, refused)
    with pytest.raises(ReplayError):
        read_replay(bad)


@pytest.mark.parametrize("golden", GOLDENS, ids=lambda p: p.stem)
def test_every_golden_converts_to_format_2_and_back_byte_for_byte(golden: Path, tmp_path: Path) -> None:
    two, back = tmp_path / f"{golden.stem}.jsonl.gz", tmp_path / golden.name
    assert convert_replay(golden, two) == 2
    assert verify_replay(two).digest == verify_replay(golden).digest
    assert convert_replay(two, back) == 1
    assert back.read_bytes() == golden.read_bytes()


def test_convert_on_the_command_line(tmp_path: Path) -> None:
    golden = GOLDEN_DIR / "craits-2p.jsonl"
    out = tmp_path / "out"

    def craits(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "server.cli", "replay", *map(str, args)],
                              capture_output=True, text=True, timeout=120, check=False)

    done = craits("convert", golden, GOLDEN_DIR / "crazy-eights-2p.jsonl", "-o", out)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["craits-2p.jsonl.gz", "crazy-eights-2p.jsonl.gz"]
    back = craits("convert", out / "craits-2p.jsonl.gz", "-o", tmp_path / "back.jsonl")
    assert back.returncode == 0 and back.stdout == f"wrote {tmp_path / 'back.jsonl'} (format 1)\n", back.stderr
    assert (tmp_path / "back.jsonl").read_bytes() == golden.read_bytes()
    (tmp_path / "bad.jsonl.gz").write_bytes((out / "craits-2p.jsonl.gz").read_bytes()[:-3])
    failed = craits("convert", tmp_path / "bad.jsonl.gz", "-o", tmp_path / "bad.jsonl")
    assert failed.returncode == 1 and failed.stdout.startswith("FAIL ") and "gzip stream" in failed.stdout
    assert not (tmp_path / "bad.jsonl").exists()
    assert craits("verify", out).returncode == 0


@pytest.mark.parametrize(
    ("sent", "note", "wire"),
    [(None, "", {"id": 7, "bank_ms": 0}), (None, "", {"bank_ms": 12000, "id": 10**9}), (5, "", {"id": 1, "bank_ms": 3}),
     (None, "x", {"id": 1, "bank_ms": 3}), (None, "", {"id": 2, "bank_ms": 4, "away": 1}), (None, "", None)],
)
def test_a_decision_line_is_the_canonical_json_of_its_fields(sent, note, wire) -> None:  # type: ignore[no-untyped-def]
    """The usual line (a bot's answer: its request's id and bank) is put together directly,
    not through the encoder; it must read exactly as the encoder would write it."""
    fields = {k: v for k, v in (("note", note), ("sent", sent), ("wire", wire)) if v}
    expected = canonical_json([3, "ok", 120, 450, fields] if fields else [3, "ok", 120, 450])
    assert decision_line(3, "ok", 120, 450, sent, note, wire) == expected
