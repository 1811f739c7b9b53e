"""Damaged or hostile replay files: one precise error naming the record, never a traceback,
bounded memory; and whatever `verify` accepts, `show` and `html` can display."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import server.storage.replay.reader as reader_module
import server.viewer.pages as pages_module
from server.storage.replay import ReplayError, read_replay, verify_replay, write_records
from server.viewer.pages import render_html, write_html
from server.viewer.walkthrough import format_walkthrough
from tests.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
Records = list[dict[str, Any]]


def _records(path: Path) -> Records:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _error(action: Callable[[], object]) -> str:
    with pytest.raises(ReplayError) as err:
        action()
    return str(err.value)


def _show(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, str, str]:
    return run_cli(capsys, "replay", "show", str(path))


# --------------------------------------------------------------------------- garbage lines


def test_a_line_nested_a_hundred_thousand_deep_is_not_a_json_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    assert _error(lambda: verify_replay(path)) == f"{path}: record 1: not a JSON record: nested too deeply"
    code, out, err = _show(capsys, path)
    assert (code, out) == (2, "") and err == f"craits: error: {path}: record 1: not a JSON record: nested too deeply\n"


def test_an_integer_of_5000_digits_is_not_a_json_record(tmp_path: Path) -> None:
    path = tmp_path / "bignum.jsonl"
    path.write_text('{"type":"header","seed":' + "9" * 5000 + "}\n", encoding="utf-8")
    message = _error(lambda: read_replay(path))
    assert message.startswith(f"{path}: record 1: not a JSON record: ") and "4300 digits" in message


def test_a_line_longer_than_the_limit_is_refused(short_replay: Path) -> None:
    lines = short_replay.read_bytes().split(b"\n")
    lines.insert(3, b" " * (reader_module.MAX_LINE_BYTES + 1))
    short_replay.write_bytes(b"\n".join(lines))
    assert _error(lambda: verify_replay(short_replay)).endswith(
        f"record 4: line longer than {reader_module.MAX_LINE_BYTES} bytes: not a replay record"
    )


def test_a_file_with_more_records_than_any_game_is_refused(
    short_replay: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader_module, "MAX_RECORDS", 5)
    assert _error(lambda: verify_replay(short_replay)).endswith(
        "record 6: more than 5 records: longer than any game, not a replay"
    )


def test_a_huge_file_is_read_line_by_line_not_whole(tmp_path: Path) -> None:
    """A 2 GB file (sparse: no disk used) under a 400 MB address-space limit: reading it whole
    would die of MemoryError; reading line by line stops at the first over-long line."""
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.truncate(2 << 30)
    # The limit is set by the child itself: a preexec_fn would fork this process, whose gRPC
    # threads (from other tests) can abort a forked child before it runs anything.
    script = (
        "import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))\n"
        "from server.storage.replay import ReplayError, verify_replay\n"
        "try:\n    verify_replay(sys.argv[1])\nexcept ReplayError as err:\n    print(err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{path}: record 1: line longer than {reader_module.MAX_LINE_BYTES} bytes: not a replay record\n"


# --------------------------------------------------------------------------- fields of the wrong type


def _seats(n: int) -> Callable[[Records], None]:
    return lambda r: r[0].__setitem__("seats", [{"seat": i, "bot": "x"} for i in range(n)])


def _set(index: int, key: str, value: Any) -> Callable[[Records], None]:
    return lambda r: r[index].__setitem__(key, value)


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _set_hand_field(r: Records) -> None:
    r[-1]["hands"][0] = {"dealer": 0}


FIELD_CASES: list[tuple[str, Callable[[Records], None], str]] = [
    ("no seats", _seats(0), r"record 1: header field seats lists 0 seats for a game of 3 players"),
    ("20 seats", _seats(20), r"record 1: header field seats lists 20 seats for a game of 3 players"),
    ("seat numbers", lambda r: r[0]["seats"].reverse(), r"record 1: header field seats\[0\]\.seat must be 0"),
    ("flags", lambda r: r[0]["config"].__setitem__("flags", [["short_game", True]]),
     r"record 1: header field config\.flags must be a JSON object"),
    ("status", _set(2, "status", 5), r"record 3: decision field status must be a non-empty JSON string, not 5"),
    ("think", _set(2, "think_us", "x"), r'record 3: decision field think_us must be a JSON integer, not "x"'),
    ("events", _set(2, "events", "x"), r'record 3: decision field events must be a JSON array of events, not "x"'),
    ("seat", _set(2, "seat", "0"), r'record 3: decision field seat must be a JSON integer, not "0"'),
    ("seat range", _set(2, "seat", 3), r"record 3: decision field seat must be from 0 to 2, not 3"),
    ("n", _set(2, "n", "1"), r'record 3: decision field n must be a JSON integer, not "1"'),
    ("card", lambda r: r[1]["events"][0].__setitem__(2, [52]), r"record 2: start field events\[0\] card 0 must be from 0 to 51"),
    ("hands", _set_hand_field, r"result field hands\[0\] lacks number"),
    ("reports", _set(-1, "seat_reports", [1, "x"]), r"result field seat_reports\[0\] must be a JSON object, not 1"),
    ("totals", _set(-1, "totals", [1, 2]), r"result field totals must have 3 entries \(one per seat\), not 2"),
    ("extra", lambda r: r[0].__setitem__("extra", {"a": _nested(40)}),
     r"record 1: header field extra is nested more than 32 levels deep"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "expected"), [case[1:] for case in FIELD_CASES], ids=[c[0] for c in FIELD_CASES])
def test_a_field_of_the_wrong_type_or_range_is_named_by_verify_show_and_html(
    short_replay: Path, tmp_path: Path, edit: Callable[[Records], None], expected: str
) -> None:
    records = _records(short_replay)
    edit(records)
    write_records(short_replay, records)
    message = _error(lambda: verify_replay(short_replay))
    assert message.startswith(str(short_replay)), message
    assert re.search(expected, message), message
    assert _error(lambda: read_replay(short_replay)) == message
    assert _error(lambda: write_html(short_replay, tmp_path / "page.html")) == message
    assert not (tmp_path / "page.html").exists()


def test_show_of_a_re_chained_bad_field_is_one_line_naming_the_record(
    short_replay: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = _records(short_replay)
    records[2]["status"] = 5
    write_records(short_replay, records)
    code, out, err = _show(capsys, short_replay)
    assert (code, out) == (2, "")
    assert err == f"craits: error: {short_replay}: record 3: decision field status must be a non-empty JSON string, not 5\n"


def test_a_suit_event_without_a_suit_fails_verify_but_shows(short_replay: Path) -> None:
    """The fields are well-typed, only the engine disagrees: verify refuses, show still reads it."""
    records = _records(short_replay)
    records[2]["events"] = [["count", -1, [], -1, 2], ["name_suit", records[2]["seat"], [], -1, 0]]
    write_records(short_replay, records)
    assert "record 3: decision 1: " in _error(lambda: verify_replay(short_replay))
    replay = read_replay(short_replay)
    assert "names suit -1" in format_walkthrough(replay)
    assert render_html(replay).rstrip().endswith("-->")


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside a record a value could be replaced (keys and list indexes)."""
    found = [prefix] if prefix else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        if prefix or key not in ("hash", "prev", "type"):
            found.extend(_paths(child, (*prefix, key)))
    return found


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_whatever_verify_accepts_shows_and_whatever_it_rejects_never_tracebacks(
    short_replay: Path, data: st.DataObject
) -> None:
    """Replace any value of any record with any JSON and re-chain: show and html either display
    the file or give exactly the error the reader gave verify."""
    original = _records(short_replay)
    records = copy.deepcopy(original)
    index = data.draw(st.sampled_from([0, 1, 2, 3, len(records) - 1]), label="record")
    path = data.draw(st.sampled_from(_paths(records[index])), label="path")
    target: Any = records[index]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(_JSON_VALUES, label="value")
    edited = short_replay.with_name("edited.jsonl")
    write_records(edited, records)
    verify_error = ""
    try:
        verify_replay(edited)
    except ReplayError as err:
        verify_error = str(err)
    try:
        replay = read_replay(edited)
    except ReplayError as err:
        assert str(err) == verify_error and verify_error.startswith(f"{edited}: ")
        return
    assert format_walkthrough(replay).endswith("\n")
    assert "</html>" in render_html(replay)


# --------------------------------------------------------------------------- viewer pages


def test_a_page_that_fails_to_write_leaves_the_old_page_whole(
    short_replay: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that dies half way (here: text the encoder refuses after 200 KB, as a full disk
    would) must leave the previous page as it was and no temporary file."""
    page = tmp_path / "site" / "game.html"
    write_html(short_replay, page)
    before = page.read_bytes()
    monkeypatch.setattr(pages_module, "render_html", lambda *_a, **_k: "x" * 200_000 + "\ud800")
    with pytest.raises(UnicodeEncodeError):
        write_html(short_replay, page)
    assert page.read_bytes() == before
    assert sorted(p.name for p in page.parent.iterdir()) == ["game.html"]


def test_a_page_is_current_only_when_whole_and_made_from_this_replay(
    short_replay: Path, eights_replay: Path, tmp_path: Path
) -> None:
    page = tmp_path / "game.html"
    replay = read_replay(short_replay)
    assert not pages_module.viewer_is_current(page, replay)
    write_html(replay, page)
    assert pages_module.viewer_is_current(page, replay)
    assert not pages_module.viewer_is_current(page, read_replay(eights_replay))
    page.write_bytes(page.read_bytes()[:-200])
    assert not pages_module.viewer_is_current(page, replay)
