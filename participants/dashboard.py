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
from participants.final import Final, FinalError
from participants.roster import Roster, RosterError

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


def read_rubrics(folder: str | Path) -> list[Rubric]:
    """The roster's ``rubric.toml`` (none: an empty list)."""
    path = Path(folder) / RUBRIC_FILE
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
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
    faults_per_game: float | None
    rating: float | None
    rank: int | None
    last_submission: float | None
    verdicts: tuple[Verdict, ...]

    @property
    def submitted(self) -> bool:
        return self.versions > 0


def rows(roster: Roster, games: Sequence[Mapping[str, Any]], standings: Sequence[Mapping[str, Any]],
         rubrics: Sequence[Rubric] = ()) -> list[Row]:
    """Every participant's row, by name."""
    from participants.roster import split_bot

    final = Final(roster)
    try:
        entries = final.snapshot() if final.past_deadline() else None
    except FinalError:
        entries = None
    if entries is None:
        try:
            plan = final.plan()
        except FinalError:
            plan = None
        entries = final.entrants_now(plan.deadline) if plan is not None else []
    in_final = {e.participant: e for e in entries}
    playing = {v.participant: v for v in roster.active()}
    by_bot = {row["bot"]: row for row in standings}
    people = roster.participants()
    names = {person.name for person in people}
    played: dict[str, int] = {}
    faulty: dict[str, int] = {}
    for game in games:
        for seat, bot in enumerate(game["bots"]):
            owner = split_bot(bot)  # (a version, NAME.vN; or their own bot, connected with their token: NAME)
            name = owner[0] if owner is not None else bot if bot in names else None
            if name is None:
                continue
            played[name] = played.get(name, 0) + 1
            if (game.get("faults") or [None] * len(game["bots"]))[seat]:
                faulty[name] = faulty.get(name, 0) + 1
    made = []
    for person in people:
        versions = roster.versions(person.name)
        active = playing.get(person.name)
        entry = in_final.get(person.name)
        graded = entry.bot if entry is not None and final.past_deadline() else active.bot if active else None
        standing = by_bot.get(active.bot if active else person.name)
        count = played.get(person.name, 0)
        made.append(Row(
            name=person.name, team=person.team, email=person.email, revoked=person.revoked, versions=len(versions),
            latest=f"v{versions[-1].number} {versions[-1].status}" if versions else "-",
            playing=f"v{active.number}" if active else "-",
            final=f"v{entry.number}" if entry else "-", final_sha256=entry.sha256 if entry else "",
            games=count, faults_per_game=faulty.get(person.name, 0) / count if count else None,
            rating=None if standing is None else standing.get("rating_ordinal"),
            rank=None if standing is None else standing.get("rank"),
            last_submission=versions[-1].created if versions else None,
            verdicts=tuple(judge(r, graded, games) for r in rubrics)))
    return made


def to_csv(table: Sequence[Row], rubrics: Sequence[Rubric]) -> str:
    """The dashboard as CSV, one participant a line (for a gradebook)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["name", "team", "email", "submitted", "versions", "latest", "playing", "final", "final_sha256",
                     "games", "faults_per_game", "rating", "rank", "last_submission_utc",
                     *(f"{r.name}" for r in rubrics), *(f"{r.name} games" for r in rubrics)])
    for row in table:
        writer.writerow([_cell(v) for v in [
            row.name, row.team, row.email, "yes" if row.submitted else "no", row.versions,
            *(_none(v) for v in (row.latest, row.playing, row.final)), row.final_sha256, row.games,
            "" if row.faults_per_game is None else f"{row.faults_per_game:.3f}",
            "" if row.rating is None else f"{row.rating:.2f}", "" if row.rank is None else row.rank,
            "" if row.last_submission is None else time.strftime("%Y-%m-%d %H:%M:%S",
                                                                   time.gmtime(row.last_submission)),
            *(v.verdict for v in row.verdicts), *(v.games for v in row.verdicts)]])
    return out.getvalue()


def _none(value: str) -> str:
    """The page's "-" (no version) is an empty cell: a "-" would be quoted as a formula ('-)."""
    return "" if value == "-" else value


def _cell(value: Any) -> Any:
    """A text cell a spreadsheet would take for a formula (a team named ``=HYPERLINK(...)``) is quoted."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@") else value
