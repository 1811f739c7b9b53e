"""A tournament of slow bots played by the real referee with ``--web``, for the web tests."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BOT = Path(__file__).with_name("bots") / "slow_random_bot.py"
ARTIFACTS = ROOT / "logs" / "test-artifacts" / "web"
"""Screenshots of every page, kept after the run (logs/ is not committed)."""


def tournament_file(folder: Path, *, deals: int = 2, delay: float = 0.004, name: str = "webcup") -> Path:
    bots = "".join(
        f'\n[[bots]]\nname = "{bot}"\ncommand = ["python", "{BOT.name}", "{delay}"]\ncwd = "{BOT.parent}"\n'
        for bot in ("ann", "ben", "cat")  # (a sandboxed bot sees its cwd, not the file's folder)
    )
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\ntable_size = 3\npreset = "craits"\ndeals = {deals}\nseed = 5\nconcurrency = 2\n'
        f"[flags]\nshort_game = true\n[clocks]\ndecision_s = 5.0\nbank_s = 30.0\n{bots}",
        encoding="utf-8",
    )
    return path


@dataclass
class Running:
    """A ``craits`` process serving the web pages."""

    process: subprocess.Popen[str]
    url: str
    out_dir: Path
    lines: list[str]

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=10) as response:
            return json.loads(response.read())

    def status(self, path: str) -> int:
        try:
            with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as err:
            return int(err.code)

    def wait_for(self, what: str, condition: Any, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            if self.process.poll() is not None and not value:
                break
            time.sleep(0.05)
        raise AssertionError(f"never happened: {what}\n" + "".join(self.lines[-30:]))

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def start_craits(args: list[str], cwd: Path) -> Running:
    """Start ``craits ARGS`` and wait until it says where its web pages are."""
    craits = shutil.which("craits", path=str(Path(sys.executable).parent)) or "craits"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [craits, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    lines: list[str] = []
    found: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            match = re.search(r"web: the board and the live games at (\S+)", line)
            if match:
                found.put(match.group(1))

    threading.Thread(target=read, daemon=True).start()
    try:
        url = found.get(timeout=60)
    except queue.Empty:
        process.kill()
        raise AssertionError("craits never said where its web pages are:\n" + "".join(lines)) from None
    out_dir = Path(args[args.index("--out") + 1]) if "--out" in args else cwd
    return Running(process, url, out_dir, lines)
