"""The deadline and the final.

The organizer writes ``final.toml`` in the roster folder::

    deadline = 2026-12-11T18:00:00Z    # a TOML date-time with its time zone
    games_per_bot = 24                 # the final's balanced schedule: games for each version
    table_size = 3
    house = ["random"]                 # house bots that play the final too (optional)
    seed = 7                           # optional: a reproducible final (anyone who knows it knows every deal)
    short_game = true                  # optional, as the ladder's [flags]

Until the deadline a participant may choose which of their admitted versions enters the
final (else it is the one they play on the ladder: the pinned one, else the newest admitted).
A version submitted after the deadline is **practice only**: it plays on the ladder, never in
the final. Once the deadline has passed, the first look at the entrants writes the
**snapshot** (``final/snapshot.json``: each participant's version, its hash and time) and
every later look reads it, so what enters the final cannot change afterwards.

``craits final run ROSTER`` plays the final as a tournament of the snapshot's versions (a
balanced schedule, fresh ratings, in ``final/out``), beside any running ladder. Its results
are the organizer's until ``craits final publish ROSTER``: the participants' pages show
nothing of them before.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from participants.roster import Roster, RosterError, Version
from participants.tables import RosterTables
from server.game.policies import POLICY_NAMES
from tournaments.schedule import balanced_arithmetic_problem, buildable_games_per_bot, workable_games_per_bot

PLAN_FILE = "final.toml"
PLAN_KEYS = ("deadline", "games_per_bot", "table_size", "house", "seed", "short_game", "concurrency")

SCHEMA = """
CREATE TABLE IF NOT EXISTS final_choices (participant TEXT PRIMARY KEY, number INTEGER NOT NULL, chosen REAL NOT NULL);
CREATE TABLE IF NOT EXISTS final_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class FinalError(RosterError):
    """The final cannot be set up or chosen as asked (the message says why)."""


@dataclass(frozen=True, slots=True)
class Plan:
    deadline: float
    """Seconds since the epoch."""
    games_per_bot: int = 24
    table_size: int = 3
    house: tuple[str, ...] = ()
    seed: int | None = None
    """None: the final's deals come from a secret key; set: reproducible (and known to anyone told it)."""
    short_game: bool = True
    concurrency: int = 2

    @property
    def deadline_text(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.deadline))


@dataclass(frozen=True, slots=True)
class Entry:
    """A participant's version in the final, as it was at the deadline."""

    participant: str
    number: int
    sha256: str
    submitted: float
    chosen: bool
    """Chosen by the participant (else: the one they played at the deadline)."""

    @property
    def bot(self) -> str:
        return f"{self.participant}.v{self.number}"


def read_plan(folder: str | Path) -> Plan | None:
    """The roster's ``final.toml`` (None when there is none); a mistake names the key."""
    path = Path(folder) / PLAN_FILE
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise FinalError(f"{path}: {err}") from None
    if unknown := sorted(set(data) - set(PLAN_KEYS)):
        raise FinalError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(PLAN_KEYS)})")
    deadline = data.get("deadline")
    if isinstance(deadline, str):
        try:
            deadline = dt.datetime.fromisoformat(deadline.replace("Z", "+00:00"))
        except ValueError:
            raise FinalError(f"{path}: deadline: {deadline!r} is not a date and time like 2026-12-11T18:00:00Z") from None
    if not isinstance(deadline, dt.datetime):
        raise FinalError(f"{path}: deadline: give a date and time with its zone, like deadline = 2026-12-11T18:00:00Z")
    if deadline.tzinfo is None:
        raise FinalError(f"{path}: deadline: add the time zone (Z for UTC, or like +01:00): {deadline.isoformat()}")
    values: dict[str, Any] = {"deadline": deadline.timestamp()}
    for key, low, high in (("games_per_bot", 1, 10_000), ("table_size", 2, 5), ("seed", 0, 2**62), ("concurrency", 1, 64)):
        if key in data:
            if not isinstance(data[key], int) or isinstance(data[key], bool) or not low <= data[key] <= high:
                raise FinalError(f"{path}: {key}: a whole number from {low} to {high}, got {data[key]!r}")
            values[key] = data[key]
    if "house" in data:
        house = data["house"]
        if not isinstance(house, list) or any(h not in POLICY_NAMES for h in house):
            raise FinalError(f"{path}: house: a list of the house bots {', '.join(POLICY_NAMES)}, got {house!r}")
        values["house"] = tuple(house)
    if "short_game" in data:
        if not isinstance(data["short_game"], bool):
            raise FinalError(f"{path}: short_game: true or false")
        values["short_game"] = data["short_game"]
    return Plan(**values)


def final_of(out_dir: Path | None) -> Final | None:
    """The final whose results folder ``out_dir`` is (``ROSTER/final/out``, where ``craits final
    run`` plays it), None for any other folder: a board of that folder shows the final's
    results, which are the organizer's until published."""
    if out_dir is None:
        return None
    folder = Path(out_dir).resolve()
    if folder.name != "out" or folder.parent.name != "final":
        return None
    try:
        return Final(Roster(folder.parent.parent))
    except RosterError:  # (a folder named so by chance: no roster there)
        return None


class Final(RosterTables):
    """A roster's final: the plan, the participants' choices, the snapshot, publication."""

    SCHEMA = SCHEMA

    def __init__(self, roster: Roster) -> None:
        super().__init__(roster)
        self.folder = roster.folder / "final"

    def plan(self) -> Plan | None:
        return read_plan(self.roster.folder)

    def _plan(self) -> Plan:
        plan = self.plan()
        if plan is None:
            raise FinalError(f"no final is planned: write {self.roster.folder / PLAN_FILE} (docs/teachers.md)")
        return plan

    def past_deadline(self, now: float | None = None) -> bool:
        plan = self.plan()
        return plan is not None and (time.time() if now is None else now) >= plan.deadline

    def practice_only(self, version: Version) -> bool:
        """Submitted after the deadline: it plays on the ladder, never in the final."""
        plan = self.plan()
        return plan is not None and version.created > plan.deadline

    # ------------------------------------------------------------------ choosing

    def choose(self, name: str, number: int | None, now: float | None = None) -> None:
        """``name`` enters version ``number`` in the final (None: the one they play); before the deadline only."""
        plan = self._plan()
        if (time.time() if now is None else now) >= plan.deadline:
            raise FinalError(f"the deadline ({plan.deadline_text}) has passed: the final's versions are fixed")
        with self._db() as db:
            if number is None:
                db.execute("DELETE FROM final_choices WHERE participant = ?", (name,))
                return
        version = self.roster.version(name, number)
        if version is None or version.status != "admitted":
            raise FinalError(f"{name} has no admitted version v{number}")
        with self._db() as db:
            db.execute("INSERT INTO final_choices (participant, number, chosen) VALUES (?, ?, ?) "
                       "ON CONFLICT (participant) DO UPDATE SET number = excluded.number, chosen = excluded.chosen",
                       (name, number, time.time()))

    def choice(self, name: str) -> int | None:
        with self._db() as db:
            row = db.execute("SELECT number FROM final_choices WHERE participant = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    # ------------------------------------------------------------------ the entrants

    def entrants_now(self, deadline: float) -> list[Entry]:
        """Each participant's final version as things stand: their choice, else the pinned
        version, else their newest admitted, among the versions submitted by ``deadline``."""
        chosen = []
        for person in self.roster.participants():
            if person.revoked:
                continue
            before = [v for v in self.roster.versions(person.name) if v.status == "admitted" and v.created <= deadline]
            pick = self.choice(person.name)
            picked = [v for v in before if v.number == pick] or [v for v in before if v.number == person.pinned]
            if picked or before:
                v = (picked or before)[-1]
                chosen.append(Entry(person.name, v.number, v.sha256, v.created, bool(pick == v.number)))
        return chosen

    def snapshot(self, now: float | None = None) -> list[Entry] | None:
        """The versions in the final, fixed at the first look after the deadline (written to
        ``final/snapshot.json``); None before the deadline."""
        plan = self._plan()
        path = self.folder / "snapshot.json"
        if path.is_file():
            return [Entry(**e) for e in json.loads(path.read_text(encoding="utf-8"))["entries"]]
        if (time.time() if now is None else now) < plan.deadline:
            return None
        if any(v.created <= plan.deadline for v in self.roster.pending()):
            raise FinalError("versions submitted before the deadline are still being built: try again in a minute")
        entries = self.entrants_now(plan.deadline)
        self.folder.mkdir(exist_ok=True)
        temp = path.with_suffix(".part")
        temp.write_text(json.dumps({"deadline": plan.deadline, "taken": time.time(),
                                    "entries": [asdict(e) for e in entries]}, indent=1), encoding="utf-8")
        os.replace(temp, path)
        return entries

    # ------------------------------------------------------------------ the tournament

    def schedule_problem(self, entrants: int) -> str | None:
        """Why the plan's games_per_bot cannot be played by these entrants (plus its house
        bots) at its tables, and the numbers that can, naming the plan's file; None: it fits."""
        plan = self._plan()
        bots = entrants + len(plan.house)
        if bots < plan.table_size:
            return None  # (said as such where it matters)
        problem = balanced_arithmetic_problem(bots, plan.table_size, plan.games_per_bot)
        if problem is None:
            return None
        works = (buildable_games_per_bot(bots, plan.table_size, plan.games_per_bot, plan.seed or 0)
                 or workable_games_per_bot(bots, plan.table_size, plan.games_per_bot, 3))
        return (f"{self.roster.folder / PLAN_FILE}: games_per_bot = {plan.games_per_bot} does not fit {entrants} "
                f"entrant(s) and {len(plan.house)} house bot(s) at tables of {plan.table_size} ({problem}): "
                f"set games_per_bot = {', '.join(map(str, works[:-1]))} or {works[-1]}")

    def tournament_file(self, now: float | None = None) -> Path:
        """The final's tournament file (written beside the snapshot): the snapshot's versions
        and the plan's house bots, a balanced schedule."""
        plan = self._plan()
        entries = self.snapshot(now)
        if entries is None:
            raise FinalError(f"the deadline ({plan.deadline_text}) has not passed yet")
        bots = []
        for entry in entries:
            version = self.roster.version(entry.participant, entry.number)
            assert version is not None
            bots.append(f"[[bots]]\nname = {json.dumps(entry.bot)}\ncommand = {json.dumps(list(version.command))}\n"
                        f"cwd = {json.dumps(str(self.roster.version_dir(version).resolve()))}\n")  # (the file is elsewhere)
        bots += [f'[[bots]]\nname = "house-{h}-{i + 1}"\nbuiltin = "{h}"\n' for i, h in enumerate(plan.house)]
        if len(bots) < plan.table_size:
            raise FinalError(f"{len(bots)} entrant(s) cannot fill a table of {plan.table_size}")
        if problem := self.schedule_problem(len(entries)):
            raise FinalError(problem)
        seed = "" if plan.seed is None else f"seed = {plan.seed}\n"
        text = (f'name = "final"\ntable_size = {plan.table_size}\nschedule = "balanced"\n'
                f"games_per_bot = {plan.games_per_bot}\n{seed}concurrency = {plan.concurrency}\n"
                f"[flags]\nshort_game = {json.dumps(plan.short_game)}\n\n" + "\n".join(bots))
        path = self.folder / "final.toml"
        path.write_text(text, encoding="utf-8")
        return path

    @property
    def out_dir(self) -> Path:
        return self.folder / "out"

    def standings(self) -> dict[str, Any] | None:
        """The final's standings as written by its tournament (None before it has any)."""
        path = self.out_dir / "standings.json"
        if not path.is_file():
            return None
        try:
            return dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None

    def publish(self, published: bool = True) -> None:
        with self._db() as db:
            db.execute("INSERT INTO final_state (key, value) VALUES ('published', ?) "
                       "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (json.dumps(published),))

    @property
    def published(self) -> bool:
        with self._db() as db:
            row = db.execute("SELECT value FROM final_state WHERE key = 'published'").fetchone()
        return bool(row and json.loads(row[0]))

    def results_for(self, who: str) -> dict[str, Any] | None:
        """What ``who`` may see of the final's results: all of them for the organizer, and for a
        participant only once they are published (None otherwise)."""
        from participants.roster import ORGANIZER

        if who != ORGANIZER and not self.published:
            return None
        return self.standings()
