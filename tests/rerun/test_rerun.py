"""``craits replay rerun``: a recorded game played again with the author's bot in its seat.

The recorded game: a kit bot whose process dies at its 5th request (seat 0) against the
built-in random player. Reruns launch the bot sandboxed, as a tournament does."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from server.spec import BotSpec
from server.storage.replay import read_replay, verify_replay
from server.storage.replay.faults import first_fault
from tests.cli import run_cli
from tests.referee.conftest import FAST, builtin, spec, token, with_arena

BOT = Path(__file__).resolve().parent / "bots" / "seeded_bot.py"
CRASH_AT = 5


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The replay of a game where seat 0's bot died at its 5th request."""
    folder = tmp_path_factory.mktemp("crashed")
    bot = BotSpec("seeded", token(), (sys.executable, str(BOT), "--seed", "1", "--crash-at", str(CRASH_AT)))
    game = spec(bot, builtin("random"), seed=21, clocks=FAST, replay=folder / "crashed.jsonl", game_id="crashed")
    record = with_arena(lambda arena: arena.run_game(game))
    assert record.replay_path is not None
    return record.replay_path


def _rerun(capsys: pytest.CaptureFixture[str], replay: Path, out: Path, *options: str, bot: tuple[str, ...] = ()
           ) -> tuple[int, str, str]:
    return run_cli(capsys, "replay", "rerun", str(replay), "--seat", "0", "-o", str(out), *options,
                   "--", sys.executable, str(BOT), *bot)


def test_the_record_shows_the_crash_at_the_bots_fifth_request(crashed: Path) -> None:
    replay = read_replay(crashed)
    asked = [d for d in replay.decisions if d["seat"] == 0 and "wire" in d]
    assert asked[CRASH_AT - 1]["status"] == "disconnected"
    assert first_fault(replay, 0) == asked[CRASH_AT - 1]["n"]


def test_a_bot_that_crashes_at_decision_n_reproduces_the_crash(crashed: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    n = first_fault(read_replay(crashed), 0)
    code, out, err = _rerun(capsys, crashed, tmp_path, bot=("--seed", "1", "--crash-at", str(CRASH_AT)))
    assert code == 1, out + err
    assert f"the fault at decision {n} is reproduced: disconnected" in out
    assert "answer(s) before decision" in out and "are the recorded ones" in out
    assert out.rstrip().endswith("FAULT: the bot still faults")


def test_the_fixed_bot_passes_the_decision_and_plays_the_game_out(crashed: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    n = first_fault(read_replay(crashed), 0)
    code, out, err = _rerun(capsys, crashed, tmp_path, bot=("--seed", "1"))
    assert code == 0, out + err
    assert f"the fault at decision {n} is gone (recorded: disconnected" in out
    assert f"live from decision {n}" in out and f"no fault from decision {n} to the end of the game" in out
    assert out.rstrip().endswith("FAULT GONE")
    (new,) = tmp_path.glob("rerun-crashed-*.jsonl")
    verify_replay(new)


def test_a_bot_that_answers_differently_is_reported_at_its_first_difference(
        crashed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replay = read_replay(crashed)
    code, out, err = _rerun(capsys, crashed, tmp_path, bot=("--seed", "2"))
    assert code == 0, out + err  # it differs, but does not crash
    line = next(line for line in out.splitlines() if line.startswith("first difference at decision "))
    n = int(line.split()[4].rstrip(":"))
    rec = replay.decisions[n - 1]
    assert rec["seat"] == 0 and f"the record has {rec['text']} ({rec['action']})" in line
    assert "the bot saw: hand 1, " in out and "legal: " in out
    earlier = [d for d in replay.decisions[: n - 1] if d["seat"] == 0 and "wire" in d]
    assert len(earlier) < CRASH_AT - 1  # before the fault


def test_off_the_recorded_path_the_others_play_a_policy_and_the_game_completes(
        crashed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _rerun(capsys, crashed, tmp_path, "--from", "1", "--others", "greedy", bot=("--seed", "2"))
    assert code == 0, out + err
    line = next(line for line in out.splitlines() if line.startswith("the game left the recorded path at decision "))
    (new,) = tmp_path.glob("rerun-crashed-*.jsonl")
    n = int(line.split()[8])
    now, was = read_replay(new).decisions[n - 1], read_replay(crashed).decisions[n - 1]
    assert f"(seat {now['seat']} (" in line and f") played {now['text']}, the record has {was['text']})" in line
    recorded = " ".join(str(t) for t in read_replay(crashed).result["totals"])
    assert re.search(rf"^new game: totals [\d ]+ \(recorded: {recorded}\)$", out, re.M)  # to compare
    summary = verify_replay(new)
    assert not summary.aborted and summary.decisions > 0
    assert read_replay(new).result["placings"]
