"""One rule for a bot command in every command that takes one (server.transport.commands):
"python" is the Python running craits, so `craits check-bot -- python -m craits_bot...` works
without an activated venv, as the same command does in a tournament file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from server.checker.driver import resolve_command
from server.cli.play import parse_bot
from server.transport.commands import BOT_COMMAND_RULE
from tests.cli import run_cli
from tournaments.config import load_config

ROOT = Path(__file__).resolve().parent
DEMO = ["python", "-m", "craits_bot.examples.heuristic_bot"]


def _file_command(tmp_path: Path, command: list[str]) -> tuple[str, ...] | None:
    path = tmp_path / "t.toml"
    words = ", ".join(f'"{w}"' for w in command)
    path.write_text(f'name = "t"\ntable_size = 2\n[[bots]]\nname = "a"\ncommand = [{words}]\n[[bots]]\nname = "b"\nbuiltin = "random"\n')
    return load_config(path).bots[0].command


@pytest.mark.parametrize("command", [DEMO, ["python3", "-m", "craits_bot.examples.random_bot"]])
def test_python_means_the_interpreter_running_craits_in_play_check_bot_and_tournament_files(
    tmp_path: Path, command: list[str]
) -> None:
    expected = (sys.executable, *command[1:])
    assert parse_bot(" ".join(command)).command == expected                 # craits play, craits serve --bot
    assert tuple(resolve_command(["--", *command])) == expected              # craits check-bot -- ...
    assert tuple(resolve_command([" ".join(command)])) == expected           # ... or one quoted string
    assert _file_command(tmp_path, command) == expected                      # tournament and ladder files


def test_a_script_runs_with_that_python_or_node_the_same_everywhere(tmp_path: Path) -> None:
    script = tmp_path / "my_bot.py"
    script.write_text("")
    assert parse_bot(str(script)).command == (sys.executable, str(script))
    assert resolve_command(["--", str(script)]) == [sys.executable, str(script)]
    assert _file_command(tmp_path, [str(script)]) == (sys.executable, str(script))


@pytest.mark.parametrize("argv", [["play"], ["serve"], ["check-bot"], ["tournament", "run"],
                                  ["tournament", "resume"], ["ladder", "run"]])
def test_each_command_that_takes_a_bot_command_states_the_rule_in_its_help(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit):
        run_cli(capsys, *argv, "--help")
    out = " ".join(capsys.readouterr().out.split())
    assert " ".join(BOT_COMMAND_RULE.split()) in out


def test_check_bot_runs_the_readme_s_demo_command_without_an_activated_venv(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The field trial's case: a PATH without the venv, and the demo's own bot command."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code, out, err = run_cli(capsys, "check-bot", "--", *DEMO)
    assert code == 0, out + err
    assert " 0 failed " in out.splitlines()[-1]
