"""Fairness guards: a version that faults in most of its games is paused, with a note to its owner."""

from __future__ import annotations

import asyncio
from pathlib import Path

from participants.admission import admit_pending
from participants.entrants import RosterEntrants
from participants.fairness import MIN_GAMES, Pauses, faulty
from participants.roster import Roster
from tests.participants.conftest import LADDER
from tests.participants.uploads import good_bot
from tournaments.config import parse_config
from tournaments.grpc_runner import tournament_runner
from tournaments.ladder import LadderBook, LadderRound, open_ladder, run_ladder
from tournaments.standings import BotStanding, Standings


def _row(bot: str, games: int, **issues: int) -> BotStanding:
    return BotStanding(rank=1, bot=bot, games=games, avg_points=None, ci_low=None, ci_high=None, avg_placing=None,
                       wins=0, win_rate=None, rating_mu=25.0, rating_sigma=8.0, rating_ordinal=0.0, issues=issues)


def test_most_games_faulted_past_the_minimum_is_faulty_and_fewer_are_not() -> None:
    assert faulty(_row("a.v1", MIN_GAMES, never_connected=MIN_GAMES // 2 + 1))
    assert not faulty(_row("a.v1", MIN_GAMES, never_connected=MIN_GAMES // 2))  # half is not most
    assert not faulty(_row("a.v1", MIN_GAMES - 1, struck_out=MIN_GAMES - 1))  # too few games to judge
    assert not faulty(_row("a.v1", 20, timeouts=50))  # slow decisions are not a lost game


def test_a_version_that_faults_in_most_games_is_paused_and_sits_out_with_a_note(tmp_path: Path) -> None:
    roster = Roster.create(tmp_path / "roster")
    roster.add("alice")
    roster.add("bob")
    roster.submit("bob", good_bot(), "bob.zip")
    assert [o.status for _, o in admit_pending(roster)] == ["admitted"]
    # alice's version passed its admission once; on the ladder it exits at once, every game
    broken = roster.submit("alice", b"import sys\nsys.exit(1)\n", "bot.py")
    roster.version_dir(broken).mkdir(parents=True)
    roster.decide(broken, "admitted", command=("python", "-c", "import sys; sys.exit(1)"))
    config = parse_config(LADDER, source="class.toml", base_dir=tmp_path)
    entrants = RosterEntrants(config)
    seated: list[tuple[str, ...]] = []

    def on_round(played: LadderRound, standings: Standings) -> None:
        seated.append(played.seats)

    with open_ladder(config, LADDER, str(tmp_path / "class.toml"), tmp_path / "out") as store:
        asyncio.run(asyncio.wait_for(run_ladder(entrants.config(), store, tmp_path / "out", tournament_runner,
                                                rounds=9, on_round=on_round, handle_signals=False,
                                                entrants=entrants), 300))
    paused = Pauses(roster).of("alice")
    assert [p.number for p in paused] == [1] and "never connected" in paused[0].note
    first_paused = next(i for i in range(len(seated)) if "alice.v1" not in seated[i] and
                        all("alice.v1" not in s for s in seated[i:]))
    assert 0 < first_paused < len(seated)  # it played, then sat out every round after
    assert all(sorted(s) == ["bob.v1", "house"] for s in seated[first_paused:])
    assert Pauses(roster).of("bob") == []


def _field(names: list[str]) -> str:
    return 'name = "fair"\ntable_size = 3\nseed = 11\n' + "".join(
        f'[[bots]]\nname = "{n}"\nbuiltin = "random"\n' for n in names)


def test_a_late_version_plays_at_the_fields_rate_and_meets_the_whole_field_first(tmp_path: Path) -> None:
    """Games per bot per hour stay within a ratio of 1.5 of the others' (here: per round of the
    ladder), a version joining after 40 rounds included; and its first rounds seat it with
    the bots it has not met, not the same few."""
    old = [f"b{i}" for i in range(6)]
    config = parse_config(_field(old), source="fair.toml", base_dir=tmp_path)
    with open_ladder(config, _field(old), "fair.toml", tmp_path / "out") as store:
        book = LadderBook(config, store)
        for _ in range(40):
            book.new_round(book.standings())
        late_config = parse_config(_field([*old, "late"]), source="fair.toml", base_dir=tmp_path)
        book.update(late_config)
        picked = [book.new_round(book.standings()).seats for _ in range(42)]
    counts = {bot: sum(bot in seats for seats in picked) for bot in [*old, "late"]}
    share = 42 * 3 / 7
    assert all(share / 1.5 <= n <= share * 1.5 for n in counts.values()), counts
    first = [seats for seats in picked if "late" in seats][:3]
    assert len({bot for seats in first for bot in seats} - {"late"}) == 6  # three tables, six different opponents
