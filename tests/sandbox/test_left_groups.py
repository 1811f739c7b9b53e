"""A referee killed before it released its bots' cgroups leaves empty folders behind; the next
referee that sandboxes a bot sweeps them, and touches nothing that is still in use.

Real cgroups (v1, as on the development and CI machines): a folder of the test's own inside this
process's cpuacct group stands for the place a referee makes its bots' groups in."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.transport import sandbox
from server.transport.sandbox import GROUP_PREFIX, sweep_left_groups


@pytest.fixture
def folder() -> Iterator[Path]:
    """An empty cgroup folder of this test's own (its bot groups are removed afterwards)."""
    root = sandbox._own_cgroup("cpuacct")
    if root is None:
        if os.environ.get("CI"):
            pytest.fail("no cpuacct cgroup can be made here, and CI must test the sweep")
        pytest.skip("no writable cpuacct cgroup here")
    place = root / f"craits-test-sweep-{os.getpid()}"
    place.mkdir()
    try:
        yield place
    finally:
        for group in place.iterdir():
            if group.is_dir():
                for pid in (group / "cgroup.procs").read_text().split():
                    (root / "cgroup.procs").write_text(pid)
                group.rmdir()
        place.rmdir()


def dead_pid() -> int:
    """The pid of a process that has exited and been waited for."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def group(folder: Path, name: str) -> Path:
    path = folder / name
    path.mkdir()
    return path


def test_an_empty_group_of_a_referee_that_is_gone_is_removed(folder: Path) -> None:
    left = group(folder, f"{GROUP_PREFIX}{dead_pid()}-0a1b2c3d4e5f")
    assert sweep_left_groups(folder) == 1
    assert not left.exists()


def test_a_group_of_a_running_referee_is_kept_even_when_empty(folder: Path) -> None:
    mine = group(folder, f"{GROUP_PREFIX}{os.getpid()}-0a1b2c3d4e5f")
    assert sweep_left_groups(folder) == 0
    assert mine.exists()


def test_a_group_with_a_process_in_it_is_kept_whoever_made_it(folder: Path) -> None:
    busy = group(folder, f"{GROUP_PREFIX}{dead_pid()}-0a1b2c3d4e5f")
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (busy / "cgroup.procs").write_text(str(sleeper.pid))
        assert sweep_left_groups(folder) == 0
        assert busy.exists()
        assert sleeper.poll() is None  # never killed: it is not the sweep's to end
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_group_named_by_an_older_referee_goes_only_once_it_is_an_hour_old(folder: Path) -> None:
    fresh = group(folder, f"{GROUP_PREFIX}0a1b2c3d4e5f")
    old = group(folder, f"{GROUP_PREFIX}6a7b8c9d0e1f")
    an_hour_ago = time.time() - sandbox.UNOWNED_GROUP_AGE_S - 60
    os.utime(old, (an_hour_ago, an_hour_ago))
    assert sweep_left_groups(folder) == 1
    assert fresh.exists() and not old.exists()


def test_other_folders_are_not_touched(folder: Path) -> None:
    other = group(folder, "someone-elses-group")
    assert sweep_left_groups(folder) == 0
    assert other.exists()


def test_the_first_sandboxed_launch_of_a_process_sweeps_its_cgroup_folder(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    left = group(folder, f"{GROUP_PREFIX}{dead_pid()}-0a1b2c3d4e5f")
    monkeypatch.setattr(sandbox, "_own_cgroup", lambda controller: folder)
    monkeypatch.setattr(sandbox, "_swept", set())
    made = sandbox._make_group("cpuacct", {})
    assert made is not None and made.name.startswith(f"{GROUP_PREFIX}{os.getpid()}-")
    assert not left.exists()
