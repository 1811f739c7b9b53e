"""The `craits` command run in-process, as the tests of its subcommands use it."""

from __future__ import annotations

import pytest

from server.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``craits ARGV...``: its exit status, standard output and standard error."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
