"""Standings arithmetic on a hand-made set of results."""

from __future__ import annotations

import csv
import io
import json
import math
import random

import pytest
from openskill.models import PlackettLuce

from server.storage.store import SeatRow, StoredResult
from tournaments.standings import Tally, compute_standings, mean_ci, t_quantile_975

COUNTERS = {"decisions": 0, "timeouts": 0, "strikes": 0, "illegal": 0, "malformed": 0, "disconnects": 0,
            "default_actions": 0}


def game(ordinal: int, bots: tuple[str, ...], totals: tuple[int, ...], placings: tuple[int, ...], *,
         lower_wins: bool = True, aborted: str = "", statuses: tuple[str, ...] | None = None,
         counters: dict[str, int] | None = None) -> StoredResult:
    statuses = statuses or ("ok",) * len(bots)
    seats = tuple(
        SeatRow(s, b, t, p, statuses[s], {**COUNTERS, **(counters if s == 0 and counters else {})}, 0.0, 0.0)
        for s, (b, t, p) in enumerate(zip(bots, totals, placings, strict=True))
    )
    return StoredResult(f"g{ordinal}", ordinal, seats, lower_wins, None, aborted, "d", None)


# a: 10, 20, 30 points, places 1, 1, 2; b: 40, 20, 10, places 3, 1, 1; c: 20, 50, 70, places 2, 3, 3
RESULTS = [
    game(0, ("a", "b", "c"), (10, 40, 20), (1, 3, 2)),
    game(1, ("b", "c", "a"), (20, 50, 20), (1, 3, 1)),
    game(2, ("c", "a", "b"), (70, 30, 10), (3, 2, 1)),
]


def row(standings, bot):  # type: ignore[no-untyped-def]
    return next(r for r in standings.rows if r.bot == bot)


def test_average_points_with_a_95_percent_t_interval() -> None:
    standings = compute_standings(RESULTS, ["a", "b", "c"])
    a = row(standings, "a")
    assert a.games == 3 and a.avg_points == 20.0
    half = 4.3027 * 10 / math.sqrt(3)  # t(0.975, 2 df) x sd / sqrt(n)
    assert a.ci_low == pytest.approx(20 - half) and a.ci_high == pytest.approx(20 + half)


def test_placings_wins_and_order() -> None:
    standings = compute_standings(RESULTS, ["a", "b", "c"])
    assert [r.bot for r in standings.rows] == ["a", "b", "c"]
    assert [r.rank for r in standings.rows] == [1, 2, 3]
    a, b, c = standings.rows
    assert a.avg_placing == pytest.approx(4 / 3) and a.wins == 2 and a.placing_counts == {"1": 2, "2": 1}
    assert b.avg_placing == pytest.approx(5 / 3) and b.wins == 2 and b.win_rate == pytest.approx(2 / 3)
    assert c.avg_placing == pytest.approx(8 / 3) and c.wins == 0


def test_head_to_head_counts_who_finished_ahead() -> None:
    h2h = compute_standings(RESULTS, ["a", "b", "c"]).head_to_head
    assert (h2h["a"]["b"].ahead, h2h["a"]["b"].behind, h2h["a"]["b"].tied) == (1, 1, 1)
    assert (h2h["a"]["c"].ahead, h2h["a"]["c"].behind) == (3, 0)
    assert (h2h["c"]["a"].ahead, h2h["c"]["a"].behind) == (0, 3)
    assert h2h["b"]["c"].games == 3


def test_ratings_are_openskill_plackett_luce_in_schedule_order() -> None:
    model = PlackettLuce()
    ratings = {b: model.rating() for b in "abc"}
    for g in RESULTS:
        new = model.rate([[ratings[b]] for b in g.bots], ranks=list(g.placings))
        for b, (r,) in zip(g.bots, new, strict=True):
            ratings[b] = r
    standings = compute_standings(RESULTS, ["a", "b", "c"])
    for b in "abc":
        assert row(standings, b).rating_mu == pytest.approx(ratings[b].mu)
        assert row(standings, b).rating_sigma == pytest.approx(ratings[b].sigma)
        assert row(standings, b).rating_ordinal == pytest.approx(ratings[b].mu - 3 * ratings[b].sigma)


def test_completion_order_does_not_matter() -> None:
    """Resumed tournaments record games in another order; the standings must not change."""
    shuffled = RESULTS * 1
    random.Random(4).shuffle(shuffled)
    assert shuffled != RESULTS
    first = compute_standings(RESULTS, ["a", "b", "c"]).to_dict()
    assert compute_standings(shuffled, ["a", "b", "c"]).to_dict() == first


def test_a_tally_fed_round_by_round_gives_the_standings_of_all_the_games_at_once() -> None:
    """A ladder adds each round's games to its tally: at every point, the same standings as
    computing them from every game so far (ratings, intervals, head to head, issues)."""
    rng = random.Random(9)
    bots = ["a", "b", "c", "d", "e"]
    games = []
    for ordinal in range(60):
        seated = tuple(rng.sample(bots, 3))
        totals = tuple(rng.choice((0, 5, 40, 2**60)) for _ in seated)
        placings = tuple(sorted(totals).index(t) + 1 for t in totals)
        games.append(game(ordinal, seated, totals, placings, aborted="bot crashed" if ordinal % 17 == 5 else "",
                          statuses=("ok", "timeout_default", "struck_out"), counters={"timeouts": ordinal % 3}))
    tally = Tally(bots)
    done = 0
    for size in (1, 7, 3, 20, 29):
        for g in games[done:done + size]:
            tally.add(g)
        done += size
        assert tally.standings(by_rating=True).to_dict() == compute_standings(games[:done], bots, by_rating=True).to_dict()
    with pytest.raises(ValueError, match="schedule order"):
        tally.add(games[10])


def test_crazy_eights_says_higher_is_better() -> None:
    results = [game(0, ("a", "b"), (80, 0), (1, 2), lower_wins=False)]
    standings = compute_standings(results, ["a", "b"])
    assert not standings.lower_wins and standings.to_dict()["points"] == "higher is better"
    assert standings.rows[0].bot == "a" and standings.rows[0].avg_points == 80


def test_partners_are_rated_as_a_team() -> None:
    results = [game(i, ("a", "b", "c", "d"), (10, 50, 30, 40), (1, 2, 1, 2)) for i in range(3)]
    standings = compute_standings(results, list("abcd"), partnerships=True)
    assert row(standings, "a").rating_mu == pytest.approx(row(standings, "c").rating_mu)
    assert row(standings, "a").rating_mu > 25 > row(standings, "b").rating_mu
    assert standings.head_to_head["a"]["c"].tied == 3


def test_aborted_games_do_not_score_but_are_counted() -> None:
    results = [*RESULTS, game(3, ("a", "b", "c"), (0, 0, 0), (0, 0, 0), aborted="every bot left")]
    standings = compute_standings(results, ["a", "b", "c"], games_scheduled=4)
    assert standings.games_aborted == 1 and standings.complete
    assert row(standings, "a").games == 3 and row(standings, "a").aborted == 1
    assert compute_standings(RESULTS, ["a", "b", "c"]).rows[0].rating_mu == standings.rows[0].rating_mu


def test_statuses_are_summed_per_bot() -> None:
    results = [
        game(0, ("a", "b"), (1, 2), (1, 2), statuses=("struck_out", "ok"), counters={"timeouts": 2, "strikes": 3}),
        game(1, ("a", "b"), (1, 2), (1, 2), statuses=("never_connected", "disconnected"), counters={"timeouts": 1}),
    ]
    standings = compute_standings(results, ["a", "b"])
    a, b = row(standings, "a"), row(standings, "b")
    assert a.issues["timeouts"] == 3 and a.issues["strikes"] == 3
    assert a.issues["struck_out"] == 1 and a.issues["never_connected"] == 1 and b.issues["disconnected"] == 1
    assert "timeouts 3" in standings.format_table()


def test_a_bot_without_games_is_listed_last() -> None:
    standings = compute_standings(RESULTS, ["a", "b", "c", "zed"], games_scheduled=9)
    assert standings.rows[-1].bot == "zed" and standings.rows[-1].avg_points is None
    assert not standings.complete and "INCOMPLETE" in standings.format_table()


def test_exports_csv_and_json() -> None:
    standings = compute_standings(RESULTS, ["a", "b", "c"], name="t", games_scheduled=3)
    rows = list(csv.DictReader(io.StringIO(standings.to_csv())))
    assert [r["bot"] for r in rows] == ["a", "b", "c"] and rows[0]["avg_points"] == "20.0"
    assert rows[0]["wins"] == "2" and "timeouts" in rows[0]
    document = json.loads(json.dumps(standings.to_dict()))
    assert document["tournament"] == "t" and document["complete"] and len(document["standings"]) == 3
    assert document["head_to_head"]["a"]["c"] == {"ahead": 3, "behind": 0, "tied": 0}
    table = standings.format_table()
    assert "avg pts" in table and "head to head" in table and "3-0" in table


def test_a_class_of_thirty_gets_its_head_to_head_one_bot_at_a_time() -> None:
    """Thirty columns of head to head would not fit a terminal: the table says where it is."""
    bots = [f"student{i:02d}" for i in range(30)]
    rng = random.Random(2)
    results = []
    for ordinal in range(90):
        seated = tuple(rng.sample(bots, 3))
        totals = tuple(rng.randrange(100) for _ in seated)
        results.append(game(ordinal, seated, totals, tuple(sorted(totals).index(t) + 1 for t in totals)))
    standings = compute_standings(results, bots)
    table = standings.format_table()
    assert "too wide to print" in table and "--against BOT" in table
    assert max(len(line) for line in table.splitlines()) < 200
    record = standings.format_against("student07")
    met = {b: h for b, h in standings.head_to_head["student07"].items() if h.games}
    listed = record.splitlines()[2:]
    assert len(listed) == len(met) > 0
    assert [line.split()[1] for line in listed] == [r.bot for r in standings.rows if r.bot in met]
    with pytest.raises(ValueError, match="no bot 'student99'"):
        standings.format_against("student99")
    assert "head to head: row finished" in compute_standings(RESULTS, ["a", "b", "c"]).format_table()


def test_a_bot_not_in_a_field_of_a_hundred_is_answered_with_the_names_it_resembles() -> None:
    """--against with a typo among 100 bots: the close names, not all hundred in one line."""
    bots = [f"entry-{i:03d}" for i in range(100)]
    results = [game(i, (bots[i], bots[(i + 1) % 100]), (i, 100 - i), (1, 2)) for i in range(100)]
    standings = compute_standings(results, bots)
    with pytest.raises(ValueError) as typo:
        standings.format_against("entry-0071")
    assert str(typo.value).endswith("; did you mean 'entry-071' or 'entry-007' or 'entry-001'?")
    with pytest.raises(ValueError) as unknown:
        standings.format_against("zzz")
    message = str(unknown.value)
    assert message.endswith("and 88 more") and len(message) < 250, message


def test_mean_ci_edges() -> None:
    assert mean_ci([]) == (None, None, None)
    assert mean_ci([5]) == (5.0, None, None)
    assert mean_ci([4, 4, 4]) == (4.0, 4.0, 4.0)
    huge = 2**100
    mean, low, high = mean_ci([huge, huge])
    assert mean == float(huge) and low == high == float(huge)


def test_t_quantiles_match_the_t_distribution() -> None:
    stats = pytest.importorskip("scipy.stats")
    for df in [1, 2, 5, 10, 29, 30, 31, 40, 60, 100, 1000, 100000]:
        assert t_quantile_975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=2e-4), df


def test_the_rating_has_one_name_and_one_order_on_the_terminal_the_files_and_the_bot_page() -> None:
    """Issue 30: the terminal showed the ordinal as "rating", the board mu ± sigma. Everywhere now:
    the rating (mu - 3 sigma) first, then mu ± sigma."""
    from server.web.app import _bot_body
    from tournaments.standings import RATING_HEADERS

    standings = compute_standings(RESULTS, ["a", "b", "c"], name="cup")
    header = standings.format_table().splitlines()[1]
    assert header.index(RATING_HEADERS[0]) < header.index(RATING_HEADERS[1]) and "ordinal" not in header
    first = row(standings, standings.rows[0].bot)
    line = standings.format_table().splitlines()[2]
    assert line.index(f"{first.rating_ordinal:.2f}") < line.index(f"{first.rating_mu:.2f} ± {first.rating_sigma:.2f}")
    assert "rating = mu - 3 sigma" in standings.format_table()
    columns = next(csv.reader(io.StringIO(standings.to_csv())))
    assert columns.index("rating_ordinal") + 1 == columns.index("rating_mu") == columns.index("rating_sigma") - 1
    assert "rating = rating_ordinal = mu - 3 sigma" in standings.to_dict()["rating"]
    page = _bot_body(first.bot, {"standing": standings.to_dict()["standings"][0], "games": [], "faults": [],
                                 "ratings": []})
    assert f"rating {first.rating_ordinal:.2f} (mu ± sigma {first.rating_mu:.2f} &plusmn; {first.rating_sigma:.2f})" \
        in page.replace("&middot;", "·"), page[:400]


def test_the_points_interval_says_it_is_not_one_of_the_intervals_valid_at_any_time() -> None:
    """Under "all intervals here hold together, at every moment" a t interval for avg pts would
    be read as one of them: the table says which it is."""
    table = compute_standings(RESULTS, ["a", "b", "c"], name="cup").format_table()
    assert "95% CI" in table.splitlines()[1]
    assert "95% CI: avg pts' t interval, right for a number of games fixed in advance and read once" in table
