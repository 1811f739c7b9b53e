"""The deadline and the final, and the teacher's dashboard, on a course of their own: a roster
whose versions were built and admitted in the sandbox, a practice tournament they played, a
final played with ``craits final run``, and ``craits web`` serving the participants' pages."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from participants.admission import admit_pending
from participants.dashboard import Rubric, judge, read_rubrics, rows, to_csv
from participants.fairness import Pauses
from participants.final import Final, FinalError, read_plan
from participants.roster import ORGANIZER, Roster
from participants.scrimmage import QUOTA_KEY, ScrimmageError, Scrimmages
from server.cli import main as craits
from server.web.app import WebOptions, WebServer
from server.web.board import Board, folder_source
from server.web.live import LiveHub
from tests.participants.test_compare_browser import HEURISTIC_BOT
from tests.participants.test_participants_browser import _until
from tests.participants.test_participants_web import Client
from tests.participants.uploads import MANIFEST, good_bot, zip_of
from tests.web.conftest import ARTIFACTS, Running, start_craits
from tournaments.config import load_config
from tournaments.runner import load_standings, open_tournament
from tournaments.standings import BotStanding

FINAL_PLAN = 'deadline = "{deadline}"\ngames_per_bot = 3\ntable_size = 3\nhouse = ["random"]\nseed = 4\n'
PRACTICE = """name = "practice"
table_size = 3
deals = 1
seed = 9
[flags]
short_game = true
[[bots]]
name = "house-random"
builtin = "random"
"""
RUBRIC = '[[rubric]]\nname = "beats random"\nopponent = "house-random"\ngames = 2\n'


@dataclass
class Course:
    roster: Roster
    tokens: dict[str, str]
    running: Running
    folder: Path


def _iso(moment: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Course]:
    folder = tmp_path_factory.mktemp("course")
    roster = Roster.create(folder / "roster")
    tokens = dict(roster.import_csv("name,team\nalice,red\nbob,blue\ndave,=cmd()\n"))
    tokens[ORGANIZER] = roster.organizer_token()
    roster.submit("alice", good_bot(), "alice.zip")
    roster.submit("bob", zip_of({"bot.toml": MANIFEST, "bot.py": HEURISTIC_BOT}), "bob.zip")
    assert [o.status for _, o in admit_pending(roster)] == ["admitted", "admitted"]
    time.sleep(1.0)  # (the deadline falls strictly between the versions before it and the one after)
    (roster.folder / "final.toml").write_text(FINAL_PLAN.format(deadline=_iso(time.time())), encoding="utf-8")
    time.sleep(1.0)
    roster.submit("alice", zip_of({"bot.toml": MANIFEST, "bot.py": HEURISTIC_BOT}), "late.zip")
    assert [o.status for _, o in admit_pending(roster)] == ["admitted"]
    (roster.folder / "rubric.toml").write_text(RUBRIC, encoding="utf-8")
    practice = PRACTICE + "".join(
        f'[[bots]]\nname = "{v.bot}"\ncommand = ["python", "bot.py"]\ncwd = "{roster.version_dir(v)}"\n'
        for v in roster.versions() if v.number == 1)
    (folder / "practice.toml").write_text(practice, encoding="utf-8")
    assert craits(["tournament", "run", str(folder / "practice.toml"), "--out", str(folder / "practice"),
                   "--no-progress"]) == 0
    assert craits(["final", "run", str(roster.folder)]) == 0
    running = start_craits(["web", str(folder / "practice"), "--roster", str(roster.folder), "--address",
                            "127.0.0.1:0", "--log-dir", str(folder / "logs")], folder)
    try:
        yield Course(roster, tokens, running, folder)
    finally:
        running.stop()


def test_a_version_submitted_after_the_deadline_is_practice_only_and_does_not_enter_the_final(course: Course) -> None:
    final = Final(course.roster)
    assert [e.bot for e in final.snapshot() or []] == ["alice.v1", "bob.v1"]
    assert final.practice_only(course.roster.version("alice", 2))  # type: ignore[arg-type]
    standings = final.standings()
    assert standings is not None and standings["complete"]
    assert {row["bot"] for row in standings["standings"]} == {"alice.v1", "bob.v1", "house-random"}
    with pytest.raises(FinalError, match="has passed"):
        final.choose("alice", 2)
    client = Client(course.running.url)
    client.log_in(course.tokens["alice"])
    status, page, _ = client.request("p/alice/final")
    assert status == 200
    assert 'id="final-version">v1<' in page
    assert "practice only" in page.split('data-version="2"')[1].split("</li>")[0]
    assert "practice only" not in page.split('data-version="1"')[1].split("</li>")[0]
    _, page, _ = client.request("p/alice")  # (their own page too, in the versions table)
    assert "practice only" in page.split('data-version="2"')[1].split("</tr>")[0]
    assert "practice only" not in page.split('data-version="1"')[1].split("</tr>")[0]


def test_the_final_results_are_hidden_from_participants_until_published(
    course: Course, capsys: pytest.CaptureFixture[str]
) -> None:
    final = Final(course.roster)
    alice = Client(course.running.url)
    alice.log_in(course.tokens["alice"])
    _, page, _ = alice.request("p/alice/final")
    assert "The results are not published yet" in page and "bob.v1" not in page
    assert final.results_for("alice") is None and final.results_for(ORGANIZER) is not None
    try:
        assert craits(["final", "publish", str(course.roster.folder)]) == 0
        _, page, _ = alice.request("p/alice/final")
        results = page.split('id="final-results"')[1]
        assert "alice.v1" in results and "bob.v1" in results and "alice.v2" not in results
        assert not re.search(r"<td>\d+\.\d{3,}</td>", results)  # (2.39, not 2.388889)
        capsys.readouterr()
        craits(["final", "run", str(course.roster.folder)])  # (played already: nothing to play, but says what is shown)
        assert "published: the participants see them as they are recorded" in capsys.readouterr().err
    finally:
        assert craits(["final", "publish", "--hide", str(course.roster.folder)]) == 0
    assert "not published yet" in alice.request("p/alice/final")[1]


def test_before_the_deadline_a_participant_chooses_their_final_version_and_the_snapshot_then_holds(
    tmp_path: Path,
) -> None:
    roster = Roster.create(tmp_path / "roster")
    roster.add("alice")
    for _ in (1, 2, 3):
        roster.decide(roster.submit("alice", b"print(1)\n", "bot.py"), "admitted", command=("python", "bot.py"))
    deadline = time.time() + 3600
    (roster.folder / "final.toml").write_text(FINAL_PLAN.format(deadline=_iso(deadline)), encoding="utf-8")
    final = Final(roster)
    assert [e.bot for e in final.entrants_now(deadline)] == ["alice.v3"]
    final.choose("alice", 2)
    assert [(e.bot, e.chosen) for e in final.entrants_now(deadline)] == [("alice.v2", True)]
    assert final.snapshot() is None  # not yet
    with pytest.raises(FinalError, match="no admitted version v7"):
        final.choose("alice", 7)
    taken = final.snapshot(now=deadline + 1)
    assert [e.bot for e in taken or []] == ["alice.v2"]
    with pytest.raises(FinalError, match="has passed"):
        final.choose("alice", 3, now=deadline + 2)
    roster.pin("alice", 1)
    roster.revoke("alice")
    assert [e.bot for e in final.snapshot() or []] == ["alice.v2"]  # fixed at the deadline


def test_the_final_of_a_roster_named_relative_to_the_current_folder_finds_its_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`craits final run class` in the folder that holds class/: the final's file, written in
    class/final/, named each version's folder relative to the current folder, not to itself."""
    monkeypatch.chdir(tmp_path)
    roster = Roster.create("class")
    for name in ("alice", "bob"):
        roster.add(name)
        roster.decide(roster.submit(name, b"print(1)\n", "bot.py"), "admitted", command=("python", "bot.py"))
        version = roster.version(name, 1)
        assert version is not None
        roster.version_dir(version).mkdir(parents=True, exist_ok=True)  # (as its build leaves it)
    deadline = time.time() + 3600
    (roster.folder / "final.toml").write_text(FINAL_PLAN.format(deadline=_iso(deadline)), encoding="utf-8")
    config = load_config(Final(roster).tournament_file(now=deadline + 1))
    assert [Path(b.cwd or "") for b in config.bots if b.command] == [
        (tmp_path / "class" / "versions" / name / "v1").resolve() for name in ("alice", "bob")]


def test_a_board_of_the_final_shows_nothing_but_to_the_organizer_until_published(course: Course) -> None:
    final = Final(course.roster)

    async def look() -> list[tuple[str, int]]:
        server = WebServer(LiveHub(), Board(folder_source(final.out_dir)),
                           WebOptions(port=0, roster=str(course.roster.folder)))
        url = await server.start()
        anyone, alice = Client(url), Client(url)
        organizer = Client(url, {"Authorization": f"Bearer {course.tokens[ORGANIZER]}"})
        seen = []
        try:
            await asyncio.to_thread(alice.log_in, course.tokens["alice"])
            for who, client in (("anyone", anyone), ("alice", alice), ("organizer", organizer)):
                for path in ("", "api/standings", "games", "p/alice"):
                    status, page, _ = await asyncio.to_thread(client.request, path)
                    assert status != 200 or who == "organizer" or "bob.v1" not in page
                    seen.append((f"{who} /{path}", status))
            await asyncio.to_thread(final.publish)
            await asyncio.sleep(1.1)  # (the gate reads the publication again after a second)
            seen.append(("anyone / after publish", (await asyncio.to_thread(anyone.request, "api/standings"))[0]))
        finally:
            final.publish(False)
            await server.stop()
        return seen

    seen = asyncio.run(look())
    assert {k: v for k, v in seen if not k.startswith("organizer")} == {
        **{f"{who} /{path}": 404 for who in ("anyone", "alice") for path in ("", "api/standings", "games", "p/alice")},
        "anyone / after publish": 200}
    assert all(v == 200 for k, v in seen if k.startswith("organizer") and "p/alice" not in k)


def test_a_final_whose_games_per_bot_does_not_fit_its_entrants_names_the_plan_and_numbers_that_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """teachers.md's plan (24 games, tables of 3, house random) with 3 students: 4 bots, which
    24 does not fit; it was said of the generated class/final/final.toml, a file not the teacher's."""
    roster = Roster.create(tmp_path / "class")
    for name in ("alice", "bob", "carol"):
        roster.add(name)
        roster.decide(roster.submit(name, b"print(1)\n", "bot.py"), "admitted", command=("python", "bot.py"))
    time.sleep(2)  # (the deadline is to the second: after every submission, and passed)
    (roster.folder / "final.toml").write_text(FINAL_PLAN.format(deadline=_iso(time.time() - 0.5)).replace(
        "games_per_bot = 3", "games_per_bot = 24"), encoding="utf-8")
    with pytest.raises(FinalError) as said:
        Final(roster).tournament_file()
    assert str(said.value).startswith(f"{roster.folder / 'final.toml'}: games_per_bot = 24 does not fit 3 entrant(s)")
    assert "set games_per_bot = 18, 27 or 36" in str(said.value)
    assert craits(["final", "run", str(roster.folder)]) == 2
    assert "set games_per_bot = 18, 27 or 36" in capsys.readouterr().err


def test_a_final_file_with_a_mistake_says_which_key(tmp_path: Path) -> None:
    for text, said in (('deadline = 2026-12-11T18:00:00\n', "add the time zone"),
                       ('deadline = "soon"\n', "is not a date and time"),
                       ('deadline = 2026-12-11T18:00:00Z\ngames = 3\n', "unknown key(s) games"),
                       ('deadline = 2026-12-11T18:00:00Z\nhouse = ["nobody"]\n', "house:"),
                       ('deadline = 2026-12-11T18:00:00Z\ntable_size = 9\n', "table_size: a whole number from 2 to 5")):
        (tmp_path / "final.toml").write_text(text, encoding="utf-8")
        with pytest.raises(FinalError, match=said.replace("(", r"\(").replace(")", r"\)")):
            read_plan(tmp_path)


def _games(pairs: list[tuple[int, int]], bot: str, table: int = 3) -> list[dict[str, Any]]:
    """Games of ``bot`` with house-heuristic, their placings as given (a third bot takes the rest)."""
    out = []
    for mine, theirs in pairs:
        third = next(p for p in range(1, table + 1) if p not in (mine, theirs))
        out.append({"bots": [bot, "house-heuristic", "house-random"], "placings": [mine, theirs, third],
                    "aborted": ""})
    return out


def test_the_rubric_verdicts_match_a_precomputed_case() -> None:
    rubric = Rubric("beats heuristic", "house-heuristic", games=30, confidence=0.95)
    # 40 games: ahead by a place in 34, behind by one in 6, mixed as they come -> a placing gap of
    # (6 - 34) / 40 = -0.7 on average; its 95 % anytime interval (betting on 0): -0.96 .. -0.32
    ahead_behind = ([(1, 2), (2, 3)] * 3 + [(2, 1)]) * 5 + [(1, 2), (2, 3)] * 2 + [(2, 1)]
    strong = _games(ahead_behind, "ann.v1")
    weak = _games([(theirs, mine) for mine, theirs in ahead_behind], "ben.v2")  # the mirror image: behind in 34
    even = _games([(1, 2), (2, 1)] * 20, "cat.v1")
    few = _games([(1, 3)] * 12, "dan.v1")  # always ahead, but fewer games than the rubric asks
    games = strong + weak + even + few
    verdicts = {bot: judge(rubric, bot, games) for bot in ("ann.v1", "ben.v2", "cat.v1", "dan.v1", "eve.v1")}
    assert {bot: v.verdict for bot, v in verdicts.items()} == {
        "ann.v1": "pass", "ben.v2": "fail", "cat.v1": "undecided", "dan.v1": "undecided", "eve.v1": "undecided"}
    assert {bot: v.games for bot, v in verdicts.items()} == {"ann.v1": 40, "ben.v2": 40, "cat.v1": 40, "dan.v1": 12,
                                                              "eve.v1": 0}
    ann, ben, cat = verdicts["ann.v1"], verdicts["ben.v2"], verdicts["cat.v1"]
    assert ann.mean == pytest.approx(-0.7)  # the plain mean, shown as it is
    assert (ann.low, ann.high) == (pytest.approx(-0.96), pytest.approx(-0.32))  # (both ends ruled out)
    assert (ben.mean, ben.low, ben.high) == (pytest.approx(0.7), pytest.approx(0.32), pytest.approx(0.96))
    assert cat.mean == 0 and cat.low < 0 < cat.high
    # always first with the heuristic last: the bet against a gap of 0 is at its cap (3/4 of the
    # capital at 1/2 of the scale), so the capital grows 1.75-fold a game and passes 2 / 5 % = 40 at
    # the seventh (1.75 ** 6 = 28.7, 1.75 ** 7 = 50.3): six games are too few even for the interval
    assert judge(Rubric("x", "house-heuristic", games=1), "dan.v1", few[:6]).verdict == "undecided"
    seven = judge(Rubric("x", "house-heuristic", games=1), "dan.v1", few[:7])
    assert seven.verdict == "pass" and seven.low == seven.mean == -2.0 < seven.high <= 0


def test_a_rubric_counts_a_deal_once_however_many_rotations_play_it() -> None:
    """A ladder plays each deal in every seat rotation: nine games of three deals are three samples,
    not nine (seven independent games always ahead pass; three deals are too few)."""
    rounds = [dict(game, seed=1000 + n // 3, game_id=f"round{n // 3 + 1:06d}-r{n % 3 + 1}")
              for n, game in enumerate(_games([(1, 3)] * 9, "dan.v1"))]
    rubric = Rubric("x", "house-heuristic", games=1)
    verdict = judge(rubric, "dan.v1", rounds)
    assert verdict.games == 9 and verdict.verdict == "undecided" and verdict.mean == -2.0
    unseeded = [{k: v for k, v in game.items() if k != "seed"} for game in rounds]
    assert judge(rubric, "dan.v1", unseeded).verdict == "undecided"
    assert judge(rubric, "dan.v1", _games([(1, 3)] * 9, "dan.v1")).verdict == "pass"  # (games of their own deals)


def test_the_dashboard_lists_everyone_and_its_csv_is_safe_for_spreadsheets(course: Course) -> None:
    rubrics = read_rubrics(course.roster.folder)
    table = {row.name: row for row in rows(course.roster, [], [], rubrics)}
    assert sorted(table) == ["alice", "bob", "dave"]
    # (past the deadline, her row is as it was then: v2 came after it; she plays it, as practice)
    assert (table["alice"].latest, table["alice"].playing, table["alice"].final) == ("v1 admitted", "v2", "v1")
    assert not table["dave"].submitted and table["dave"].final == "-"
    parsed = list(csv.DictReader(io.StringIO(to_csv(list(table.values()), rubrics))))
    assert [r["name"] for r in parsed] == ["alice", "bob", "dave"]
    assert parsed[2]["team"] == "'=cmd()" and parsed[0]["beats random"] == "undecided"
    assert (parsed[2]["latest"], parsed[2]["final"]) == ("", "")  # (no "'-" for none)


def test_the_dashboard_counts_the_games_of_a_participants_own_bot(course: Course) -> None:
    """dave submitted nothing but plays with his own bot, connected with his token (named dave)."""
    games = [{"bots": ["dave", "house-random", "alice.v2"], "faults": [None, None, None]},
             {"bots": ["house-random", "dave", "bob.v1"], "faults": [None, ["timeout"], None]}]
    standings = [{"bot": "dave", "rating_ordinal": 3.5, "rank": 2}, {"bot": "alice.v2", "rating_ordinal": 9.0, "rank": 1}]
    table = {row.name: row for row in rows(course.roster, games, standings, now=0.0)}  # (before the deadline)
    dave, alice = table["dave"], table["alice"]
    assert (dave.games, dave.faults_per_game, dave.rating, dave.rank) == (2, 0.5, 3.5, 2)
    assert (alice.games, alice.rating, alice.rank) == (1, 9.0, 1)


@pytest.mark.browser
def test_the_organizer_sees_the_dashboard_and_downloads_its_csv(course: Course, page: Any) -> None:
    url = course.running.url
    page.goto(url + "login")
    page.fill("#token", course.tokens[ORGANIZER])
    page.click("#login")
    page.click("#dashboard-link")
    rows_shown = {r.get_attribute("data-name"): r.inner_text() for r in page.query_selector_all("#dashboard tr[data-name]")}
    assert sorted(rows_shown) == ["alice", "bob", "dave"]
    assert "v1 admitted" in rows_shown["alice"] and "\tv1" in rows_shown["alice"]  # latest by the deadline, final
    assert "\tno\t" in rows_shown["dave"]
    assert "beats random" in page.text_content("#dashboard tr")
    assert int(rows_shown["bob"].split("\t")[6]) == 0  # bob.v1's practice games came after the deadline
    assert "passed" in page.text_content("#dashboard-deadline")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "participant-dashboard.png"), full_page=True)
    with page.expect_download() as download:
        page.click("#csv")
    text = Path(download.value.path()).read_text(encoding="utf-8")
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert [r["name"] for r in parsed] == ["alice", "bob", "dave"]
    assert parsed[1]["games"] == "0" and parsed[0]["final"] == "v1" and parsed[0]["final_sha256"]
    assert parsed[1]["beats random"] in ("pass", "fail", "undecided")
    alice = Client(url)
    alice.log_in(course.tokens["alice"])
    assert alice.request("organizer")[0] == 404 and alice.request("organizer.csv")[0] == 404


def _standings(url: str) -> Any:
    with urllib.request.urlopen(url + "api/standings", timeout=30) as response:
        return json.loads(response.read())


@pytest.mark.browser
def test_a_scrimmage_is_played_shown_to_both_participants_and_never_rated(course: Course, page: Any) -> None:
    url = course.running.url
    before_file = (course.folder / "practice" / "standings.json").read_text(encoding="utf-8")
    before = _standings(url)
    page.goto(url + "login")
    page.fill("#token", course.tokens["alice"])
    page.click("#login")
    page.click("#scrimmage-link")
    page.select_option("#scrim-against", ["bob", "random"])
    page.fill("#scrim-games", "3")
    page.click("#scrimmage")
    status = _until(page, lambda p: (s := p.text_content("#scrim-status", timeout=1000)) in ("done", "failed") and s,
                    timeout_s=240)
    assert status == "done"
    games = page.query_selector_all("tr.scrim-game")
    assert len(games) == 3 and "alice.v2" in games[0].inner_text() and "bob.v1" in games[0].inner_text()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "participant-scrimmage.png"), full_page=True)
    replay = page.goto(url + page.query_selector("tr.scrim-game a").get_attribute("href").lstrip("/"))
    assert replay.status == 200 and "Craits replay scrim" in page.title()
    ident = page.url.split("/scrimmage/")[1].split("/")[0]
    bob = Client(url)
    bob.log_in(course.tokens["bob"])
    status, listing, _ = bob.request("p/bob/scrimmage")
    assert status == 200 and f'/p/bob/scrimmage/{ident}"' in listing
    assert bob.request(f"p/bob/scrimmage/{ident}")[0] == 200
    dave = Client(url)
    dave.log_in(course.tokens["dave"])
    assert dave.request(f"p/dave/scrimmage/{ident}")[0] == 404 and dave.request(f"p/alice/scrimmage/{ident}")[0] == 404
    # never rated: the board's standings and the store's are as they were, and hold no scrimmage game
    assert _standings(url) == before
    assert (course.folder / "practice" / "standings.json").read_text(encoding="utf-8") == before_file
    config, store = open_tournament(course.folder / "practice", readonly=True)
    with store:
        assert not [g for g in store.games() if g.game_id.startswith("scrim")]
        assert load_standings(config, store).to_dict()["standings"] == json.loads(before_file)["standings"]


def test_scrimmages_are_held_to_the_hourly_quota(tmp_path: Path) -> None:
    roster = Roster.create(tmp_path / "roster")
    for name in ("alice", "bob", "dave"):
        roster.add(name)
    for name in ("alice", "bob"):
        roster.decide(roster.submit(name, b"print(1)\n", "bot.py"), "admitted", command=("python", "bot.py"))
    scrimmages = Scrimmages(roster)
    roster.set_limits({QUOTA_KEY: 5})
    now = time.time()
    scrimmages.ask("bob", ["random"], 3, now=now)
    with pytest.raises(ScrimmageError, match="quota of 5 scrimmage games an hour: 2 left"):
        scrimmages.ask("bob", ["alice"], 3, now=now)
    with pytest.raises(ScrimmageError, match="no admitted version"):
        scrimmages.ask("dave", ["bob"], 1, now=now)
    with pytest.raises(ScrimmageError, match="'carl': not a participant"):
        scrimmages.ask("bob", ["carl"], 1, now=now)
    assert scrimmages.ask("bob", ["alice"], 2, now=now).seats == ("bob.v1", "alice.v1")
    assert scrimmages.ask("bob", ["random", "random"], 5, now=now + 3601).seats == (
        "bob.v1", "house-random", "house-random-3")  # an hour later: the quota is whole again
    assert [s.participant for s in scrimmages.involving("alice")] == ["bob"]


def test_a_paused_version_is_explained_on_its_owners_page(course: Course) -> None:
    pauses = Pauses(course.roster)
    row = BotStanding(rank=1, bot="bob.v1", games=8, avg_points=None, ci_low=None, ci_high=None, avg_placing=None,
                      wins=0, win_rate=None, rating_mu=25.0, rating_sigma=8.0, rating_ordinal=0.0,
                      issues={"struck_out": 5, "never_connected": 1})
    assert [v.bot for v in pauses.check([row])] == ["bob.v1"]
    try:
        bob = Client(course.running.url)
        bob.log_in(course.tokens["bob"])
        _, page, _ = bob.request("p/bob")
        assert "v1 paused: it faulted in 6 of its 8 games (struck out 5, never connected 1)" in page
        alice = Client(course.running.url)
        alice.log_in(course.tokens["alice"])
        assert "paused" not in alice.request("p/alice")[1]
    finally:
        with pauses._db() as db:
            db.execute("DELETE FROM paused")


def _ladder(start: float, count: int, step: float) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """``count`` ladder games of alice.v1, bob.v1 and house-random recorded ``step`` seconds apart
    from ``start`` (alice last in every other one, with a fault), and the ratings after each."""
    games, ratings = [], {}
    for n in range(count):
        gid = f"g{start:.0f}-{n}"
        alice = 3 if n % 2 else 1
        games.append({"game_id": gid, "bots": ["alice.v1", "bob.v1", "house-random"], "recorded": start + n * step,
                      "placings": [alice, 2, 4 - alice], "aborted": "",
                      "faults": [{"bot_errors": 1} if n % 2 else {}, {}, {}]})
        for bot, mu in (("alice.v1", 25 + n % 3), ("bob.v1", 24.0), ("house-random", 20 - n / 10)):
            ratings.setdefault(bot, []).append({"game_id": gid, "mu": mu, "sigma": 2.0})
    return games, ratings


def test_the_grades_count_what_was_played_up_to_each_deadline_and_keep_their_bytes_as_the_ladder_plays_on(
    course: Course,
) -> None:
    """The rubric, games, faults and rating of each row stop at the participant's deadline: the
    CSV made later, with more practice games and ratings that moved, is the same bytes."""
    final = Final(course.roster)
    plan = final.plan()
    assert plan is not None
    rubrics = read_rubrics(course.roster.folder)
    before, ratings = _ladder(plan.deadline - 100, 10, 10.0)  # (the tenth is recorded at the deadline: counted)
    at_deadline = to_csv(rows(course.roster, before, [], rubrics, ratings), rubrics)
    after, more = _ladder(plan.deadline + 5, 40, 1.0)
    later = rows(course.roster, before + after, [{"bot": "alice.v1", "rating_ordinal": 99.0, "rank": 1}], rubrics,
                 {bot: ratings[bot] + more[bot] for bot in ratings})
    assert to_csv(later, rubrics) == at_deadline
    alice = {row.name: row for row in later}["alice"]
    assert (alice.games, alice.games_with_faults, alice.verdicts[0].games) == (10, 5, 10)
    assert alice.rating == pytest.approx(25 + 9 % 3 - 6) and alice.rank == 1
    parsed = {r["name"]: r for r in csv.DictReader(io.StringIO(at_deadline))}
    assert parsed["alice"]["counted_to_utc"] == time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(plan.deadline))
    assert parsed["alice"]["versions"] == "1" and parsed["alice"]["latest"] == "v1 admitted"  # (v2 came later)


def test_the_grade_sheet_holds_the_finals_rank_placing_and_interval(course: Course) -> None:
    standings = Final(course.roster).standings()
    assert standings is not None
    of = {r["bot"]: r for r in standings["standings"]}
    rubrics = read_rubrics(course.roster.folder)
    parsed = {r["name"]: r for r in csv.DictReader(io.StringIO(to_csv(rows(course.roster, [], [], rubrics), rubrics)))}
    for name in ("alice", "bob"):
        assert parsed[name]["final_rank"] == str(of[f"{name}.v1"]["rank"])
        assert float(parsed[name]["final_avg_placing"]) == pytest.approx(of[f"{name}.v1"]["avg_placing"])
        assert float(parsed[name]["final_beaten_low"]) <= float(parsed[name]["final_beaten_high"])
        assert parsed[name]["in_final"].startswith("in: v1")
    assert parsed["dave"]["final_rank"] == "" and parsed["dave"]["in_final"] == "left out: nothing submitted"


def test_grades_on_the_final_count_the_finals_games(course: Course) -> None:
    plan_file = course.roster.folder / "final.toml"
    kept = plan_file.read_text(encoding="utf-8")
    rubrics = read_rubrics(course.roster.folder)
    games, ratings = _ladder(0.0, 30, 1.0)  # (long before the deadline: they would count on the ladder)
    try:
        plan_file.write_text(kept + 'grade_on = "final"\n', encoding="utf-8")
        table = {row.name: row for row in rows(course.roster, games, [], rubrics, ratings)}
    finally:
        plan_file.write_text(kept, encoding="utf-8")
    assert table["alice"].verdicts[0].games == 3  # alice.v1's three final games beside house-random
    assert {row.name: row for row in rows(course.roster, games, [], rubrics, ratings)}["alice"].verdicts[0].games == 30


def test_a_participant_who_only_played_live_is_listed_as_left_out_with_why(
    course: Course, capsys: pytest.CaptureFixture[str],
) -> None:
    games = [{"game_id": "live-1", "bots": ["dave", "house-random", "alice.v1"], "recorded": 1.0,
              "placings": [1, 2, 3], "aborted": "", "faults": [{}, {}, {}]}]
    rubrics = read_rubrics(course.roster.folder)
    dave = {row.name: row for row in rows(course.roster, games, [], rubrics)}["dave"]
    assert dave.in_final.startswith("left out: no admitted version by the deadline (their own bot played")
    assert dave.verdicts[0].games == 1  # (graded on his own bot's ladder games)
    course.roster.note_live("dave")
    client = Client(course.running.url)
    client.log_in(course.tokens["dave"])
    _, page, _ = client.request("p/dave/final")
    assert ("You have no version in the final: no admitted version by the deadline (your own bot played on the "
            "ladder connected live, but the final plays submitted versions only") in page
    capsys.readouterr()
    assert craits(["final", "show", str(course.roster.folder)]) == 0
    shown = capsys.readouterr().out
    assert re.search(r"in +alice\.v1 ", shown) and re.search(r"in +bob\.v1 ", shown)
    assert re.search(r"out +dave +no admitted version by the deadline \(their own bot played on the ladder", shown)


def test_deadlines_move_by_command_with_extensions_each_change_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    roster = Roster.create(tmp_path / "class")
    for name in ("alice", "bob"):
        roster.add(name)
        roster.decide(roster.submit(name, b"print(1)\n", "bot.py"), "admitted", command=("python", "bot.py"))
    (roster.folder / "final.toml").write_text(FINAL_PLAN.format(deadline="2030-01-01T00:00:00Z"), encoding="utf-8")
    folder = str(roster.folder)
    assert craits(["final", "deadline", folder, "2029-06-01T12:00:00+02:00", "--note", "moved up"]) == 0
    assert craits(["final", "deadline", folder, "+2h", "--for", "bob"]) == 0
    assert craits(["final", "deadline", folder, "soon"]) == 2
    assert craits(["final", "deadline", folder, "now", "--for", "carl"]) == 2
    said = capsys.readouterr()
    assert "the deadline: 2029-06-01 10:00:00 UTC (to come)" in said.out and "bob's deadline:" in said.out
    assert "'soon': give a date and time" in said.err and "carl is not on the roster" in said.err
    final = Final(roster)
    plan = final.plan()
    assert plan is not None and plan.deadline_text.startswith("2029-06-01 10:00")
    assert plan.deadline_for("bob") == pytest.approx(time.time() + 7200, abs=60)
    assert [c.participant for c in final.deadline_log()] == ["", "bob"] and final.deadline_log()[0].note == "moved up"
    # bob's extension: his later version still enters; alice's deadline passed (now), hers is fixed
    assert craits(["final", "deadline", folder, "now"]) == 0
    late = roster.submit("bob", b"print(2)\n", "bot.py")
    roster.decide(late, "admitted", command=("python", "bot.py"))
    assert not final.practice_only(late)
    assert [e.bot for e in final.entrants_now()] == ["alice.v1", "bob.v2"]
    assert final.snapshot() is None  # (bob's deadline is to come: nothing is fixed yet)


def test_a_deadline_moved_after_publication_says_what_becomes_of_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    roster = Roster.create(tmp_path / "class")
    roster.add("alice")
    roster.decide(roster.submit("alice", b"print(1)\n", "bot.py"), "admitted", command=("python", "bot.py"))
    time.sleep(2)  # (the deadline is to the second: after the submission, and passed)
    (roster.folder / "final.toml").write_text(FINAL_PLAN.format(deadline=_iso(time.time() - 0.5)), encoding="utf-8")
    final = Final(roster)
    assert [e.bot for e in final.snapshot() or []] == ["alice.v1"]
    final.publish()
    folder = str(roster.folder)
    assert craits(["final", "deadline", folder, "+1d"]) == 2
    assert "its results are published: a deadline after now reopens the final" in capsys.readouterr().err
    assert final.published and final.snapshot() is not None and len(final.deadline_log()) == 0
    assert craits(["final", "deadline", folder, "now"]) == 0  # (still passed: nothing changes, and it says so)
    assert "entrants stay as they were fixed at the deadline, and its published results stand" in capsys.readouterr().out
    assert craits(["final", "deadline", folder, "+1d", "--reopen"]) == 0
    said = capsys.readouterr().out
    assert "the final is reopened" in said and "published results are hidden from the participants" in said
    assert not final.published and final.snapshot() is None and not final.past_deadline()
    assert final.deadline_log()[-1].note == "reopened the final"
    assert craits(["final", "show", folder]) == 0
    assert "(to come)" in capsys.readouterr().out


def test_the_board_and_the_dashboard_count_faults_the_same_way_once_a_game(course: Course) -> None:
    """A bot with 3 bot errors in one game and none in the next has one game with faults of two
    on the board's faults column and on the dashboard (the board summed the errors: 3)."""
    from server.web.board import faulty_games

    games, _ = _ladder(0.0, 10, 1.0)
    games[1]["faults"][0] = {"bot_errors": 3, "timeouts": 2}
    dashboard = {row.name: row for row in rows(course.roster, games, [], now=0.0)}["alice"]
    assert faulty_games(games)["alice.v1"] == dashboard.games_with_faults == 5
    assert dashboard.faults_per_game == 0.5
