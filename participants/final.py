"""The deadline and the final.

The organizer writes ``final.toml`` in the roster folder::

    deadline = 2026-12-11T18:00:00Z    # a TOML date-time with its time zone
    games_per_bot = 24                 # the final's balanced schedule: games for each version
    table_size = 3
    house = ["random"]                 # house bots that play the final too (optional)
    seed = 7                           # optional: a reproducible final (anyone who knows it knows every deal)
    short_game = true                  # optional, as the ladder's [flags]
    grade_on = "deadline"              # the grades: the ladder's games up to the deadline, or "final"

``craits final deadline ROSTER WHEN [--for NAME]`` moves the deadline (for everyone, or one
participant's extension) without editing the file: each change is kept in a log the dashboard
shows. A deadline moved once the entrants are fixed reopens the final (``--reopen``): the
snapshot is set aside and published results are hidden until it is run and published again.

Until the deadline a participant may choose which of their admitted versions enters the
final (else it is the one they play on the ladder: the pinned one, else the newest admitted).
A version submitted after the deadline is **practice only**: it plays on the ladder, never in
the final. Once the deadline has passed, the first look at the entrants writes the
**snapshot** (``final/snapshot.json``: each participant's version, its hash and time) and
every later look reads it, so what enters the final cannot change afterwards.

``craits final run ROSTER`` plays the final as a tournament of the snapshot's versions (a
balanced schedule, fresh ratings, in ``final/out``), beside any running ladder; run again
after a stop or a crash, it goes on from the games recorded. Its results are the organizer's
until ``craits final publish ROSTER``: the participants' pages show nothing of them before.

A roster kept in PostgreSQL keeps all of this in its database (:class:`participants.tables.RosterFiles`),
so web processes and commands on any machine agree: the plan (stored by ``craits final plan``
from any machine; no file's time decides, and a different ``final.toml`` in a folder is
reported, not used), the deadlines, the snapshot, and the results, copied there game by game
while ``craits final run`` plays (:class:`ResultsKeeper`), with what another machine needs to
go on with them: a final killed on one machine, its folder gone with it, is resumed by ``craits
final run`` from any folder of the roster (:meth:`Final.take_over`).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import socket
import sqlite3
import time
import tomllib
import zlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from participants import tables
from participants.roster import Roster, RosterError, Version
from participants.tables import RosterFiles, RosterTables, database_now
from server.game.policies import POLICY_NAMES
from tournaments.schedule import balanced_arithmetic_problem, buildable_games_per_bot, workable_games_per_bot

PLAN_FILE = "final.toml"
SNAPSHOT = "final/snapshot.json"
STANDINGS = "final/out/standings.json"
"""The final's standings so far (:class:`ResultsKeeper`; in PostgreSQL a row of the roster's database)."""
GAMES = "final/games.json"
"""In PostgreSQL: the final's games so far as the grades count them (:meth:`Final.games`, :class:`ResultsKeeper`)."""
PLAYED_IN = "final/played_in"
"""In PostgreSQL: the machine and folder whose ``craits final run`` recorded the results kept (the organizer's only)."""
RUN_COPY = "final/tournament"
"""In PostgreSQL: the final's tournament as last kept (its database, compressed, and its replays
by hash), from which another machine's ``craits final run`` goes on (:meth:`Final.take_over`)."""
RUNNING = "final/running"
"""In PostgreSQL: the place of the ``craits final run`` playing now and until when it holds the
final (renewed while it plays, as a lease is: :data:`participants.tables.LEASE_S`)."""
PLAN_KEYS = ("deadline", "games_per_bot", "table_size", "house", "seed", "short_game", "concurrency", "grade_on")
GRADE_ON = ("deadline", "final")
"""What the grades count: the ladder's games up to each participant's deadline, or the final's games."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS final_choices (participant TEXT PRIMARY KEY, number INTEGER NOT NULL, chosen REAL NOT NULL);
CREATE TABLE IF NOT EXISTS final_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS final_deadlines (id INTEGER PRIMARY KEY, participant TEXT NOT NULL, deadline REAL NOT NULL,
                                            changed REAL NOT NULL, note TEXT NOT NULL DEFAULT '');
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
    grade_on: str = "deadline"
    extensions: tuple[tuple[str, float], ...] = ()
    """(participant, their own deadline): extensions given with ``craits final deadline --for``."""
    source: str = field(default="", compare=False)
    """Where it was read: the roster folder's final.toml, or the copy stored in the roster's database."""
    note: str = field(default="", compare=False)
    """A ``final.toml`` in this folder that says something else than the stored plan, which holds:
    what to do about it (``craits final show`` and the dashboard say it)."""

    @property
    def deadline_text(self) -> str:
        return when_text(self.deadline)

    def deadline_for(self, name: str) -> float:
        """``name``'s deadline: their extension, else the class's."""
        return dict(self.extensions).get(name, self.deadline)

    @property
    def last_deadline(self) -> float:
        """When every participant's deadline has passed: the entrants are fixed then."""
        return max([self.deadline, *(d for _, d in self.extensions)])


@dataclass(frozen=True, slots=True)
class DeadlineChange:
    """One line of the deadlines' log."""

    participant: str
    """"" for the whole class."""
    deadline: float
    changed: float
    note: str

    def text(self) -> str:
        who = f"for {self.participant}" if self.participant else "for the class"
        return (f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(self.changed))}: deadline {who} set to "
                f"{when_text(self.deadline)}" + (f" ({self.note})" if self.note else ""))


def when_text(when: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(when))


def parse_when(text: str, now: float | None = None) -> float:
    """A deadline as written on the command line: ``now``, ``+30m`` / ``+2h`` / ``+3d`` from now, or a
    date and time with its zone (``2026-12-11T18:00:00Z``, ``2026-12-11 18:00+01:00``)."""
    now = time.time() if now is None else now
    said = text.strip()
    if said == "now":
        return now
    if said.startswith("+") and said[-1:] in ("m", "h", "d") and said[1:-1].isdigit():
        return now + int(said[1:-1]) * {"m": 60, "h": 3600, "d": 86400}[said[-1]]
    try:
        when = dt.datetime.fromisoformat(said.replace("Z", "+00:00"))
    except ValueError:
        raise FinalError(f"{text!r}: give a date and time with its zone (2026-12-11T18:00:00Z), now, "
                         "or a delay like +30m, +2h, +3d") from None
    if when.tzinfo is None:
        raise FinalError(f"{text!r}: add the time zone (Z for UTC, or like +01:00)")
    return when.timestamp()


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


@dataclass(frozen=True, slots=True)
class Place:
    """A participant's place in the final: their entry, or None and why they are left out."""

    participant: str
    entry: Entry | None
    why: str


def read_plan(roster: Roster | str | Path) -> Plan | None:
    """The roster's ``final.toml`` (None when there is none), from its folder, or for a roster
    kept in PostgreSQL the copy stored in its database (:meth:`RosterFiles.organizer_file`:
    the organizer stores it with ``craits final plan`` from any machine; a different file in
    this folder is reported in :attr:`Plan.note`); a mistake names the key."""
    try:
        found = RosterFiles(roster).organizer_file(PLAN_FILE, check=parse_plan)
    except FinalError:
        raise
    except RosterError as err:
        raise FinalError(str(err)) from None
    if found is None:
        return None
    return replace(parse_plan(found.text, found.source), note=found.note)


def parse_plan(text: str, path: str) -> Plan:
    """The plan a ``final.toml`` says (``path``: where it was read, for the errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
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
    if "grade_on" in data:
        if data["grade_on"] not in GRADE_ON:
            raise FinalError(f"{path}: grade_on: \"deadline\" (the ladder's games up to the deadline) or \"final\" "
                             f"(the final's games), got {data['grade_on']!r}")
        values["grade_on"] = data["grade_on"]
    for key, low, high in (("games_per_bot", 1, 10_000), ("table_size", 2, 5), ("seed", 0, 2**62), ("concurrency", 1, 64)):
        if key in data:
            if not isinstance(data[key], int) or isinstance(data[key], bool) or not low <= data[key] <= high:
                raise FinalError(f"{path}: {key}: a whole number from {low} to {high}, got {data[key]!r}")
            values[key] = data[key]
    if "house" in data:
        house = data["house"]
        if not isinstance(house, list) or any(h not in POLICY_NAMES for h in house):
            raise FinalError(f"{path}: house: a list of the house bots {', '.join(POLICY_NAMES)}, got {house!r}")
        if len(set(house)) < len(house):
            raise FinalError(f"{path}: house: each house bot once (they are named house-NAME, as on the ladder)")
        values["house"] = tuple(house)
    if "short_game" in data:
        if not isinstance(data["short_game"], bool):
            raise FinalError(f"{path}: short_game: true or false")
        values["short_game"] = data["short_game"]
    return Plan(**values, source=path)


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
        self.files = RosterFiles(roster)
        """The plan, the snapshot and (in PostgreSQL) the results: every process of the roster reads the same."""
        self._claimed: str | None = None
        """The mark of this run's claim on playing the final (:meth:`claim`), as last written."""

    def plan(self) -> Plan | None:
        """``final.toml``, with the deadlines set since by ``craits final deadline``."""
        plan = read_plan(self.roster)
        if plan is None:
            return None
        latest = {change.participant: change.deadline for change in self.deadline_log()}
        return replace(plan, deadline=latest.pop("", plan.deadline), extensions=tuple(sorted(latest.items())))

    # ------------------------------------------------------------------ deadlines (kept here: one pair to move)

    def deadline_log(self) -> list[DeadlineChange]:
        """Every change of a deadline, oldest first (the latest per participant holds)."""
        with self._db() as db:
            rows = db.execute("SELECT participant, deadline, changed, note FROM final_deadlines ORDER BY id").fetchall()
        return [DeadlineChange(r[0], float(r[1]), float(r[2]), r[3]) for r in rows]

    def _log_deadline(self, change: DeadlineChange) -> None:
        with self._db() as db:
            db.execute("INSERT INTO final_deadlines (participant, deadline, changed, note) VALUES (?, ?, ?, ?)",
                       (change.participant, change.deadline, change.changed, change.note))

    def set_deadline(self, when: float, name: str = "", *, reopen: bool = False, note: str = "",
                     now: float | None = None) -> str:
        """Move the class's deadline (``name`` ""), or give ``name`` their own; logged. Once the
        entrants are fixed (the snapshot), only with ``reopen``: the snapshot is set aside and
        published results are hidden until the final is run and published again. Returns what
        happened, in words."""
        plan = self._plan()
        now = self.roster.now() if now is None else now
        if name and self.roster.participant(name) is None:
            raise FinalError(f"{name} is not on the roster in {self.roster.folder}")
        fixed = self.files.text(SNAPSHOT) is not None
        moved = replace(plan, deadline=when if not name else plan.deadline,
                        extensions=tuple(sorted({**dict(plan.extensions), **({name: when} if name else {})}.items())))
        said = []
        reopened = fixed and moved.last_deadline > now
        if reopened:
            if not reopen:
                raise FinalError(
                    "the final's entrants were fixed when the deadline passed" + (
                        " and its results are published" if self.published else "")
                    + f": a deadline after now reopens the final (the entrants are taken again at "
                    f"{when_text(moved.last_deadline)}; published results are hidden until you run and publish "
                    "it again). Add --reopen to do that")
            taken = f"final/snapshot-{int(now)}.json"
            self.files.move(SNAPSHOT, taken)
            kept = f"{taken} in the roster's database" if self.files.stored else str(self.files.path(taken))
            said.append(f"the final is reopened: its entrants will be taken again at {when_text(moved.last_deadline)} "
                        f"(the old ones are kept in {kept})")
            if self.published:
                self.publish(False)
                said.append(f"its published results are hidden from the participants until you play it again "
                            f"(craits final run --overwrite {self.roster.folder}) and publish it")
        elif fixed:
            said.append("the final's entrants stay as they were fixed at the deadline" + (
                ", and its published results stand" if self.published else ""))
        note = "; ".join(filter(None, [note, "reopened the final" if reopened else ""]))
        self._log_deadline(DeadlineChange(name, when, now, note))
        who = f"{name}'s deadline" if name else "the deadline"
        return "; ".join([f"{who}: {when_text(when)}" + (" (passed)" if when <= now else " (to come)"), *said])

    def _plan(self) -> Plan:
        plan = self.plan()
        if plan is None:
            raise FinalError(f"no final is planned: write {self.roster.folder / PLAN_FILE} (docs/teachers.md)")
        return plan

    def past_deadline(self, now: float | None = None, name: str = "") -> bool:
        """The class's deadline has passed (``name``: their own deadline)."""
        plan = self.plan()
        return plan is not None and (self.roster.now() if now is None else now) >= plan.deadline_for(name)

    def fixed(self, now: float | None = None) -> bool:
        """Every deadline has passed: the entrants are fixed (the snapshot)."""
        plan = self.plan()
        return plan is not None and (self.roster.now() if now is None else now) >= plan.last_deadline

    def practice_only(self, version: Version) -> bool:
        """Submitted after the participant's deadline: it plays on the ladder, never in the final."""
        plan = self.plan()
        return plan is not None and version.created > plan.deadline_for(version.participant)

    # ------------------------------------------------------------------ choosing

    def choose(self, name: str, number: int | None, now: float | None = None) -> None:
        """``name`` enters version ``number`` in the final (None: the one they play); before the deadline only."""
        plan = self._plan()
        if (self.roster.now() if now is None else now) >= plan.deadline_for(name):
            raise FinalError(f"the deadline ({when_text(plan.deadline_for(name))}) has passed: the final's versions "
                             "are fixed")
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
                       (name, number, database_now(db)))

    def choice(self, name: str) -> int | None:
        with self._db() as db:
            row = db.execute("SELECT number FROM final_choices WHERE participant = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    # ------------------------------------------------------------------ the entrants

    def entrants_now(self, deadline: float | None = None) -> list[Entry]:
        """Each participant's final version as things stand: their choice, else the pinned
        version, else their newest admitted, among the versions submitted by their deadline
        (``deadline``: by then, for everyone)."""
        return [place.entry for place in self.field(deadline) if place.entry is not None]

    def field(self, deadline: float | None = None, live: frozenset[str] = frozenset()) -> list[Place]:
        """Every participant, in the final or left out, and why (``live``: those whose own bot,
        connected with their token, played on the ladder, besides those the roster saw connect)."""
        plan = self._plan()
        live = live | self.roster.live_seen()
        places = []
        everyone = self.roster.versions()
        for person in self.roster.participants():
            by = plan.deadline_for(person.name) if deadline is None else deadline
            if person.revoked:
                places.append(Place(person.name, None, "left out: their token is revoked"))
                continue
            own = [v for v in everyone if v.participant == person.name]
            before = [v for v in own if v.status == "admitted" and v.created <= by]
            pick = self.choice(person.name)
            picked = [v for v in before if v.number == pick] or [v for v in before if v.number == person.pinned]
            if picked or before:
                v = (picked or before)[-1]
                entry = Entry(person.name, v.number, v.sha256, v.created, bool(pick == v.number))
                how = "their choice" if entry.chosen else "the one they played by the deadline"
                places.append(Place(person.name, entry, f"in: v{v.number} ({how})"))
            elif person.name in live:
                places.append(Place(person.name, None, "left out: no admitted version by the deadline (their own "
                                    "bot played on the ladder connected live, but the final plays submitted versions "
                                    "only; it is graded on its ladder games)"))
            elif any(v.created <= by for v in own):
                places.append(Place(person.name, None, "left out: none of their versions submitted by the deadline "
                                    "was admitted"))
            elif own:
                places.append(Place(person.name, None, "left out: every version came after the deadline"))
            else:
                places.append(Place(person.name, None, "left out: nothing submitted"))
        return places

    def snapshot(self, now: float | None = None) -> list[Entry] | None:
        """The versions in the final, fixed at the first look after the deadline (written to
        ``final/snapshot.json``, or in PostgreSQL to the database: the first process to look
        writes it, every other one reads that); None before the deadline."""
        plan = self._plan()
        if (held := self.files.text(SNAPSHOT)) is not None:
            return [Entry(**e) for e in json.loads(held)["entries"]]
        if (self.roster.now() if now is None else now) < plan.last_deadline:
            return None
        if any(v.created <= plan.deadline_for(v.participant) for v in self.roster.pending()):
            raise FinalError("versions submitted before the deadline are still being built: try again in a minute")
        entries = self.entrants_now()
        held = self.files.put(SNAPSHOT, json.dumps({"deadline": plan.deadline, "taken": self.roster.now(),
                                                    "entries": [asdict(e) for e in entries]}, indent=1), first=True)
        return [Entry(**e) for e in json.loads(held)["entries"]]

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
            raise FinalError(f"the deadline ({when_text(plan.last_deadline)}) has not passed yet")
        bots = []
        for entry in entries:
            version = self.roster.version(entry.participant, entry.number)
            assert version is not None
            bots.append(f"[[bots]]\nname = {json.dumps(entry.bot)}\ncommand = {json.dumps(list(version.command))}\n"
                        f"cwd = {json.dumps(str(self.roster.bot_dir(version).resolve()))}\n")  # (the file is elsewhere)
        bots += [f'[[bots]]\nname = "house-{h}"\nbuiltin = "{h}"\n' for h in plan.house]  # (named as on the ladder)
        if len(bots) < plan.table_size:
            raise FinalError(f"{len(bots)} entrant(s) cannot fill a table of {plan.table_size}")
        if problem := self.schedule_problem(len(entries)):
            raise FinalError(problem)
        seed = "" if plan.seed is None else f"seed = {plan.seed}\n"
        text = (f'name = "final"\ntable_size = {plan.table_size}\nschedule = "balanced"\n'
                f"games_per_bot = {plan.games_per_bot}\n{seed}concurrency = {plan.concurrency}\n"
                f"[flags]\nshort_game = {json.dumps(plan.short_game)}\n\n" + "\n".join(bots))
        self.folder.mkdir(mode=0o700, exist_ok=True)
        path = self.folder / "final.toml"
        path.write_text(text, encoding="utf-8")
        return path

    @property
    def out_dir(self) -> Path:
        return self.folder / "out"

    def standings(self) -> dict[str, Any] | None:
        """The final's standings as written by its tournament (None before it has any)."""
        try:
            held = self.files.text(STANDINGS)
            return None if held is None else dict(json.loads(held))
        except (OSError, ValueError):
            return None

    def games(self) -> list[dict[str, Any]]:
        """The final's recorded games as the board's rows hold them (bots, placings, faults,
        aborted, recorded): what the grades count with ``grade_on = "final"``."""
        if self.files.stored:
            held = self.files.text(GAMES)
            return [] if held is None else list(json.loads(held))
        return self._games_played_here()

    def progress(self) -> tuple[int, int, bool] | None:
        """(games recorded, games scheduled, complete) of the final's results so far; None: none yet."""
        standings = self.standings()
        return None if standings is None else progress_of(standings)

    def forget_results(self) -> None:
        """No results kept (a final played again from the start: ``--overwrite``)."""
        self.files.delete(STANDINGS)
        if self.files.stored:
            self.files.delete(GAMES)
            self.files.delete(PLAYED_IN)
            self.files.delete(RUN_COPY)

    @property
    def run_place(self) -> str:
        """This machine and this folder's results folder, as :data:`PLAYED_IN` names them."""
        return f"{socket.gethostname()}:{self.out_dir.resolve()}"

    def played_elsewhere(self) -> str | None:
        """In PostgreSQL, the machine and folder where the results kept were played when it is not
        this folder: a run here goes on from their copy (:meth:`take_over`), not from a final this
        folder may hold from before (another machine has played on since)."""
        from server.storage.store import Store

        if not self.files.stored or self.standings() is None:
            return None
        where = self.files.text(PLAYED_IN)
        if where == self.run_place or (where is None and (self.out_dir / Store.FILENAME).is_file()):
            return None
        return where or "another machine"

    def playing_elsewhere(self, now: float | None = None) -> tuple[str, float, float] | None:
        """In PostgreSQL, where a ``craits final run`` of another folder plays the final now, how
        many seconds ago it last renewed its claim and for how many more that holds (None: none
        does, or it stopped, or died longer ago than its claim lasts). The claim's times are the
        database's clock (:meth:`RosterFiles.now`), not any machine's."""
        if not self.files.stored or (held := self.files.text(RUNNING)) is None:
            return None
        mark = json.loads(held)
        now = self.files.now() if now is None else now
        if mark["where"] == self.run_place or float(mark["until"]) <= now:
            return None
        return str(mark["where"]), now - float(mark["renewed"]), float(mark["until"]) - now

    def claim(self) -> tables.Held | None:
        """In PostgreSQL, this run's claim on playing the final, taken, or renewed (for
        ``CRAITS_LEASE_S`` from now) if this object took it, unless another run holds it, or took
        it while this one stalled: who, then. None: this run holds it."""
        got = self.files.claim(RUNNING, self.run_place, tables.LEASE_S, renewing=self._claimed)
        if isinstance(got, tables.Held):
            return got
        self._claimed = got
        return None

    def let_go(self) -> None:
        """This run's claim given up (it stopped): another folder may go on with the final at once."""
        if self._claimed is not None:
            self.files.let_go(RUNNING, self._claimed)
            self._claimed = None

    def take_over(self, tournament_file: Path) -> tuple[int, int, str] | None:
        """In PostgreSQL, the final played elsewhere (:meth:`played_elsewhere`) put in this folder
        from the copy its run kept in the roster's database, to be resumed here: its tournament's
        database as of its last recorded game (schedule, deal key, results) and those games'
        replays, its bots read from ``tournament_file`` (this machine's folders of the same
        versions). Returns (games recorded, games scheduled, where they were played); None when
        the database holds no such copy (results kept by an older ``craits final run``)."""
        from server.storage.store import Store
        from tournaments.pages import REPLAY_DIR

        held = self.files.text(RUN_COPY)
        if not self.files.stored or held is None:
            return None
        copy = json.loads(held)
        replays = self.out_dir / REPLAY_DIR
        replays.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name, digest in copy["replays"].items():
            if Path(name).name != name or not self.roster.fetch_kept(digest, replays / name):  # type: ignore[attr-defined]
                raise FinalError(f"the final's copy in the roster's database lacks the replay {name!r}: "
                                 "add --overwrite to play the final afresh here")
        db = self.out_dir / Store.FILENAME
        temp = db.with_name(f".{db.name}.{os.getpid()}")
        temp.write_bytes(zlib.decompress(base64.b64decode(copy["db"])))
        with Store(temp) as store:  # (its bots as this machine has them; the schedule, deals and results as kept)
            store.set_bots([], tournament_file.read_text(encoding="utf-8"), str(tournament_file.resolve()))
            done, total = store.counts()
        for stale in ("-wal", "-shm"):  # (of a final this folder played before the other machine went on)
            db.with_name(db.name + stale).unlink(missing_ok=True)
        temp.replace(db)  # (whole, last: a folder half taken over holds no final to resume)
        return done, total, str(copy.get("played_in") or "another machine")

    def keeper(self, *, besides: float | None = None) -> ResultsKeeper:
        """What keeps the results of the final played here where every process reads them, as
        they are recorded (``besides``: when an earlier run, being replaced, was started)."""
        return ResultsKeeper(self, besides)

    def _games_played_here(self) -> list[dict[str, Any]]:
        from server.storage.store import Store, StoreError

        path = self.out_dir / Store.FILENAME
        if not path.is_file():
            return []
        try:
            store = Store(path, readonly=True)
        except StoreError:
            return []
        try:
            return _games_of(store)
        finally:
            store.close()

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


def progress_of(standings: dict[str, Any]) -> tuple[int, int, bool]:
    """(games recorded, games scheduled, complete) of a final's standings."""
    return (int(standings.get("games_recorded", 0)), int(standings.get("games_scheduled", 0)),
            bool(standings.get("complete")))


def _games_of(store: Any) -> list[dict[str, Any]]:
    """A final's recorded games as :meth:`Final.games` lists them."""
    from tournaments.standings import seat_faults

    return [{"game_id": r.game_id, "bots": list(r.bots), "placings": list(r.placings),
             "faults": [seat_faults(s) for s in r.seats], "aborted": r.aborted, "recorded": r.recorded_at}
            for r in store.results()]


class ClaimLost(FinalError):
    """Another folder's run holds the final: this one stalled past its claim and was taken over."""


class ResultsKeeper:
    """The results of the final that ``craits final run`` plays here (its tournament's database
    in :attr:`Final.out_dir`), kept as its games are recorded where every process of the roster
    reads them: the standings (``final/out/standings.json`` in SQLite, as the run itself writes
    them at its end), and in PostgreSQL the games too, in the roster's database. Web processes
    on any machine then show the final in progress, and a run killed halfway leaves there what
    it recorded; the tournament's database stays the one truth of what was played (a run again
    resumes from it), of which this is a copy kept up to date by its one writer. In PostgreSQL
    that database is kept too, with its games' replays (:data:`RUN_COPY`), so that a run killed
    with its machine goes on from another one (:meth:`Final.take_over`)."""

    def __init__(self, final: Final, besides: float | None = None) -> None:
        self.final = final
        self.besides = besides
        self._open: tuple[Any, Any, int] | None = None
        self._kept = -1
        self._replays: dict[str, str] = {}
        """The replays kept in the roster's database so far: file name -> hash."""
        self._renewed = -float("inf")
        """When this run last renewed its claim, by this machine's monotonic clock."""

    def hold(self) -> None:
        """In PostgreSQL, this run's claim on the final (:meth:`Final.claim`) renewed every third
        of its length, so that no other folder takes it over while it plays; its times by the
        database's clock, which every machine reads the claim with. ClaimLost when another run
        took it over (this one stalled past its claim): nothing of this run is kept after that."""
        if self.final.files.stored and time.monotonic() - self._renewed >= tables.LEASE_S / 3:
            if (other := self.final.claim()) is not None:
                raise ClaimLost(
                    f"the final was taken over while this run stalled past its claim ({tables.LEASE_S:g} s "
                    f"unrenewed), by the run in {other.where}: this run stops, and the games it recorded since are "
                    "not kept (the final's results are that run's)")
            self._renewed = time.monotonic()

    def keep(self) -> int | None:
        """Copy the results if games were recorded since the last copy; the games recorded (None: no run yet)."""
        from server.storage.store import Store, StoreError
        from tournaments.pages import game_links
        from tournaments.runner import TournamentError, load_standings, open_tournament

        out_dir = self.final.out_dir
        self.hold()
        try:
            inode = (out_dir / Store.FILENAME).stat().st_ino
        except FileNotFoundError:
            return None
        if self._open is not None and self._open[2] != inode:
            self.close()  # (replaced: --overwrite)
        if self._open is None:
            try:
                config, store = open_tournament(out_dir, readonly=True)
            except (TournamentError, StoreError):
                return None  # (its schedule not stored yet)
            row = store.tournament()
            if row is None or row.created_at == self.besides:
                store.close()
                return None  # (the earlier run's, being replaced)
            self._open = (config, store, inode)
        config, store, _ = self._open
        done, _ = store.counts()
        if done == self._kept:
            return done
        document = load_standings(config, store).to_dict()
        document["games"] = game_links(store, out_dir)
        if self.final.files.stored:
            played_in = self.final.run_place
            if self._kept < 0:
                self.final.files.put(PLAYED_IN, played_in)
            self.final.files.put(GAMES, json.dumps(_games_of(store)))
            self.final.files.put(RUN_COPY, json.dumps(self._run_copy(store, played_in)))
        self.final.files.put(STANDINGS, json.dumps(document, indent=2, sort_keys=True) + "\n")  # (as the run writes it)
        self._kept = done
        return done

    def _run_copy(self, store: Any, played_in: str) -> dict[str, Any]:
        """The tournament's database as it is now (SQLite's backup: whole, at one transaction) and
        the replays of the games it holds (each kept once, by hash), for :meth:`Final.take_over`."""
        from server.storage.store import Store
        from tournaments.pages import REPLAY_DIR

        source = sqlite3.connect(f"{(self.final.out_dir / Store.FILENAME).resolve().as_uri()}?mode=ro", uri=True)
        copy = sqlite3.connect(":memory:")
        try:
            source.backup(copy)
            data = copy.serialize()
            names = [Path(r[0]).name for r in copy.execute("SELECT replay_path FROM results WHERE replay_path IS NOT NULL")]
        finally:
            source.close()
            copy.close()
        for name in names:
            if name not in self._replays and (path := self.final.out_dir / REPLAY_DIR / name).is_file():
                self._replays[name] = self.final.roster.keep_file(path.read_bytes())  # type: ignore[attr-defined]
        return {"played_in": played_in, "db": base64.b64encode(zlib.compress(data)).decode("ascii"),
                "replays": {n: self._replays[n] for n in names if n in self._replays}}

    def close(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None
