"""``craits roster ...`` (the organizer's) and ``craits submit`` (a participant's).

    craits roster add ROSTER NAME [--email E] [--team T]     one participant; their token once
    craits roster import ROSTER FILE.csv                     name[,email,team] per line
        (add or import with --store postgresql://...: the roster is kept in that database, for a
        ladder on it whose workers elsewhere fetch the versions from it: docs/teachers.md)
    craits roster list ROSTER
    craits roster revoke|renew ROSTER NAME
    craits roster organizer ROSTER                           a new organizer token
    craits submit PATH --server URL                          a folder, an archive or one file

New tokens are printed once and appended to a CSV file (``--tokens``, default
``ROSTER-tokens.csv`` beside the roster folder, readable by you only) to hand out: the roster
keeps only their hashes. ``craits submit`` reads the token from ``$CRAITS_TOKEN`` or asks for
it (never from the command line, where other users and shell histories see it).
"""

from __future__ import annotations

import argparse
import csv
import getpass
import io
import json
import os
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from participants.settings import FAULTY_KEY, LIMIT_KEYS, UPLOADS_PER_DAY, UPLOADS_PER_HOUR
from participants.unpack import Bounds, UploadError, check_manifest
from server.errors import UserError

MIN_SIZES = {"build_disk": 2**20, "output_budget": 2**20}
"""Below these a build or a bot's log could hardly hold anything: refused as a slip of the unit."""
SKIPPED = ("__pycache__", ".git", "node_modules", ".venv", ".mypy_cache", ".pytest_cache")
"""Folders ``craits submit`` leaves out of a folder it packs."""
WAIT_S = 600.0
AWAY_S = 180.0
"""How long ``craits submit`` waits for a server that stopped answering (a restart builds the version again)."""
SAY_EVERY_S = 60.0


class Unreachable(UserError):
    """The server did not answer at all (not an HTTP error)."""


STORE_HELP = ("keep a new roster in this PostgreSQL database (the ladder's store = ...): its workers on other "
              "machines fetch the versions from it (default: SQLite in the folder)")


def register_cli(subparsers: Any) -> None:
    roster = subparsers.add_parser("roster", help="participants and their tokens (docs/teachers.md)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = roster.add_subparsers(dest="roster_command", metavar="ACTION", required=True)

    def action(name: str, help: str, func: Any, *, who: bool = True, tokens: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        p.add_argument("roster", help="the roster folder (the tournament file's roster = ...)")
        if who:
            p.add_argument("name", help="the participant")
        if tokens:
            p.add_argument("--tokens", type=Path, metavar="FILE",
                           help="append the new tokens to this CSV file (default: ROSTER-tokens.csv beside the folder)")
        p.set_defaults(func=func)
        return p

    add = action("add", "add a participant; prints their token once", _add, tokens=True)
    add.add_argument("--store", metavar="URL", help=STORE_HELP)
    add.add_argument("--email", default="")
    add.add_argument("--team", default="")
    imported = action("import", "add participants from a CSV file (a header line: name,email,team)", _import,
                      who=False, tokens=True)
    imported.add_argument("csv", type=Path, help="the CSV file")
    imported.add_argument("--store", metavar="URL", help=STORE_HELP)
    action("list", "list the participants, their versions and their status", _list, who=False)
    action("revoke", "stop a participant's token working (pages, submissions, remote bot)", _revoke, tokens=True)
    action("renew", "give a participant a new token (the old one stops working)", _renew, tokens=True)
    limits = action("set", "set the limits of uploads and builds, and what a faulty validation game costs "
                    "(defaults: docs/teachers.md)", _set, who=False)
    limits.add_argument("values", nargs="+", metavar="KEY=VALUE",
                        help=f"{', '.join(LIMIT_KEYS)}; sizes like 2GiB or 30MB, times in seconds; "
                        "uploads_per_hour and uploads_per_day: the versions each participant may upload in any "
                        f"hour and any day (default {UPLOADS_PER_HOUR} and {UPLOADS_PER_DAY}; a newer upload "
                        "still replaces one waiting for its build); build_disk and build_files: what a version's "
                        "folder may hold once built; output_budget: a bot's output kept over all its games (its "
                        "oldest logs go first; a ladder reads it when it starts); "
                        f"{FAULTY_KEY}=warn|refuse: a version whose validation game had bot errors, timeouts or "
                        "default moves is admitted with a warning (the default) or refused")
    action("organizer", "make a new organizer token (the previous one stops working)", _organizer, who=False,
           tokens=True)
    action("rekey", "give the web pages' forms a new signing key (session.key; on PostgreSQL, then copy it to "
           "the roster's other folders)", _rekey, who=False)

    submit = subparsers.add_parser(
        "submit", help="submit your bot to a ladder's server: craits submit PATH --server URL",
        description="Upload a bot (a folder with a bot.toml, a .zip or .tar.gz, or a single .py/.js file) as your "
        "next version, then wait for its build and admission and print the verdict. The token comes from "
        "$CRAITS_TOKEN, or is asked for.")
    submit.add_argument("path", type=Path, help="the bot: a folder, an archive or one source file")
    submit.add_argument("--server", required=True, metavar="URL", help="the ladder's web address, e.g. https://arena.example.org")
    submit.add_argument("--no-wait", action="store_true", help="return once uploaded, without waiting for the verdict")
    submit.set_defaults(func=_submit)


def _tokens_file(args: argparse.Namespace) -> Path:
    return args.tokens or Path(str(Path(args.roster).resolve()) + "-tokens.csv")


def _retire(path: Path, names: set[str], why: str) -> None:
    """The tokens file's rows of ``names`` no longer hold a working token: their token cell says
    ``why`` instead (a renewed or revoked row must not look alive, nor keep a secret that was)."""
    try:
        with path.open(newline="", encoding="utf-8") as text:
            rows = list(csv.reader(text))
    except FileNotFoundError:
        return
    except OSError as err:
        raise UserError(f"cannot read the tokens in {path}: {err.strerror}") from None
    if not any(row[:1] and row[0] in names for row in rows[1:]):
        return
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    kept = [rows[0], *([row[0], f"({why} {stamp})", *row[2:]] if row[:1] and row[0] in names and
                       not row[1].startswith("(") else row for row in rows[1:])]
    temp = path.with_name(path.name + ".part")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows(kept)
    os.replace(temp, path)


def _hand_out(args: argparse.Namespace, made: list[tuple[str, str]]) -> None:
    """Print the new tokens and append them to the tokens file (created readable by its owner only)."""
    from participants.roster import ORGANIZER

    path = _tokens_file(args)
    try:
        _retire(path, {name for name, _ in made}, "replaced")
        new = not path.exists()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            if new:
                writer.writerow(["name", "token", "made"])
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            writer.writerows([name, token, stamp] for name, token in made)
    except OSError as err:
        for name, token in made:
            print(f"{name}\t{token}")
        raise UserError(f"cannot write the tokens to {path}: {err.strerror}; they are printed above, once") from None
    for name, token in made:
        print(f"{name}\t{token}")
    whose = ("keep it: it opens every participant's pages and the dashboard" if [n for n, _ in made] == [ORGANIZER]
             else "hand each to its participant")
    print(f"{len(made)} token(s) appended to {path} ({whose}; the roster keeps only hashes)", file=sys.stderr)


def _add(args: argparse.Namespace) -> int:
    from participants.roster import Roster

    roster = Roster.create(args.roster, _store(args))
    _hand_out(args, [(args.name, roster.add(args.name, args.email, args.team))])
    return 0


def _import(args: argparse.Namespace) -> int:
    from participants.roster import Roster

    try:
        text = args.csv.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"{args.csv}: cannot read it: {err}") from None
    roster = Roster.create(args.roster, _store(args))
    made = roster.import_csv(text, str(args.csv))
    if not made:
        raise UserError(f"{args.csv}: no participants in it")
    _hand_out(args, made)
    return 0


def _store(args: argparse.Namespace) -> str | None:
    from server.storage.postgres import is_store_url, redact

    if args.store is not None and not is_store_url(args.store):
        raise UserError(f"--store {redact(args.store)!r}: not a PostgreSQL URL (postgresql://user@host:port/database)")
    return args.store


def _list(args: argparse.Namespace) -> int:
    from participants.roster import Roster

    roster = Roster(args.roster)
    people = roster.participants()
    if not people:
        print("no participants yet: craits roster add|import")
        return 0
    active = {v.participant: v for v in roster.active()}
    print(f"{'name':<20} {'team':<12} {'status':<8} {'versions':>8}  playing   latest")
    for person in people:
        versions = roster.versions(person.name)
        latest = f"v{versions[-1].number} {versions[-1].status}" if versions else "-"
        playing = f"v{active[person.name].number}" if person.name in active else "-"
        print(f"{person.name:<20} {person.team:<12} {'revoked' if person.revoked else 'active':<8} "
              f"{len(versions):>8}  {playing:<9} {latest}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    from participants.roster import Roster

    Roster(args.roster).revoke(args.name)
    _retire(_tokens_file(args), {args.name}, "revoked")
    print(f"{args.name}: token revoked (a new one: craits roster renew {args.roster} {args.name})")
    return 0


def _renew(args: argparse.Namespace) -> int:
    from participants.roster import Roster

    _hand_out(args, [(args.name, Roster(args.roster).renew(args.name))])
    return 0


def _set(args: argparse.Namespace) -> int:
    from participants.admission import (
        FAULTY_CHOICES,
        SIZE_KEYS,
        roster_limits,
        upload_quota,
    )
    from participants.roster import Roster
    from server.transport.sandbox import parse_size, size_text

    roster = Roster(args.roster)
    values: dict[str, int | float | str] = {}
    for item in args.values:
        key, equals, value = (part.strip() for part in item.partition("="))
        if equals and key == FAULTY_KEY:
            if value not in FAULTY_CHOICES:
                raise UserError(f"{FAULTY_KEY}: warn (admit with a warning) or refuse, got {value!r}")
            values[key] = value
            continue
        if not equals or key not in LIMIT_KEYS:
            raise UserError(f"{item!r}: expected KEY=VALUE with KEY one of {', '.join([*LIMIT_KEYS, FAULTY_KEY])}")
        try:
            number = parse_size(value) if key in SIZE_KEYS else float(value) if key == "build_time_s" else int(value)
        except ValueError as err:
            raise UserError(f"{key}: {err}" if key in SIZE_KEYS else f"{key}: {value!r} is not a number") from None
        if number <= 0:
            raise UserError(f"{key}: must be more than 0")
        if key in MIN_SIZES and number < MIN_SIZES[key]:
            raise UserError(f"{key}: {size_text(int(number))} is too small: at least {size_text(MIN_SIZES[key])}")
        values[key] = number
    (hourly, _), (daily, _) = upload_quota(roster)
    hourly, daily = int(values.get("uploads_per_hour", hourly)), int(values.get("uploads_per_day", daily))
    if daily < hourly:
        raise UserError(f"uploads_per_day={daily} is less than uploads_per_hour={hourly}: a participant could never "
                        "use the hour's; set both (nothing was changed)")
    roster.set_limits(values)
    build, bounds = roster_limits(roster)
    budget = roster.limits().get("output_budget")
    print(f"builds: {build.time_s:g} s, {size_text(build.memory)} of memory, {build.processes} processes, "
          f"{size_text(build.output)} of log, {size_text(build.disk)} and {build.files} files left in the folder; "
          f"uploads: {size_text(bounds.packed)} packed, {size_text(bounds.unpacked)} unpacked, {bounds.files} files "
          f"and folders, {hourly} an hour and {daily} a day per participant; a validation game with faults: "
          f"{'refused' if roster.limits().get(FAULTY_KEY) == 'refuse' else 'admitted with a warning'} "
          "(from the next upload and build on, without a restart)")
    if "output_budget" in values:
        print(f"each bot's output on the ladder: {size_text(int(budget or 0))} over all its games "
              "(from the ladder's next start)")
    return 0


def _organizer(args: argparse.Namespace) -> int:
    from participants.roster import ORGANIZER, Roster

    _hand_out(args, [(ORGANIZER, Roster(args.roster).organizer_token())])
    return 0


def _rekey(args: argparse.Namespace) -> int:
    from participants.roster import KEY_FILE, PostgresRoster, Roster

    roster = Roster(args.roster)
    roster.new_secret()
    others = ("; copy it (chmod 600) into the roster's folder on every other machine that serves its pages"
              if isinstance(roster, PostgresRoster) else "")
    print(f"{roster.folder / KEY_FILE}: a new key; forms open in browsers are refused once (sessions go on), "
          f"restart the web processes{others}")
    return 0


# ---------------------------------------------------------------------------- craits submit


def pack(path: Path, bounds: Bounds | None = None) -> tuple[bytes, str]:
    """What ``craits submit`` uploads: a folder zipped (its litter left out), a file as it is."""
    bounds = bounds or Bounds()
    if path.is_file():
        return path.read_bytes(), path.name
    if not path.is_dir():
        raise UserError(f"{path}: no such file or folder")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
            for name in sorted(files):
                full = Path(root) / name
                if full.is_symlink():
                    raise UserError(f"{full}: a link; uploads hold only files and folders (copy what it points to)")
                archive.write(full, str(full.relative_to(path)))
                if buffer.tell() > bounds.packed:
                    raise UserError(f"{path}: more than {bounds.packed // 2**20} MB packed: the limit")
    try:  # (said here, before anything is sent, as the server would say it)
        check_manifest(buffer.getvalue(), "upload.zip", bounds)
    except UploadError as err:
        raise UserError(f"{path}: {err}") from None
    return buffer.getvalue(), f"{path.resolve().name}.zip"


def _request(url: str, token: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    request = urllib.request.Request(url, data=data, headers={"Authorization": f"Bearer {token}", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as err:
        try:
            said = json.loads(err.read()).get("error", "")
        except ValueError:
            said = ""
        raise UserError(f"{url}: {said or err.reason} (HTTP {err.code})") from None
    except (urllib.error.URLError, OSError) as err:
        raise Unreachable(f"{url}: cannot reach the server: {getattr(err, 'reason', err)}") from None


def server_base(url: str) -> str:
    """``--server``: the ladder's web address, with its scheme (a token is never sent to a guess)."""
    base = url.strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise UserError(f"--server {url}: give the ladder's web address with its scheme, e.g. https://{base} "
                        f"(or http://{base} on this machine or behind no proxy)")
    return base


def ask_token() -> str:
    """A participant's token: ``$CRAITS_TOKEN``, else asked on the terminal (never an argument)."""
    token = os.environ.get("CRAITS_TOKEN") or (getpass.getpass("your token: ") if sys.stdin.isatty() else "")
    if not token.strip():
        raise UserError("no token: set CRAITS_TOKEN, or run the command on a terminal to be asked for it")
    return token.strip()


def _submit(args: argparse.Namespace) -> int:
    token = ask_token()
    data, filename = pack(args.path)
    base = server_base(args.server)
    answer = _request(f"{base}/api/submit", token.strip(), data,
                      {"Content-Type": "application/octet-stream", "X-Filename": filename})
    number = answer["version"]
    page = f"{base}{answer['page']}" if answer.get("page") else f"{base}/me"  # (the version's page, once logged in)
    print(f"uploaded {filename} ({len(data)} bytes) as v{number}; building and checking it ...", flush=True)
    if queue := answer.get("queue"):  # (the builds before it, the upload it replaced, the uploads left)
        print(f"v{number}: {queue['said']}", flush=True)
    if args.no_wait:
        return 0
    started = time.monotonic()
    said = started
    away: float | None = None
    while time.monotonic() - started < WAIT_S:
        try:
            version = _request(f"{base}/api/me/versions/{number}", token.strip())
        except Unreachable:  # (a restart: the server builds the version again once it is back)
            if away is None:
                away = time.monotonic()
                print(f"the server does not answer (restarting?); waiting up to {AWAY_S:.0f} s for it ...", flush=True)
            elif time.monotonic() - away > AWAY_S:
                raise
            time.sleep(2.0)
            continue
        away = None
        if version["status"] != "building":
            print(f"v{number}: {version['status']}" + (f": {version['reason']}" if version["reason"] else ""))
            if version["status"] != "admitted":
                print(f"the build log and the checker's report (log in with your token): {page}")
            return 0 if version["status"] == "admitted" else 1
        if time.monotonic() - said >= SAY_EVERY_S:
            said = time.monotonic()
            print(f"v{number}: still building and checking ({said - started:.0f} s) ...", flush=True)
        time.sleep(1.0)
    print(f"v{number} is still being built after {WAIT_S:.0f} s; its verdict will be on {page}")
    return 1
