"""Every example tournament file works copied to a folder of its own (issue 30, point 6).

A teacher copies ``tournaments/examples/classroom.toml`` to their own folder and runs it from
there: nothing in an example may point into this repository (the kit is installed with
craits and visible in the sandbox, so ``python -m craits_bot.examples.heuristic_bot`` needs no
``cwd``). Each file is copied to a temporary folder, checked as ``craits tournament plan``
checks it, and played there: the classroom's with four kit bots connecting with its tokens.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bots.commands import PY_RANDOM
from tests.tournaments.test_remote_bots import craits, wait_for_address
from tournaments.config import load_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "tournaments" / "examples").glob("*.toml"))


def _copy(example: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "teacher"
    folder.mkdir()
    for path in (tmp_path, folder):
        path.chmod(0o755)  # (a sandboxed bot reads only what every user may read)
    return Path(shutil.copy(example, folder / example.name))


def _craits(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_there_are_examples() -> None:
    assert {p.name for p in EXAMPLES} >= {"classroom.toml", "local-quick.toml", "reference.toml"}


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_an_example_copied_elsewhere_passes_every_check_and_names_nothing_of_this_repository(
    example: Path, tmp_path: Path
) -> None:
    copy = _copy(example, tmp_path)
    checked = _craits("tournament", "plan", str(copy), cwd=copy.parent)
    assert checked.returncode == 0, checked.stderr
    config = load_config(copy)
    for bot in config.bots:
        for path in (bot.cwd, *bot.allow_read):
            if path:
                assert not Path(path).resolve().is_relative_to(ROOT), f"{example.name}: {bot.name} reads {path}"


@pytest.mark.parametrize("example", [p for p in EXAMPLES if p.stem != "classroom"],
                         ids=[p.stem for p in EXAMPLES if p.stem != "classroom"])
def test_an_example_of_launched_or_builtin_bots_plays_from_its_copy(example: Path, tmp_path: Path) -> None:
    copy = _copy(example, tmp_path)
    played = _craits("ladder", "run", str(copy), "--out", str(tmp_path / "out"), "--rounds", "1", cwd=copy.parent)
    assert played.returncode == 0, played.stderr
    assert (tmp_path / "out" / "standings.json").is_file()


def test_the_classroom_example_plays_from_its_copy_with_its_house_bot_and_the_students_bots(tmp_path: Path) -> None:
    copy = _copy(ROOT / "tournaments" / "examples" / "classroom.toml", tmp_path)
    config = load_config(copy)
    students = [bot for bot in config.bots if bot.token and not bot.command]
    house = next(bot for bot in config.bots if bot.command)
    assert house.command is not None and "craits_bot.examples.heuristic_bot" in house.command
    args = ("ladder", "run", str(copy), "--out", str(tmp_path / "out"), "--rounds", "1", "--address", "127.0.0.1:0")
    with craits(*args) as (proc, lines):
        address, _ = wait_for_address(lines)
        bots = [
            subprocess.Popen(PY_RANDOM, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "CRAITS_SERVER": address, "CRAITS_TOKEN": bot.token,
                                  "CRAITS_BOT_NAME": bot.name})
            for bot in students[: config.table_size - 1]
        ]
        try:
            assert proc.wait(timeout=600) == 0
        finally:
            for bot in bots:
                bot.terminate()
                bot.wait(timeout=30)
    standings = (tmp_path / "out" / "standings.json").read_text()
    assert '"teacher"' in standings
    from tournaments.ladder import reopen_ladder

    config, store = reopen_ladder(tmp_path / "out")
    with store:
        (round_games,) = {tuple(sorted(r.bots)) for r in store.results()}
        assert house.name in round_games and all(s.status == "ok" for r in store.results() for s in r.seats)
