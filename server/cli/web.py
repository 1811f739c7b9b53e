"""``craits web TARGET``: a tournament's or a ladder's board in the browser, read-only.

TARGET is what the tournament commands take: an output folder (its SQLite store), a
tournament file, or, with a PostgreSQL store (``--store URL``, ``$CRAITS_STORE`` or the
file's ``store``), the tournament's or ladder's name. A ``postgresql://`` URL alone serves
the one tournament its database holds.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from server.cli.web_options import add_trusted_proxy, web_address
from server.errors import UserError
from server.storage.settings import STORE_ENV

if TYPE_CHECKING:
    from server.web.board import BoardSource


def register_cli(subparsers: Any) -> None:
    """Add ``craits web``."""
    parser = subparsers.add_parser(
        "web",
        help="serve a tournament's or a ladder's board, games and replays to browsers (read-only)",
        description=(
            "Serve the standings, progress, bots and recorded games of a tournament or a ladder, finished or "
            "still running in other processes (its store is read again as it changes), until Ctrl-C or "
            "SIGTERM: from its output folder (SQLite) or from a PostgreSQL store, as workers record its games. "
            "Live games are shown by the process that plays them: --web on `craits tournament run|resume`, "
            "`craits ladder run` and `craits serve`. See docs/web.md."
        ),
    )
    parser.add_argument(
        "target", metavar="TARGET",
        help="an output folder (the one holding tournament.db), a tournament file, a tournament's or ladder's "
        "name in the --store, or a postgresql:// URL whose database holds one tournament",
    )
    parser.add_argument(
        "--store", metavar="URL",
        help=f"the PostgreSQL database holding the tournament (default: ${STORE_ENV}, else the file's store)",
    )
    parser.add_argument(
        "--address", default=("127.0.0.1", 8080), type=web_address, metavar="HOST:PORT",
        help="where to listen (default 127.0.0.1:8080; 0.0.0.0:8080 opens it to other machines)",
    )
    parser.add_argument("--log-dir", default="logs", help="where its log, web.jsonl, goes (default logs/)")
    parser.add_argument("--roster", metavar="FOLDER",
                        help="a roster folder: its participants log in, submit bots and see their own pages "
                        "(docs/teachers.md; a running `craits ladder run` picks their versions up)")
    add_trusted_proxy(parser)
    parser.set_defaults(func=_cmd_web)


def _cmd_web(args: argparse.Namespace) -> int:
    from participants.roster import Roster
    from server.cli.tournament import _file_config
    from server.logging import configure_logging
    from server.web.app import WebOptions
    from server.web.serve import serve_board

    try:  # (its events in its log, and on standard error as every command's: no debug lines)
        configure_logging(args.log_dir, name="web")
    except OSError as err:
        raise UserError(f"--log-dir {args.log_dir}: cannot write the log there: {err.strerror or err}"
                        + (f": {err.filename}" if err.filename else "")) from None
    source = board_source(args)  # one line now if there is no tournament to show
    host, port = args.address
    roster = args.roster
    if roster is None and (config := _file_config(args.target)) is not None:
        roster = config.roster  # (a ladder file that names a roster: its participants' pages too)
    if roster is not None:
        Roster(roster).check_private()  # one line now if there is no roster there, or others can read it
    private = roster is None and _names_a_roster(source)  # (its students' bot errors are still theirs)
    asyncio.run(serve_board(source, WebOptions(host=host, port=port, roster=roster, private_errors=private,
                                                       trusted_proxies=tuple(args.trusted_proxy)),
                            _until_stopped))
    return 0


def _names_a_roster(source: BoardSource) -> bool:
    """Whether the ladder's file, as its store keeps it, names a roster (its bots are students')."""
    store = source.open_store()
    try:
        row = store.tournament()
    finally:
        store.close()
    try:
        return row is not None and "roster" in tomllib.loads(row.source_text)
    except tomllib.TOMLDecodeError:
        return False


def board_source(args: argparse.Namespace) -> BoardSource:
    """Where ``craits web``'s TARGET (and ``--store``) says the tournament is."""
    from server.cli.tournament import _file_config, store_url
    from server.web.board import folder_source, postgres_source

    target: str = args.target
    scheme = urlsplit(target).scheme if "://" in target else ""
    if scheme:
        if args.store is not None:
            raise UserError(f"{target}: give either a URL or --store, not both")
        args.store = target
        url = store_url(args)  # (a URL that is not PostgreSQL's is refused here)
        assert url is not None
        return postgres_source(url, _only_tournament(url))
    path = Path(target)
    config = _file_config(target)
    url = store_url(args, config, target)
    if url is not None:
        return postgres_source(url, config.name if config is not None else target)
    if config is not None:
        return folder_source(config.output_dir())
    if not path.is_dir():
        raise UserError(f"{target}: no such folder or tournament file (a tournament's name needs --store URL "
                        f"or ${STORE_ENV})")
    return folder_source(path)


def _only_tournament(url: str) -> str:
    from server.storage.postgres import redact, tournaments_in
    from server.storage.store import StoreError

    try:
        held = tournaments_in(url)
    except StoreError as err:
        raise UserError(str(err)) from None
    if not held:
        raise UserError(f"{redact(url)} holds no tournament or ladder")
    if len(held) > 1:
        names = ", ".join(name for name, _ in held)
        raise UserError(f"{redact(url)} holds {len(held)} tournaments and ladders ({names}): name one, "
                        f"e.g. craits web {held[0][0]} --store URL")
    return held[0][0]


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
