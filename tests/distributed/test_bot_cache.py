"""A worker's cache of stored bot versions stays within its size: the versions used least
recently go first, never one a game holds (in this worker or another sharing the folder), and
a version that finds no room on the disk refuses its game, leaving nothing half unpacked.

Real files, real locks and real processes; the archives come from a dict instead of
PostgreSQL (test_roster_pg.py plays them from the store)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from server.storage.bot_files import FileCache, pack_folder, sha256
from server.transport import sandbox

ROOT = Path(__file__).resolve().parents[2]
KB = 1000


def versions(folder: Path, count: int, size: int) -> dict[str, bytes]:
    """``count`` bot versions of ``size`` bytes each (incompressible, the same every time), by hash."""
    packed = {}
    for n in range(count):
        source = folder / f"v{n}"
        source.mkdir(parents=True, exist_ok=True)
        (source / "bot.py").write_bytes(sha256(b"%d" % n).encode() * (size // 64))
        data = pack_folder(source)
        packed[sha256(data)] = data
    return packed


def cached(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if not p.name.startswith(".")}


def test_the_least_recently_used_versions_go_first_and_never_one_a_game_holds(tmp_path: Path) -> None:
    a, b, c, d = stored = versions(tmp_path / "src", 4, 100 * KB)
    cache = FileCache("", tmp_path / "cache", max_bytes=250 * KB, fetch=stored.get)
    cache.get(a)
    cache.get(b)
    cache.get(a)  # (used again: b is now the least recently used)
    with capture_logs() as logs:
        cache.get(c)
    assert cached(cache.folder) == {a, c} and cache.fetched == 3
    [evicted] = [e for e in logs if e["event"] == "bot_cache_evicted"]
    assert evicted["files"] == b[:12] and "least recently used" in evicted["why"] and "--cache-max" in evicted["why"]

    with cache.hold(a) as folder:  # a game in progress holds a, the least recently used once c is used
        cache.get(c)
        assert cache.get(d) == cache.path(d) and cached(cache.folder) == {a, d}  # (c went: a is held)
        assert (folder / "bot.py").stat().st_size == 100 * KB // 64 * 64
    cache.get(b)  # (the game is over: a may go now)
    assert cached(cache.folder) == {d, b} and cache.fetched == 5


def test_two_workers_sharing_a_cache_never_evict_what_the_other_plays(tmp_path: Path) -> None:
    a, b, c = stored = versions(tmp_path / "src", 3, 100 * KB)
    cache = FileCache("", tmp_path / "cache", max_bytes=150 * KB, fetch=stored.get)
    cache.get(a)
    other = subprocess.Popen(  # another worker's game holds a
        [sys.executable, "-c", _OTHER_HOLDS, str(cache.folder), a], cwd=ROOT, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    try:
        assert other.stdout is not None and other.stdout.readline() == "held\n"
        cache.get(b)
        cache.get(c)
        assert cached(cache.folder) == {a, c}  # (b went, though a was used longer ago)
    finally:
        other.communicate("done\n", timeout=60)
    assert other.returncode == 0
    cache.get(b)
    assert cached(cache.folder) == {b}  # (then a went, and c, to make room for b)


_OTHER_HOLDS = """
import sys
from pathlib import Path
from server.storage.bot_files import FileCache
with FileCache("", Path(sys.argv[1]), fetch=lambda digest: None).hold(sys.argv[2]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_workers_playing_from_one_small_cache_at_once_always_find_whole_versions(tmp_path: Path) -> None:
    """Two processes each play 40 games from 6 versions in a cache with room for 2: every game
    finds its version whole, and nothing half unpacked or half removed is left."""
    folder = tmp_path / "cache"
    runs = [subprocess.Popen([sys.executable, "-c", _PLAYS, str(tmp_path / f"src{n}"), str(folder), str(n)],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(2)]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        assert json.loads(out.splitlines()[-1]) == {"games": 40, "whole": 40}  # (after its log lines)
    assert len(cached(folder)) <= 2 and {p.name for p in folder.iterdir()} - cached(folder) == {".lock"}


_PLAYS = """
import json, random, sys
from pathlib import Path
from tests.distributed.test_bot_cache import KB, versions
stored = versions(Path(sys.argv[1]), 6, 50 * KB)
from server.storage.bot_files import FileCache
cache = FileCache("", Path(sys.argv[2]), max_bytes=100 * KB, fetch=stored.get)
rng = random.Random(int(sys.argv[3]))
whole = 0
for _ in range(40):
    digest = rng.choice(sorted(stored))
    with cache.hold(digest) as folder:
        whole += len((folder / "bot.py").read_bytes()) == 50 * KB // 64 * 64
print(json.dumps({"games": 40, "whole": whole}))
"""


def test_a_version_with_no_room_on_the_disk_is_refused_and_leaves_nothing_half_unpacked(tmp_path: Path) -> None:
    if (why := sandbox.problem()) is not None:
        pytest.fail(f"this test fills a small tmpfs made by bwrap: {why}")
    disk = tmp_path / "disk"
    disk.mkdir()
    run = subprocess.run(  # (a 1 MiB disk, a 2 MB version)
        ["bwrap", "--dev-bind", "/", "/", "--size", str(2**20), "--tmpfs", str(disk),
         sys.executable, "-c", _FILLS, str(tmp_path / "src"), str(disk / "cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 0, run.stderr
    refused, left = json.loads(run.stdout.splitlines()[-1])
    assert "no room to unpack them in" in refused and "MiB free on its disk" in refused
    assert left == []


_FILLS = """
import json, sys
from pathlib import Path
from tests.distributed.test_bot_cache import KB, versions
from server.storage.bot_files import FileCache, FilesUnavailable
stored = versions(Path(sys.argv[1]), 1, 2000 * KB)
cache = FileCache("", Path(sys.argv[2]), fetch=stored.get)
try:
    cache.get(next(iter(stored)))
except FilesUnavailable as err:
    print(json.dumps([str(err), sorted(p.name for p in cache.folder.iterdir())]))
"""
