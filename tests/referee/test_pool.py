"""Launched bots kept between games (issue 13, item 1): a bot's process plays game after game on
its stream, and is replaced when it crashes, goes quiet, strikes out, grows, or has played enough.

Every test plays real games through a real referee with real bot processes (the Python kit),
which write down the process that played each game."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from server.logging import configure_logging
from server.spec import BotSpec, Clocks, SeatStatus
from server.transport.pool import RestartPolicy

from .conftest import BOTS, RECORDING, builtin, spec, with_arena

CLOCKS = Clocks(decision_s=0.5, bank_s=0.5, max_strikes=3, reconnect_grace_s=15.0, connect_timeout_s=15.0)
"""A stale answer strikes out in about 2 s; a replacement process has as long to start as a
first one (a loaded machine may take seconds to start a Python process that imports grpc)."""


def pool_bot(name: str, mode: str, pids: Path) -> BotSpec:
    """A seat played by ``bots/pool_bot.py`` (the same BotSpec for every game: the pool's key)."""
    return BotSpec(name=name, token="", command=(sys.executable, str(BOTS / "pool_bot.py"), mode, str(pids)))


def played_by(pids: Path) -> list[int]:
    """The pid that played each game, in order."""
    return [int(line.split()[0]) for line in pids.read_text().splitlines()]


@contextlib.contextmanager
def logged(folder: Path) -> Iterator[list[dict[str, Any]]]:
    """The referee's log events (JSON lines) while inside, in a list filled on the way out."""
    events: list[dict[str, Any]] = []
    path = configure_logging(folder, name="pool-test", console=False)
    try:
        yield events
    finally:
        configure_logging(None, console=False)
        assert path is not None
        events.extend(json.loads(line) for line in path.read_text().splitlines())


def play_games(seats: tuple[BotSpec, ...], games: int, policy: RestartPolicy | None = None):  # type: ignore[no-untyped-def]
    """Play ``games`` games one after another on one referee keeping its bots (seats swapped
    every other game); the records and the log events."""

    async def body(arena):  # type: ignore[no-untyped-def]
        arena.keep_bots(policy or RestartPolicy())
        records = []
        for n in range(games):
            order = seats if n % 2 == 0 else tuple(reversed(seats))
            records.append(await arena.run_game(spec(*order, seed=n + 1, game_id=f"pool-{n}", clocks=CLOCKS)))
        return records

    folder = Path(str(seats[0].command[-1])).parent  # the test's tmp_path
    with logged(folder) as events:
        records = with_arena(body, RECORDING)  # the bots write down their pids
    return records, events


def statuses(record, name: str) -> SeatStatus:  # type: ignore[no-untyped-def]
    return next(seat.status for seat in record.seats if seat.bot == name)


def test_a_launched_bot_plays_every_game_in_one_process(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    records, events = play_games((pool_bot("keeper", "ok", pids), builtin("random")), 3)
    assert [statuses(r, "keeper") for r in records] == [SeatStatus.OK] * 3
    assert len(played_by(pids)) == 3 and len(set(played_by(pids))) == 1
    assert len([e for e in events if e["event"] == "bot_launched"]) == 1


def test_a_bot_that_exits_between_games_is_relaunched_and_loses_no_game(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    records, events = play_games((pool_bot("quitter", "exit", pids), builtin("random")), 2)
    assert [statuses(r, "quitter") for r in records] == [SeatStatus.OK, SeatStatus.OK]
    played = played_by(pids)  # (the old process may have seen the next GameStart before it left)
    assert played[0] != played[-1] and len(set(played)) == 2
    replaced = [e for e in events if e["event"] == "bot_replaced"]
    # (it is seen to go by its stream's end or by its exit, whichever the referee hears first)
    assert len(replaced) == 1 and ("code 3" in replaced[0]["why"] or "closed its stream" in replaced[0]["why"])


def test_a_bot_that_dies_as_it_starts_is_launched_once_a_game_not_relaunched_in_a_loop(tmp_path: Path) -> None:
    """Only a process kept from an earlier game is replaced when it leaves before answering: one
    started for this game that exits at once lost the game as a bot that never connected (as
    with restart = "game"), rather than being relaunched until the connect timeout."""
    script = tmp_path / "dead_bot.py"
    script.write_text("raise SystemExit(1)\n")
    dead = BotSpec(name="dead", token="", command=(sys.executable, str(script)))
    records, events = play_games((dead, builtin("random")), 2)
    assert [statuses(r, "dead") for r in records] == [SeatStatus.NEVER_CONNECTED] * 2
    assert len([e for e in events if e["event"] == "bot_launched"]) == 2
    assert not [e for e in events if e["event"] == "bot_replaced"]


def test_a_bot_that_never_says_hello_again_is_replaced_before_its_next_game(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    records, events = play_games((pool_bot("mute", "quiet", pids), builtin("random")), 2)
    assert [statuses(r, "mute") for r in records] == [SeatStatus.OK, SeatStatus.OK]
    played = played_by(pids)  # (the old process may have seen the next GameStart before it left)
    assert played[0] != played[-1] and len(set(played)) == 2
    replaced = [e for e in events if e["event"] == "bot_replaced"]
    assert len(replaced) == 1 and "stream" in replaced[0]["why"]


def test_a_bot_answering_with_a_previous_games_decision_is_struck_out_alone_and_relaunched(tmp_path: Path) -> None:
    pids, other = tmp_path / "pids", tmp_path / "other"
    seats = (pool_bot("stale", "stale", pids), pool_bot("steady", "ok", other))
    records, events = play_games(seats, 3)
    assert [statuses(r, "stale") for r in records] == [SeatStatus.OK, SeatStatus.STRUCK_OUT, SeatStatus.OK]
    assert [statuses(r, "steady") for r in records] == [SeatStatus.OK] * 3
    stale_seat = next(s for s in records[1].seats if s.bot == "stale")
    assert stale_seat.stale >= 1 and stale_seat.timeouts >= 1
    first, second, third = played_by(pids)
    assert first == second != third
    assert len(set(played_by(other))) == 1  # its opponent's troubles cost it nothing
    restarted = [e for e in events if e["event"] == "bot_restarting"]
    assert [e["bot"] for e in restarted] == ["stale"] and "struck out" in restarted[0]["why"]


def test_restart_game_gives_a_fresh_process_every_game(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    records, _ = play_games((pool_bot("fresh", "ok", pids), builtin("random")), 3, RestartPolicy(every_game=True))
    assert [statuses(r, "fresh") for r in records] == [SeatStatus.OK] * 3
    assert len(set(played_by(pids))) == 3


def test_restart_after_games_replaces_the_process_after_that_many_games(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    _, events = play_games((pool_bot("tired", "ok", pids), builtin("random")), 4, RestartPolicy(after_games=2))
    a, b, c, d = played_by(pids)
    assert a == b != c == d
    restarted = [e for e in events if e["event"] == "bot_restarting"]
    assert "played 2 games (restart_after_games = 2)" in restarted[0]["why"]


def test_a_bot_above_the_memory_ceiling_is_restarted_and_the_log_says_so(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    records, events = play_games((pool_bot("hog", "grow", pids), builtin("random")), 2, RestartPolicy(above_mb=90))
    assert [statuses(r, "hog") for r in records] == [SeatStatus.OK, SeatStatus.OK]
    first, second = played_by(pids)
    assert first != second
    restarted = [e for e in events if e["event"] == "bot_restarting"]
    assert "is above restart_above_mb = 90" in restarted[0]["why"]


def test_each_bot_has_at_most_as_many_processes_as_games_at_once(tmp_path: Path) -> None:
    import asyncio

    pids = tmp_path / "pids"
    seat = pool_bot("busy", "ok", pids)

    async def body(arena):  # type: ignore[no-untyped-def]
        arena.keep_bots(RestartPolicy())
        for rnd in range(2):
            await asyncio.gather(*(
                arena.run_game(spec(seat, builtin("random"), seed=rnd * 2 + n + 1, game_id=f"pair-{rnd}-{n}",
                                    clocks=CLOCKS))
                for n in range(2)
            ))

    with_arena(body, RECORDING)
    assert len(played_by(pids)) == 4 and len(set(played_by(pids))) == 2


def test_past_the_idle_limit_the_process_idle_longest_is_stopped(tmp_path: Path) -> None:
    a, b = pool_bot("a", "ok", tmp_path / "a"), pool_bot("b", "ok", tmp_path / "b")

    async def body(arena):  # type: ignore[no-untyped-def]
        arena.keep_bots(RestartPolicy())
        arena.pool.max_idle = 1
        for n, seat in enumerate((a, b, a)):  # after the second game a and b are idle: one too many
            await arena.run_game(spec(seat, builtin("random"), seed=n + 1, game_id=f"idle-{n}", clocks=CLOCKS))

    with logged(tmp_path) as events:
        with_arena(body, RECORDING)
    first, again = played_by(tmp_path / "a")
    assert first != again and len(played_by(tmp_path / "b")) == 1
    stopped = [e for e in events if e["event"] == "bot_restarting"]
    assert [e["bot"] for e in stopped] == ["a", "b"]  # then b, once a's new process is idle too
    assert all("idle longest of more than 1 idle processes" in e["why"] for e in stopped)
