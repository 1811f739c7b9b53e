"""The `rerun:` lines of `craits play` and `tournament standings --faults` run from wherever
they are printed: the bot's files are named by absolute paths (`-- ./bot.sh` in a tournament
whose bot has cwd = "bot/" failed from the project's folder)."""

from __future__ import annotations

from pathlib import Path

from server.cli.tournament_shared import bot_commands
from server.transport.commands import runnable_command
from tournaments.config import load_config


def test_a_bots_files_are_made_absolute_against_its_cwd_and_programs_and_options_stay(tmp_path: Path) -> None:
    (tmp_path / "bot.sh").write_text("#!/bin/sh\n")
    (tmp_path / "my_bot.py").write_text("")
    assert runnable_command(["./bot.sh", "--fast"], tmp_path) == [str(tmp_path / "bot.sh"), "--fast"]
    assert runnable_command(["python", "my_bot.py", "-v"], tmp_path) == ["python", str(tmp_path / "my_bot.py"), "-v"]
    assert runnable_command(["python", "-m", "craits_bot.examples.random_bot"], tmp_path) == [
        "python", "-m", "craits_bot.examples.random_bot"]
    assert runnable_command(["/usr/bin/env", "x"], tmp_path) == ["/usr/bin/env", "x"]


def test_standings_faults_rerun_command_names_the_bot_by_its_absolute_path(tmp_path: Path) -> None:
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "bot.sh").write_text("#!/bin/sh\n")
    file = tmp_path / "cup.toml"
    file.write_text('name = "cup"\ntable_size = 2\n[[bots]]\nname = "mine"\ncommand = ["./bot.sh"]\ncwd = "bot"\n'
                    '[[bots]]\nname = "house"\nbuiltin = "random"\n')
    config = load_config(str(file), check_paths=False)
    assert bot_commands(config) == {"mine": str(tmp_path / "bot" / "bot.sh")}
