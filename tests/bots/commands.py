"""The example bots as commands, and running a bot process for a test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS_BOT = ROOT / "clients" / "js" / "bot.js"

PY_RANDOM = (sys.executable, "-m", "craits_bot.examples.random_bot")
PY_HEURISTIC = (sys.executable, "-m", "craits_bot.examples.heuristic_bot")
JS_RANDOM = ("node", str(JS_BOT), "--strategy", "random")
JS_HEURISTIC = ("node", str(JS_BOT), "--strategy", "heuristic")

EXAMPLE_BOTS = {
    "py-random": PY_RANDOM,
    "py-heuristic": PY_HEURISTIC,
    "js-random": JS_RANDOM,
    "js-heuristic": JS_HEURISTIC,
}


def need_node() -> None:
    """Skip a JavaScript test where Node is missing, except in CI (there it must be installed)."""
    if shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed, and CI must run the JavaScript bot")
        pytest.skip("node is not installed")
    if not (ROOT / "clients" / "js" / "node_modules" / "@grpc" / "grpc-js").is_dir():
        pytest.fail("clients/js/node_modules is missing: run `make setup` (npm ci in clients/js)")


def needs(command: Sequence[str]) -> None:
    if command[0] == "node":
        need_node()


def start_bot(
    command: Sequence[str], *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    """Start a bot process with stderr captured; the environment has no CRAITS_* unless given."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CRAITS_")}
    base.update(env or {})
    return subprocess.Popen(
        [*command, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=base,
        cwd=cwd or ROOT,
    )


def finish(process: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str]:
    """Wait for the bot; return (exit code, stderr). Kills it (and fails) if it hangs."""
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
        pytest.fail(f"bot did not exit within {timeout} s; stderr:\n{err}")
    return process.returncode, err
