"""A referee process keeps its games, and the bots it launches, on one core (server.transport.cores)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from server.transport.cores import ENV, allowed_cores, chosen_core, one_core

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two cores to choose from"
)


def cores_of_a_child() -> set[int]:
    """The cores a process started now from this thread may use, as it reads them itself."""
    done = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                          capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


def test_inside_one_core_the_thread_and_what_it_launches_keep_to_one_core_and_get_every_core_back_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV, "1")
    before = os.sched_getaffinity(0)
    with one_core(0) as core:
        assert core == min(before)
        assert os.sched_getaffinity(0) == {core}
        assert cores_of_a_child() == {core}  # (a bot launched from the game's thread starts there)
    assert os.sched_getaffinity(0) == before


def test_referee_processes_are_spread_over_the_cores_their_tournament_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    assert [chosen_core(n, (2, 5)) for n in range(4)] == [2, 5, 2, 5]
    assert chosen_core(1, (3,)) is None  # one core: nothing to choose


@pytest.mark.parametrize("setting", [None, "0"])
def test_unless_craits_one_core_is_1_every_core_is_left(monkeypatch: pytest.MonkeyPatch, setting: str | None) -> None:
    if setting is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, setting)
    before = os.sched_getaffinity(0)
    with one_core(0) as core:
        assert core is None
        assert os.sched_getaffinity(0) == before


def test_overlapping_blocks_that_end_out_of_order_give_the_cores_back_only_at_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As ``craits worker`` runs several tournaments' runners at once on one thread."""
    monkeypatch.setenv(ENV, "1")
    before = os.sched_getaffinity(0)
    first, second = one_core(0), one_core(0)
    core = first.__enter__()
    assert second.__enter__() == core
    assert allowed_cores() == tuple(sorted(before))  # (what a worker of the second is told it may use)
    first.__exit__(None, None, None)
    assert os.sched_getaffinity(0) == {core}  # the second still plays
    second.__exit__(None, None, None)
    assert os.sched_getaffinity(0) == before
