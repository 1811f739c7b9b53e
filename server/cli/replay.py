"""``craits replay verify|show|html|convert|export``."""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import multiprocessing
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from server.cli.replay_rerun import register_rerun
from server.errors import UserError

JsonDict = dict[str, Any]

# --------------------------------------------------------------------------- CLI


def _replay_files(items: Sequence[str]) -> list[Path]:
    """Files named on the command line; a directory stands for its *.jsonl.gz and *.jsonl files."""
    from server.cli.replay_rerun import did_you_mean
    from server.storage.replay.format import V1_SUFFIX, V2_SUFFIX, replay_files_in

    files: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            found = replay_files_in(p)
            if not found:
                raise UserError(f"{item}: no *{V2_SUFFIX} or *{V1_SUFFIX} replay files in this directory")
            files.extend(found)
        elif p.exists():
            files.append(p)
        else:
            raise UserError(f"{item}: no such file or directory{did_you_mean(p)}")
    return files


def _verify_one(path: Path) -> tuple[bool, str]:
    """(verified, its line): in a worker process of ``verify --jobs``."""
    from server.storage.replay.format import ReplayError
    from server.storage.replay.verify import verify_replay

    try:
        return True, verify_replay(path).line()
    except ReplayError as err:
        return False, f"FAIL {err}"


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1, got {text!r}")
    return int(text)


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _cmd_verify(args: argparse.Namespace) -> int:
    """One line per replay, in the order given, then the count: a tournament's thousands of
    replays are verified on every core (``--jobs``) and end with one line that says how it went."""
    files = _replay_files(args.files)
    jobs = max(1, min(args.jobs or _cpus(), len(files)))
    failures = 0
    with contextlib.ExitStack() as stack:
        if jobs > 1:
            pool = stack.enter_context(concurrent.futures.ProcessPoolExecutor(
                jobs, mp_context=multiprocessing.get_context("spawn")))
            results: Iterator[tuple[bool, str]] = pool.map(_verify_one, files, chunksize=8)
        else:
            results = map(_verify_one, files)
        for ok, line in results:
            failures += not ok
            if not ok or not args.quiet:
                print(line, flush=True)
    n = len(files)
    if failures:
        print(f"{failures} of {n} replay{'' if n == 1 else 's'} failed verification")
    else:
        print(f"{n} replay{'' if n == 1 else 's'} verified: all OK")
    return 1 if failures else 0


def _cmd_show(args: argparse.Namespace) -> int:
    from server.storage.replay.format import ReplayError
    from server.storage.replay.reader import read_replay
    from server.viewer.walkthrough import format_walkthrough

    if Path(args.file).is_dir():
        raise UserError(f"{args.file} is a folder: show takes one replay file (verify and html take folders)")
    (path,) = _replay_files([args.file])
    try:
        replay = read_replay(path)
    except ReplayError as err:
        raise UserError(str(err)) from None
    print(format_walkthrough(replay), end="")
    return 0


def _cmd_html(args: argparse.Namespace) -> int:
    from server.storage.replay.format import ReplayError, replay_name
    from server.storage.replay.reader import read_replay
    from server.viewer.pages import (
        index_entry,
        write_game_page,
        write_html,
        write_index_html,
        write_shared_viewer,
    )

    files = _replay_files(args.files)
    out = Path(args.output)
    many = len(files) > 1 or any(Path(f).is_dir() for f in args.files) or out.is_dir()
    try:
        if not many:
            if out.suffix.lower() not in (".html", ".htm"):
                raise UserError(f"{out}: the output of one replay is an .html file")
            write_html(files[0], out)
            print(f"wrote {out}")
            return 0
        if out.suffix.lower() in (".html", ".htm"):
            raise UserError(f"{out}: several replays need an output directory (it gets index.html)")
        out.mkdir(parents=True, exist_ok=True)
        write_shared_viewer(out)
        entries, failures = [], 0
        for path in files:  # (a damaged replay is named and left out; the others get their pages)
            page = f"{replay_name(path)}.html"
            try:
                replay = read_replay(path)
            except ReplayError as err:
                failures += 1
                print(f"FAIL {err}", flush=True)
                continue
            write_game_page(replay, out / page, index_href="index.html")
            entries.append(index_entry(replay, page))
        write_index_html(entries, out / "index.html", title=args.title)
    except ReplayError as err:
        raise UserError(str(err)) from None
    except OSError as err:
        raise UserError(f"cannot write {out}: {err.strerror or err}" + (f": {err.filename}" if err.filename else "")
                        ) from None
    print(f"wrote {len(entries)} game pages and {out / 'index.html'}")
    if failures:
        print(f"{failures} replay(s) could not be read (left out of the index)")
    return 1 if failures else 0


def register_cli(subparsers: Any) -> None:
    """Add ``craits replay verify|show|html``."""
    parser = subparsers.add_parser("replay", help="verify, show or view game replays")
    actions = parser.add_subparsers(dest="replay_command", metavar="ACTION", required=True)

    verify = actions.add_parser(
        "verify", help="re-simulate replays with the engine and check every event, score and hash"
    )
    verify.add_argument("files", nargs="+", metavar="FILE", help="replay files or directories of them")
    verify.add_argument("-q", "--quiet", action="store_true", help="print only failures (and the count)")
    verify.add_argument("-j", "--jobs", type=_positive, default=0, metavar="N",
                        help="replays verified at once, each in a process (default: one per core)")
    verify.set_defaults(func=_cmd_verify)

    show = actions.add_parser("show", help="print a readable walkthrough, hand by hand, with the score sheet")
    show.add_argument("file", metavar="FILE")
    show.set_defaults(func=_cmd_show)

    page = actions.add_parser(
        "html", help="write a self-contained HTML viewer (several files: a page each sharing one viewer, + index)"
    )
    page.add_argument("files", nargs="+", metavar="FILE", help="replay files or directories of them")
    page.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="OUT.html for one replay, else a directory"
    )
    page.add_argument("--title", default="Craits games", help="title of the index page")
    page.set_defaults(func=_cmd_html)

    convert = actions.add_parser(
        "convert", help="verify replays and write them in the other format (2 compact, 1 one JSON line per record)"
    )
    convert.add_argument("files", nargs="+", metavar="FILE", help="replay files or directories of them")
    convert.add_argument("-o", "--output", required=True, metavar="OUT",
                         help="the file to write (one replay), else a directory")
    convert.add_argument("--to", type=int, choices=(1, 2), help="the format to write (default: the other one)")
    convert.set_defaults(func=_cmd_convert)

    register_rerun(actions)

    export = actions.add_parser(
        "export", help="write a PostgreSQL-stored tournament's replays as files (the database copy is the original)"
    )
    export.add_argument("tournament", metavar="NAME|FILE", help="the tournament's (or ladder's) name, or its file")
    export.add_argument("--store", metavar="URL", help="the PostgreSQL database (default: $CRAITS_STORE, else the file's)")
    export.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write the replays into")
    export.set_defaults(func=_cmd_export)


def _cmd_convert(args: argparse.Namespace) -> int:
    """``craits replay convert FILES -o OUT [--to N]``: one line per file; a replay that does
    not verify is named and not written."""
    from server.storage.replay.convert import convert_replay
    from server.storage.replay.format import V1_SUFFIX, V2_SUFFIX, ReplayError, replay_name

    files = _replay_files(args.files)
    out = Path(args.output)
    many = len(files) > 1 or any(Path(f).is_dir() for f in args.files) or out.is_dir()
    failures = 0
    for path in files:
        if many:
            version = args.to or (1 if path.name.endswith(V2_SUFFIX) else 2)
            target = out / (replay_name(path) + (V2_SUFFIX if version == 2 else V1_SUFFIX))
        else:
            target = out
        if target.resolve() == path.resolve():
            raise UserError(f"{target}: the output would replace the replay it is made from")
        try:
            written = convert_replay(path, target, args.to)
        except ReplayError as err:
            failures += 1
            print(f"FAIL {err}", flush=True)
            continue
        except OSError as err:
            raise UserError(f"cannot write {target}: {err.strerror or err}") from None
        print(f"wrote {target} (format {written})", flush=True)
    return 1 if failures else 0


def _cmd_export(args: argparse.Namespace) -> int:
    """``craits replay export NAME --store URL -o DIR``."""
    import os

    from server.storage.postgres import PostgresStore, is_store_url
    from server.storage.store import StoreError

    name, url = args.tournament, args.store or os.environ.get("CRAITS_STORE")
    if Path(name).is_file():  # a tournament file: its name, and its store unless one is given
        from tournaments.config import load_config  # (a lazy import: the CLI sits above tournaments)

        config = load_config(name)
        name, url = config.name, url or config.store
    if not url or not is_store_url(url):
        raise UserError("replay export reads a PostgreSQL store: give --store postgresql://... (or set CRAITS_STORE)")
    try:
        with PostgresStore(url, name, readonly=True) as store:
            if store.tournament() is None:
                raise UserError(f"{store.path}: no such tournament or ladder")
            written, total = store.export_replays(Path(args.output)), store.counts()[0]
    except StoreError as err:
        raise UserError(str(err)) from None
    except OSError as err:
        raise UserError(f"cannot write in {args.output}: {err.strerror or err}") from None
    print(f"{name}: {written} replay(s) written to {args.output} ({total} games recorded)", file=sys.stderr)
    return 0
