"""A bot whose own code raises is told from a weak one (issue 30, point 1).

The kits answer a legal action in place of a failed ``choose``, print the traceback where a
student sees it, and say so to the referee (``Answer.bot_error``); the referee records a
fault of its own kind, ``bot_errors``, with the first failure's line: in the seat's report
and the replay, in the store and the standings, and on the bot's page of the board.
Real kit processes (Python and Node.js) against the real referee on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from server.engine import make_config
from server.spec import BotSpec, Clocks, GameRecord, GameSpec, SeatStatus
from server.storage.postgres import PostgresStore
from server.storage.store import GameSlot, Store
from server.transport.service import Arena, ArenaOptions
from server.web.app import _bot_body
from server.web.board import Board, BoardSource
from tests.bots.commands import JS_BOT, need_node
from tournaments.standings import Tally, compute_standings

CLOCKS = Clocks(decision_s=5.0, bank_s=60.0, connect_timeout_s=60.0)

PY_CRASHER = '''
from craits_bot import Bot, run

class Crasher(Bot):
    """Divides by zero on every ordinary turn; plays the first action otherwise."""
    def choose(self, request):
        if request.kind == 1:  # DECISION_KIND_PLAY
            return 1 / 0
        return request.legal_actions[0]

run(Crasher())
'''

JS_CRASHER = '''
module.exports = {
  name: 'js-crasher',
  choose(request) {
    if (request.kind === 'DECISION_KIND_PLAY') return request.no_such_field.id;  // TypeError
    return request.legal_actions[0];
  },
};
'''


async def _play(seats: tuple[BotSpec, ...], log_dir: Path, replay: Path) -> GameRecord:
    arena = await Arena.start("127.0.0.1:0", ArenaOptions(bot_log_dir=log_dir, sandbox="none"))
    try:
        spec = GameSpec("g-crash", make_config("craits", len(seats), short_game=True), 5, seats, CLOCKS, replay)
        return await arena.run_game(spec)
    finally:
        await arena.shutdown(grace_s=1)


def _check_seat(record: GameRecord, replay: Path, seat: int, first_line: str) -> None:
    report = record.seats[seat]
    assert report.status is SeatStatus.OK, report
    assert report.bot_errors > 0, report
    assert (report.strikes, report.illegal, report.malformed, report.default_actions) == (0, 0, 0, 0), report
    assert report.bot_error.startswith(first_line), report.bot_error
    assert any(e.startswith("bot error on decision") and first_line in e for e in report.events)
    records = [json.loads(line) for line in replay.read_text().splitlines()]
    in_replay = next(r for r in records if r["type"] == "result")["seat_reports"][seat]
    assert (in_replay["bot_errors"], in_replay["bot_error"]) == (report.bot_errors, report.bot_error)
    noted = [r for r in records if r["type"] == "decision" and r["seat"] == seat and "bot error" in r.get("note", "")]
    assert len(noted) == report.bot_errors


def test_a_python_kit_bot_that_raises_is_recorded_as_a_bot_error_down_to_its_page(tmp_path: Path) -> None:
    script = tmp_path / "crasher.py"
    script.write_text(PY_CRASHER)
    seats = (
        BotSpec("crasher", "token-crasher", command=(sys.executable, str(script)), cwd=str(tmp_path)),
        BotSpec("random", "", builtin="random"),
    )
    replay = tmp_path / "g.jsonl"
    record = asyncio.run(_play(seats, tmp_path / "logs", replay))
    assert record.aborted == ""
    _check_seat(record, replay, 0, "ZeroDivisionError: division by zero at crasher.py:")
    assert record.seats[1].bot_errors == 0

    # the student's terminal: the traceback once, between rulers; later failures one line each
    (log,) = (tmp_path / "logs").glob("*.log")
    text = log.read_text()
    assert text.count("YOUR BOT FAILED") == 1 and text.count("Traceback (most recent call last)") == 1, text
    assert "return 1 / 0" in text and "!" * 72 in text
    if record.seats[0].bot_errors > 1:
        assert "failure 2 at this place" in text

    # the store, the standings and the bot's page
    out = tmp_path / "out"
    with Store.in_dir(out) as store:
        store.create_tournament(
            name="class", source_text="", source_path="", schedule_digest="", settings={},
            bots=[("crasher", "remote", ""), ("random", "builtin", "")],
            games=[GameSlot("g-crash", 0, 0, 0, 0, 5, ("crasher", "random"))],
        )
        store.record_game(record)
        (result,) = store.results()
        assert result.seats[0].counters["bot_errors"] == record.seats[0].bot_errors
        assert result.seats[0].bot_error == record.seats[0].bot_error
        standings = compute_standings(store.results(), ["crasher", "random"], name="class")
    crasher = next(r for r in standings.rows if r.bot == "crasher")
    assert crasher.issues["bot_errors"] == record.seats[0].bot_errors
    assert "bot_errors" in standings.to_csv().splitlines()[0]
    assert f"bot_errors {record.seats[0].bot_errors}" in standings.format_table()

    bots = ["crasher", "random"]
    board = Board(BoardSource(
        name="class", kind="tournament", out_dir=out,
        open_store=lambda: Store(out / Store.FILENAME, readonly=True),
        new_tally=lambda store: Tally(bots),
        standings=lambda tally, scheduled: tally.standings(name="class", games_scheduled=scheduled),
        bots=lambda store: bots,
    ))
    try:
        board.refresh()
        page = _bot_body("crasher", board.bot("crasher"))
    finally:
        board.close()
    assert f"bot errors {record.seats[0].bot_errors} (first: ZeroDivisionError: division by zero" in page


PY_HOSTILE = '''
from craits_bot import Bot, run

class Hostile(Bot):
    """Fails with a NUL and a terminal escape in its error's message (a NUL cannot be stored
    in PostgreSQL: recording the game failed, and a tournament on it stopped)."""
    def choose(self, request):
        if request.kind == 1:
            raise ValueError("a\\x00b\\x1b[2J\\x07c")
        return request.legal_actions[0]

run(Hostile())
'''


def test_control_characters_in_a_bot_error_reach_no_record_and_its_game_is_stored_in_postgresql(
    tmp_path: Path, pg_url: str
) -> None:
    script = tmp_path / "hostile.py"
    script.write_text(PY_HOSTILE)
    seats = (
        BotSpec("hostile", "token-hostile", command=(sys.executable, str(script)), cwd=str(tmp_path)),
        BotSpec("random", "", builtin="random"),
    )
    record = asyncio.run(_play(seats, tmp_path / "logs", tmp_path / "g.jsonl"))
    said = record.seats[0].bot_error
    assert said.startswith("ValueError: a\ufffdb\ufffd[2J\ufffdc at hostile.py:"), said
    assert not any(ord(c) < 0x20 or c == "\x7f" for c in said + "".join(record.seats[0].events)), said
    with PostgresStore(pg_url, "hostile") as store:
        store.create_tournament(
            name="hostile", source_text="", source_path="", schedule_digest="", settings={},
            bots=[("hostile", "remote", ""), ("random", "builtin", "")],
            games=[GameSlot("g-crash", 0, 0, 0, 0, 5, ("hostile", "random"))],
        )
        store.record_game(record)
        assert store.results()[0].seats[0].bot_error == said


def test_a_javascript_bot_that_throws_is_recorded_as_a_bot_error(tmp_path: Path) -> None:
    need_node()
    strategy = tmp_path / "crasher.js"
    strategy.write_text(JS_CRASHER)
    seats = (
        BotSpec("random", "", builtin="random"),
        BotSpec("js-crasher", "token-js", command=("node", str(JS_BOT), "--strategy", str(strategy)),
                cwd=str(tmp_path)),
    )
    replay = tmp_path / "g.jsonl"
    record = asyncio.run(_play(seats, tmp_path / "logs", replay))
    _check_seat(record, replay, 1, "TypeError: Cannot read properties of undefined")
    assert "crasher.js:" in record.seats[1].bot_error
    (log,) = (tmp_path / "logs").glob("*.log")
    assert log.read_text().count("YOUR BOT FAILED") == 1


def test_an_old_database_without_the_bot_error_columns_is_read_and_extended(tmp_path: Path) -> None:
    """A ladder's tournament.db made before bot errors were recorded keeps working."""
    import sqlite3

    path = tmp_path / "tournament.db"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE seats DROP COLUMN bot_error")
    db.execute("ALTER TABLE seats DROP COLUMN bot_errors")
    db.commit()
    db.close()
    with Store(path, readonly=True) as store:
        assert store.results() == []
    with Store(path) as store:
        assert store.results() == []
    columns = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(seats)")}
    assert {"bot_errors", "bot_error"} <= columns


@pytest.mark.parametrize("returns", [None, 99999])
def test_a_choice_that_is_no_action_is_reported_too(returns: object) -> None:
    from craits.v1 import referee_pb2 as pb
    from craits_bot import Bot, Dispatcher

    from server.engine import new_game
    from server.protocol import wire

    class Wrong(Bot):
        def choose(self, request):  # type: ignore[no-untyped-def]
            return returns

    state = new_game("craits", 2, seed=3)
    msg = wire.decision_request(state, state.to_act, game_id="g", decision_id=7, deadline_ms=1, bank_ms=1, strikes=0)
    reply = Dispatcher(Wrong()).handle(pb.RefereeMessage(decision=msg))
    assert reply is not None and reply.answer.HasField("bot_error")
    assert reply.answer.bot_error.message.startswith(("TypeError: choose() returned", "ValueError: choose() returned"))


def test_the_traceback_is_printed_again_in_each_game_of_a_kept_bot(caplog: pytest.LogCaptureFixture) -> None:
    """A kept bot's output is shown game by game on a participant's page: each game's has the
    traceback of its first failure at a place, not only the first game's."""
    from craits.v1 import referee_pb2 as pb
    from craits_bot import Bot, Dispatcher

    from server.engine import new_game
    from server.protocol import wire

    class Raises(Bot):
        def choose(self, request):  # type: ignore[no-untyped-def]
            raise KeyError("oops")

    dispatcher = Dispatcher(Raises())
    state = new_game("craits", 2, seed=3)
    with caplog.at_level("ERROR", logger="craits_bot"):
        for game, decision in (("g1", 1), ("g1", 2), ("g2", 3)):
            msg = wire.decision_request(state, state.to_act, game_id=game, decision_id=decision, deadline_ms=1,
                                        bank_ms=1, strikes=0)
            dispatcher.handle(pb.RefereeMessage(decision=msg))
    said = [r.getMessage() for r in caplog.records]
    assert ["YOUR BOT FAILED (game g1" in s for s in said] == [True, False, False]
    assert "failure 2 at this place" in said[1] and "YOUR BOT FAILED (game g2" in said[2], said
