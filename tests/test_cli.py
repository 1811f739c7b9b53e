"""``craits``: each command imports only its own group, and the table that says which is true."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from server.cli import COMMANDS, build_parser
from tests.cli import run_cli


def test_the_table_of_commands_is_what_each_group_declares_in_the_order_help_lists() -> None:
    declared: list[str] = []
    for name in dict.fromkeys(COMMANDS.values()):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"server.cli.{name}").register_cli(sub)
        assert all(COMMANDS[command] == name for command in sub.choices), name
        declared += sub.choices
    assert declared == list(COMMANDS)
    help_text = build_parser().format_help()
    assert all(command in help_text for command in COMMANDS)


def test_a_mistyped_command_is_one_line_naming_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run_cli(capsys, "tournamnet", "run")
    error = capsys.readouterr().err
    assert exited.value.code == 2 and "invalid choice: 'tournamnet'" in error
    assert all(f"'{command}'" in error for command in COMMANDS)


def test_craits_play_starts_without_the_tournament_and_web_groups() -> None:
    """A student's ``craits play`` and ``check-bot`` start in about a quarter of the time."""
    code = ("import sys; from server.cli import main\ntry:\n    main(['play', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('server.cli.')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "usage: craits play" in done.stdout
    loaded = done.stderr
    assert "server.cli.play" in loaded and "server.cli.tournament'" not in loaded and "server.cli.web'" not in loaded



HEAVY = ("aiohttp", "procrastinate", "psycopg", "grpc")
"""What a command loads when it runs, never to print its help: the web app, the queue, the database
driver, gRPC (a tournament file's checks load gRPC, the rest stays out when the file is missing)."""


def test_help_and_a_missing_file_load_no_web_app_queue_database_driver_or_grpc() -> None:
    """Organizers type these all day and the tests start craits hundreds of times: each group's help,
    and a tournament file that is not there, print without importing what would run the command."""
    code = f"""
import contextlib, io, sys
from server.cli import COMMANDS, main

def loaded(modules):
    return [m for m in modules if m in sys.modules]

with contextlib.redirect_stdout(io.StringIO()) as out:
    for command in [None, *COMMANDS]:
        with contextlib.suppress(SystemExit):
            main([command, "--help"] if command else ["--help"])
print("help loaded:", loaded({HEAVY!r}), out.getvalue().count("usage: craits"))
code = main(["tournament", "run", "/nonexistent/craits-test.toml"])
print("missing file exited", code, "and loaded:", loaded({HEAVY[:3]!r}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == [
        f"help loaded: [] {len(COMMANDS) + 1}",
        "missing file exited 2 and loaded: []",
    ], done.stdout + done.stderr
    assert done.stderr == "craits: error: /nonexistent/craits-test.toml: no such tournament file\n"
