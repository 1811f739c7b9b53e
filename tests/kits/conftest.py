"""The Java and C++ kits, built the Debian way once per test session (``make kits``'s scripts):
into build/kits/, where a second build of the same sources does nothing (each output folder
keeps its sources' hash), under a lock, so two test workers wait for one build. Without the
Debian packages the tests skip with the hint, except under CI=true, where they fail
(``make test`` installs them: scripts/system-deps.sh)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "kits"


@dataclass(frozen=True)
class Kits:
    java: Path
    """The Java kit's build: craits-bot.jar, classpath, java-bot, random-bot, heuristic-bot."""
    cpp: Path
    """The C++ kit's build: libcraits_bot.a, gen/, random_bot, heuristic_bot."""
    seconds: float
    """What building them took in this session (0 when they were up to date)."""


def _build(script: str, out: Path) -> str:
    done = subprocess.run(["bash", str(ROOT / script), str(out)], capture_output=True, text=True, timeout=900,
                          check=False)
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:]
        reason = f"{script} failed: {' '.join(why)}"
        if os.environ.get("CI") or "missing" not in reason:
            pytest.fail(reason)
        pytest.skip(reason)
    return done.stdout


@pytest.fixture(scope="session")
def kits() -> Kits:
    BUILD.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(BUILD / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (another worker building: wait for it, then find it built)
        said = _build("clients/java/build-debian.sh", BUILD / "java") + _build("clients/cpp/build-debian.sh",
                                                                                BUILD / "cpp")
    seconds = 0.0 if said.count("up to date") == 2 else time.monotonic() - started
    return Kits(BUILD / "java", BUILD / "cpp", seconds)
