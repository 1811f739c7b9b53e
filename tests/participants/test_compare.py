"""Version against version: the anytime-valid interval, and verdicts on the same deals
(in-process house policies here; the participants' real versions in the browser test)."""

from __future__ import annotations

import asyncio
import math
import random
from pathlib import Path

import pytest

from participants.compare import (
    CompareError,
    Comparisons,
    Deal,
    compare,
    house_specs,
    ladder_game,
    play_deal,
    summarize,
    verdict_words,
)
from participants.confidence import ConfidenceSequence, mean_interval
from participants.entrants import RosterEntrants
from participants.roster import Roster
from participants.scrimmage import Scrimmages, play
from server.engine import GameConfig, make_config
from server.spec import BotSpec, GameRecord, GameSpec
from tests.participants.conftest import LADDER
from tournaments.config import parse_config
from tournaments.local import LocalRunner


@pytest.mark.parametrize("centre", [None, 0.5])
def test_the_interval_holds_the_mean_at_every_look_in_at_least_95_percent_of_runs(centre: float | None) -> None:
    rng = random.Random(7)
    missed = 0
    runs, steps = 200, 150
    for _ in range(runs):
        sequence = ConfidenceSequence(centre=centre)  # (0.5: as a comparison bets, against "no difference")
        for _ in range(steps):
            found = sequence.add(float(rng.random() < 0.3))
            if not found.low < 0.3 < found.high:  # (its ends are ruled out)
                missed += 1
                break
    assert missed <= 0.05 * runs


def test_the_interval_narrows_around_the_observations_and_refuses_values_outside_0_1() -> None:
    early, late = mean_interval([0.2, 0.4] * 5), mean_interval([0.2, 0.4] * 200)
    assert early.low < late.low <= 0.3 <= late.high < early.high
    assert late.high - late.low < 0.1
    with pytest.raises(ValueError):
        mean_interval([1.5])


def _bot(name: str, policy: str) -> BotSpec:
    return BotSpec(name=name, token="", builtin=policy)


def _compare(a: str, b: str, games: int, until_told: bool = True) -> list[Deal]:
    runner = LocalRunner()
    return asyncio.run(compare(runner, _bot("old", a), _bot("new", b), house_specs(("random",)), seed=5,
                               games=games, until_told=until_told))


def test_a_clearly_stronger_version_is_told_better_and_the_weaker_worse() -> None:
    deals = _compare("random", "greedy", 400)
    verdict = summarize(deals, 2)
    assert verdict.verdict == "better" and verdict.placing.low < verdict.placing.mean < verdict.placing.high <= 0
    assert len(deals) < 30  # stopped once told apart, not at the cap
    assert summarize(_compare("greedy", "random", 400), 2).verdict == "worse"


def _deal(a_placing: float, b_placing: float) -> Deal:
    return Deal(a_placing, b_placing, 0.0, 0.0, 0, 0)


def test_a_version_always_first_where_the_old_was_last_is_told_better_at_the_seventh_deal() -> None:
    # at tables of three each deal's difference is -2, the most there is: the bet against 0 is at
    # its cap (3/4 of the capital at 1/2 of the scale), so the capital grows 1.75-fold a deal and
    # passes 2 / 5 % = 40 at the seventh (1.75 ** 6 = 28.7, 1.75 ** 7 = 50.3)
    assert summarize([_deal(3.0, 1.0)] * 6, 3).verdict == "not yet told apart"
    better = summarize([_deal(3.0, 1.0)] * 7, 3)
    assert better.verdict == "better" and better.placing.low == better.placing.mean == -2.0 < better.placing.high <= 0
    worse = summarize([_deal(1.0, 3.0)] * 7, 3)
    assert worse.verdict == "worse" and worse.placing.low >= 0 and worse.placing.high == worse.placing.mean == 2.0


def test_points_are_shown_as_a_plain_average_without_an_interval_that_would_not_hold_when_watched() -> None:
    """Beside a verdict watched deal after deal, a fixed-count normal interval on points excluded 0
    while the verdict said "not yet told apart": only anytime-valid intervals are shown."""
    deals = [Deal(2.0, 2.0, 10.0, 10.0 - 3 - i % 2, 0, 0) for i in range(6)]
    summary = summarize(deals, 3)
    assert summary.verdict == "not yet told apart" and summary.points.mean == -3.5
    assert summary.points.low == -math.inf and summary.points.high == math.inf


def test_the_same_bot_twice_plays_the_same_games_and_is_never_told_apart() -> None:
    deals = _compare("random", "random", 40)
    assert len(deals) == 10  # 40 games: 10 deals of 2 rotations x 2 versions
    assert all(d.a_placing == d.b_placing and d.a_points == d.b_points for d in deals)
    summary = summarize(deals, 2)
    assert summary.verdict == "not yet told apart" and summary.games == 40
    assert summary.placing.low < 0 < summary.placing.high


def test_a_comparison_needs_two_admitted_versions_and_house_bots(tmp_path: Path) -> None:
    roster = Roster.create(tmp_path / "roster")
    roster.add("alice")
    comparisons = Comparisons(roster)
    with pytest.raises(CompareError, match="no admitted version v1"):
        comparisons.ask("alice", 1, 2)
    for _ in (1, 2):
        version = roster.submit("alice", b"print(1)\n", "bot.py")
        roster.decide(version, "admitted", command=("python", "bot.py"))
    with pytest.raises(CompareError, match="two different"):
        comparisons.ask("alice", 1, 1)
    with pytest.raises(CompareError, match="not alice"):
        comparisons.ask("alice", 1, 2, panel=("alice",))
    with pytest.raises(CompareError, match="games"):
        comparisons.ask("alice", 1, 2, games=0)
    job = comparisons.ask("alice", 1, 2, games=30)
    assert (job.status, job.table_size, comparisons.pending()) == ("waiting", 3, [job])
    assert comparisons.of("bob") == []
    with pytest.raises(CompareError, match=f"your comparison {job.id} is still playing"):
        comparisons.ask("alice", 2, 1)


class _Stop(Exception):
    pass


def test_comparisons_and_scrimmages_play_the_ladders_game_not_always_the_short_one(tmp_path: Path) -> None:
    roster = Roster.create(tmp_path / "roster")
    roster.add("alice")
    version = roster.submit("alice", b"print(1)\n", "bot.py")
    roster.decide(version, "admitted", command=("python", "bot.py"))
    assert ladder_game(roster.folder, 3) == make_config("craits", 3, short_game=True)  # (no ladder ran yet)
    ladder = LADDER.replace("short_game = true", "voluntary_draw = true")
    RosterEntrants(parse_config(ladder, source="class.toml", base_dir=tmp_path))  # (as `craits ladder run` starts)
    played: list[GameConfig] = []

    async def run_game(spec: GameSpec) -> GameRecord:
        played.append(spec.config)
        raise _Stop

    a, b = house_specs(("random", "default"))
    with pytest.raises(_Stop):
        asyncio.run(play_deal(run_game, a, b, house_specs(("random",)), seed=1, number=0, game=roster.folder))
    scrimmages = Scrimmages(roster)
    with pytest.raises(_Stop):
        asyncio.run(play(scrimmages, scrimmages.ask("alice", ["random", "default"], 1), run_game))
    assert set(played[:-1]) == {make_config("craits", 2, voluntary_draw=True)}  # (the deal's games)
    assert played[-1] == make_config("craits", 3, voluntary_draw=True)  # (the scrimmage's)
    RosterEntrants(parse_config(ladder.replace('seed = 3', 'seed = 3\npreset = "crates-partners"')
                                .replace("table_size = 2", "table_size = 4"), source="c.toml", base_dir=tmp_path))
    with pytest.raises(CompareError, match="cannot be played at a table of 3: preset crates-partners takes exactly 4"):
        ladder_game(roster.folder, 3)


def test_the_verdict_in_words_is_on_placing_and_never_reads_as_a_contradiction_of_the_points() -> None:
    """Not told apart on placing while the points' interval excludes 0: said as a lean on points,
    a hint, beside "not yet separated on placing"."""
    assert verdict_words("better", 3, 4) == "v4 places better than v3 (sure, at 95 %)"
    assert verdict_words("worse", 3, 4) == "v4 places worse than v3 (sure, at 95 %)"
    open_ = verdict_words("not yet told apart", 3, 4, -40.0, -5.0)
    assert open_.startswith("v4 and v3: not yet separated on placing") and "on points v4 leads so far, a hint" in open_
    assert "points" not in verdict_words("not yet told apart", 3, 4, -40.0, 12.0)
    assert "told apart" not in open_
