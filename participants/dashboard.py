"""The teacher's dashboard: every participant in one row, the rubric's verdicts, a CSV for grades.

A row says whether they submitted, their latest version and its status, the version they
play, the one in the final (the snapshot taken at the deadline), their games on the ladder,
faults per game, rating and rank, and when they last submitted. The numbers come from the
ladder's recorded games and standings as the web board holds them (its rows), so the
dashboard shows what the board shows.

A **rubric** (``rubric.toml`` in the roster folder) states what passes::

    [[rubric]]
    name = "beats heuristic"      # the column's title
    opponent = "house-heuristic"  # a bot of the ladder
    games = 30                    # at least this many games together
    confidence = 0.95

Per participant, over the ladder games where their graded version (the one in the final
once the deadline has passed, else the one they play) sat at the same table as the
opponent: the difference of placings (theirs minus the opponent's; below 0 is better) with
an anytime-valid interval (the betting confidence sequence of :mod:`participants.confidence`,
betting against 0) beside their plain mean. **pass**: at least ``games`` games and the whole
interval below 0 (0 ruled out); **fail**: at least ``games`` games and the whole interval
above 0; **undecided** otherwise (too few games, or not told apart yet).
"""

from __future__ import annotations

import csv
import io
import re
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from participants.confidence import ConfidenceSequence
from participants.final import Final, FinalError, Place
from participants.roster import Roster, RosterError
from participants.tables import RosterFiles

_ROTATION = re.compile(r"-r\d+$")
"""A game id's seat rotation (the schedules name a deal's games so)."""
RUBRIC_FILE = "rubric.toml"


class RubricError(RosterError):
    """A rubric file that cannot be used (the message names the key)."""


@dataclass(frozen=True, slots=True)
class Rubric:
    name: str
    opponent: str
    games: int = 30
    confidence: float = 0.95


@dataclass(frozen=True, slots=True)
class Verdict:
    verdict: str
    """pass, fail or undecided."""
    games: int
    mean: float | None
    low: float | None
    high: float | None


def read_rubrics(roster: Roster | str | Path) -> list[Rubric]:
    """The roster's ``rubric.toml`` (none: an empty list), from its folder, or for a roster kept
    in PostgreSQL as stored in its database (the organizer stores it from any machine with
    ``craits final plan``: see :meth:`participants.tables.RosterFiles.organizer_file`)."""
    try:
        found = RosterFiles(roster).organizer_file(RUBRIC_FILE, check=parse_rubrics)
    except RubricError:
        raise
    except RosterError as err:
        raise RubricError(str(err)) from None
    return [] if found is None else parse_rubrics(found.text, found.source)


def parse_rubrics(text: str, path: str) -> list[Rubric]:
    """The rubrics a ``rubric.toml`` states (``path``: where it was read, for the errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise RubricError(f"{path}: {err}") from None
    items = data.get("rubric", [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise RubricError(f"{path}: write one [[rubric]] table per criterion")
    rubrics = []
    for n, item in enumerate(items, start=1):
        where = f"{path}: rubric {n}"
        if unknown := sorted(set(item) - {"name", "opponent", "games", "confidence"}):
            raise RubricError(f"{where}: unknown key(s) {', '.join(unknown)} (known: name, opponent, games, confidence)")
        if not isinstance(item.get("opponent"), str) or not item["opponent"]:
            raise RubricError(f'{where}: opponent: the ladder bot to beat, e.g. opponent = "house-heuristic"')
        games = item.get("games", 30)
        if not isinstance(games, int) or isinstance(games, bool) or games < 1:
            raise RubricError(f"{where}: games: a whole number of at least 1, got {games!r}")
        confidence = item.get("confidence", 0.95)
        if not isinstance(confidence, float | int) or not 0.5 <= confidence < 1:
            raise RubricError(f"{where}: confidence: between 0.5 and 1, like 0.95, got {confidence!r}")
        rubrics.append(Rubric(str(item.get("name") or f"beats {item['opponent']}"), item["opponent"], games,
                              float(confidence)))
    return rubrics


def judge(rubric: Rubric, bot: str | None, games: Sequence[Mapping[str, Any]]) -> Verdict:
    """``bot`` against the rubric's opponent, over the recorded ``games`` (the board's rows,
    oldest first: ``bots`` and ``placings``) where both sat. The games of one deal (the same
    ``seed``, or without one the same id but for the rotation's ``-rN``) are one sample, their
    gaps averaged: a deal played in every seat rotation is not three independent games."""
    deals: dict[object, list[int]] = {}
    spread = 1
    for n, game in enumerate(games):
        bots = list(game["bots"])
        if bot is None or bot not in bots or rubric.opponent not in bots or game.get("aborted"):
            continue
        spread = max(spread, len(bots) - 1)
        seed, game_id = game.get("seed"), game.get("game_id")
        deal = ("seed", seed) if seed is not None else ("game", _ROTATION.sub("", game_id)) if game_id else n
        deals.setdefault(deal, []).append(game["placings"][bots.index(bot)] - game["placings"][bots.index(rubric.opponent)])
    gaps = [gap for gaps in deals.values() for gap in gaps]
    if not gaps:
        return Verdict("undecided", 0, None, None, None)
    # (a gap lies in [-spread, spread]: mapped onto [0, 1] and back; the threshold 0 is 1/2,
    # the point the sequence bets against and tracks exactly)
    sequence = ConfidenceSequence(1 - rubric.confidence, centre=0.5)
    for same_deal in deals.values():
        sequence.add((sum(same_deal) / len(same_deal) + spread) / (2 * spread))
    found = sequence.interval()
    mean, low, high = ((v * 2 - 1) * spread for v in (found.mean, found.low, found.high))
    verdict = "undecided"
    if len(gaps) >= rubric.games:  # (the interval's ends are ruled out: an end at 1/2 has ruled 0 out)
        verdict = "pass" if found.high <= 0.5 else "fail" if found.low >= 0.5 else "undecided"
    return Verdict(verdict, len(gaps), mean, low, high)


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    team: str
    email: str
    revoked: bool
    versions: int
    latest: str
    """``v3 admitted`` (or ``-``)."""
    playing: str
    final: str
    """The version in the final (the snapshot once the deadline has passed; ``-`` for none)."""
    final_sha256: str
    games: int
    games_with_faults: int
    """Games in which their bot had at least one fault (as the board counts them)."""
    rating: float | None
    rank: int | None
    last_submission: float | None
    verdicts: tuple[Verdict, ...]
    deadline: float | None = None
    """Their deadline (an extension, else the class's); None without a final."""
    counted_to: float | None = None
    """The grades count what was played up to this time (their deadline, once passed); None: up to now."""
    in_final: str = ""
    """In the final or left out, and why (:meth:`participants.final.Final.field`)."""
    final_result: Mapping[str, Any] | None = None
    """Their row of the final's standings (rank, avg_placing, the interval), once it has results."""

    @property
    def submitted(self) -> bool:
        return self.versions > 0

    @property
    def faults_per_game(self) -> float | None:
        """The share of their games with a fault (0 to 1)."""
        return self.games_with_faults / self.games if self.games else None


def faulty(game: Mapping[str, Any], seat: int) -> bool:
    """A seat had a fault in this game: a timeout, a refused answer, a bot error, a default move,
    a disconnect, a bad status (the board's faults of a game). Counted once a game, everywhere."""
    return bool((game.get("faults") or [None] * len(game["bots"]))[seat])


def rows(roster: Roster, games: Sequence[Mapping[str, Any]], standings: Sequence[Mapping[str, Any]],
         rubrics: Sequence[Rubric] = (), ratings: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
         now: float | None = None) -> list[Row]:
    """Every participant's row, by name. Once a participant's deadline has passed, their row counts
    only what was played and submitted up to it (``games`` carry the time they were ``recorded``;
    ``ratings``, each bot's rating after each of its games, give the rating then): the same row
    however long the ladder plays on. With ``grade_on = "final"`` the rubrics count the final's games."""
    from participants.roster import split_bot

    now = roster.now() if now is None else now
    final = Final(roster)
    try:
        plan = final.plan()
    except FinalError:
        plan = None
    owners = {person.name for person in roster.participants()}

    def owner(bot: str) -> str | None:  # (a version, NAME.vN; or their own bot, connected with their token: NAME)
        found = split_bot(bot)
        return found[0] if found is not None else bot if bot in owners else None

    live = frozenset(bot for game in games for bot in game["bots"] if bot in owners)
    places: dict[str, Place] = {}
    if plan is not None:
        try:
            places = {p.participant: p for p in final.field(live=live)}
            if final.fixed(now):  # (the snapshot taken at the deadline is what enters)
                fixed = {e.participant: e for e in final.snapshot(now) or []}
                places = {name: p if p.entry == fixed.get(name) else Place(name, fixed.get(name), (
                    f"in: v{fixed[name].number} (the snapshot at the deadline)" if name in fixed else p.why))
                    for name, p in places.items()}
        except FinalError:
            places = {}
    cutoffs = {name: plan.deadline_for(name) for name in owners} if plan is not None else {}
    cutoffs = {name: when for name, when in cutoffs.items() if now >= when}
    recorded = {g["game_id"]: float(g.get("recorded") or 0.0) for g in games if "game_id" in g}
    final_standings = final.standings() if plan is not None else None
    final_rows = {r["bot"]: r for r in (final_standings or {}).get("standings", [])}
    graded_games: Sequence[Mapping[str, Any]] | None = None
    if plan is not None and plan.grade_on == "final":
        graded_games = final.games()
    playing = {v.participant: v for v in roster.active()}
    by_bot = {row["bot"]: row for row in standings}
    played: dict[str, int] = {}
    faulty_games: dict[str, int] = {}
    for game in games:
        for seat, bot in enumerate(game["bots"]):
            name = owner(bot)
            if name is None or (name in cutoffs and recorded.get(game.get("game_id", ""), 0.0) > cutoffs[name]):
                continue
            played[name] = played.get(name, 0) + 1
            if faulty(game, seat):
                faulty_games[name] = faulty_games.get(name, 0) + 1
    made = []
    windows: dict[float | None, list[Mapping[str, Any]]] = {}
    for person in roster.participants():
        cutoff = cutoffs.get(person.name)
        versions = [v for v in roster.versions(person.name) if cutoff is None or v.created <= cutoff]
        active = playing.get(person.name)
        place = places.get(person.name)
        entry = place.entry if place is not None else None
        own_games = played.get(person.name, 0)
        live_bot = person.name if person.name in live else None
        if cutoff is not None:  # (the deadline passed: the version in the final, else their own bot)
            graded = entry.bot if entry is not None else live_bot
            rating, rank = _rating_at(graded, ratings or {}, recorded, cutoff)
        else:
            graded = active.bot if active else live_bot
            standing = by_bot.get(graded or "")
            rating = None if standing is None else standing.get("rating_ordinal")
            rank = None if standing is None else standing.get("rank")
        if graded_games is not None:
            judged = tuple(judge(r, entry.bot if entry else None, graded_games) for r in rubrics)
        else:
            if cutoff not in windows:  # (one window per deadline, not one per participant)
                windows[cutoff] = [g for g in games if cutoff is None
                                   or recorded.get(g.get("game_id", ""), 0.0) <= cutoff]
            judged = tuple(judge(r, graded, windows[cutoff]) for r in rubrics)
        made.append(Row(
            name=person.name, team=person.team, email=person.email, revoked=person.revoked, versions=len(versions),
            latest=(f"v{versions[-1].number} {versions[-1].status}"
                    + (" with a warning" if versions[-1].reason.startswith("warning: ") else "")) if versions else "-",
            playing=f"v{active.number}" if active else "-",
            final=f"v{entry.number}" if entry else "-", final_sha256=entry.sha256 if entry else "",
            games=own_games, games_with_faults=faulty_games.get(person.name, 0), rating=rating, rank=rank,
            last_submission=versions[-1].created if versions else None, verdicts=judged,
            deadline=plan.deadline_for(person.name) if plan is not None else None, counted_to=cutoff,
            in_final=place.why if place is not None else "",
            final_result=final_rows.get(entry.bot) if entry is not None else None))
    return made


def _rating_at(bot: str | None, ratings: Mapping[str, Sequence[Mapping[str, Any]]], recorded: Mapping[str, float],
               cutoff: float) -> tuple[float | None, int | None]:
    """``bot``'s rating (mu - 3 sigma) after its last game recorded by ``cutoff``, and its rank then
    among the bots rated by then."""
    then: dict[str, float] = {}
    for name, history in ratings.items():
        before = [r for r in history if recorded.get(r["game_id"], float("inf")) <= cutoff]
        if before:
            then[name] = round(before[-1]["mu"] - 3 * before[-1]["sigma"], 4)
    if bot is None or bot not in then:
        return None, None
    return then[bot], 1 + sum(1 for other, value in then.items() if value > then[bot] and other != bot)


COLUMNS = ("name", "team", "email", "submitted", "versions", "latest", "final", "final_sha256", "deadline_utc",
           "counted_to_utc", "games", "games_with_faults", "rating", "rank", "last_submission_utc", "in_final",
           "final_rank", "final_avg_placing", "final_beaten", "final_beaten_low", "final_beaten_high")
"""The grade sheet's columns before the rubrics' (all as of each participant's deadline, once passed)."""


def to_csv(table: Sequence[Row], rubrics: Sequence[Rubric]) -> str:
    """The dashboard as CSV, one participant a line (for a gradebook). Once the deadlines have
    passed (and the final is played), the same bytes whenever it is made."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([*COLUMNS, *(f"{r.name}" for r in rubrics), *(f"{r.name} games" for r in rubrics)])
    for row in table:
        result = row.final_result or {}
        writer.writerow([_cell(v) for v in [
            row.name, row.team, row.email, "yes" if row.submitted else "no", row.versions,
            *(_none(v) for v in (row.latest, row.final)), row.final_sha256, _when(row.deadline),
            _when(row.counted_to), row.games, row.games_with_faults,
            "" if row.rating is None else f"{row.rating:.2f}", "" if row.rank is None else row.rank,
            _when(row.last_submission), row.in_final,
            *("" if result.get(k) is None else result[k] for k in ("rank", "avg_placing", "beaten", "beaten_low",
                                                                   "beaten_high")),
            *(v.verdict for v in row.verdicts), *(v.games for v in row.verdicts)]])
    return out.getvalue()


def _when(value: float | None) -> str:
    return "" if value is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(value))


def _none(value: str) -> str:
    """The page's "-" (no version) is an empty cell: a "-" would be quoted as a formula ('-)."""
    return "" if value == "-" else value


def _cell(value: Any) -> Any:
    """A text cell a spreadsheet would take for a formula (a team named ``=HYPERLINK(...)``) is quoted."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@") else value
