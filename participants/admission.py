"""A version's way onto the ladder: unpack, build in the sandbox, the conformance checker,
one validation game against a house bot. The first step that fails refuses the version with
the reason (and what the participant needs to see why: the build log, the checker's report,
the validation game's replay and their bot's output); a refused version never plays.

Run as a process of its own (``python -m participants.admission ROSTER``), started by the web
pages after an upload: it builds every version still ``building`` (an interrupted build's
too) one after another, so a build that eats its limits costs the pages nothing. One runs at
a time per roster (a lock: one left running by a killed server finishes before the next
starts). A build cut off by a restart or a crash is built again, up to :data:`ATTEMPTS` times
in all; after that the version is refused with :data:`INTERRUPTED` rather than tried forever
(a version that kills its builder would otherwise stall every later one).

The build runs in the bots' bubblewrap sandbox (no network, its own PID namespace, the
system read-only), with its folder writable, within :class:`BuildLimits`: a build that loops
is killed at its time limit, one that forks at its process limit, one that fills memory at its
memory limit, and its output is kept up to a limit. The version is unpacked and built in a
temporary folder, renamed into place only once built: a crash leaves no half version.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from participants.roster import Roster, Version
from participants.unpack import Bounds, UploadError, read_manifest, unpack
from server.checker.driver import CheckOptions, check_bot
from server.checker.report import Report
from server.engine import make_config
from server.errors import UserError
from server.spec import BotSpec, Clocks, GameSpec, SeatStatus
from server.transport import sandbox as sandboxes
from server.transport.launcher import command_problem
from server.transport.service import Arena, ArenaError, ArenaOptions

MiB = 2**20
HOUSE_BOTS = ("random", "default")
"""The validation game's other seats (builtin policies)."""
OUTPUT_TAIL = 64 * 1024
"""Bytes of a bot's output shown with a validation game."""
ATTEMPTS = 3
"""Builds of one version started in all: a version whose build was cut off this often is refused."""
INTERRUPTED = "the build was interrupted (server restarted); submit again"
LOCK = "admission.lock"


@dataclass(frozen=True, slots=True)
class BuildLimits:
    """What one build may use (defaults; an organizer may set others)."""

    time_s: float = 300.0
    memory: int = 1024 * MiB
    processes: int = 128
    output: int = 1 * MiB
    tmp: int = 256 * MiB


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str
    reason: str = ""
    build_log: str = ""
    report: str = ""
    validation: dict[str, Any] | None = None
    command: tuple[str, ...] = ()


def build(folder: Path, command: tuple[str, ...], limits: BuildLimits) -> tuple[bool, str]:
    """Run ``command`` in ``folder`` in the sandbox: (succeeded, its log with the verdict last)."""
    box = sandboxes.Sandbox(None, limits=sandboxes.Limits(memory=limits.memory, processes=limits.processes,
                                                          cpu_s=max(1, int(limits.time_s)), tmp=limits.tmp,
                                                          output=limits.output))
    jail = box.confine(command, cwd=str(folder), watched=False, writable=True)
    env = box.env("", "build")
    # `python` in a build is the one that will run the bot (`command = ["python", ...]` is this Python too).
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    started = time.monotonic()
    try:
        process = subprocess.Popen(jail.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, env=env, start_new_session=True)
    except OSError as err:
        jail.release()
        return False, f"[craits: the build could not start: {err}]\n"
    stdout = process.stdout
    assert stdout is not None
    kept = bytearray()

    def drain() -> None:  # (a thread: the build's output is read while it runs, whatever it prints)
        for chunk in iter(lambda: stdout.read1(65536), b""):
            if len(kept) < limits.output:
                kept.extend(chunk[: limits.output - len(kept)])

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    timed_out = False
    try:
        code = process.wait(timeout=limits.time_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # bwrap, the PID namespace's parent: all of the build dies
        code = process.wait()
    finally:
        reader.join(5)
        stdout.close()
        verdict = jail.verdict(code) if not timed_out else ""
        jail.release()
        if os.geteuid() == 0:
            _take_back(folder)
    text = kept.decode("utf-8", "replace")
    if len(kept) >= limits.output:
        text += f"\n[craits: the build's output passed {limits.output // 1024} KiB; the rest is not kept]"
    took = time.monotonic() - started
    if timed_out:
        return False, text + f"\n[craits: build killed: time limit {limits.time_s:g} s]\n"
    if verdict:
        return False, text + f"\n[craits: build {verdict}]\n"
    if code != 0:
        return False, text + f"\n[craits: the build failed: exit status {code} after {took:.1f} s]\n"
    return True, text + f"\n[craits: built in {took:.1f} s]\n"


def _take_back(folder: Path) -> None:
    """After a root referee's build: the folder is ours again, readable by every user (the
    bot runs as a uid of its own), writable by none."""
    for root, dirs, names in os.walk(folder):
        for name in (*dirs, *names):
            path = os.path.join(root, name)
            os.lchown(path, 0, 0)
    os.chown(folder, 0, 0)
    _readable_by_all(folder)


def _readable_by_all(folder: Path) -> None:
    for root, dirs, names in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in names:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755 if os.stat(path).st_mode & 0o111 else 0o644)
    os.chmod(folder, 0o755)


def validation_game(version: Version, folder: Path, command: tuple[str, ...], out_dir: Path) -> dict[str, Any]:
    """One short game of the version against the house bots, in the sandbox; its record in brief."""
    game_id = f"validate-{version.bot}-{secrets.token_hex(3)}"
    logs = out_dir / "bots"
    replay = out_dir / "replays" / f"{game_id}.jsonl"

    async def play() -> dict[str, Any]:
        arena = await Arena.start("127.0.0.1:0", ArenaOptions(bot_log_dir=logs, sandbox="bwrap"))
        try:
            seats = (BotSpec(name=version.bot, token="", command=command, cwd=str(folder)),
                     *(BotSpec(name=f"house-{b}", token="", builtin=b) for b in HOUSE_BOTS))
            spec = GameSpec(game_id, make_config("craits", len(seats), short_game=True), secrets.randbelow(2**31),
                            seats, Clocks(), replay, tournament="admission")
            record = await arena.run_game(spec)
        finally:
            await arena.shutdown(grace_s=0)
        seat = record.seats[0]
        output = b"".join(p.read_bytes() for p in sorted(logs.glob(f"{game_id}-seat0*.log")))
        return {
            "game_id": game_id, "replay": str(replay.relative_to(out_dir)), "status": str(seat.status),
            "placing": record.result.placings[0], "seats": [s.bot for s in record.seats],
            "events": list(seat.events), "aborted": record.aborted,
            "faults": {k: getattr(seat, k) for k in VALIDATION_FAULTS if getattr(seat, k)},
            "bot_error": seat.bot_error,
            "output": output[-OUTPUT_TAIL:].decode("utf-8", "replace"),
        }

    return asyncio.run(play())


def admit(roster: Roster, version: Version, *, limits: BuildLimits | None = None, bounds: Bounds | None = None,
          refuse_faulty: bool = False) -> Outcome:
    """Unpack, build, check and validate ``version``; the folder is in place only if it is admitted."""
    limits = limits or BuildLimits()
    if why := sandboxes.problem():
        return Outcome("refused", f"the server cannot sandbox submitted bots ({why}); tell the organizer")
    work = roster.temp_dir() / f"build-{version.id}-{secrets.token_hex(4)}"
    work.mkdir(mode=0o755)
    final = roster.version_dir(version)
    keep = False
    try:
        try:
            unpack(roster.upload_path(version.sha256).read_bytes(), version.filename, work, bounds)
            manifest = read_manifest(work)
        except UploadError as err:
            return Outcome("refused", str(err))
        _readable_by_all(work)
        log = ""
        if manifest.build is not None:
            ok, log = build(work, manifest.build, limits)
            log = log.replace(f"{work}/", "").replace(str(work), ".")  # (the student's paths, not the server's)
            if not ok:
                said = log.strip().splitlines()[-1].removeprefix("[craits: ").rstrip("]")
                last = _last_line(log.splitlines(), work)
                return Outcome("refused", said + (f" (its last line of output: {last})" if last else ""),
                               build_log=log, command=manifest.command)
        if problem := command_problem(manifest.command, str(work)):
            return Outcome("refused", f"bot.toml: command: {problem}", build_log=log, command=manifest.command)
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():  # an earlier, interrupted attempt at this very version
            shutil.rmtree(final)
        work.rename(final)
        work = final
        try:
            report = check_bot(manifest.command, CheckOptions(cwd=str(final), timeout_s=2.0))
        except UserError as err:
            return Outcome("refused", f"the conformance checker could not run it: {err}", build_log=log,
                           command=manifest.command)
        text = report.render().replace(f"{final}/", "")  # (the student's paths, not the server's)
        if not report.ok:
            return Outcome("refused", _checker_failed(report, final), build_log=log, report=text,
                           command=manifest.command)
        try:
            game = validation_game(version, final, manifest.command, roster.folder / "validation")
        except ArenaError as err:
            return Outcome("refused", f"the validation game could not be played: {err}", build_log=log,
                           report=text, command=manifest.command)
        if game["status"] != str(SeatStatus.OK) or game["aborted"]:
            why = game["aborted"] or game["status"].replace("_", " ")
            return Outcome("refused", f"the validation game went wrong for it: {why}", build_log=log, report=text,
                           validation=game, command=manifest.command)
        if faults := validation_faults(game):
            if refuse_faulty:
                return Outcome("refused", f"its validation game had {faults}: fix them and submit again", build_log=log,
                               report=text, validation=game, command=manifest.command)
            keep = True
            return Outcome("admitted", f"{WARNING}its validation game had {faults}: it plays, but read them on its page",
                           build_log=log, report=text, validation=game, command=manifest.command)
        keep = True
        return Outcome("admitted", build_log=log, report=text, validation=game, command=manifest.command)
    finally:
        if not keep and work.exists():
            shutil.rmtree(work, ignore_errors=True)


VALIDATION_FAULTS = ("bot_errors", "timeouts", "default_actions", "illegal", "malformed", "strikes", "disconnects")
"""What a validation game may show of a bot that plays badly though it finished: admitted with
a warning, or refused, as the organizer sets (``craits roster set ROSTER validation_faults=refuse``)."""
WARNING = "warning: "
"""How an admitted version's reason begins when its validation game had faults."""
FAULTY_KEY = "validation_faults"
FAULTY_CHOICES = ("warn", "refuse")


def validation_faults(game: dict[str, Any]) -> str:
    """The validation game's faults in words ("24 bot errors (first: ZeroDivisionError ... at bot.py:9),
    2 timeouts"), "" for none."""
    faults = game.get("faults") or {}
    said = []
    for key in VALIDATION_FAULTS:
        if count := faults.get(key, 0):
            words = key.replace("_", " ").removesuffix("s") + ("s" if count != 1 else "")
            words = words.replace("default action", "default move")
            first = f" (first: {game['bot_error']})" if key == "bot_errors" and game.get("bot_error") else ""
            said.append(f"{count} {words}{first}")
    return ", ".join(said)


LIMIT_KEYS = {"build_time_s": "time_s", "build_memory": "memory", "build_processes": "processes",
              "build_output": "output", "packed": "packed", "unpacked": "unpacked", "files": "files",
              "scrimmage_games_per_hour": "scrimmage_games_per_hour"}
"""``craits roster set`` keys: the build's (:class:`BuildLimits`) and the upload's (:class:`Bounds`)."""
SIZE_KEYS = ("build_memory", "build_output", "packed", "unpacked")


def _checker_failed(report: Report, folder: Path | None = None) -> str:
    """The reason for a refusal by check-bot: the checks failed, the first one's first problem and
    the bot's last line of output (a SyntaxError, an ImportError): what `craits submit` prints."""
    failed = [c for c in report.checks if str(c.status) == "FAIL"]
    said = f"the conformance checker failed: {', '.join(c.title for c in failed) or 'see its report'}"
    details = [failed[0].problems[0]] if failed and failed[0].problems else []
    if last := _last_line(report.output_tail, folder):
        details.append(f"its last line of output: {last}")
    return said + (f" ({'; '.join(details)})" if details else "")


TRACEBACK_PLACE = re.compile(r'File "([^"]+)", line (\d+)')


def _last_line(lines: Sequence[str], folder: Path | None = None) -> str:
    """The last line a bot or its build printed (not one of craits' own notes), for a refusal's
    reason: the compiler's error, the SyntaxError; what a student needs first. A Python error
    says where, as ``at bot.py:3`` (the place in the bot's folder, never the server's path)."""
    mine = [line for line in lines if line.strip() and not line.startswith("[craits:")]
    if not mine:
        return ""
    last = mine[-1].strip()[:200]
    places = [m for line in mine for m in TRACEBACK_PLACE.finditer(line)]
    if places and not TRACEBACK_PLACE.search(last):
        path, line = places[-1].group(1), places[-1].group(2)
        inside = Path(path).relative_to(folder) if folder is not None and Path(path).is_relative_to(folder) else None
        last += f" at {inside or Path(path).name}:{line}"
    return last.replace(f"{folder}/", "") if folder is not None else last


def roster_limits(roster: Roster) -> tuple[BuildLimits, Bounds]:
    """The limits the organizer set for this roster, the defaults for the rest."""
    held = roster.limits()
    build = {LIMIT_KEYS[k]: v for k, v in held.items() if k.startswith("build_")}
    bounds = {LIMIT_KEYS[k]: int(v) for k, v in held.items() if k in ("packed", "unpacked", "files")}
    return BuildLimits(**build), Bounds(**bounds)


def admit_pending(roster: Roster, **kwargs: Any) -> list[tuple[Version, Outcome]]:
    """Build and check every version still ``building``, oldest first, within the roster's
    limits (unless given); record each outcome."""
    done = []
    for version in roster.pending():
        for stale in roster.temp_dir().glob(f"build-{version.id}-*"):  # (an interrupted attempt's folder)
            shutil.rmtree(stale, ignore_errors=True)
        marker = roster.temp_dir() / f"attempt-{version.id}"  # (there while it is built: a crash leaves it)
        tried = _attempts(marker)
        if tried >= ATTEMPTS:
            outcome = Outcome("refused", INTERRUPTED)
        else:
            marker.write_text(str(tried + 1))
            limits, bounds = roster_limits(roster)  # (as they are at this build: `craits roster set` needs no restart)
            refuse = roster.limits().get(FAULTY_KEY) == "refuse"
            try:
                outcome = admit(roster, version, **{"limits": limits, "bounds": bounds, "refuse_faulty": refuse,
                                                    **kwargs})
            except Exception as err:  # (a fault of the server's, not the bot's: said, and the next version is built)
                traceback.print_exc()
                outcome = Outcome("refused", f"the server failed while checking it ({type(err).__name__}: {err}); "
                                  "tell the organizer, then submit again")
        roster.decide(version, outcome.status, reason=outcome.reason, build_log=outcome.build_log,
                      report=outcome.report, validation=outcome.validation, command=outcome.command)
        marker.unlink(missing_ok=True)
        done.append((version, outcome))
    return done


def refuse_pending(roster: Roster, why: str) -> None:
    """The builder itself keeps failing (``why``): refuse the versions waiting, saying so, so
    that nobody waits for a build that will not come (``craits submit`` prints the reason)."""
    for version in roster.pending():
        roster.decide(version, "refused", reason=f"the server could not build it (its builder stopped: {why}); "
                      "tell the organizer, then submit again")


def _attempts(marker: Path) -> int:
    """Builds of a version started before (0: none; a marker left by a crash says how many)."""
    try:
        return int(marker.read_text() or "1")
    except FileNotFoundError:
        return 0
    except (OSError, ValueError):
        return 1


@contextlib.contextmanager
def only_one(roster: Roster) -> Iterator[None]:
    """Hold the roster's admission lock (wait for the process holding it)."""
    with open(roster.temp_dir() / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m participants.admission", description=__doc__)
    parser.add_argument("roster", help="the roster folder")
    args = parser.parse_args(argv)
    roster = Roster(args.roster)
    with only_one(roster):
        done = admit_pending(roster)
    for version, outcome in done:
        print(f"{version.bot}: {outcome.status}" + (f": {outcome.reason}" if outcome.reason else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
