"""``craits compare`` (a participant's) and ``craits final ...`` (the organizer's).

    craits compare OLD NEW --server URL [--games N] [--against default,random] [--all]
    craits scrimmage OPPONENT... --server URL [--games N]   unrated games against participants or house bots
    craits final plan ROSTER [FILE]   make FILE (default: the folder's final.toml) the final's plan
    craits final show ROSTER          the deadline, and the versions entered (the snapshot once past it)
    craits final run ROSTER           play the final: the snapshot's versions, a balanced schedule
    craits final publish ROSTER       show the final's results to the participants (--hide: not any more)
    craits final deadline ROSTER WHEN [--for NAME] [--reopen]
                                      move the deadline (or give NAME an extension); logged on the dashboard

See docs/teachers.md. ``craits compare`` reads the token as ``craits submit`` does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from participants.settings import DEFAULT_GAMES, DEFAULT_PANEL
from server.errors import UserError
from server.storage.settings import STORE_ENV

if TYPE_CHECKING:
    from participants.final import Final

WAIT_S = 3600.0


def register_cli(subparsers: Any) -> None:
    compare = subparsers.add_parser(
        "compare", help="compare two of your versions on the same deals: craits compare 3 4 --server URL",
        description="Play two of your admitted versions on the same deals, every seat, against the same house bots, "
        "and print the difference in average placing and points with an anytime-valid 95% interval, and the "
        "verdict (better, worse, not yet told apart). The token comes from $CRAITS_TOKEN, or is asked for.")
    compare.add_argument("old", help="the version to compare against, e.g. 3 (or v3)")
    compare.add_argument("new", help="the version to judge, e.g. 4")
    compare.add_argument("--server", required=True, metavar="URL", help="the ladder's web address")
    compare.add_argument("--games", type=int, default=DEFAULT_GAMES, help=f"at most this many games (default {DEFAULT_GAMES})")
    compare.add_argument("--against", default=",".join(DEFAULT_PANEL), metavar="BOTS",
                         help=f"the house bots at the table, comma-separated (default {','.join(DEFAULT_PANEL)})")
    compare.add_argument("--all", action="store_true", help="play all the games, even once told apart")
    compare.add_argument("--no-wait", action="store_true", help="return once asked, without waiting for the verdict")
    compare.set_defaults(func=_compare)

    scrimmage = subparsers.add_parser(
        "scrimmage", help="unrated games against chosen opponents: craits scrimmage bob random --server URL",
        description="Play your playing version against other participants' (by name) or house bots, unrated, "
        "within your hourly quota, and print the places. The token comes from $CRAITS_TOKEN, or is asked for.")
    scrimmage.add_argument("opponents", nargs="+", metavar="OPPONENT", help="a participant's name or a house bot")
    scrimmage.add_argument("--server", required=True, metavar="URL", help="the ladder's web address")
    scrimmage.add_argument("--games", type=int, default=4, help="how many games (default 4)")
    scrimmage.add_argument("--no-wait", action="store_true", help="return once asked")
    scrimmage.set_defaults(func=_scrimmage)

    final = subparsers.add_parser("final", help="the deadline and the final of a roster (docs/teachers.md)",
                                  description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = final.add_subparsers(dest="final_command", metavar="ACTION", required=True)
    plan = sub.add_parser(
        "plan", help="check a final.toml and make it the final's plan (a roster kept in PostgreSQL: on every machine)",
        description="Check FILE (default: final.toml in the roster folder) and make it the final's plan. A roster kept "
        "in PostgreSQL reads the plan stored in its database on every machine: this command stores a new one (with "
        "the folder's rubric.toml, when FILE is not given), and a different final.toml left in any folder changes "
        "nothing (craits final show says so). In SQLite the roster folder's final.toml is the plan: FILE is copied "
        "there.")
    show = sub.add_parser("show", help="the deadline and the versions in the final")
    run = sub.add_parser(
        "run", help="play the final (after the deadline)",
        description="Play the final in ROSTER/final/out on this machine (whatever $CRAITS_STORE says). Run again after "
        "a stop or a crash, it goes on from the games recorded; a roster kept in PostgreSQL goes on from any machine's "
        "folder, once the run that played it has stopped or its claim has run out (docs/teachers.md).")
    run.add_argument("--overwrite", action="store_true", help="play it again from the start")
    publish = sub.add_parser("publish", help="show the final's results on the participants' pages")
    publish.add_argument("--hide", action="store_true", help="hide them again")
    deadline = sub.add_parser(
        "deadline", help="move the deadline, or give one participant an extension (--for NAME)",
        description="Set the deadline of final.toml anew without editing it, for the class or (--for NAME) one "
        "participant. Each change is logged and listed on the dashboard. Once the entrants are fixed (the deadline "
        "passed and someone looked), a deadline after now reopens the final: say so with --reopen.")
    for parser, func in ((plan, _store_plan), (show, _show), (run, _run), (publish, _publish), (deadline, _deadline)):
        parser.add_argument("roster", help="the roster folder")
        parser.set_defaults(func=func)
    plan.add_argument("file", nargs="?", metavar="FILE", help="the plan to store (default: ROSTER/final.toml)")
    deadline.add_argument("when", metavar="WHEN",
                          help="a date and time with its zone (2026-12-11T18:00:00Z), now, or +30m / +2h / +3d")
    deadline.add_argument("--for", dest="who", default="", metavar="NAME", help="an extension for this participant")
    deadline.add_argument("--note", default="", help="why (kept in the log)")
    deadline.add_argument("--reopen", action="store_true",
                          help="move it even though the entrants are fixed: they are taken again at the new deadline "
                          "and published results are hidden until the final is run and published again")


def _compare(args: argparse.Namespace) -> int:
    from participants.compare import verdict_words
    from server.cli.roster import _request, ask_token, server_base

    token = ask_token()
    base = server_base(args.server)
    asked = {"a": args.old, "b": args.new, "games": args.games, "until_told": not args.all,
             "against": [b.strip() for b in args.against.split(",") if b.strip()]}
    job = _request(f"{base}/api/compare", token, _json_bytes(asked), {"Content-Type": "application/json"})
    print(f"comparison {job['id']}: v{job['b']} against v{job['a']}, at most {job['games_wanted']} games against "
          f"{', '.join(job['panel'])} (follow it at {base}/me)", flush=True)
    if args.no_wait:
        return 0
    deadline = time.monotonic() + WAIT_S
    shown = -1
    while job["status"] in ("waiting", "running") and time.monotonic() < deadline:
        time.sleep(1.0)
        job = _request(f"{base}/api/me/compare/{job['id']}", token)
        if job["games"] != shown and job["games"]:
            shown = job["games"]
            p = job["placing"]
            print(f"  {job['games']:>5} games: placing {p['mean']:+.3f} ({p['low']:+.3f} .. {p['high']:+.3f}): "
                  f"{job['verdict']}", flush=True)
    p, q = job["placing"], job["points"]
    said = verdict_words(job["verdict"], job["a"], job["b"], q.get("low"), q.get("high"))
    print(f"{said} after {job['games']} games"
          + (f" ({job['status']}: {job['message']})" if job["message"] else "") + "\n"
          f"  placing v{job['b']} - v{job['a']}: {p['mean']:+.3f} (95% anytime interval {p['low']:+.3f} .. "
          f"{p['high']:+.3f}; below 0 is better)\n"
          f"  points  v{job['b']} - v{job['a']}: {q['mean']:+.1f} (a plain average, no interval: the verdict reads "
          "placing)")
    return 0 if job["status"] == "done" else 1


def _scrimmage(args: argparse.Namespace) -> int:
    from server.cli.roster import _request, ask_token, server_base

    token = ask_token()
    base = server_base(args.server)
    job = _request(f"{base}/api/scrimmage", token, _json_bytes({"against": args.opponents, "games": args.games}),
                   {"Content-Type": "application/json"})
    print(f"scrimmage {job['id']}: {job['games']} games at {', '.join(job['seats'])} (unrated)", flush=True)
    if args.no_wait:
        return 0
    deadline = time.monotonic() + WAIT_S
    shown = 0
    while time.monotonic() < deadline:
        for game in job["results"][shown:]:
            print(f"  {game['game_id']}: " + ", ".join(f"{b} {p}" for b, p in zip(game["bots"], game["placings"],
                                                                                  strict=True)), flush=True)
        shown = len(job["results"])
        if job["status"] not in ("waiting", "running"):
            break
        time.sleep(1.0)
        job = _request(f"{base}/api/me/scrimmage/{job['id']}", token)
    print(f"scrimmage {job['id']}: {job['status']}" + (f": {job['message']}" if job["message"] else ""))
    return 0 if job["status"] == "done" else 1


def _json_bytes(data: Any) -> bytes:
    return json.dumps(data).encode()


def _store_plan(args: argparse.Namespace) -> int:
    from participants.dashboard import RUBRIC_FILE, parse_rubrics
    from participants.final import PLAN_FILE, Final, parse_plan
    from participants.roster import Roster

    final = Final(Roster(args.roster))
    folder = final.roster.folder
    wanted: list[tuple[str, Any, Path]] = [(PLAN_FILE, parse_plan, Path(args.file) if args.file else folder / PLAN_FILE)]
    if args.file is None and final.files.stored:
        wanted.append((RUBRIC_FILE, parse_rubrics, folder / RUBRIC_FILE))
    found = []
    for name, parse, source in wanted:  # (every file checked before any is stored: a mistake stores nothing)
        try:
            text = source.read_text(encoding="utf-8")
        except FileNotFoundError:
            if args.file is None:
                continue
            raise UserError(f"{source}: no such file") from None
        except (OSError, UnicodeDecodeError) as err:
            raise UserError(f"{source}: {err}") from None
        parse(text, str(source))
        found.append((name, text, source))
    if not found:
        raise UserError(f"{folder / PLAN_FILE}: no such file (write the final's plan there: docs/teachers.md)")
    for name, text, source in found:
        stored = final.files.store_organizer_file(name, text, source)
        if final.files.stored:
            print(f"{name}: {source} " + ("stored in the roster's database: every machine's web processes and "
                                         "commands read it" if stored else "is already the one stored"))
        else:
            print(f"{name}: {'copied to ' if stored else ''}{folder / name}, the plan (one machine: the roster "
                  "folder's file is the plan)")
    plan = final.plan()
    if plan is not None:
        print(f"the final's plan: deadline {plan.deadline_text} ({'passed' if final.past_deadline() else 'to come'}), "
              f"{plan.games_per_bot} games per bot at tables of {plan.table_size}"
              + ("; the deadline as last moved by craits final deadline" if final.deadline_log() else ""))
    return 0


def _show(args: argparse.Namespace) -> int:
    from participants.dashboard import RUBRIC_FILE
    from participants.final import Final, when_text
    from participants.roster import Roster

    final = Final(Roster(args.roster))
    plan = final.plan()
    if plan is None:
        raise UserError(f"no final is planned: write {os.path.join(args.roster, 'final.toml')} (docs/teachers.md)")
    fixed = final.fixed()
    print(f"deadline: {plan.deadline_text} ({'passed' if final.past_deadline() else 'to come'}); final: "
          f"{plan.games_per_bot} games per bot at tables of {plan.table_size}"
          + (f", with house bots {', '.join('house-' + h for h in plan.house)}" if plan.house else ""))
    for name, when in plan.extensions:
        print(f"  extension: {name} until {when_text(when)}")
    entries = final.snapshot() if fixed else final.entrants_now()
    fixed_by = {e.participant: e for e in entries or []}
    print("who is in (the snapshot taken at the deadline):" if fixed else "who is in, if the deadline were now:")
    for place in final.field():
        entry = fixed_by.get(place.participant)
        if entry is not None:
            print(f"  in   {entry.bot:<24} sha256 {entry.sha256[:12]}  submitted "
                  f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime(entry.submitted))} UTC"
                  + ("  (chosen)" if entry.chosen else ""))
        else:
            why = place.why if place.entry is None else "left out: not in the snapshot taken at the deadline"
            print(f"  out  {place.participant:<24} {why.removeprefix('left out: ')}")
    if problem := final.schedule_problem(len(entries or [])):
        print(problem if fixed else f"with these entrants, {problem}")
    print(f"grades: {'the final' if plan.grade_on == 'final' else 'the ladder games up to each deadline'} "
          f"(grade_on = \"{plan.grade_on}\" in final.toml)")
    progress = final.progress()
    print(f"results: {'published' if final.published else 'hidden from the participants'}" + (
        "" if progress is None else f"; {progress[0]} of {progress[1]} games recorded"
        + (" (complete)" if progress[2] else f" (still playing, or stopped: craits final run {args.roster} goes on)")))
    print(f"the plan: {plan.source}")
    rubric = final.files.organizer_file(RUBRIC_FILE)
    for note in (plan.note, rubric.note if rubric is not None else ""):
        if note:
            print(f"note: {note}")
    return 0


def _deadline(args: argparse.Namespace) -> int:
    from participants.final import Final, parse_when
    from participants.roster import Roster

    final = Final(Roster(args.roster))
    _say_note(final)
    now = final.roster.now()  # (`now`, `+2h`: by the clock the roster's deadlines are read with)
    print(final.set_deadline(parse_when(args.when, now), args.who, reopen=args.reopen, note=args.note, now=now))
    return 0


def _say_note(final: Final) -> None:
    """A final.toml in this folder that is not the stored plan, said where the organizer works."""
    plan = final.plan()
    if plan is not None and plan.note:
        print(f"note: {plan.note}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    from participants.final import Final
    from participants.roster import Roster
    from server.logging import get_logger

    log = get_logger(component="final")
    final = Final(Roster(args.roster))
    _say_note(final)
    path = final.tournament_file()
    shown = (f"published: the participants see them as they are recorded (`craits final publish --hide "
             f"{args.roster}` takes them back)" if final.published else
             f"hidden from the participants until `craits final publish {args.roster}`")
    print(f"the final: {path} (results in {final.out_dir}, {shown})", file=sys.stderr)
    if held := final.claim():  # (taken here at once: two runs started together never both play)
        raise UserError(f"the final is being played in {held.where} (its run renewed its claim "
                        f"{max(0, round(held.renewed_ago))} s ago): stop it there first; if its machine is gone, "
                        f"try again in {max(1, math.ceil(held.holds_for))} s (the games it recorded are kept in "
                        "the roster's database: the final goes on here from them)")
    try:
        return _run_claimed(args, final, path, log)
    finally:
        try:
            final.let_go()  # (stopped, failed or taken over: only this run's own claim is given up)
        except Exception as err:  # (the roster's database away: the claim runs out on its own)
            log.warning("final_claim_not_released", error=str(err))


def _run_claimed(args: argparse.Namespace, final: Any, path: Path, log: Any) -> int:
    """``craits final run`` once this folder holds the claim on the final."""
    from participants import tables
    from participants.final import ClaimLost
    from participants.roster import RosterError
    from server.cli import tournament  # (the tournament command plays it: one way to run a tournament)
    from server.storage.store import Store

    if not args.overwrite and (elsewhere := final.played_elsewhere()):
        taken = final.take_over(path)  # (its machine, and the folder it played in, may be gone: it goes on here)
        if taken is None:
            done, total, _ = final.progress() or (0, 0, False)
            raise UserError(f"the final's results in the roster's database ({done} of {total} games) were played in "
                            f"{elsewhere} by an older craits, which kept no copy to go on from: run `craits final "
                            "run` there to go on with them, or add --overwrite to play the final afresh here (its "
                            "results so far are then dropped)")
        done, total, where = taken
        print(f"the final: resuming {total - done} of {total} games here; the {done} recorded so far were played in "
              f"{where}" if done < total else f"the final: its {total} games were played in {where}: its results "
              "are written here from them", file=sys.stderr)
    if os.environ.get(STORE_ENV):
        print(f"the final: plays in {final.out_dir} on this machine, not in ${STORE_ENV}" + (
              " (its results, and what another machine needs to go on with them, are kept in the roster's database)"
              if final.files.stored else ""), file=sys.stderr)
    db = final.out_dir / Store.FILENAME
    earlier = _started_at(db)  # (a final started here, killed or stopped: it goes on, unless --overwrite)
    started = earlier is not None and not args.overwrite
    argv = (["tournament", "resume", str(path), "--out", str(final.out_dir)] if started else
            ["tournament", "run", str(path), "--out", str(final.out_dir)] + (["--overwrite"] if args.overwrite else []))
    parser = argparse.ArgumentParser(prog="craits")
    tournament.register_cli(parser.add_subparsers())
    parsed = parser.parse_args(argv)
    if args.overwrite:
        final.forget_results()
    keeper = final.keeper(besides=earlier if args.overwrite else None)
    stop = threading.Event()
    failed: list[Exception] = []
    lost: list[ClaimLost] = []

    def keep() -> None:  # (the results where every web process reads them, as the games are recorded)
        said, wait = "", KEEP_S
        try:
            while not stop.wait(wait):
                started = time.monotonic()
                try:
                    keeper.keep()
                except ClaimLost as err:  # (stalled, and taken over: the run stops as on Ctrl-C)
                    lost.append(err)
                    log.error("final_taken_over", error=str(err))
                    os.kill(os.getpid(), signal.SIGTERM)
                    return
                except Exception as err:  # (the roster's database away, say: the next try copies what this missed)
                    if str(err) != said:
                        said = str(err)
                        log.warning("final_results_not_kept", error=said)
                wait = max(KEEP_S, 9 * (time.monotonic() - started))  # (a large final's standings take a while)
                wait = min(wait, tables.LEASE_S / 3)  # (its claim on the final renewed in time, however large)
            try:
                keeper.keep()  # (the last games)
            except ClaimLost as err:
                lost.append(err)
            except Exception as err:
                failed.append(err)
        finally:
            keeper.close()  # (in this thread: its SQLite connection is this thread's)

    keeping = threading.Thread(target=keep, name="craits-final-results", daemon=True)
    keeping.start()
    try:
        with _without(STORE_ENV):  # (one place for the final's games: this folder's, whatever the shell says)
            return int(parsed.func(parsed) or 0)
    finally:
        stop.set()
        keeping.join()
        if lost:
            raise UserError(str(lost[0]))
        if failed and sys.exc_info()[1] is not None:
            log.warning("final_results_not_kept", error=str(failed[0]))  # (the run's own error is the one said)
        elif failed and isinstance(failed[0], RosterError):
            raise UserError(f"{failed[0]}; the final's results are safe in {db}: `craits final run {args.roster}` again "
                            "copies them once the roster's database is back (it plays no game twice)")
        elif failed:
            raise failed[0]


KEEP_S = 0.5
"""How often ``craits final run`` copies the games recorded since its last copy: at most every
half second, and never more than a tenth of the time (the standings of a final of 144 games take
0.2-0.3 s to make, in the process that referees its games)."""


@contextlib.contextmanager
def _without(name: str) -> Iterator[None]:
    """The environment without ``name`` while the block runs (a command run inside this one)."""
    said = os.environ.pop(name, None)
    try:
        yield
    finally:
        if said is not None:
            os.environ[name] = said


def _started_at(db: Path) -> float | None:
    """When the final held in ``db`` was started (None: none is, its schedule not stored)."""
    from server.storage.store import Store, StoreError

    if not db.is_file():
        return None
    try:
        with Store(db, readonly=True) as store:
            row = store.tournament()
    except StoreError:
        return None
    return None if row is None else row.created_at


def _publish(args: argparse.Namespace) -> int:
    from participants.final import Final
    from participants.roster import Roster

    final = Final(Roster(args.roster))
    if not args.hide and final.standings() is None:
        raise UserError(f"the final has no results yet: craits final run {args.roster}")
    final.publish(not args.hide)
    print("the final's results are " + ("hidden from the participants again" if args.hide else
                                         "published on the participants' pages"))
    return 0
