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
import stat
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from participants.roster import PostgresRoster, Roster, Version
from participants.settings import FAULTY_KEY, LIMIT_KEYS, UPLOADS_PER_DAY, UPLOADS_PER_HOUR
from participants.unpack import Bounds, UploadError, read_manifest, unpack
from server.checker.driver import CheckOptions, check_bot
from server.checker.report import Report
from server.engine import make_config
from server.errors import UserError
from server.spec import BotSpec, Clocks, GameSpec, SeatStatus
from server.transport import sandbox as sandboxes
from server.transport.launcher import command_problem
from server.transport.sandbox import size_text
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
DISK_WATCH_S = 0.5
"""How often a running build's folder is measured: a build past ``build_disk`` or ``build_files``
is killed within about this long (plus the time one measure takes), not at the end of its time."""


@dataclass(frozen=True, slots=True)
class BuildLimits:
    """What one build may use (defaults; an organizer may set others)."""

    time_s: float = 300.0
    memory: int = 1024 * MiB
    processes: int = 128
    output: int = 1 * MiB
    tmp: int = 256 * MiB
    disk: int = 256 * MiB
    """Bytes the version's folder may hold once built (sources and what the build made): measured
    while it runs (:data:`DISK_WATCH_S`), and no one file larger (RLIMIT_FSIZE)."""
    files: int = 10_000
    """Entries (files, folders, links) the version's folder may hold once built."""


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
    argv = ["prlimit", f"--fsize={limits.disk}", "--", *jail.argv]  # (no one file past the disk limit meanwhile)
    started = time.monotonic()
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
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

    done = threading.Event()

    def watch() -> None:  # (a thread: what the build writes is measured while it runs, not only at its end)
        while not done.wait(DISK_WATCH_S):
            size, entries = measure(folder, limits)
            if size > limits.disk or entries > limits.files:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                return

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    timed_out = False
    try:
        code = process.wait(timeout=limits.time_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # bwrap, the PID namespace's parent: all of the build dies
        code = process.wait()
    finally:
        done.set()
        watcher.join(5)
        reader.join(5)
        stdout.close()
        verdict = jail.verdict(code) if not timed_out else ""
        jail.release()
        size, entries = settle(folder, owner=0 if os.geteuid() == 0 else None)
    text = kept.decode("utf-8", "replace")
    if len(kept) >= limits.output:
        text += f"\n[craits: the build's output passed {limits.output // 1024} KiB; the rest is not kept]"
    took = time.monotonic() - started
    if timed_out:
        return False, text + f"\n[craits: build killed: time limit {limits.time_s:g} s]\n"
    if verdict:
        return False, text + f"\n[craits: build {verdict}]\n"
    if code in (128 + signal.SIGXFSZ, -signal.SIGXFSZ):
        return False, text + (f"\n[craits: the build wrote a file past the limit of {size_text(limits.disk)} "
                              "(build_disk, set by the organizer)]\n")
    if size > limits.disk:
        return False, text + (f"\n[craits: the build left {size / MiB:.1f} MiB in its folder: the limit is "
                              f"{size_text(limits.disk)} (build_disk, set by the organizer)]\n")
    if entries > limits.files:
        return False, text + (f"\n[craits: the build left {entries} files and folders in its folder: the limit is "
                              f"{limits.files} (build_files, set by the organizer)]\n")
    if code != 0:
        return False, text + f"\n[craits: the build failed: exit status {code} after {took:.1f} s]\n"
    return True, text + f"\n[craits: built in {took:.1f} s]\n"


def measure(folder: Path, limits: BuildLimits) -> tuple[int, int]:
    """(bytes, entries) in ``folder`` while a build writes it, links not followed, counted only
    until one passes its limit (so a build making a million files costs one walk of a few
    thousand); what cannot be read meanwhile is skipped (:func:`settle` counts it at the end)."""
    size = entries = 0
    for _root, dirs, names, fd in os.fwalk(folder):
        for name in (*dirs, *names):
            entries += 1
            with contextlib.suppress(OSError):
                held = os.stat(name, dir_fd=fd, follow_symlinks=False)
                size += 0 if stat.S_ISDIR(held.st_mode) else max(held.st_size, held.st_blocks * 512)
            if size > limits.disk or entries > limits.files:
                return size, entries
    return size, entries


def settle(folder: Path, owner: int | None = None) -> tuple[int, int]:
    """Make ``folder`` readable by every user (a sandboxed bot runs as a uid of its own) and
    writable by none but its owner (``owner``: a root referee takes a build's folder back);
    return (bytes, entries) in it. What a build left is a stranger's: links are never followed
    (each entry is opened with O_NOFOLLOW, through its folder's descriptor), so a link to
    another folder cannot make the server change that folder."""
    size = entries = 0
    top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        _settle_one(top, 0o755, owner)
    finally:
        os.close(top)
    for _root, dirs, names, fd in os.fwalk(folder, onerror=_raise):  # (no link is descended into)
        for name in (*dirs, *names):
            entries += 1
            held = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(held.st_mode):  # (kept as it is, never followed)
                if owner is not None:
                    os.chown(name, owner, owner, dir_fd=fd, follow_symlinks=False)
                continue
            mode = 0o755 if stat.S_ISDIR(held.st_mode) or held.st_mode & 0o111 else 0o644
            size += 0 if stat.S_ISDIR(held.st_mode) else max(held.st_size, held.st_blocks * 512)
            try:
                entry = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                                dir_fd=fd)
            except OSError:  # (not ours to open, as a user not root: a mode 000 the build set; a socket)
                with contextlib.suppress(OSError):
                    os.chmod(name, mode, dir_fd=fd)  # (not a link: seen above, and the build is over)
                continue
            try:
                _settle_one(entry, mode, owner)
            finally:
                os.close(entry)
    return size, entries


def _raise(err: OSError) -> None:
    raise err  # (a folder that cannot be walked is not measured: never a silent pass)


def _settle_one(fd: int, mode: int, owner: int | None) -> None:
    """Own (if ``owner``) and chmod the open entry ``fd``."""
    if owner is not None:
        os.fchown(fd, owner, owner)
    os.fchmod(fd, mode)


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
        settle(work)
        log = ""
        if manifest.build is not None:
            ok, log = build(work, manifest.build, limits)
            log = log.replace(f"{work}/", "").replace(str(work), ".")  # (the student's paths, not the server's)
            if not ok:
                said = log.strip().splitlines()[-1].removeprefix("[craits: ").rstrip("]")
                last = _last_line(log.splitlines(), work)
                return Outcome("refused", said + (f" (its last line of output: {last})" if last else ""),
                               build_log=log, command=manifest.command)
        if problem := _command_problem(manifest.command, work):
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
        if isinstance(roster, PostgresRoster):  # (its replay for the pages served on other machines, by its hash)
            with contextlib.suppress(OSError):
                game["replay_sha256"] = roster.keep_file((roster.folder / "validation" / game["replay"]).read_bytes())
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


def _command_problem(command: Sequence[str], folder: Path) -> str | None:
    """Why the version's ``command`` cannot run from its ``folder``, said in the folder's own
    terms. A path the command names must lie in the folder (or be one of the system's programs):
    one that leads out of it is refused as such, never looked up, so a command cannot ask the
    server whether a file of its own (another participant's version) exists."""
    visible = (*sandboxes.SYSTEM_DIRS, *sandboxes.runtime_paths())
    inside = os.path.realpath(folder)
    for i, arg in enumerate(command):
        if i and arg in ("-c", "-m", "-e"):
            break  # (code or a module follows, not a file)
        if "/" not in arg or (i and arg.startswith("-")):
            continue  # (a program found on the PATH, python or node; an option)
        full = os.path.realpath(os.path.join(folder, arg))
        if not (full == inside or full.startswith(inside + os.sep)) and not (
                os.path.isabs(arg) and any(full.startswith(v.rstrip("/") + "/") for v in visible)):
            return f"{arg} is outside the bot's folder: name the files of your upload relative to its top"
    problem = command_problem(command, str(folder))
    return None if problem is None else problem.replace(f" (in {folder})", "").replace(str(folder), ".")
VALIDATION_FAULTS = ("bot_errors", "timeouts", "default_actions", "illegal", "malformed", "strikes", "disconnects")
"""What a validation game may show of a bot that plays badly though it finished: admitted with
a warning, or refused, as the organizer sets (``craits roster set ROSTER validation_faults=refuse``)."""
WARNING = "warning: "
"""How an admitted version's reason begins when its validation game had faults."""
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


def upload_quota(roster: Roster) -> tuple[tuple[int, float], tuple[int, float]]:
    """(uploads, in seconds) a participant may make: per hour, then per day (``craits roster set``)."""
    held = roster.limits()
    return ((int(held.get("uploads_per_hour", UPLOADS_PER_HOUR)), 3600.0),
            (int(held.get("uploads_per_day", UPLOADS_PER_DAY)), 86400.0))


SIZE_KEYS = ("build_memory", "build_output", "build_disk", "packed", "unpacked", "output_budget")


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


def next_build(waiting: Sequence[Version], served: dict[str, int]) -> Version:
    """The version to build next: the participants in turn (the one served longest ago, or never,
    first; then the oldest upload), so that one participant's uploads never make others wait
    more than one build of theirs."""
    return min(waiting, key=lambda v: (served.get(v.participant, -1), v.id))


def admit_pending(roster: Roster, **kwargs: Any) -> list[tuple[Version, Outcome]]:
    """Build and check every version still ``building`` (uploaded before or while it runs), the
    participants in turn (:func:`next_build`), within the roster's limits (unless given);
    record each outcome. A version a newer upload replaced meanwhile is left as it is."""
    done = []
    served: dict[str, int] = {}
    while waiting := roster.pending():
        version = next_build(waiting, served)
        if not roster.claim(version):
            continue  # (replaced by a newer upload since it was read)
        served[version.participant] = len(done)
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
        recorded = roster.decide(version, outcome.status, reason=outcome.reason, build_log=outcome.build_log,
                                 report=outcome.report, validation=outcome.validation, command=outcome.command)
        if not recorded and outcome.status == "admitted":  # (replaced while it was built: no folder kept)
            shutil.rmtree(roster.version_dir(version), ignore_errors=True)
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
