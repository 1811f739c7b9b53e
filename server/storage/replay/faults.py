"""A bot's faults in a replay: which decisions, what happened, and the command that plays the
game again from there (``craits replay rerun``, docs/rerun.md). Generic over kinds of fault:
any decision status but the fine ones is a fault, so a newer referee's kinds count too."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from server.storage.replay.reader import Replay

FINE = frozenset(("ok", "auto", "bank"))
"""Decision statuses that are not a fault of the seat's bot."""
CONSEQUENCE = "default"
"""The seat played by the default policy after an earlier fault: a consequence, not a new fault."""

FAULT_NOTES = ("bot error",)
"""Notes that make a decision whose answer was played a fault all the same: the bot's kit
reporting that the bot's own code failed and answering in its place (issue 30)."""

JsonDict = dict[str, Any]


def is_fault(rec: JsonDict) -> bool:
    """True when a decision record shows a fault of the bot that was asked: a fault status, an
    answer refused on the way to the one played, or a note that names a fault."""
    status = str(rec.get("status", ""))
    facts = rec.get("wire")
    refused = isinstance(facts, dict) and bool(facts.get("refused"))
    note = str(rec.get("note", ""))
    return (status not in FINE and status != CONSEQUENCE) or refused or any(f in note for f in FAULT_NOTES)


def fault_words(rec: JsonDict) -> str:
    """What went wrong at a faulty decision, in a few words."""
    status = str(rec.get("status", ""))
    note = str(rec.get("note", ""))
    if status in FINE and note:  # played, but a fault all the same (a refused answer first, a bot error)
        return note
    if status in FINE:
        status = "refused answer"
    if note.startswith(status):
        return note
    return f"{status}: {note}" if note else status


@dataclass(frozen=True, slots=True)
class Fault:
    """A seat's first fault in a game, and how many it had."""

    seat: int
    bot: str
    n: int
    """The decision (``craits replay rerun --from N``; the viewer's #decision=N)."""
    what: str
    count: int

    def command(self, file: str, bot_command: str = "python my_bot.py") -> str:
        """The command that plays the game again with a bot in this seat from this decision."""
        return f"craits replay rerun {shlex.quote(file)} --seat {self.seat} --from {self.n} -- {bot_command}"

    def anchor(self) -> str:
        """The viewer's link to the decision, seen by the seat: ``#decision=N&seat=S``."""
        return f"#decision={self.n}&seat={self.seat}"


def first_fault(replay: Replay, seat: int) -> int | None:
    """The number of the first decision at which ``seat``'s bot faulted, if any."""
    return next((int(rec["n"]) for rec in replay.decisions if rec["seat"] == seat and is_fault(rec)), None)


def replay_faults(replay: Replay) -> list[Fault]:
    """Each seat's first fault in the game, by seat. A seat whose bot faulted at no decision
    but was played by the default policy (it never connected) has its first such decision."""
    firsts: dict[int, JsonDict] = {}
    counts: dict[int, int] = {}
    absent: dict[int, JsonDict] = {}
    for rec in replay.decisions:
        seat = int(rec["seat"])
        if is_fault(rec):
            firsts.setdefault(seat, rec)
            counts[seat] = counts.get(seat, 0) + 1
        elif rec.get("status") == CONSEQUENCE:
            absent.setdefault(seat, rec)
    bots = replay.bots
    faults = [Fault(seat, bots[seat], int(rec["n"]), fault_words(rec), counts[seat]) for seat, rec in firsts.items()]
    faults += [Fault(seat, bots[seat], int(rec["n"]), "played by the default policy: the bot was not there", 1)
               for seat, rec in absent.items() if seat not in firsts]
    return sorted(faults, key=lambda fault: fault.seat)


BOT_ERROR_TEXT = re.compile(r"(bot error(?: on decision \d+)?): .*", re.DOTALL)
"""A bot error's words as the referee writes them (a decision's note, a seat's event), with
the bot's own text after the colon."""


def hide_bot_errors(value: Any) -> Any:
    """``value`` (records, a board's rows, any JSON) without the text of the bot errors in it:
    a bot error's first line and file:line come from the bot's own code (its exception, its
    data), which on a participants' ladder only its owner and the organizer may read. The
    count and the decision stay: a fault is public, its words are not."""
    if isinstance(value, str):
        return BOT_ERROR_TEXT.sub(r"\1", value)
    if isinstance(value, list):
        return [hide_bot_errors(v) for v in value]
    if isinstance(value, dict):
        return {k: ("" if k == "bot_error" else hide_bot_errors(v))
                for k, v in value.items() if k != "first_bot_error"}
    return value


def hide_others_bot_errors(records: list[JsonDict], seats: set[int]) -> list[JsonDict]:
    """A replay's records with only ``seats``' bot error texts left (a participant's own, in a
    game against others: :func:`hide_bot_errors`)."""
    out = []
    for rec in records:
        if rec.get("type") == "decision" and rec.get("seat") in seats:
            out.append(rec)
        elif rec.get("type") == "result" and rec.get("seat_reports"):
            reports = [r if i in seats else hide_bot_errors(r) for i, r in enumerate(rec["seat_reports"])]
            out.append({**hide_bot_errors({k: v for k, v in rec.items() if k != "seat_reports"}),
                        "seat_reports": reports})
        else:
            out.append(hide_bot_errors(rec))
    return out
