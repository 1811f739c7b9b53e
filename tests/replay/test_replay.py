"""Replays: the writer's file, the hash chain, verification by re-simulation, the walkthrough."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.engine import ACTIONS, DecisionKind, GameState, make_config, new_game
from server.spec import BotSpec, Clocks, GameRecord, GameSpec, SeatReport, SeatStatus
from server.storage.replay import (
    GENESIS,
    SCHEMA,
    ReplayError,
    ReplayUsageError,
    ReplayWriter,
    canonical_json,
    hashed_line,
    load_records,
    read_replay,
    record_hash,
    replay_state,
    verify_replay,
    write_records,
)

# --------------------------------------------------------------------------- the file
from server.viewer.walkthrough import format_walkthrough

# --------------------------------------------------------------------------- the file


def test_a_replay_is_a_header_a_start_every_decision_and_a_result(short_replay: Path) -> None:
    records = [json.loads(line) for line in short_replay.read_text(encoding="utf-8").splitlines()]
    assert [r["type"] for r in records[:2]] == ["header", "start"]
    assert records[-1]["type"] == "result"
    assert {r["type"] for r in records[2:-1]} == {"decision"}
    header = records[0]
    assert header["schema"] == SCHEMA
    assert header["config"] == make_config("craits", 3, short_game=True, face_cards=True).to_dict()
    assert header["seed"] == 11
    assert [s["seat"] for s in header["seats"]] == [0, 1, 2]
    assert [r["n"] for r in records[2:-1]] == list(range(1, len(records) - 2))


def test_the_records_replay_the_engine_event_for_event(short_replay: Path) -> None:
    replay = read_replay(short_replay)
    game = GameState(replay.config, replay.seed)
    logged = [[kind, seat, list(cards), suit, value] for kind, seat, cards, suit, value in game.log]
    assert replay.start["events"] == logged
    for rec in replay.decisions:
        before = len(game.log)
        assert game.decision is not None
        assert (rec["seat"], rec["kind"]) == (game.decision.seat, game.decision.kind.name)
        assert rec["legal"] == len(game.legal_action_ids())
        game.apply(rec["action"])
        assert rec["events"] == [[k, s, list(c), su, v] for k, s, c, su, v in game.log[before:]]
    assert game.game_over
    assert replay.result["totals"] == list(game.result().totals)
    assert replay.result["digest"] == game.digest()


def test_each_record_hashes_its_canonical_json_and_chains_to_the_previous(short_replay: Path) -> None:
    lines = short_replay.read_text(encoding="utf-8").splitlines()
    prev = GENESIS
    for line in lines:
        rec = json.loads(line)
        assert line == canonical_json(rec), "each line is written in canonical form"
        assert rec["prev"] == prev
        assert rec["hash"] == record_hash(rec)
        prev = rec["hash"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "events", "h", "hasg", "hasi", "kind", "prev", "type", "zz", "", "Hash",
                                        'ha"sh', "é"]) | st.text(max_size=5), _JSON, max_size=8))
def test_a_line_is_written_from_one_encoding_yet_is_the_canonical_json_with_its_hash(record: dict) -> None:
    record.pop("hash", None)
    line, digest = hashed_line(record)
    assert digest == record_hash(record)
    assert line == canonical_json({**record, "hash": digest})


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_a_decision_line_is_the_canonical_json_of_its_record_whatever_the_bot_sent(tmp_path_factory, data) -> None:  # type: ignore[no-untyped-def]
    """Decision lines are put together from pieces (not through the JSON encoder): whatever
    the status, the note (a bot's illegal text), the timings or an ignored "one card", each
    line is the canonical JSON of what it parses to, and its hash is that record's."""
    path = tmp_path_factory.mktemp("lines") / "g.jsonl"
    game = new_game("craits", 2, seed=data.draw(st.integers(0, 10**6)), short_game=True)
    timing = st.none() | st.floats(0, 1e7, allow_nan=False)
    with ReplayWriter(path, game, seats=["a", "b"]) as writer:
        for _ in range(data.draw(st.integers(1, 60))):
            decision = game.decision
            if decision is None:
                break
            legal = game.legal_action_ids()
            action = data.draw(st.sampled_from(legal))
            sent = action
            announced = action + 1  # the same play with "one card", when the bot may say it out of place
            if announced < len(ACTIONS) and announced not in legal and getattr(ACTIONS[announced], "announce", False):
                sent = data.draw(st.sampled_from([action, announced]))
            game.apply(action)
            writer.decision(decision.seat, decision.kind, sent, data.draw(st.text(min_size=1, max_size=8)),
                            data.draw(timing), data.draw(timing), data.draw(st.text(max_size=12)))
    prev = GENESIS
    for line in path.read_text(encoding="utf-8").split("\n")[:-1]:  # (not splitlines: a note may hold U+0085)
        rec = json.loads(line)
        assert line == canonical_json(rec)
        assert rec["prev"] == prev and rec["hash"] == record_hash(rec)
        prev = rec["hash"]
    assert verify_replay(path).decisions == game.decisions


def test_a_hand_s_records_reach_the_disk_when_the_hand_ends(tmp_path: Path) -> None:
    """Decisions are written through at the end of each hand, so a referee killed mid-game
    leaves a ``.tmp`` that holds every hand it finished."""
    game = new_game("craits", 3, seed=5, short_game=True)
    writer = ReplayWriter(tmp_path / "g.jsonl", game, seats=["a", "b", "c"], game_id="g")
    while game.hand_number == 1:
        _play_some(game, writer, 1)
    on_disk = [json.loads(line) for line in writer.tmp_path.read_text().splitlines()]
    assert on_disk[-1]["type"] == "decision" and on_disk[-1]["n"] == game.decisions
    assert on_disk[-1]["hand"] == 1
    writer.abort()


def test_every_number_in_a_replay_is_an_integer(tmp_path: Path) -> None:
    """Timings are whole microseconds, so the canonical JSON is the same in any language."""
    game = new_game("craits", 2, seed=1, short_game=True)
    path = tmp_path / "t.jsonl"
    with ReplayWriter(path, game, seats=["a", "b"]) as rec:
        d = game.decision
        assert d is not None
        action = game.legal_action_ids()[0]
        game.apply(action)
        rec.decision(d.seat, d.kind, action, "ok", think_ms=1.23456, transport_ms=0.5)
    decision = load_records(path)[2]
    assert decision["think_us"] == 1235 and decision["transport_us"] == 500

    def numbers(value):  # type: ignore[no-untyped-def]
        if isinstance(value, dict):
            for v in value.values():
                yield from numbers(v)
        elif isinstance(value, list):
            for v in value:
                yield from numbers(v)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            yield value

    for record in load_records(path):
        assert all(isinstance(n, int) for n in numbers(record))


# --------------------------------------------------------------------------- the writer


def _play_some(game: GameState, writer: ReplayWriter, decisions: int) -> None:
    for _ in range(decisions):
        d = game.decision
        assert d is not None
        legal = game.legal_action_ids()
        game.apply(legal[-1])
        writer.decision(d.seat, d.kind, legal[-1], "auto" if len(legal) == 1 else "ok", 2.0, 0.25)


def test_the_final_file_appears_only_when_the_game_is_finished(tmp_path: Path) -> None:
    game = new_game("crazy-eights", 2, seed=3)
    path = tmp_path / "sub" / "g.jsonl"
    writer = ReplayWriter(path, game, seats=["a", "b"], game_id="g")
    _play_some(game, writer, 3)
    assert not path.exists(), "an unfinished game leaves no file at the final path"
    assert writer.tmp_path.exists()
    while game.decision is not None:
        _play_some(game, writer, 1)
    assert writer.finish() == path
    assert path.exists() and not writer.tmp_path.exists()
    assert verify_replay(path).decisions == game.decisions


def test_abort_removes_the_temporary_file(tmp_path: Path) -> None:
    game = new_game("craits", 4, seed=3)
    writer = ReplayWriter(tmp_path / "g.jsonl", game, seats=list("abcd"))
    _play_some(game, writer, 2)
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_an_exception_inside_the_with_block_leaves_no_replay(tmp_path: Path) -> None:
    game = new_game("craits", 4, seed=3)
    with pytest.raises(RuntimeError), ReplayWriter(tmp_path / "g.jsonl", game, seats=list("abcd")) as writer:
        _play_some(game, writer, 2)
        raise RuntimeError("the referee crashed")
    assert list(tmp_path.iterdir()) == []


def test_the_writer_refuses_a_decision_that_was_not_applied(tmp_path: Path) -> None:
    game = new_game("craits", 4, seed=3)
    with ReplayWriter(tmp_path / "g.jsonl", game, seats=list("abcd")) as writer:
        d = game.decision
        assert d is not None
        with pytest.raises(ReplayUsageError, match=r"exactly one state\.apply"):
            writer.decision(d.seat, d.kind, game.legal_action_ids()[0])
        game.apply(game.legal_action_ids()[0])
        with pytest.raises(ReplayUsageError, match="not seat"):
            writer.decision((d.seat + 1) % 4, d.kind, 0)
        with pytest.raises(ReplayUsageError, match="was " + d.kind.name):
            other = DecisionKind.PENALTY if d.kind is not DecisionKind.PENALTY else DecisionKind.PLAY
            writer.decision(d.seat, other, 0)
        writer.abort()


def test_an_out_of_place_one_card_announcement_is_recorded_as_the_play_the_engine_made(
    tmp_path: Path,
) -> None:
    """Rule 7.1: the engine ignores a "one card" on a play that does not leave one card."""
    seed = next(
        s for s in range(100) if any(a >= 8 for a in new_game("craits", 4, seed=s).legal_action_ids())
    )
    game = new_game("craits", 4, seed=seed)
    d = game.decision
    assert d is not None
    plays = [a for a in game.legal_action_ids() if a >= 8 and (a - 8) % 2 == 0]
    sent = plays[0] + 1  # the same play with the announcement, out of place with 8 cards in hand
    assert sent not in game.legal_action_ids()
    path = tmp_path / "g.jsonl"
    with ReplayWriter(path, GameState(game.config, game.seed), seats=list("abcd")) as writer:
        writer.state.apply(sent)
        writer.decision(d.seat, d.kind, sent)
    rec = load_records(path)[2]  # (the game is recorded as not played to the end)
    assert rec["action"] == plays[0] and rec["sent"] == sent


def test_a_spec_writer_names_the_bots_and_never_writes_a_token(tmp_path: Path) -> None:
    config = make_config("craits", 2, short_game=True)
    seats = (
        BotSpec("alpha", "secret-token-1", builtin="random"),
        BotSpec("beta", "secret-token-2", command=("x",)),
    )
    spec = GameSpec("g-7", config, 5, seats, Clocks(), tmp_path / "g-7.jsonl", tournament="cup")
    game = GameState(config, spec.seed)
    writer = ReplayWriter.for_spec(spec, game)
    while game.decision is not None:
        _play_some(game, writer, 1)
    reports = (
        SeatReport("alpha", decisions=4, think_s=0.25),
        SeatReport("beta", SeatStatus.STRUCK_OUT, timeouts=3),
    )
    record = GameRecord("g-7", game.result(), reports, spec.replay_path, game.digest())
    path = writer.finish(record)
    text = path.read_text(encoding="utf-8")
    assert "secret-token" not in text
    replay = read_replay(path)
    assert replay.bots == ["alpha", "beta"]
    assert replay.header["tournament"] == "cup"
    assert replay.header["clocks"] == {"decision_ms": 1000, "bank_ms": 10000, "max_strikes": 3,
                                       "reconnect_grace_ms": 5000}
    assert replay.result["seat_reports"][0]["think_us"] == 250_000
    assert replay.result["seat_reports"][1]["status"] == "struck_out"
    assert verify_replay(path).totals == game.result().totals


def test_an_aborted_game_is_recorded_as_aborted_and_still_verifies(tmp_path: Path) -> None:
    game = new_game("craits", 4, seed=8, short_game=True)
    path = tmp_path / "a.jsonl"
    writer = ReplayWriter(path, game, seats=list("abcd"))
    _play_some(game, writer, 20)
    writer.finish(aborted="seat 2 never connected")
    summary = verify_replay(path)
    assert summary.aborted == "seat 2 never connected"
    assert "aborted" in summary.line()
    assert "aborted: seat 2 never connected" in format_walkthrough(read_replay(path))


# --------------------------------------------------------------------------- verify: failures


def _records(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return load_records(path)


def test_verify_accepts_a_recorded_game(short_replay: Path, eights_replay: Path) -> None:
    summary = verify_replay(short_replay)
    assert summary.preset == "craits" and summary.players == 3 and summary.hands == 8
    assert summary.line().startswith(f"OK {short_replay}")
    assert verify_replay(eights_replay).preset == "crazy-eights"


def test_an_edited_byte_breaks_the_hash_of_its_record(short_replay: Path) -> None:
    lines = short_replay.read_bytes().split(b"\n")
    record_no = 7
    lines[record_no - 1] = lines[record_no - 1].replace(b'"status":"', b'"status":"x', 1)
    short_replay.write_bytes(b"\n".join(lines))
    with pytest.raises(ReplayError, match=r"record 7: hash mismatch") as err:
        verify_replay(short_replay)
    assert err.value.record == 7 and err.value.path == str(short_replay)


def test_a_removed_record_breaks_the_chain(short_replay: Path) -> None:
    lines = short_replay.read_text(encoding="utf-8").splitlines(keepends=True)
    del lines[9]  # record 10
    short_replay.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ReplayError, match=r"record 10: chain broken"):
        verify_replay(short_replay)


def test_a_file_cut_in_the_middle_of_a_line_is_truncated(short_replay: Path) -> None:
    data = short_replay.read_bytes()
    short_replay.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReplayError, match=r"record \d+: truncated: the last line is cut off"):
        verify_replay(short_replay)


def test_a_file_without_its_result_record_is_truncated(short_replay: Path) -> None:
    lines = short_replay.read_text(encoding="utf-8").splitlines(keepends=True)
    short_replay.write_text("".join(lines[:-1]), encoding="utf-8")
    with pytest.raises(
        ReplayError, match=f"truncated: the file ends after record {len(lines) - 1} without a result"
    ):
        verify_replay(short_replay)


def test_an_empty_file_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(ReplayError, match="truncated: the file is empty"):
        read_replay(path)


def test_a_different_action_is_a_mismatch_naming_the_decision(short_replay: Path) -> None:
    """Even with a consistent hash chain, re-simulation catches a changed decision."""
    records = _records(short_replay)
    game = GameState(read_replay(short_replay).config, 11)
    # find a decision with a choice, and put another legal action in its place
    for i, rec in enumerate(records[2:-1], start=2):
        legal = game.legal_action_ids()
        if len(legal) > 1:
            other = next(a for a in legal if a != rec["action"])
            records[i] = {k: v for k, v in rec.items() if k != "text"} | {"action": other}
            break
        game.apply(rec["action"])
    write_records(short_replay, records)
    with pytest.raises(
        ReplayError, match=rf"record {i + 1}: decision {rec['n']}: event 0 differs: the engine gives"
    ):
        verify_replay(short_replay)


def test_an_illegal_action_is_named_with_the_legal_ones(short_replay: Path) -> None:
    records = _records(short_replay)
    records[2] = {**records[2], "action": 9999}
    write_records(short_replay, records)
    with pytest.raises(
        ReplayError, match=r"record 3: decision 1: action 9999 .* is not legal for seat \d .*; legal: "
    ):
        verify_replay(short_replay)


def test_a_changed_event_is_a_mismatch_with_both_versions(short_replay: Path) -> None:
    records = _records(short_replay)
    rec = records[5]
    rec["events"] = [*rec["events"], ["draw", 0, [51], -1, 0]]
    write_records(short_replay, records)
    with pytest.raises(
        ReplayError,
        match=r'record 6: decision 4: the engine gives \d+ events, the file has \d+ \(the file has 1 more, first \["draw",0,\[51\],-1,0\]\)',
    ):
        verify_replay(short_replay)


def test_a_changed_score_is_a_mismatch(short_replay: Path) -> None:
    records = _records(short_replay)
    records[-1]["totals"][0] += 1
    write_records(short_replay, records)
    with pytest.raises(
        ReplayError, match=r"record \d+: result: totals differ: the engine gives \[.*\], the file has \["
    ):
        verify_replay(short_replay)


def test_a_hand_score_change_is_named_by_hand(short_replay: Path) -> None:
    records = _records(short_replay)
    records[-1]["hands"][2]["scores"][1] += 5
    write_records(short_replay, records)
    with pytest.raises(ReplayError, match=r"result: hand 3 scores differ"):
        verify_replay(short_replay)


def test_a_result_before_the_end_of_the_game_is_refused(short_replay: Path) -> None:
    records = _records(short_replay)
    write_records(short_replay, [*records[:12], records[-1]])
    with pytest.raises(ReplayError, match="the game is not over"):
        verify_replay(short_replay)


def test_an_unknown_schema_is_refused(short_replay: Path) -> None:
    records = _records(short_replay)
    records[0]["schema"] = "craits-replay/99"
    write_records(short_replay, records)
    with pytest.raises(ReplayError, match="record 1: unsupported schema 'craits-replay/99'"):
        read_replay(short_replay)


def test_an_invalid_configuration_is_refused(short_replay: Path) -> None:
    records = _records(short_replay)
    records[0]["config"]["players"] = 11
    write_records(short_replay, records)
    with pytest.raises(ReplayError, match="record 1: the header's configuration is not a valid game"):
        verify_replay(short_replay)


def test_replay_state_rebuilds_the_engine_at_any_decision(short_replay: Path) -> None:
    replay = read_replay(short_replay)
    state = replay_state(replay, 10)
    assert state.decisions == 10
    assert replay_state(replay, 0).decisions == 0


# --------------------------------------------------------------------------- show


def test_the_walkthrough_goes_hand_by_hand_and_ends_with_the_score_sheet(short_replay: Path) -> None:
    replay = read_replay(short_replay)
    text = format_walkthrough(replay)
    for hand in range(1, 9):
        assert f"\nHand {hand}: seat " in text
        assert f"  Hand {hand} ends (" in text
    assert "#1 seat " in text and f"#{len(replay.decisions)} seat " in text
    sheet = text[text.index("Score sheet") :]
    totals_line = next(line for line in sheet.splitlines() if "total" in line and "wins" not in line)
    assert totals_line.split()[1:] == [str(t) for t in replay.result["totals"]]
    assert "lowest total wins" in text


def test_any_single_byte_change_is_detected_and_never_a_traceback(short_replay: Path) -> None:
    import random

    data = short_replay.read_bytes()
    rng = random.Random(2024)
    for _ in range(150):
        pos = rng.randrange(len(data))
        new = bytes([(data[pos] + rng.randrange(1, 256)) % 256])
        short_replay.write_bytes(data[:pos] + new + data[pos + 1 :])
        with pytest.raises(ReplayError) as err:
            verify_replay(short_replay)
        assert str(err.value).startswith(str(short_replay))


def test_swapped_records_break_the_chain(short_replay: Path) -> None:
    lines = short_replay.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[5], lines[6] = lines[6], lines[5]
    short_replay.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ReplayError, match=r"record 6: chain broken"):
        verify_replay(short_replay)


def test_a_header_of_the_wrong_shape_is_refused(short_replay: Path) -> None:
    records = _records(short_replay)
    records[0]["seats"] = "four bots"
    write_records(short_replay, records)
    with pytest.raises(ReplayError, match="record 1: header field seats must be a JSON array"):
        read_replay(short_replay)
